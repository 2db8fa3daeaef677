"""MD5 lookups in a suppression list, behind :func:`~stoplist_nb.flag_suppressed`.

Hex MD5 strings are decoded to 16-byte digests (two uint64), the list is thinned to
the buckets the queries occupy, and ``pc.is_in`` does the rest.
"""

from __future__ import annotations

import binascii
import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb.errors import InvalidInput
from stoplist_nb.suppression.contacts import ANY_KIND, kind_codes, kind_column
from stoplist_nb.suppression.hashing import arrow_text, blank_to_null


def _ends(chunk: Any) -> np.ndarray:
    width = 8 if pa.types.is_large_string(chunk.type) else 4
    offsets = chunk.buffers()[1]
    return np.frombuffer(offsets, f"<i{width}", count=len(chunk) + 1, offset=chunk.offset * width)


def hex_bytes(chunk: Any) -> bytes | None:
    """Decode a chunk of 32-character hex strings at once; ``None`` if it is not one."""
    n = len(chunk)
    if n == 0 or chunk.null_count:
        return b"" if n == 0 else None
    ends = _ends(chunk)
    start, end = int(ends[0]), int(ends[-1])
    if end - start != 32 * n or not (np.diff(ends) == 32).all():
        return None
    try:
        return binascii.a2b_hex(memoryview(chunk.buffers()[2])[start:end])
    except binascii.Error:
        return None


def _lower_hex(chunk: Any) -> Any:
    buffers = chunk.buffers()
    data = np.frombuffer(buffers[2], dtype=np.uint8)
    if not np.any((data & 0x60) == 0x40):
        return chunk
    # On hex digits, setting bit 0x20 maps A-F to a-f and keeps 0-9: many times
    # faster here than pc.ascii_lower, which also allocates a new buffer.
    lower = pa.py_buffer(data | 0x20)
    return pa.Array.from_buffers(chunk.type, len(chunk), [None, buffers[1], lower], 0, chunk.offset)


def unquoted(chunk: Any) -> Any:
    """A chunk's fields quoted whole unquoted (``""`` in them as ``"``), ``""`` as null."""
    buffers = chunk.buffers()
    if not len(chunk) or buffers[2] is None:
        return chunk
    ends = _ends(chunk)
    # A copy of the bytes and one memchr: a few times faster than any compute kernel.
    if b'"' not in memoryview(buffers[2])[int(ends[0]) : int(ends[-1])].tobytes():
        return chunk
    quoted = pc.fill_null(pc.match_substring_regex(chunk, '^".*"$'), False)
    inner = pc.replace_substring(pc.utf8_slice_codeunits(chunk, 1, -1), '""', '"')
    return pc.if_else(quoted, blank_to_null(inner), chunk)


def clean_md5(chunk: Any, room: int) -> tuple[Any, int, list[str]]:
    """Lowercase a chunk of the md5 column; count (and show ``room`` of) the values not MD5."""
    if hex_bytes(chunk) is not None:
        return _lower_hex(chunk), 0, []
    chunk = unquoted(chunk)
    lowered = blank_to_null(pc.utf8_lower(pc.utf8_trim_whitespace(chunk)))
    wrong = pc.invert(pc.fill_null(pc.match_substring_regex(lowered, "^[0-9a-f]{32}$"), False))
    examples = pc.filter(lowered, wrong).slice(0, room).to_pylist()
    return lowered, pc.sum(wrong).as_py() or 0, [repr(e or "")[:50] for e in examples]


def _md5_chunks(text: Any) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
    """Per chunk: its valid hex MD5s (any case) as ``(k, 2)`` uint64, and a mask or ``None``."""
    for chunk in text.chunks:
        raw, mask = hex_bytes(chunk), None
        if raw is None:
            trimmed = pc.utf8_trim_whitespace(chunk)
            ok = pc.fill_null(pc.match_substring_regex(trimmed, "^[0-9a-fA-F]{32}$"), False)
            raw, mask = hex_bytes(pc.filter(trimmed, ok)), np.asarray(ok, dtype=bool)
        yield np.frombuffer(raw or b"", dtype=np.uint64).reshape(-1, 2), mask


def md5_digests(text: Any) -> tuple[np.ndarray, np.ndarray]:
    """Hex MD5 strings as ``(n, 2)`` uint64 digests, one per row, and which were valid."""
    digests = np.zeros((len(text), 2), dtype=np.uint64)
    valid = np.ones(len(text), dtype=bool)
    start = 0
    for digest, mask in _md5_chunks(text):
        end = start + (len(digest) if mask is None else len(mask))
        if mask is None:
            digests[start:end] = digest
        else:
            digests[start:end][mask] = digest
            valid[start:end] = mask
        start = end
    return digests, valid


@dataclasses.dataclass(frozen=True, eq=False)
class HashedList:
    """A list decoded once for many frames: valid digests, their kind codes, values not MD5."""

    digests: np.ndarray
    codes: np.ndarray | None
    invalid: int


def hashed_list(suppressed: Any) -> HashedList:
    """Decode a list, as :func:`suppressed_text` takes it, into a :class:`HashedList`."""
    text, words = suppressed_text(suppressed)
    digests, valid = md5_digests(text)
    codes = None if words is None else kind_codes(words)[valid]
    return HashedList(digests[valid], codes, len(valid) - int(valid.sum()) - text.null_count)


def _decoded(listed: Any) -> Iterator[tuple[int, np.ndarray, np.ndarray | None, int]]:
    """Per chunk of a list: its length, valid digests, mask or ``None``, values not MD5."""
    if isinstance(listed, HashedList):
        # Its values not MD5 were counted once, when it was decoded.
        yield len(listed.digests), listed.digests, None, 0
        return
    for chunk, (digests, mask) in zip(listed.chunks, _md5_chunks(listed), strict=True):
        bad = 0 if mask is None else len(mask) - int(mask.sum()) - chunk.null_count
        yield len(chunk), digests, mask, bad


def lookup(text: Any, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The digests of ``text`` (or a HashedList) maybe in ``queries``, their rows, the non-MD5."""
    occupied, shift = None, np.uint64(0)
    size = len(text.digests) if isinstance(text, HashedList) else len(text)
    if size > len(queries):
        # is_in's hash table is the cost: keep the entries in buckets a query occupies.
        bits = min(28, max(16, (len(queries) * 32).bit_length()))
        shift = np.uint64(64 - bits)
        occupied = np.zeros(1 << bits, dtype=bool)
        occupied[queries[:, 0] >> shift] = True
    parts, rows = [np.zeros((0, 2), dtype=np.uint64)], [np.zeros(0, dtype=np.int64)]
    invalid, start = 0, 0
    for length, digests, mask, bad in _decoded(text):
        invalid += bad
        if occupied is None:
            parts.append(digests)
            kept = np.arange(len(digests))
        else:
            hit = occupied[digests[:, 0] >> shift]
            parts.append(digests[hit])
            kept = np.flatnonzero(hit)
        rows.append(start + (kept if mask is None else np.flatnonzero(mask)[kept]))
        start += length
    return np.concatenate(parts), np.concatenate(rows), invalid


def _fixed16(digests: np.ndarray) -> Any:
    data = pa.py_buffer(np.ascontiguousarray(digests))
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), len(digests), [None, data])


def match(queries: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    """Which ``queries`` digests are in ``lookup``: ``pc.is_in`` on all 16 bytes."""
    if not len(queries) or not len(lookup):
        return np.zeros(len(queries), dtype=bool)
    found = pc.is_in(_fixed16(queries), value_set=_fixed16(lookup))
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)


def match_kinds(
    text: Any, words: Any, groups: Sequence[tuple[int, np.ndarray]]
) -> tuple[list[np.ndarray], int]:
    """Which digests of each ``(kind, digests)`` group the list holds, and its values not MD5."""
    # All groups in one lookup, so the list is decoded and thinned once.
    everyone = np.concatenate([np.zeros((0, 2), dtype=np.uint64), *(d for _, d in groups)])
    listed, rows, bad = lookup(text, everyone)
    codes: np.ndarray | None = None
    if isinstance(text, HashedList):
        codes = None if text.codes is None else text.codes[rows]
    elif words is not None:
        codes = kind_codes(words.take(pa.array(rows))) if len(rows) else np.zeros(0, np.int8)
    if codes is None:
        found = match(everyone, listed)
        return np.split(found, np.cumsum([len(d) for _, d in groups])[:-1]), bad
    tables = {k: listed[(codes == k) | (codes == ANY_KIND)] for k in {kind for kind, _ in groups}}
    return [match(digests, tables[kind]) for kind, digests in groups], bad


def suppressed_text(suppressed: Any) -> tuple[Any, Any]:
    """The list's MD5 strings and its kind words (or ``None``), as ``large_string`` arrays."""
    if isinstance(suppressed, pd.DataFrame):
        if "md5" not in suppressed.columns:
            raise InvalidInput("suppressed: a DataFrame needs an 'md5' column")
        names = list(suppressed.columns)
        kind = kind_column(name for name in names if name != "md5")
        words = None if kind is None else arrow_text(suppressed.iloc[:, names.index(kind)])
        return arrow_text(suppressed["md5"]), words
    if isinstance(suppressed, pd.Series):
        return arrow_text(suppressed), None
    if isinstance(suppressed, (str, bytes)) or not isinstance(suppressed, Iterable):
        raise InvalidInput(
            "suppressed: expected a DataFrame with an 'md5' column, a Series or a "
            f"collection of MD5 hex strings, not {type(suppressed).__name__}"
        )
    return arrow_text(pd.Series(list(suppressed), dtype=object)), None
