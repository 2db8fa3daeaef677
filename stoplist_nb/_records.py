"""Python records (dicts and lists) as Arrow arrays, for replies pyarrow.json cannot take.

Pure: no I/O. A leaf whose JSON type varies becomes text, and struct fields
keep the order in which their keys were first seen, as the pyarrow.json route
gives them, so that both routes make the same columns.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from stoplist_nb.errors import InvalidInput

__all__ = ["json_text", "records_to_arrow"]

_INT64 = (-(2**63), 2**63 - 1)


def records_to_arrow(records: Sequence[Mapping[str, Any]]) -> pa.Array:
    """Convert a list of JSON-like dicts to an Arrow StructArray.

    A leaf whose JSON type varies between records (``2`` in one, ``"2"`` in
    another) becomes a string leaf holding the JSON text of each value.

    Raises:
        InvalidInput: The records hold values Arrow cannot represent.
    """
    values: list[Any] = list(records)
    try:
        array = pa.array(values)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        kinds: dict[tuple[object, ...], set[str]] = {}
        for value in values:
            _collect_kinds(value, (), kinds)
        textual = {path for path, seen in kinds.items() if len(seen) > 1 or "big" in seen}
        prefixes = {path[:i] for path in textual for i in range(len(path) + 1)}
        values = [_as_text_at(value, (), textual, prefixes) for value in values]
        try:
            array = pa.array(values)
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
            raise InvalidInput(f"records cannot be converted to Arrow: {exc}") from None
    if _SORTS_KEYS:
        orders: dict[tuple[object, ...], dict[str, None]] = {}
        for value in values:
            _collect_key_order(value, (), orders)
        array = _in_key_order(array, (), orders)
    return array


# Older pyarrow sorts the keys of inferred structs; pyarrow.json keeps them in
# first-seen order, and so must the dict route, for the same columns in both.
_SORTS_KEYS = pa.array([{"b": 0, "a": 0}]).type.field(0).name != "b"


def _collect_key_order(
    value: object, path: tuple[object, ...], orders: dict[Any, dict[str, None]]
) -> None:
    if isinstance(value, Mapping):
        keys = orders.setdefault(path, {})
        for key, item in value.items():
            keys.setdefault(key)
            _collect_key_order(item, (*path, key), orders)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect_key_order(item, (*path, _ITEM), orders)


def _in_key_order(array: pa.Array, path: tuple[object, ...], orders: dict[Any, Any]) -> pa.Array:
    type_ = array.type
    if pa.types.is_struct(type_) and type_.num_fields:
        present = [type_.field(i).name for i in range(type_.num_fields)]
        names = [n for n in orders.get(path, ()) if n in present]
        names += [n for n in present if n not in names]
        children = [_in_key_order(array.field(n), (*path, n), orders) for n in names]
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, names=names, mask=mask)
    if pa.types.is_list(type_):
        values = _in_key_order(array.values, (*path, _ITEM), orders)
        return pa.Array.from_buffers(
            pa.list_(values.type),
            len(array),
            array.buffers()[:2],
            offset=array.offset,
            children=[values],
        )
    return array


def _kind(value: object) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, numbers.Integral):
        return "number" if _INT64[0] <= int(value) <= _INT64[1] else "big"
    if isinstance(value, numbers.Real):
        return "number"
    return f"other:{type(value).__name__}"


_ITEM = object()  # path step into a list's elements; never equal to a key


def _collect_kinds(value: object, path: tuple[object, ...], kinds: dict[Any, set[str]]) -> None:
    if value is None:
        return
    kind = _kind(value)
    kinds.setdefault(path, set()).add(kind)
    if kind == "object":
        assert isinstance(value, Mapping)
        for key, item in value.items():
            _collect_kinds(item, (*path, key), kinds)
    elif kind == "list":
        assert isinstance(value, list | tuple)
        for item in value:
            _collect_kinds(item, (*path, _ITEM), kinds)


def _as_text_at(
    value: object, path: tuple[object, ...], textual: set[Any], prefixes: set[Any]
) -> object:
    if value is None or path not in prefixes:
        return value
    if path in textual:
        return json_text(value)
    if isinstance(value, Mapping):
        return {k: _as_text_at(v, (*path, k), textual, prefixes) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_text_at(v, (*path, _ITEM), textual, prefixes) for v in value]
    return value


def json_text(value: object) -> str:
    """The JSON text of a value, strings as they are (``2 -> "2"``, ``True -> "true"``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        # Same text as an integral float cast to string elsewhere: 2.0 -> "2".
        return str(int(value))
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
