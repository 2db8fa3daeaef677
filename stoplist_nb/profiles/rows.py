"""Rows of a flattened page: its subscription lists exploded with Arrow and numpy, no loop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb.errors import InvalidInput


@dataclass(frozen=True)
class Rows:
    """How one page becomes one row per subscription (each ``None``: the trivial case).

    ``profile_take``: each row's profile; ``subs``: every subscription;
    ``sub_valid``: whether each row holds one.
    """

    count: int
    profile_take: pa.Array | None
    subs: pa.StructArray | None
    sub_valid: np.ndarray | None = None


def as_struct_array(data: Any) -> pa.StructArray:
    """Check that ``data`` is an Arrow array of objects and return it as one array."""
    if isinstance(data, pa.ChunkedArray):
        data = data.combine_chunks()
    if not isinstance(data, pa.Array):
        raise InvalidInput(
            "profiles must be a list of dicts or a pyarrow array of structs, "
            f"not {type(data).__name__}"
        )
    if isinstance(data, pa.ExtensionArray):
        data = data.storage
    if pa.types.is_null(data.type) and len(data) == 0:
        return pa.array([], pa.struct([]))
    if not pa.types.is_struct(data.type):
        raise InvalidInput(f"each profile must be an object, got Arrow type {data.type}")
    if data.null_count:
        first = pc.index(data.is_null(), True).as_py()
        raise InvalidInput(f"profile #{first} is null, not an object")
    return data


def children(struct: pa.StructArray) -> list[tuple[str, pa.Array]]:
    """The fields of a struct array, with the struct's own nulls applied to each."""
    arrays = (
        struct.flatten()
        if struct.null_count
        else [struct.field(i) for i in range(struct.type.num_fields)]
    )
    return list(zip([f.name for f in struct.type], arrays, strict=True))


def is_object_list(type_: pa.DataType) -> bool:
    """Whether values of ``type_`` are lists of objects (or all null, or empty)."""
    if pa.types.is_null(type_):
        return True
    if not (pa.types.is_list(type_) or pa.types.is_large_list(type_)):
        return False
    return bool(pa.types.is_struct(type_.value_type) or pa.types.is_null(type_.value_type))


def explode(subs: pa.Array | None, profiles: int) -> Rows:
    """Plan the rows of a page: one per subscription, one for a profile without any."""
    if subs is None or pa.types.is_null(subs.type):
        return Rows(profiles, None, None)
    values = subs.flatten()
    if pa.types.is_null(values.type):
        values = None
    lengths = np.diff(subs.offsets.to_numpy())
    if subs.null_count:
        lengths[subs.is_null().to_numpy(zero_copy_only=False)] = 0
    counts = np.maximum(lengths, 1)
    count = int(counts.sum())
    profile_take = None if count == profiles else pa.array(np.repeat(np.arange(profiles), counts))
    full = lengths > 0
    if bool(full.all()):
        return Rows(count, profile_take, values)
    return Rows(count, profile_take, values, np.repeat(full, counts))


def take(arrays: Sequence[pa.Array], indices: pa.Array | None) -> list[pa.Array]:
    """``a.take(indices)`` for each array (None means the identity), in one Arrow call."""
    if indices is None or not arrays:
        return list(arrays)
    # One struct take instead of one call per column: the per-call overhead dominates.
    names = [str(i) for i in range(len(arrays))]
    taken = pa.StructArray.from_arrays(list(arrays), names=names).take(indices)
    return [taken.field(i) for i in range(len(arrays))]


def expand(arrays: Sequence[pa.Array], rows: Rows) -> list[pa.Array]:
    """Put subscription leaves on their rows, with nulls on the rows that have none."""
    where = rows.sub_valid
    if where is None:
        return list(arrays)
    # Per row boundary, how many subscriptions come before.
    before = np.zeros(len(where) + 1, np.int32)
    np.cumsum(where, out=before[1:])
    packed = pa.py_buffer(np.packbits(where, bitorder="little"))
    bitmaps: dict[tuple[int, int], pa.Buffer] = {}  # leaves of one block share its validity

    def spread(array: pa.Array) -> pa.Array | None:
        # New offsets over the same values, or one numpy scatter: several times
        # cheaper than take (None: use take).
        type_ = array.type
        kind = type_.id
        if kind not in _WIDE and kind not in (_TEXT, _LARGE_TEXT, _LIST, _BOOL):
            return None
        if len(array) == 0:
            return pa.nulls(rows.count, pa.large_string() if kind == _TEXT else type_)
        buffers = array.buffers()
        offset = array.offset
        bits = packed
        if array.null_count:
            key = (buffers[0].address, offset)
            bits = bitmaps.get(key)
            if bits is None:
                valid = where.copy()
                valid[where] = _bits(buffers[0], offset, len(array))
                bits = bitmaps[key] = pa.py_buffer(np.packbits(valid, bitorder="little"))
        if kind in (_TEXT, _LARGE_TEXT):
            # Out as large_string, as pandas wants it: new offsets are written anyway.
            width = np.dtype(np.int32 if kind == _TEXT else np.int64)
            starts = np.frombuffer(buffers[1], width, len(array) + 1, offset * width.itemsize)
            new = pa.py_buffer(starts[before].astype(np.int64, copy=False))
            return pa.Array.from_buffers(pa.large_string(), rows.count, [bits, new, buffers[2]])
        if kind == _LIST:
            starts = np.frombuffer(buffers[1], np.int32, len(array) + 1, offset * 4)
            new = pa.py_buffer(starts[before])
            return pa.Array.from_buffers(type_, rows.count, [bits, new], children=[array.values])
        if kind == _BOOL:
            values = np.zeros(rows.count, np.bool_)
            values[where] = _bits(buffers[1], offset, len(array))
            flags = pa.py_buffer(np.packbits(values, bitorder="little"))
            return pa.Array.from_buffers(type_, rows.count, [bits, flags])
        wide = np.zeros(rows.count, np.int64)
        wide[where] = np.frombuffer(buffers[1], np.int64, len(array), offset * 8)
        return pa.Array.from_buffers(type_, rows.count, [bits, pa.py_buffer(wide)])

    out = [spread(a) for a in arrays]
    rest = [i for i, a in enumerate(out) if a is None]
    indices = pa.array(before[:-1], mask=~where) if rest else None
    for i, array in zip(rest, take([arrays[i] for i in rest], indices), strict=True):
        out[i] = array
    return [a for a in out if a is not None]


_TEXT, _LARGE_TEXT, _LIST = pa.string().id, pa.large_string().id, pa.list_(pa.null()).id
_WIDE = {pa.int64().id, pa.uint64().id, pa.float64().id, pa.timestamp("s").id}
_BOOL = pa.bool_().id


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    """An Arrow bitmap (validity or booleans) as a numpy bool array."""
    raw = np.frombuffer(buffer, np.uint8)
    return np.unpackbits(raw, count=offset + length, bitorder="little")[offset:].view(np.bool_)


def unique(name: str, taken: set[str]) -> str:
    """``name``, with ``_`` appended until it is not taken; then taken."""
    while name in taken:
        name += "_"
    taken.add(name)
    return name
