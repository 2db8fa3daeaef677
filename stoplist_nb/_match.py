"""MD5 lookups in a suppression list, behind :func:`~stoplist_nb.hashing.flag_suppressed`.

Hex MD5 strings are decoded to 16-byte digests (held as two uint64), the list
is thinned to the buckets the queries occupy, and ``pc.is_in`` does the rest.
The checks on ``flag_suppressed``'s arguments live here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb._astext import arrow_text
from stoplist_nb._hex import hex_bytes
from stoplist_nb.errors import InvalidInput


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


def lookup(text: Any, queries: np.ndarray) -> tuple[np.ndarray, int]:
    """The list's digests that may be among ``queries``, and how many values were not MD5."""
    occupied, shift = None, np.uint64(0)
    if len(text) > len(queries):
        # Building is_in's hash table is the cost, so keep only the entries whose first
        # bits fall in a bucket some query occupies (MD5 bits are uniform): the table then
        # holds about len(queries) entries, and the whole list is never held decoded.
        bits = min(28, max(16, (len(queries) * 32).bit_length()))
        shift = np.uint64(64 - bits)
        occupied = np.zeros(1 << bits, dtype=bool)
        occupied[queries[:, 0] >> shift] = True
    parts, invalid = [np.zeros((0, 2), dtype=np.uint64)], 0
    for chunk, (digests, mask) in zip(text.chunks, _md5_chunks(text), strict=True):
        invalid += 0 if mask is None else len(mask) - int(mask.sum()) - chunk.null_count
        parts.append(digests if occupied is None else digests[occupied[digests[:, 0] >> shift]])
    return np.concatenate(parts), invalid


def _fixed16(digests: np.ndarray) -> Any:
    data = pa.py_buffer(np.ascontiguousarray(digests))
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), len(digests), [None, data])


def match(queries: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    """Which ``queries`` digests are in ``lookup``: ``pc.is_in`` on all 16 bytes."""
    if not len(queries) or not len(lookup):
        return np.zeros(len(queries), dtype=bool)
    found = pc.is_in(_fixed16(queries), value_set=_fixed16(lookup))
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)


def suppressed_text(suppressed: Any) -> Any:
    """The suppression list's MD5 strings as a ``large_string`` ChunkedArray."""
    if isinstance(suppressed, pd.DataFrame):
        if "md5" not in suppressed.columns:
            raise InvalidInput("suppressed: a DataFrame needs an 'md5' column")
        return arrow_text(suppressed["md5"])
    if isinstance(suppressed, pd.Series):
        return arrow_text(suppressed)
    if isinstance(suppressed, (str, bytes)) or not isinstance(suppressed, Iterable):
        raise InvalidInput(
            "suppressed: expected a DataFrame with an 'md5' column, a Series or a "
            f"collection of MD5 hex strings, not {type(suppressed).__name__}"
        )
    return arrow_text(pd.Series(list(suppressed), dtype=object))


def check_args(contacts: Any, columns: dict[str, Any], rules: dict[str, Any], hashed: bool) -> None:
    """Raise ``InvalidInput`` unless the columns and canonical rules fit ``contacts``."""
    if not isinstance(contacts, pd.DataFrame):
        raise InvalidInput(f"contacts must be a DataFrame, not {type(contacts).__name__}")
    if all(name is None for name in columns.values()):
        raise InvalidInput("name the e-mail column (email=...), the phone one (phone=...) or both")
    for role, name in columns.items():
        try:
            unique = name is None or isinstance(contacts.columns.get_loc(name), int)
        except (KeyError, TypeError, pd.errors.InvalidIndexError):
            raise InvalidInput(f"{role}={name!r} is not a column of contacts") from None
        if not unique:
            raise InvalidInput(f"{role}={name!r} names more than one column of contacts")
        if rules[role] is not None and (hashed or not callable(rules[role])):
            why = "does not apply with hashed=True" if hashed else "must be callable"
            raise InvalidInput(f"{role}_canonical {why}")
