"""The layout of a CSV member of an export, detected from its first bytes.

The service does not document the CSV, so the separator, the MD5 column and
whether the first line is a header are guessed from a sample; the rules are
set out in :mod:`stoplist_nb.suppression.archive`'s docstring.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass

from stoplist_nb.errors import BadArchive

#: How much of a member the layout is detected from.
SAMPLE = 64 * 1024
_HEX32 = re.compile(r"[0-9a-fA-F]{32}")
_HEXISH = re.compile(r"[0-9a-fA-F]*")
# What pyarrow's CSV reader ends a line at: the sample is cut into the same lines.
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Layout:
    delimiter: str | None
    header: bool
    names: tuple[str, ...]
    md5_index: int
    skip_rows: int  # pyarrow counts leading blank lines as rows to skip, then the header


def _cell(value: str) -> str:
    return value.strip().strip('"').strip()


def _names_hash(value: str) -> bool:
    return "md5" in value.lower() or "hash" in value.lower()


def _split(lines: list[str]) -> tuple[str | None, list[list[str]], int]:
    best: tuple[str | None, list[list[str]], int] = (None, [[line] for line in lines], 1)
    most = 0
    for delimiter in (",", ";", "\t"):
        try:
            # Quotes are not read as quoting: nor are they by the reader (see archive.py),
            # so the fields counted here are those it will find.
            rows = list(csv.reader(lines, delimiter=delimiter, quoting=csv.QUOTE_NONE))
        except csv.Error:
            continue
        width, count = Counter(len(row) for row in rows).most_common(1)[0]
        if width > 1 and count > most:
            best, most = (delimiter, rows, width), count
    return best


def detect(sample: bytes, complete: bool, label: str) -> Layout | None:
    """The layout of a member from its first bytes; ``None`` when it has no lines."""
    body = sample.removeprefix(b"\xef\xbb\xbf")
    try:
        text = body.decode()
    except UnicodeDecodeError as exc:
        if complete or exc.start < len(body) - 4:  # not just a character cut by the sample
            raise BadArchive(f"{label}: cannot be read as CSV (it is not UTF-8 text)") from None
        text = body[: exc.start].decode()
    if not complete and (cut := max(text.rfind("\n"), text.rfind("\r"))) >= 0:
        text = text[:cut]
    every = _LINE_END.split(text)
    lines = [line for line in every if line]
    if not lines:
        return None
    blank = every.index(lines[0])
    delimiter, rows, width = _split(lines)
    first = [_cell(value) for value in rows[0]]

    def hits(sampled: list[list[str]]) -> list[int]:
        return [
            sum(j < len(r) and bool(_HEX32.fullmatch(_cell(r[j]))) for r in sampled)
            for j in range(width)
        ]

    later = hits(rows[1:])
    counts = later if max(later) else hits(rows[:1])
    named = [j for j, value in enumerate(first[:width]) if _names_hash(value)]
    if not (max(counts) or named or width == 1):
        raise BadArchive(
            f"{label}: no column of 32-hex MD5 values in its first {len(rows)} lines "
            f"({width} columns separated by {delimiter!r})"
        )
    md5 = counts.index(max(counts)) if max(counts) else (named or [0])[0]
    head = first[md5] if md5 < len(first) else ""
    header = (
        not any(_HEX32.fullmatch(value) for value in first)
        and not _HEXISH.fullmatch(head)
        and (_names_hash(head) or later[md5] > 0)
    )
    names: list[str] = []
    for j in range(width):
        name = "md5" if j == md5 else (first[j] if header and j < len(first) else "")
        name = name if name and name not in names else f"col{j}"
        while name in names:
            name += "_"
        names.append(name)
    return Layout(delimiter, header, tuple(names), md5, blank + header)
