"""The oracle of tests/test_one_truth.py: what every profiles reader must give for sent profiles.

Plain functions, no library code but :func:`stoplist_nb._json.records.json_text`
(the definition of a value's exact text), so that the oracle cannot share a
bug with the readers it judges.

* :func:`column_name` is the naming rule: the column a field of a profile or of
  a subscription lands in. It is the one place to change when the rule moves.
* :func:`expected_rows` turns the profiles as sent into the rows the readers
  must give: one per subscription (one for a profile without any), each a
  ``{column: [values sent there]}``.
* :func:`check_rows` holds a reader's rows to them: every expected value is
  found in its column, or, where that column is null in that row, in the
  companion text column ``<column>__text``; no column is there that the rule
  does not explain.
* :func:`matches` is the equality: the value as sent, or its exact text.
* :func:`frame_rows`, :func:`table_rows` turn a DataFrame or an Arrow table into
  plain Python rows (nulls as None, NumPy values as Python ones).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from stoplist_nb._json.records import json_text

#: The columns every reader has, in the roles the naming rule gives them.
FIXED_SCALARS = ("channel", "status", "hash_id", "priority", "resource_id", "is_delete")
FIXED_COLUMNS = (
    "profile_id",
    *FIXED_SCALARS,
    "reg_date",
    "reg_ip",
    "email",
    "email_md5",
    "email_domain",
    "email_domain_group",
    "phone",
    "phone_md5",
    "push_provider",
    "push_subscription_id",
    "cats",
)
#: Keys of a subscription's objects that have a fixed column.
BLOCK_COLUMNS = {
    ("reg_info", "date"): "reg_date",
    ("reg_info", "ip"): "reg_ip",
    ("email_data", "email"): "email",
    ("email_data", "md5"): "email_md5",
    ("email_data", "domain"): "email_domain",
    ("email_data", "domain_group"): "email_domain_group",
    ("phone_data", "phone"): "phone",
    ("phone_data", "md5"): "phone_md5",
    ("push_data", "provider"): "push_provider",
    ("push_data", "subscription_id"): "push_subscription_id",
    # whatsapp, viber and notify carry the number (or address) in cc_data.
    ("cc_data", "phone"): "phone",
    ("cc_data", "email"): "email",
}
#: The suffix of a companion text column: the values its column could not hold.
COMPANION = "__text"
_ENDS_LIKE_COMPANION = re.compile(r"__text_*$")
_CUSTOM, _SUBSCRIPTIONS, _ID = "custom_fields", "subscriptions", "id"


def column_name(role: str, source: str) -> str:
    """The column a field lands in, the same for every reader and every page.

    Args:
        role: ``id`` (the profile's ``id``), ``profile`` (a profile key),
            ``block`` (a key of an object in a subscription: ``source`` is
            ``"<block>.<key>"``), ``cf`` (a key of ``custom_fields``) or
            ``subscription`` (any other key of a subscription).
        source: The key (for ``block``, the object's key and the leaf's).

    >>> [column_name("profile", k) for k in ("age", "email", "cf.x", "x__text", "x__text_")]
    ['age', 'profile.email', 'profile.cf.x', 'x__text_', 'x__text__']
    >>> column_name("cf", "x"), column_name("block", "cc_data.phone")
    ('cf.x', 'phone')
    """
    if role == "id":
        name = "profile_id"
    elif role == "profile":
        plain = "." not in source and source not in FIXED_COLUMNS
        name = source if plain else f"profile.{source}"
    elif role == "block":
        block, key = source.split(".", 1)
        name = BLOCK_COLUMNS.get((block, key), source)
    elif role == "cf":
        name = f"cf.{source}"
    elif role == "subscription":
        name = source if source in (*FIXED_SCALARS, "cats") else f"subscription.{source}"
    else:
        raise ValueError(f"unknown role {role!r}")
    # No field's column ends in exactly "__text": that names a companion.
    return name + "_" if _ENDS_LIKE_COMPANION.search(name) else name


def subscription_fields(sub: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """The (role, source, value) of each leaf of a subscription, one level into its objects."""
    out = []
    for key, value in sub.items():
        if isinstance(value, Mapping):
            role = "cf" if key == _CUSTOM else "block"
            for leaf, item in value.items():
                out.append((role, leaf if role == "cf" else f"{key}.{leaf}", item))
        else:
            out.append(("subscription", key, value))
    return out


def expected_rows(profiles: Sequence[Mapping[str, Any]]) -> list[dict[str, list[Any]]]:
    """The rows every reader must give: ``{column: values sent to it}`` (None for null).

    One row per subscription, a profile without any (no key, null or ``[]``)
    once. A column gets a list because two fields may share one (``phone``
    takes ``phone_data.phone`` and ``cc_data.phone``); a row missing a column
    must be null there.
    """
    rows: list[dict[str, list[Any]]] = []
    for profile in profiles:
        own: dict[str, list[Any]] = {column_name("id", _ID): [profile[_ID]]}
        for key, value in profile.items():
            if key not in (_ID, _SUBSCRIPTIONS):
                own.setdefault(column_name("profile", key), []).append(value)
        subs = profile.get(_SUBSCRIPTIONS) or [{}]
        for sub in subs:
            row = {k: list(v) for k, v in own.items()}
            for role, source, value in subscription_fields(sub):
                row.setdefault(column_name(role, source), []).append(value)
            rows.append(row)
    return rows


def check_rows(
    reader: str, got: Sequence[Mapping[str, Any]], profiles: Sequence[Mapping[str, Any]]
) -> None:
    """Assert that a reader's rows hold what ``profiles`` sent (see :func:`disagreements`)."""
    found = disagreements(reader, got, profiles)
    assert not found, "\n".join(found)


def disagreements(
    reader: str, got: Sequence[Mapping[str, Any]], profiles: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Where a reader's rows differ from what ``profiles`` sent: one line per column at fault.

    Args:
        reader: The reader's name, for the messages.
        got: Its rows as plain Python values (:func:`frame_rows`, :func:`table_rows`);
            a column missing from a row counts as null there.
        profiles: What the service sent.

    Returns:
        A wrong number of rows; the columns no field explains (neither the
        column of a field nor its companion); and for each column, the first
        row whose value (or companion's, where the column is null) does not
        :func:`match <matches>` what was sent there.
    """
    want = expected_rows(profiles)
    if len(got) != len(want):
        return [f"{reader}: {len(got)} rows, want {len(want)}"]
    out = []
    expected = set(FIXED_COLUMNS).union(*want)
    seen = {name for row in got for name in row}
    explained = expected | {name + COMPANION for name in expected}
    stray = sorted(seen - explained)
    if stray:
        out.append(f"{reader}: columns no field explains: {stray}")
    for column in sorted(expected):
        for i, (row, sent) in enumerate(zip(got, want, strict=True)):
            values = sent.get(column, [None])
            cell = resolve(row, column)
            if not any(matches(cell, v, column) for v in values):
                out.append(
                    f"{reader}: column {column!r} row {i} (profile {row.get('profile_id')!r}): "
                    f"read {cell!r} ({column} {row.get(column)!r}, "
                    f"{column + COMPANION} {row.get(column + COMPANION)!r}), "
                    f"sent {values[0] if len(values) == 1 else values!r}"
                )
                break
    return out


def resolve(row: Mapping[str, Any], column: str) -> Any:
    """The column's value in the row or, where it is null, its companion text's."""
    value = row.get(column)
    return row.get(column + COMPANION) if value is None else value


def exact_texts(value: Any) -> set[str]:
    """The texts that hold ``value`` exactly: :func:`json_text` (``2 -> "2"``,
    ``True -> "true"``, lists and objects as compact JSON), and for a float
    also its shortest JSON (``1e+300``; ``json_text`` writes the digits of an
    integral float, past 2**53 too: both hold the same double)."""
    texts = {json_text(value)}
    if isinstance(value, float):
        texts.add(json.dumps(value))
    return texts


def matches(cell: Any, sent: Any, column: str = "") -> bool:
    """Whether a cell read back holds the value sent (both plain Python, nulls as None).

    * null only for null;
    * the same value (:func:`same`: ``True != 1``, numbers only when exactly equal);
    * text: one of the value's :func:`exact_texts`, or for a list or an object
      its JSON text (``json.loads`` of it :func:`same` as the value);
    * a number or a boolean read from text: the text is one of the cell's
      exact texts (``"42"`` as 42; ``"042"``, ``" 42"``, ``"+5"``, ``"yes"`` never);
    * a timestamp: the text parses (UTC if naive) to the same instant;
    * ``cats``: a bare string sent is the list of that one string.
    """
    if column == "cats" and isinstance(sent, str):
        sent = [sent]
    if sent is None or cell is None:
        return sent is None and cell is None
    if same(cell, sent):
        return True
    if isinstance(cell, str):
        if cell in exact_texts(sent):
            return True
        if isinstance(sent, list | dict):
            try:
                return same(json.loads(cell), sent)
            except ValueError:
                return False
        return False
    if isinstance(cell, pd.Timestamp):
        return isinstance(sent, str) and _instant(sent) == cell
    if isinstance(cell, bool | int | float) and isinstance(sent, str):
        return sent in exact_texts(cell)
    return False


def same(a: Any, b: Any) -> bool:
    """Strict equality of JSON values: booleans never equal numbers, lists and objects deep."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b  # exact in Python, between ints and floats too
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a is None and b is None


def _instant(text: str) -> pd.Timestamp | None:
    try:
        stamp: Any = pd.Timestamp(text)
    except ValueError:
        return None
    if not isinstance(stamp, pd.Timestamp):  # NaT
        return None
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp


def plain(value: Any) -> Any:
    """A cell as a plain Python value: None for every null, lists for arrays, Timestamps."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.ndarray | list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dt.datetime):
        return pd.Timestamp(value)
    return value


def frame_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a DataFrame as ``{column: plain value}``."""
    columns = {str(name): [plain(v) for v in frame[name].tolist()] for name in frame.columns}
    return [{name: values[i] for name, values in columns.items()} for i in range(len(frame))]


def table_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of an Arrow table as ``{column: plain value}``."""
    return [{k: plain(v) for k, v in row.items()} for row in table.to_pylist()]


#: The pandas dtypes of the default ``dtype_backend``, by their names.
PANDAS_DTYPES = frozenset(
    {"string", "Int64", "Float64", "boolean", "datetime64[ms, UTC]", "object"}
)


def check_frame_dtypes(reader: str, frame: pd.DataFrame, *, objects_as_values: bool) -> None:
    """Every column in a documented dtype; ``object`` columns hold lists and dicts, not text.

    Args:
        reader: The reader's name, for the messages.
        frame: What it gave.
        objects_as_values: Whether lists and objects must be Python values
            (``read_profiles``, ``ProfilesRequest.frames``); ``pd.read_parquet``
            of a dataset gives their JSON text.
    """
    for name in frame.columns:
        dtype = str(frame[name].dtype)
        # pandas 3 reads text that pandas' metadata does not type as its default ``str``.
        allowed = PANDAS_DTYPES if objects_as_values else PANDAS_DTYPES | {"str"}
        assert dtype in allowed, f"{reader}: column {name!r} has dtype {dtype}"
        if dtype == "object" and objects_as_values:
            odd = [v for v in frame[name].tolist() if plain(v) is not None]
            odd = [v for v in odd if not isinstance(v, list | dict | np.ndarray)]
            assert not odd, f"{reader}: object column {name!r} holds {odd[:3]!r}"


def check_arrow_types(reader: str, schema: pa.Schema) -> None:
    """Every column of an Arrow output in a documented type (objects as JSON text)."""
    flat = {pa.large_string(), pa.string(), pa.int64(), pa.float64(), pa.bool_()}
    for field in schema:
        type_ = field.type
        if field.name == "cats":
            ok = pa.types.is_list(type_) and pa.types.is_string(type_.value_type)
        else:
            ok = type_ in flat or type_ == pa.timestamp("ms", "UTC")
        assert ok, f"{reader}: column {field.name!r} has type {type_}"


def check_stream(reader: str, schemas: Iterable[Mapping[str, str]]) -> None:
    """Page by page, a column never leaves and never changes type."""
    before: dict[str, str] = {}
    for page, types in enumerate(schemas):
        gone = sorted(set(before) - set(types))
        assert not gone, f"{reader}: page {page} lost columns {gone}"
        changed = {n: (before[n], t) for n, t in types.items() if before.setdefault(n, t) != t}
        assert not changed, f"{reader}: page {page} changed types {changed}"
