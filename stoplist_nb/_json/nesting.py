"""How deeply a JSON text or a Python value nests, found without recursion.

pyarrow's JSON reader and converters recurse once per level of nesting, on the
C stack, and take time that grows with the square of the depth: a reply nested
some thousands of levels deep ends the interpreter (a notebook's kernel) with
a segmentation fault, or holds it for minutes. So no reply reaches pyarrow
before its depth is known to be at most :data:`MAX_DEPTH`:

* :func:`depth_bound` gives a bound on the depth at the cost of a few
  vectorised passes over the bytes (strings found with a prefix XOR of the
  quotes, 64 bytes a word, as simdjson does); for an ordinary page it is a
  few levels above the real depth.
* Only when that bound is above the limit does :func:`text_depth` measure the
  depth exactly, and a text deeper than the limit is refused.

:data:`MAX_DEPTH` is far beyond what the service can store: MongoDB refuses
documents nested more than 100 levels, and a reply adds two (the envelope and
the ``data`` list).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["MAX_DEPTH", "depth_bound", "text_depth", "value_depth"]

MAX_DEPTH = 128
"""The deepest nesting of a reply (or a value) that is read; deeper is refused."""

# "{" (0x7B) and "[" (0x5B) differ only in bit 0x20; so do "}" (0x7D) and "]" (0x5D).
_FOLD = 0xDF
_OPEN, _CLOSE, _QUOTE, _BACKSLASH = 0x5B, 0x5D, 0x22, 0x5C
_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


def depth_bound(content: bytes | bytearray | memoryview) -> int:
    """A number never below the nesting depth of a JSON text, and close to it.

    Brackets inside strings do not count. Within each 64-byte word the depth
    is taken to reach its start plus every ``{`` and ``[`` of the word.

    >>> depth_bound(b'{"a": [1, {"b": "[[[["}]}')
    3
    """
    raw = np.frombuffer(content, np.uint8)
    if not len(raw):
        return 0
    quote = raw == _QUOTE
    if _has_backslash(content):
        quotes = np.flatnonzero(quote)
        if len(quotes):
            quote[quotes[_escaped(quotes, np.flatnonzero(raw == _BACKSLASH))]] = False
    # Bit i of a word is set when byte i is inside a string: a prefix XOR of the
    # quotes, within the word by shifts, then carried across words.
    inside = _words(quote)
    for shift in (1, 2, 4, 8, 16, 32):
        inside ^= inside << np.uint64(shift)
    odd = (inside >> np.uint64(63)).astype(np.int64)
    carried = ((np.cumsum(odd) - odd) & 1).astype(np.uint64) * _ALL_ONES
    outside = ~(inside ^ carried)
    folded = raw & _FOLD
    opens = _popcount(_words(folded == _OPEN) & outside)
    closes = _popcount(_words(folded == _CLOSE) & outside)
    net = opens - closes
    return max(0, int((np.cumsum(net) - net + opens).max()))


def _has_backslash(content: bytes | bytearray | memoryview) -> bool:
    # A byte search (memchr), far cheaper than a compare over the whole array.
    data = content if isinstance(content, bytes | bytearray) else bytes(content)
    return data.find(b"\\") >= 0


def _words(mask: np.ndarray) -> np.ndarray:
    bits = np.packbits(mask, bitorder="little")
    if len(bits) % 8:
        bits = np.concatenate((bits, np.zeros(8 - len(bits) % 8, np.uint8)))
    return bits.view("<u8")


def _popcount(words: np.ndarray) -> np.ndarray:
    """Set bits per word, by the classic shifts and masks (a lookup table is 70x slower)."""
    words = words - ((words >> np.uint64(1)) & np.uint64(0x5555555555555555))
    pairs = np.uint64(0x3333333333333333)
    words = (words & pairs) + ((words >> np.uint64(2)) & pairs)
    words = (words + (words >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    counts: np.ndarray = ((words * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)
    return counts


def text_depth(content: bytes | bytearray | memoryview) -> int:
    """The deepest nesting of objects and arrays in a JSON text.

    Brackets inside strings do not count, escaped quotes do not end a string.
    The text need not be valid JSON: the answer is then the depth a parser
    would reach before it gave up, or more.

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


def value_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Levels of dicts, lists and tuples in a Python value, counted up to ``limit + 1``.

    Stops as soon as ``limit`` is passed, so a value that contains itself
    counts as too deep; a container shared by several parents is walked again
    only when it is met deeper than before.

    >>> value_depth([{"a": [1]}, 2])
    3
    """
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 0)]
    met: dict[int, int] = {}
    while todo:
        current, depth = todo.pop()
        if isinstance(current, Mapping):
            children: Any = current.values()
        elif isinstance(current, list | tuple):
            children = current
        else:
            continue
        depth += 1
        if depth > limit:
            return limit + 1
        if met.get(id(current), 0) >= depth:
            continue
        met[id(current)] = depth
        deepest = max(deepest, depth)
        todo.extend((child, depth) for child in children)
    return deepest
