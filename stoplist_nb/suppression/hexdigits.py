"""Whole Arrow chunks of 32-character hex strings, decoded or lowercased at once.

Shared by :mod:`stoplist_nb.suppression.matching` (lookups in a suppression
list) and :mod:`stoplist_nb.suppression.archive` (cleaning the list's ``md5``
column): both take this fast path when a chunk is clean hex, and a slower regex
path otherwise.
"""

from __future__ import annotations

import binascii
from typing import Any

import numpy as np
import pyarrow as pa


def hex_bytes(chunk: Any) -> bytes | None:
    """Decode a chunk of 32-character hex strings at once; ``None`` if it is not one."""
    n = len(chunk)
    if n == 0 or chunk.null_count:
        return b"" if n == 0 else None
    width = 8 if pa.types.is_large_string(chunk.type) else 4
    buffers = chunk.buffers()
    ends = np.frombuffer(buffers[1], f"<i{width}", count=n + 1, offset=chunk.offset * width)
    start, end = int(ends[0]), int(ends[-1])
    if end - start != 32 * n or not (np.diff(ends) == 32).all():
        return None
    try:
        return binascii.a2b_hex(memoryview(buffers[2])[start:end])
    except binascii.Error:
        return None


def lower_hex(chunk: Any) -> Any:
    """A chunk of valid hex strings in lowercase, zero-copy when it already is."""
    buffers = chunk.buffers()
    data = np.frombuffer(buffers[2], dtype=np.uint8)
    if not np.any((data & 0x60) == 0x40):
        return chunk
    # On hex digits, setting bit 0x20 maps A-F to a-f and keeps 0-9: many times
    # faster here than pc.ascii_lower, which also allocates a new buffer.
    lower = pa.py_buffer(data | 0x20)
    return pa.Array.from_buffers(chunk.type, len(chunk), [None, buffers[1], lower], 0, chunk.offset)
