"""The columns of the flat profile frame: their kinds, and how a value becomes its kind.

Each column has a kind (``text``, ``int``, ``float``, ``bool``, ``time``,
``list``, ``object``). Here are the kind's Arrow type and pandas dtype, the
coercion of whatever JSON type the service sent into the kind's Arrow type
(settling the kind of a column whose pages disagree), and the tables the
frame is built from: which columns are fixed, the kind of each, which profile
key each comes from, and the order of the column roles. The shape of the frame
is stated once here, away from how pages are flattened
(:mod:`stoplist_nb.profiles.rows`) and merged
(:mod:`stoplist_nb.profiles.normalize`, which documents the columns for users);
:mod:`stoplist_nb.profiles.fields` takes the dtypes from here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb._json import kinds
from stoplist_nb._json.records import json_text

TEXT = pa.large_string()  # what pandas' string[pyarrow] holds
INT = pa.int64()
FLOAT = pa.float64()
BOOL = pa.bool_()
TIME = pa.timestamp("ms", "UTC")
TEXT_LIST = pa.list_(pa.string())

# An integer that fits int64 for sure; anything longer is garbage for an id or a priority.
_INT_TEXT = r"^\s*[+-]?\d{1,18}\s*$"
_TRUE = pa.array(["true", "1", "yes", "y", "t"])
_FALSE = pa.array(["false", "0", "no", "n", "f"])
ARROW_TYPES: dict[str, pa.DataType] = {
    "text": TEXT,
    "int": INT,
    "float": FLOAT,
    "bool": BOOL,
    "time": TIME,
    "list": TEXT_LIST,
}


def to_text(array: pa.Array) -> pa.Array:
    """Strings as they are; numbers and booleans as their JSON text; objects as JSON."""
    type_ = array.type
    if pa.types.is_large_string(type_):
        return array
    if pa.types.is_dictionary(type_):
        return to_text(array.dictionary_decode())
    if pa.types.is_null(type_):
        return pa.nulls(len(array), TEXT)
    if pa.types.is_string(type_) or pa.types.is_integer(type_) or pa.types.is_boolean(type_):
        return array.cast(TEXT)
    if pa.types.is_floating(type_):
        # A phone or an id sent as 79001234567.0 must read "79001234567", not "7.9e+10".
        array = array.cast(FLOAT)
        whole = array.cast(INT, safe=False)
        integral = pc.and_(
            pc.equal(whole.cast(FLOAT, safe=False), array), pc.less_equal(pc.abs(array), 2.0**53)
        )
        return pc.if_else(integral, whole.cast(TEXT), array.cast(TEXT))
    return pa.array([None if v is None else json_text(v) for v in array.to_pylist()], TEXT)


def to_int(array: pa.Array) -> pa.Array:
    """Integers; integral floats and integer strings converted; anything else null."""
    type_ = array.type
    if pa.types.is_int64(type_):
        return array
    if pa.types.is_integer(type_):
        try:
            return array.cast(INT)
        except pa.ArrowInvalid:
            return to_int(to_text(array))
    if pa.types.is_floating(type_):
        array = array.cast(FLOAT)
        ok = pc.and_(pc.equal(pc.floor(array), array), pc.less(pc.abs(array), 2.0**63))
        return pc.if_else(ok, array, pa.scalar(None, FLOAT)).cast(INT)
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        text = array.cast(TEXT)
        ok = pc.match_substring_regex(text, _INT_TEXT)
        digits = pc.utf8_ltrim(pc.utf8_trim_whitespace(text), characters="+")
        return pc.if_else(ok, digits, pa.scalar(None, TEXT)).cast(INT)
    if pa.types.is_dictionary(type_):
        return to_int(array.dictionary_decode())
    return pa.nulls(len(array), INT)


def to_bool(array: pa.Array) -> pa.Array:
    """Booleans; numbers as ``!= 0``; "true"/"false"-like strings parsed; else null."""
    type_ = array.type
    if pa.types.is_boolean(type_):
        return array
    if pa.types.is_integer(type_) or pa.types.is_floating(type_):
        return pc.not_equal(array, 0)
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        word = pc.utf8_lower(pc.utf8_trim_whitespace(array.cast(TEXT)))
        no = pc.if_else(pc.is_in(word, value_set=_FALSE), False, pa.scalar(None, BOOL))
        return pc.if_else(pc.is_in(word, value_set=_TRUE), True, no)
    if pa.types.is_dictionary(type_):
        return to_bool(array.dictionary_decode())
    return pa.nulls(len(array), BOOL)


def to_time(array: pa.Array) -> pa.Array:
    """UTC timestamps (ms) from ISO 8601 strings; an unparseable value becomes null."""
    type_ = array.type
    if type_ == TIME:
        return array
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        try:
            # Through "us": "ms" refuses finer fractions, "ns" stops at year 2262.
            return array.cast(pa.timestamp("us", "UTC")).cast(TIME, safe=False)
        except pa.ArrowInvalid:
            return _time_from_pandas(array)
    if pa.types.is_timestamp(type_):
        if type_.tz is None:
            array = pc.assume_timezone(array, "UTC")
        return array.cast(TIME, safe=False)
    if pa.types.is_dictionary(type_):
        return to_time(array.dictionary_decode())
    return pa.nulls(len(array), TIME)


def _time_from_pandas(array: pa.Array) -> pa.Array:
    # Only when Arrow refused some value: pandas parses what it can and leaves NaT.
    text = pd.Series(array.to_pylist(), dtype=object)
    parsed = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
    return pa.Array.from_pandas(parsed.dt.as_unit("ms")).cast(TIME)


def to_text_list(array: pa.Array) -> pa.Array:
    """Lists of strings; a single value becomes a one-element list."""
    type_ = array.type
    if type_ == TEXT_LIST:
        return array
    if pa.types.is_null(type_):
        return pa.nulls(len(array), TEXT_LIST)
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        try:
            return array.cast(TEXT_LIST)
        except pa.ArrowException:
            pass
    rows = [v if v is None or isinstance(v, list) else [v] for v in array.to_pylist()]
    return pa.array(
        [None if v is None else [None if x is None else json_text(x) for x in v] for v in rows],
        TEXT_LIST,
    )


CONVERTERS: dict[str, Callable[[pa.Array], pa.Array]] = {
    "text": to_text,
    "int": to_int,
    "bool": to_bool,
    "time": to_time,
    "list": to_text_list,
}


# The column kind that holds each value kind (stoplist_nb._json.kinds). Arrays
# and objects stay Python values, as returned: no column type fits them all.
_COLUMN_KIND = {
    kinds.STRING: "text",
    kinds.INT: "int",
    kinds.FLOAT: "float",
    kinds.BOOLEAN: "bool",
    kinds.ARRAY: "object",
    kinds.OBJECT: "object",
}


def unify(chunks: Sequence[pa.Array | int]) -> tuple[str, list[pa.Array]]:
    """One kind for a dynamic column's pages (an int is a page without it: its length).

    The pages' value kinds meet by :func:`~stoplist_nb._json.kinds.common_kind`:
    pages that disagree (int on one, string or an object on another) turn text;
    a page where the column is all null does not take part in the choice, and a
    column null on every page is ``object``.
    """
    common = kinds.common_kind(kinds.arrow_kind(c.type) for c in chunks if isinstance(c, pa.Array))
    kind = "object" if common is None else _COLUMN_KIND[common]
    convert = CONVERTERS.get(kind, _as_float if kind == "float" else _as_is)
    out = []
    for chunk in chunks:
        if isinstance(chunk, int):
            out.append(pa.nulls(chunk, pa.null() if kind == "object" else ARROW_TYPES[kind]))
        elif kind == "object" or not pa.types.is_null(chunk.type):
            out.append(convert(chunk))
        else:
            out.append(pa.nulls(len(chunk), ARROW_TYPES[kind]))
    return kind, out


def _as_float(array: pa.Array) -> pa.Array:
    return array.cast(FLOAT)


def _as_is(array: pa.Array) -> pa.Array:
    return array


def object_values(chunks: Sequence[pa.Array]) -> np.ndarray:
    """The Python values of Arrow chunks as a 1-D object array (dicts and lists kept)."""
    count = sum(len(c) for c in chunks)
    values = (v for c in chunks for v in c.to_pylist())
    return np.fromiter(values, dtype=object, count=count)


def to_json(array: pa.Array) -> pa.Array:
    """Every value as its JSON text (a string too: ``"a"`` becomes ``'"a"'``)."""
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), TEXT)
    return pa.array([None if v is None else json_text(v) for v in array.to_pylist()], TEXT)


#: The ``dtype_backend`` values the readers take, as in ``pandas.read_parquet``.
DTYPE_BACKENDS = (None, "numpy_nullable", "pyarrow")


def arrow_type(kind: str) -> pa.DataType:
    """The Arrow type of a column of ``kind`` in Arrow output: objects are JSON text there."""
    return TEXT if kind == "object" else ARROW_TYPES[kind]


def arrow_chunks(kind: str, chunks: Sequence[pa.Array]) -> list[pa.Array]:
    """Chunks of a column of ``kind`` in their Arrow output type (see :func:`arrow_type`)."""
    if kind != "object":
        return list(chunks)
    return [c if c.type == TEXT else to_json(c) for c in chunks]


def kind_dtype(kind: str, backend: str | None) -> Any:
    """The pandas dtype of a column of ``kind`` under a ``dtype_backend``."""
    if backend == "pyarrow":
        return pd.ArrowDtype(arrow_type(kind))
    return KIND_DTYPES[kind]


def settle(pieces: Sequence[pa.Array | int], kind: str | None) -> tuple[str, list[pa.Array]]:
    """A column's kind and its pages in that kind's Arrow type (an int is a page without it).

    Args:
        pieces: The column's Arrow chunks, page by page.
        kind: The column's kind if it is fixed; None lets :func:`unify` choose.
    """
    if kind is None:
        return unify(pieces)
    convert, type_ = CONVERTERS[kind], ARROW_TYPES[kind]
    return kind, [pa.nulls(p, type_) if isinstance(p, int) else convert(p) for p in pieces]


def to_arrow(kind: str, chunks: Sequence[pa.Array]) -> pa.ChunkedArray:
    """A settled column (see :func:`settle`) in its Arrow output type (:func:`arrow_type`)."""
    return pa.chunked_array(arrow_chunks(kind, chunks), arrow_type(kind))


def to_pandas(kind: str, chunks: Sequence[pa.Array], backend: str | None) -> Any:
    """A settled column (see :func:`settle`) as a pandas array under a ``dtype_backend``."""
    if backend == "pyarrow":
        return pd.arrays.ArrowExtensionArray(to_arrow(kind, chunks))
    if KIND_DTYPES[kind] is object:
        return object_values(chunks)
    chunked = pa.chunked_array(chunks, type=ARROW_TYPES[kind])
    if kind == "time":
        return chunked.to_pandas().array
    return KIND_DTYPES[kind].__from_arrow__(chunked)


_TEXT_BLOCKS = ["email", "email_md5", "email_domain", "email_domain_group", "phone", "phone_md5"]
#: Kind of each fixed column, in column order; the kind decides coercion and dtype.
KINDS: dict[str, str] = {
    **dict.fromkeys(["profile_id", "channel", "status", "hash_id"], "text"),
    **dict.fromkeys(["priority", "resource_id"], "int"),
    "is_delete": "bool",
    "reg_date": "time",
    **dict.fromkeys(["reg_ip", *_TEXT_BLOCKS, "push_provider", "push_subscription_id"], "text"),
    "cats": "list",
}
#: The pandas dtype of each kind under the default ``dtype_backend``: fixed
#: columns and dynamic ones alike. Lists and objects are Python values, so that
#: such a frame goes through ``to_parquet`` and back with plain pandas.
KIND_DTYPES: dict[str, Any] = {
    "text": pd.StringDtype("pyarrow"),
    "int": pd.Int64Dtype(),
    "float": pd.Float64Dtype(),
    "bool": pd.BooleanDtype(),
    "time": pd.DatetimeTZDtype("ms", "UTC"),
    "list": object,
    "object": object,
}
#: dtype of each fixed column.
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
SUBSCRIPTIONS, CUSTOM, CATS = "subscriptions", "custom_fields", "cats"
# Roles order the columns; the paging code hands tables back with them as metadata.
ROLES = ("id", "profile", "fixed", "block", "extra", "cf", "cats")


def role_of(name: str) -> str:
    """The role of a column from its name alone, for tables built without the layout."""
    if name == "profile_id":
        return "id"
    if name in KINDS:
        return "cats" if name == "cats" else "fixed"
    if name.startswith("cf."):
        return "cf"
    return "block" if "." in name and not name.startswith("profile.") else "profile"
