"""The columns of the flat profile frame: their kinds, names, and how a value joins its kind.

Each column has a kind of :mod:`stoplist_nb._json.kinds`, with an Arrow type
and a pandas dtype; :func:`fit` lets a value join a column only as itself.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb._json import kinds, mixed
from stoplist_nb._json.records import json_text

TEXT = pa.large_string()  # what pandas' string[pyarrow] holds
INT = pa.int64()
FLOAT = pa.float64()
BOOL = pa.bool_()
TIME = pa.timestamp("ms", "UTC")
TEXT_LIST = pa.list_(pa.string())

# The text of an integer exactly as JSON writes it, short enough for int64 for sure.
_INT_TEXT = r"^(0|-?[1-9][0-9]{0,17})$"
_EXACT = 2.0**53  # the largest magnitude below which a float64 holds every integer
ARROW_TYPES: dict[str, pa.DataType] = {kinds.STRING: TEXT, kinds.INT: INT, kinds.FLOAT: FLOAT,
                                        kinds.BOOLEAN: BOOL, kinds.DATE: TIME,
                                        kinds.ARRAY: TEXT_LIST}  # fmt: skip


def to_text(array: pa.Array) -> pa.Array:
    """Every value as its exact text (:func:`~stoplist_nb._json.records.json_text`).

    Floats value by value, as Python writes them: Arrow's own text differs (``1e-7``).
    """
    type_ = array.type
    if pa.types.is_large_string(type_):
        return array
    if pa.types.is_dictionary(type_):
        return to_text(array.dictionary_decode())
    if pa.types.is_null(type_):
        return pa.nulls(len(array), TEXT)
    if pa.types.is_string(type_) or pa.types.is_integer(type_) or pa.types.is_boolean(type_):
        return array.cast(TEXT)
    values = mixed.values(array) if mixed.is_json(type_) else array.to_pylist()
    return pa.array([None if v is None else json_text(v) for v in values], TEXT)


def value_kinds(array: pa.Array) -> set[str]:
    """The value kinds (:mod:`~stoplist_nb._json.kinds`) an array holds; empty when all null."""
    if mixed.is_json(array.type):
        return {k for k in map(kinds.json_kind, mixed.values(array)) if k is not None}
    kind = kinds.arrow_kind(array.type)
    return set() if kind is None or array.null_count == len(array) else {kind}


def fit(kind: str, array: pa.Array) -> tuple[pa.Array, pa.Array | None]:
    """``array`` in a column of ``kind``, each value kept exactly; and the text of the rest.

    A value joins only as the same value (the guide's "One value, one truth");
    any other is null there, its text in the rest (``None`` when all fit).

    >>> value, rest = fit("int", pa.array(["42", "010025", None]))
    >>> value.to_pylist(), rest.to_pylist()
    ([42, None, None], [None, '010025', None])
    """
    if kind == kinds.STRING:
        return to_text(array), None
    if mixed.is_json(array.type):
        value = _fit_values(kind, array)
    else:
        value = _fit_arrow(kind, array, kinds.arrow_kind(array.type))
    # A null stays null in every kind, so the values lost are the nulls gained.
    if value.null_count == array.null_count:
        return value, None
    lost = pc.and_(array.is_valid(), value.is_null())
    return value, pc.if_else(lost, to_text(array), pa.scalar(None, TEXT))


def nulls(kind: str, length: int) -> pa.Array:
    return pa.nulls(length, pa.null() if kind == kinds.OBJECT else ARROW_TYPES[kind])


def _fit_arrow(kind: str, array: pa.Array, has: str | None) -> pa.Array:
    """``array``, of value kind ``has``, in a column of ``kind``: null where not the same value."""
    type_ = array.type
    if (
        type_ == ARROW_TYPES[kind] if kind != kinds.OBJECT else has in (kinds.ARRAY, kinds.OBJECT)
    ) or has == kind == kinds.BOOLEAN:
        return array
    if kind == kinds.INT:
        if has == kinds.INT:
            if pa.types.is_uint64(type_):
                array = pc.if_else(pc.less_equal(array, 2**63 - 1), array, pa.scalar(None, type_))
            return array.cast(INT)
        if has == kinds.FLOAT:
            array = array.cast(FLOAT)
            ok = pc.and_(pc.equal(pc.floor(array), array), pc.less_equal(pc.abs(array), _EXACT))
            return pc.if_else(ok, array, pa.scalar(None, FLOAT)).cast(INT)
        if has == kinds.STRING:
            text = array.cast(TEXT)
            ok = pc.match_substring_regex(text, _INT_TEXT)
            return pc.if_else(ok, text, pa.scalar(None, TEXT)).cast(INT)
    elif kind == kinds.FLOAT:
        if has == kinds.FLOAT:
            return array.cast(FLOAT)
        if has == kinds.INT:
            # Past 2**53 a double holds a neighbour of the integer, not the integer.
            ok = pc.less_equal(array, 2**53)
            if not pa.types.is_unsigned_integer(type_):
                ok = pc.and_(ok, pc.greater_equal(array, -(2**53)))
            return pc.if_else(ok, array, pa.scalar(None, type_)).cast(FLOAT)
    elif kind == kinds.BOOLEAN and has == kinds.STRING:
        text = array.cast(TEXT)
        word = pc.if_else(pc.is_in(text, value_set=_TRUE_FALSE), text, pa.scalar(None, TEXT))
        return pc.equal(word, "true")
    elif kind == kinds.DATE:
        if pa.types.is_timestamp(type_):
            if type_.tz is None:
                array = pc.assume_timezone(array, "UTC")
            return _whole_ms(array.cast(pa.timestamp(type_.unit, "UTC")))
        if has == kinds.STRING:
            try:
                # Through "us": "ms" refuses finer fractions, "ns" stops at year 2262.
                parsed = array.cast(pa.timestamp("us", "UTC"))
            except pa.ArrowInvalid:  # pandas parses what it can and leaves NaT
                text = pd.Series(array.to_pylist(), dtype=object)
                dates = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
                parsed = pa.Array.from_pandas(dates.dt.as_unit("us")).cast(
                    pa.timestamp("us", "UTC")
                )
            return _whole_ms(parsed)
    elif kind == kinds.ARRAY:
        if has == kinds.ARRAY and not pa.types.is_fixed_size_list(type_):
            item = type_.value_type
            if pa.types.is_string(item) or pa.types.is_large_string(item) or pa.types.is_null(item):
                return array.cast(TEXT_LIST)
        if has == kinds.STRING:
            # A bare string where the docs promise an array: the one-item list.
            offsets = pa.array(range(len(array) + 1), pa.int32())
            return pa.ListArray.from_arrays(offsets, array.cast(pa.string()), mask=array.is_null())
    return nulls(kind, len(array))


_TRUE_FALSE = pa.array(["true", "false"])


def _whole_ms(array: pa.Array) -> pa.Array:
    with contextlib.suppress(pa.ArrowInvalid):
        return array.cast(TIME)  # a safe cast: it refuses to cut a fraction off
    ms = array.cast(TIME, safe=False)
    exact = pc.equal(ms.cast(array.type), array)
    return pc.if_else(exact, ms, pa.scalar(None, TIME))


def _fit_values(kind: str, array: pa.Array) -> pa.Array:
    decoded = mixed.values(array)
    if kind == kinds.OBJECT:
        keep = [kinds.json_kind(v) in (kinds.ARRAY, kinds.OBJECT) for v in decoded]
        storage = pc.if_else(pa.array(keep), array.storage, pa.scalar(None, TEXT))
        return mixed.json_array(storage)
    if kind == kinds.ARRAY:
        lists = [[v] if isinstance(v, str) else v if _text_list(v) else None for v in decoded]
        return pa.array(lists, TEXT_LIST)
    # One kind of value at a time through the vectorized rules above.
    out = pa.nulls(len(array), ARROW_TYPES[kind])
    for value_kind in {kinds.json_kind(v) for v in decoded} - {None, kinds.ARRAY, kinds.OBJECT}:
        # An integer no int64 holds fits no column but text: left out, so it is lost here.
        only = pa.array(
            [v if kinds.json_kind(v) == value_kind and _arrow_holds(v) else None for v in decoded]
        )
        fitted = _fit_arrow(kind, only, value_kind)
        out = pc.if_else(only.is_valid(), fitted, out)
    return out


def _arrow_holds(value: object) -> bool:
    return not isinstance(value, int) or -(2**63) <= value < 2**63


def _text_list(value: object) -> bool:
    return isinstance(value, list) and all(v is None or isinstance(v, str) for v in value)


def unify(chunks: Sequence[pa.Array | int]) -> tuple[str, list[pa.Array]]:
    """One kind for a dynamic column's pages (an int is a page without it: its length).

    The kinds meet by :func:`~stoplist_nb._json.kinds.common_kind`; a value
    that does not :func:`fit` turns the column text.
    """
    arrays = [c for c in chunks if isinstance(c, pa.Array)]
    common = kinds.common_kind(k for c in arrays for k in value_kinds(c))
    # Arrays and objects stay Python values, as returned: no column type fits them all.
    kind = kinds.OBJECT if common in (None, kinds.ARRAY, kinds.OBJECT) else common
    out: list[pa.Array] = []
    for chunk in chunks:
        if isinstance(chunk, int):
            out.append(nulls(kind, chunk))
            continue
        value, rest = fit(kind, chunk) if kind != kinds.OBJECT or common else (chunk, None)
        if rest is not None:
            return kinds.STRING, [
                nulls(kinds.STRING, c) if isinstance(c, int) else to_text(c) for c in chunks
            ]
        out.append(value)
    return kind, out


def object_values(chunks: Sequence[pa.Array]) -> np.ndarray:
    count = sum(len(c) for c in chunks)
    values = (v for c in chunks for v in c.to_pylist())
    return np.fromiter(values, dtype=object, count=count)


#: The ``dtype_backend`` values the readers take, as in ``pandas.read_parquet``.
DTYPE_BACKENDS = (None, "numpy_nullable", "pyarrow")


def arrow_type(kind: str) -> pa.DataType:
    """The Arrow type of a column of ``kind``: objects are JSON text."""
    return TEXT if kind == kinds.OBJECT else ARROW_TYPES[kind]


def arrow_chunks(kind: str, chunks: Sequence[pa.Array]) -> list[pa.Array]:
    if kind != kinds.OBJECT:
        return list(chunks)
    # Every value as its JSON text (a string too: "a" becomes '"a"').
    return [
        c
        if c.type == TEXT
        else pa.array([None if v is None else json_text(v) for v in c.to_pylist()], TEXT)
        for c in chunks
    ]


def to_pandas(
    kind: str,
    chunks: Sequence[pa.Array],
    backend: str | None,
    objects: Sequence[np.ndarray] | None = None,
) -> Any:
    """A settled column as a pandas array; ``objects``: its Python values, made beforehand."""
    if backend == "pyarrow":
        return pd.arrays.ArrowExtensionArray(
            pa.chunked_array(arrow_chunks(kind, chunks), arrow_type(kind))
        )
    if KIND_DTYPES[kind] is object:
        return np.concatenate(objects) if objects else object_values(chunks)
    chunked = pa.chunked_array(chunks, type=ARROW_TYPES[kind])
    if kind == kinds.DATE:
        return chunked.to_pandas().array
    return KIND_DTYPES[kind].__from_arrow__(chunked)


_TEXT_BLOCKS = ["email", "email_md5", "email_domain", "email_domain_group", "phone", "phone_md5"]
#: Kind of each fixed column, in column order; the kind decides coercion and dtype.
KINDS: dict[str, str] = {
    **dict.fromkeys(["profile_id", "channel", "status", "hash_id"], kinds.STRING),
    **dict.fromkeys(["priority", "resource_id"], kinds.INT),
    "is_delete": kinds.BOOLEAN,
    "reg_date": kinds.DATE,
    **dict.fromkeys(
        ["reg_ip", *_TEXT_BLOCKS, "push_provider", "push_subscription_id"], kinds.STRING
    ),
    "cats": kinds.ARRAY,
}
#: The pandas dtype of each kind under the default ``dtype_backend`` (lists, objects: Python).
KIND_DTYPES: dict[str, Any] = {
    kinds.STRING: pd.StringDtype("pyarrow"),
    kinds.INT: pd.Int64Dtype(),
    kinds.FLOAT: pd.Float64Dtype(),
    kinds.BOOLEAN: pd.BooleanDtype(),
    kinds.DATE: pd.DatetimeTZDtype("ms", "UTC"),
    kinds.ARRAY: object,
    kinds.OBJECT: object,
}
DTYPES: dict[str, Any] = {name: KIND_DTYPES[kind] for name, kind in KINDS.items()}
PROFILE_COLUMNS: tuple[str, ...] = ("profile_id",)
SUBSCRIPTION_COLUMNS: tuple[str, ...] = tuple(n for n in KINDS if n not in {"profile_id", "cats"})
#: Subscription columns every channel has (``split_channels`` keeps them all).
COMMON_COLUMNS: tuple[str, ...] = (*SUBSCRIPTION_COLUMNS[:8], "cats")

SCALARS = frozenset(SUBSCRIPTION_COLUMNS[:6])
BLOCKS: dict[str, dict[str, str]] = {
    "reg_info": {"date": "reg_date", "ip": "reg_ip"},
    "email_data": {
        "email": "email",
        "md5": "email_md5",
        "domain": "email_domain",
        "domain_group": "email_domain_group",
    },
    "phone_data": {"phone": "phone", "md5": "phone_md5"},
    "push_data": {"provider": "push_provider", "subscription_id": "push_subscription_id"},
}
ID_KEYS = ("id", "_id")
#: Fixed columns also taken from ``cc_data``, where messengers keep the contact.
CONTACTS, CONTACT_BLOCK = ("email", "phone"), "cc_data"
SUBSCRIPTIONS, CUSTOM, CATS = "subscriptions", "custom_fields", "cats"
# Roles order the columns; the paging code hands tables back with them as metadata.
ROLES = ("id", "profile", "fixed", "block", "extra", "cf", "cats")


#: Appended to a column's name to name the column of the values that do not fit it.
TWIN_SUFFIX = "__text"
# A field whose name ends so would take a twin's name: it gets one more "_".
_TWIN_LIKE = re.compile(r"__text_*$")
# Blocks whose "<block>.<key>" would fall in another role's names.
_SPOKEN_FOR = frozenset({"profile", "subscription", "cf"})


def own_name(name: str) -> str:
    return name + "_" if _TWIN_LIKE.search(name) else name


def profile_column(key: str) -> str:
    """``key``, or ``profile.<key>`` for a name a subscription column could have."""
    if "." in key or key in KINDS:
        key = "profile." + key
    return own_name(key)


def block_column(block: str, key: str) -> str:
    if block == CUSTOM:
        return own_name(f"cf.{key}")
    if block in _SPOKEN_FOR:
        return own_name(f"subscription.{block}.{key}")
    return own_name(f"{block}.{key}")


def role_of(name: str) -> str:
    """The role of a column from its name alone."""
    if name == "profile_id":
        return "id"
    if name in KINDS:
        return "cats" if name == "cats" else "fixed"
    if name.startswith("cf."):
        return "cf"
    if name.startswith("subscription.") and name.count(".") == 1:
        return "extra"
    return "block" if "." in name and not name.startswith("profile.") else "profile"
