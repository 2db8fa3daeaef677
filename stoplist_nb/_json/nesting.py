"""How deeply a JSON text nests, found without recursion.

pyarrow's JSON reader recurses per level on the C stack, in time square in the
depth: no reply deeper than :data:`MAX_DEPTH` (MongoDB's 100, the reply's two,
room) reaches it. :func:`depth_bound` bounds the depth vectorised (a prefix XOR
of the quotes, as simdjson); :func:`text_depth` measures it above.
"""

from __future__ import annotations

import threading

import numpy as np

MAX_DEPTH = 128
"""The deepest nesting of a reply (or of records) that is read; deeper is refused."""

# "{" (0x7B) and "[" (0x5B) differ only in bit 0x20; so do "}" (0x7D) and "]" (0x5D).
_FOLD = 0xDF
_OPEN, _CLOSE, _QUOTE, _BACKSLASH = 0x5B, 0x5D, 0x22, 0x5C


def depth_bound(content: bytes | bytearray | memoryview) -> int:
    """A number never below the nesting depth of a JSON text, and close to it (per 256-byte block).

    >>> depth_bound(b'{"a": [1, {"b": "[[[["}]}')
    3
    """
    raw = np.frombuffer(content, np.uint8)
    if not len(raw):
        return 0
    mask, folded = _scratch(len(raw))
    quote = np.equal(raw, _QUOTE, out=mask)
    # A byte search (memchr), far cheaper than a compare over the whole array.
    if (content if isinstance(content, bytes | bytearray) else bytes(content)).find(b"\\") >= 0:
        quotes = np.flatnonzero(quote)
        if len(quotes):
            quote[quotes[_escaped(quotes, np.flatnonzero(raw == _BACKSLASH))]] = False
    # Bit i of a word: byte i is inside a string (a prefix XOR by shifts, carried across words).
    inside = _words(quote)
    for shift in (1, 2, 4, 8, 16, 32):
        inside ^= inside << np.uint64(shift)
    odd = inside >> np.uint64(63)
    carried = np.bitwise_xor.accumulate(odd)
    carried ^= odd
    inside ^= -carried
    outside = np.invert(inside, out=inside)
    np.bitwise_and(raw, _FOLD, out=folded)
    opens = _words(np.equal(folded, _OPEN, out=mask))
    opens &= outside
    closes = _words(np.equal(folded, _CLOSE, out=mask))
    closes &= outside
    opened = _per_block(opens)
    net = opened - _per_block(closes)
    return max(0, int((np.cumsum(net) - net + opened).max()))


_BLOCK_WORDS = 4
_SCRATCH_BYTES = 1 << 22
_local = threading.local()


def _scratch(size: int) -> tuple[np.ndarray, np.ndarray]:
    # A bool and a byte array of size, kept per thread: fresh ones cost page faults.
    if size > _SCRATCH_BYTES:
        return np.empty(size, np.bool_), np.empty(size, np.uint8)
    kept = getattr(_local, "arrays", None)
    if kept is None or len(kept[0]) < size:
        grown = min(_SCRATCH_BYTES, max(size, 1 << 20))
        kept = _local.arrays = (np.empty(grown, np.bool_), np.empty(grown, np.uint8))
    return kept[0][:size], kept[1][:size]


def _words(mask: np.ndarray) -> np.ndarray:
    """``mask`` as 64-bit words, bit i of a word for byte i, padded to whole blocks."""
    bits = np.packbits(mask, bitorder="little")
    short = -len(bits) % (8 * _BLOCK_WORDS)
    if short:
        bits = np.concatenate((bits, np.zeros(short, np.uint8)))
    return bits.view("<u8")


def _per_block(words: np.ndarray) -> np.ndarray:
    counts = np.bitwise_count(words).astype(np.int32)
    blocks: np.ndarray = counts[0::_BLOCK_WORDS].copy()
    for i in range(1, _BLOCK_WORDS):
        blocks += counts[i::_BLOCK_WORDS]
    return blocks


def text_depth(content: bytes | bytearray | memoryview) -> int:
    """The deepest nesting of objects and arrays in a JSON text, valid or not.

    >>> text_depth(b'{"a": [1, {"b": "[[\\\\"]]"}]}')
    3
    """
    raw = np.frombuffer(content, np.uint8)
    quotes = np.flatnonzero(raw == _QUOTE)
    slashes = np.flatnonzero(raw == _BACKSLASH)
    if len(slashes) and len(quotes):
        quotes = quotes[~_escaped(quotes, slashes)]
    folded = raw & _FOLD
    brackets = np.flatnonzero((folded == _OPEN) | (folded == _CLOSE))
    # A bracket is inside a string when an odd number of quotes come before it.
    outside = brackets[(np.searchsorted(quotes, brackets) & 1) == 0]
    if not len(outside):
        return 0
    steps = np.where(folded[outside] == _OPEN, 1, -1).astype(np.int64)
    return max(0, int(np.cumsum(steps).max()))


def _escaped(quotes: np.ndarray, slashes: np.ndarray) -> np.ndarray:
    """Which quotes follow an odd run of backslashes (and so belong to a string)."""
    # Each run of consecutive backslashes, by its first and last position.
    breaks = np.flatnonzero(np.diff(slashes) != 1)
    starts = np.concatenate(([slashes[0]], slashes[breaks + 1]))
    ends = np.concatenate((slashes[breaks], [slashes[-1]]))
    run = np.searchsorted(ends, quotes - 1)
    found = run < len(ends)
    run = np.minimum(run, len(ends) - 1)
    touching = found & (ends[run] == quotes - 1)
    odd: np.ndarray = touching & (((ends[run] - starts[run] + 1) & 1) == 1)
    return odd
