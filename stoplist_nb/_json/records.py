"""Python records as Arrow arrays, for replies pyarrow.json cannot take (keys in first-seen order).

A leaf of varying JSON type, or of numbers a float64 would round, is a
:data:`~stoplist_nb._json.mixed.JSON` leaf.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb._json.kinds import ARRAY, FLOAT, INT, OBJECT, json_kind, mixed
from stoplist_nb._json.mixed import encode, json_array
from stoplist_nb._json.nesting import MAX_DEPTH
from stoplist_nb.errors import InvalidInput

_INT64 = (-(2**63), 2**63 - 1)
_Path = tuple[object, ...]  # keys, and _ITEM for a list's elements
_EXACT = 2**53  # the largest magnitude below which a float64 holds every integer


def records_to_arrow(records: Sequence[Mapping[str, Any]]) -> pa.Array:
    """Convert JSON-like dicts to a StructArray (``InvalidInput``: not for Arrow, or too deep)."""
    values: list[Any] = list(records)
    # pa.array takes some mixes without a word (false beside 2.5 reads 0.0): kinds come first.
    kinds: dict[_Path, set[str]] = {}
    orders: dict[_Path, dict[str, None]] | None = {} if _SORTS_KEYS else None
    for value in values:
        _collect(value, (), kinds, orders)
    needs = {path for path, seen in kinds.items() if _needs_text(seen)}
    # The outermost of them: one JSON value holds the rest.
    textual = {p for p in needs if not any(p[:i] in needs for i in range(len(p)))}
    if textual:
        prefixes = {path[:i] for path in textual for i in range(len(path) + 1)}
        values = [_as_text_at(value, (), textual, prefixes) for value in values]
    try:
        array = pa.array(values)
    except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
        raise InvalidInput(f"records cannot be converted to Arrow: {exc}") from None
    if textual or orders is not None:
        array = _rebuilt(array, (), orders, textual)
    return array


# Older pyarrow sorts inferred struct keys; pyarrow.json keeps first-seen order, as must we.
_SORTS_KEYS = pa.array([{"b": 0, "a": 0}]).type.field(0).name != "b"


def _rebuilt(
    array: pa.Array, path: _Path, orders: dict[Any, Any] | None, textual: set[_Path]
) -> pa.Array:
    # array with its struct keys in first-seen order and its textual leaves as JSON
    type_ = array.type
    if path in textual:
        return json_array(array)
    if pa.types.is_struct(type_) and type_.num_fields:
        present = [type_.field(i).name for i in range(type_.num_fields)]
        names = [n for n in (orders or {}).get(path, ()) if n in present]
        names += [n for n in present if n not in names]
        children = [_rebuilt(array.field(n), (*path, n), orders, textual) for n in names]
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, names=names, mask=mask)
    if pa.types.is_list(type_):
        values = _rebuilt(array.values, (*path, _ITEM), orders, textual)
        buffers = array.buffers()[:2]
        return pa.Array.from_buffers(
            pa.list_(values.type), len(array), buffers, offset=array.offset, children=[values]
        )
    return array


def exact_floats(array: pa.Array) -> bool:
    """Whether every float in ``array`` is below 2**53 (above, it may be a rounded int)."""
    type_ = array.type  # nested at most MAX_DEPTH levels: the reply's depth was checked
    if pa.types.is_floating(type_):
        largest = pc.max(pc.abs(array)).as_py() if len(array) > array.null_count else None
        return largest is None or largest < _EXACT  # NaN is not exact
    if pa.types.is_struct(type_):
        return all(exact_floats(array.field(i)) for i in range(type_.num_fields))
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return exact_floats(array.values)
    return True


# "wide": an int a float64 would round; "big": one no int64 holds (both int when mixed).
_WIDE, _BIG = "wide", "big"


def _needs_text(seen: set[str]) -> bool:
    ints = {INT if kind in (_WIDE, _BIG) else kind for kind in seen}
    return _BIG in seen or {_WIDE, FLOAT} <= seen or mixed(ints)


def _kind(value: object) -> str:
    kind = json_kind(value)
    if kind is None:  # not a JSON value: two such types are two kinds
        return f"other:{type(value).__name__}"
    if kind == INT:
        number = int(value)  # type: ignore[call-overload]
        if not _INT64[0] <= number <= _INT64[1]:
            return _BIG
        return INT if -_EXACT <= number <= _EXACT else _WIDE
    return kind


_ITEM = object()  # path step into a list's elements; never equal to a key


def _collect(
    value: object, path: _Path, kinds: dict[Any, set[str]], orders: dict[Any, Any] | None
) -> None:
    # the kinds at each path under value and, with orders, the first-seen order of its keys
    if value is None:
        return
    kind = _kind(value)
    kinds.setdefault(path, set()).add(kind)
    # The list of records is a level, and each record one more.
    if kind in (OBJECT, ARRAY) and len(path) + 2 > MAX_DEPTH:
        raise InvalidInput(
            f"records nest more than {MAX_DEPTH} levels deep (or contain themselves)"
        )
    if kind == OBJECT:
        assert isinstance(value, Mapping)
        keys = orders.setdefault(path, {}) if orders is not None else {}
        for key, item in value.items():
            keys.setdefault(key)
            _collect(item, (*path, key), kinds, orders)
    elif kind == ARRAY:
        assert isinstance(value, list | tuple)
        for item in value:
            _collect(item, (*path, _ITEM), kinds, orders)


def _as_text_at(value: object, path: _Path, textual: set[Any], prefixes: set[Any]) -> object:
    if value is None or path not in prefixes:
        return value
    if path in textual:
        return encode(value)
    if isinstance(value, Mapping):
        return {k: _as_text_at(v, (*path, k), textual, prefixes) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_text_at(v, (*path, _ITEM), textual, prefixes) for v in value]
    return value


def json_text(value: object) -> str:
    """The JSON text of a value, strings as they are (``2 -> "2"``, ``True -> "true"``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) <= _EXACT:
        # As it was sent (2.0 -> "2"); beyond 2**53 a float may not be the integer it reads as.
        return str(int(value))
    return encode(value)
