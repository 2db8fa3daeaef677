"""The kind of a field's values, in the words of ``databases/fields_get``."""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping

import pyarrow as pa

STRING, INT, FLOAT, BOOLEAN = "string", "int", "float", "boolean"
ARRAY, OBJECT, DATE = "array", "object", "date"


def json_kind(value: object) -> str | None:
    """The kind of a JSON value; ``None`` for null and for what JSON cannot hold.

    >>> [json_kind(v) for v in ("a", 1, 1.5, True, [1], {"a": 1}, None)]
    ['string', 'int', 'float', 'boolean', 'array', 'object', None]
    """
    if isinstance(value, Mapping):
        return OBJECT
    if isinstance(value, list | tuple):
        return ARRAY
    if isinstance(value, str):
        return STRING
    if isinstance(value, bool):  # before Integral: a bool is an int to Python
        return BOOLEAN
    if isinstance(value, numbers.Integral):
        return INT
    if isinstance(value, numbers.Real):
        return FLOAT
    return None


def arrow_kind(type_: pa.DataType) -> str | None:
    """The kind of an Arrow column of ``type_`` (``None``: all-null; non-JSON: ``object``)."""
    if pa.types.is_dictionary(type_):
        return arrow_kind(type_.value_type)
    if pa.types.is_null(type_):
        return None
    if pa.types.is_boolean(type_):
        return BOOLEAN
    if pa.types.is_integer(type_):
        return INT
    if pa.types.is_floating(type_):
        return FLOAT
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return STRING
    if isinstance(type_, pa.ListType | pa.LargeListType | pa.FixedSizeListType):
        return ARRAY
    return OBJECT


def mixed(kinds: Iterable[str | None]) -> bool:
    """Whether the kinds need one text column: more than one, other than int with float."""
    seen = set(kinds) - {None}
    return len(seen) > 1 and seen != {INT, FLOAT}


def common_kind(kinds: Iterable[str | None]) -> str | None:
    """One kind for ``kinds`` (``int`` with ``float`` is ``float``, any other mix ``string``).

    >>> common_kind(["int", None, "float"]), common_kind(["int", "string"])
    ('float', 'string')
    """
    seen = set(kinds) - {None}
    if not seen:
        return None
    if mixed(seen):
        return STRING
    return FLOAT if len(seen) > 1 else seen.pop()
