"""The CSV file and the ZIP archive an export produces, in every shape tests ask for.

The platform does not document the CSV layout inside the ``.md5.zip``, so the demo can
produce several (header or not, ``,`` or ``;``, extra columns, CRLF, upper case, broken
rows) and several archive shapes, hostile ones included (junk members, a decompression
bomb, a corrupt file, the hashes split over two members).
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Sequence
from typing import Literal, get_args

__all__ = ["ARCHIVE_KINDS", "BOMB_SIZE", "CSV_LAYOUTS", "ArchiveKind", "CsvLayout", "build_archive"]

CsvLayout = Literal["plain", "header", "semicolon", "two_columns", "crlf", "upper", "bad_rows"]
ArchiveKind = Literal["normal", "junk", "bomb", "corrupt", "two_csv"]
CSV_LAYOUTS: frozenset[str] = frozenset(get_args(CsvLayout))
ARCHIVE_KINDS: frozenset[str] = frozenset(get_args(ArchiveKind))

# Exactly 200 MiB once inflated, so a test can compare the declared size.
BOMB_SIZE = 200 * 1024 * 1024

# A fixed timestamp makes the same export give the same archive bytes.
_STAMP = (2024, 1, 1, 0, 0, 0)
_CHUNK = 1024 * 1024
# The start of an AppleDouble file, what macOS's zip puts under __MACOSX/.
_APPLE_DOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + b"\x00" * 58
_README = (
    b"Suppression list export.\n"
    b"The .md5.csv file holds the MD5 hashes of the contacts of the list.\n"
)

Row = tuple[str, str]  # (row type such as "email", lower-case md5 hex)


def render_csv(rows: Sequence[Row], layout: CsvLayout) -> bytes:
    """The CSV bytes of ``rows``, ``(row type, md5)`` pairs; see ``ExportPlan.csv_layout``.

    >>> render_csv([("email", "ab" * 16)], "semicolon").decode()
    'md5;type\\nabababababababababababababababab;email\\n'
    """
    if layout == "semicolon":
        lines = ["md5;type", *(f"{md5};{kind}" for kind, md5 in rows)]
    elif layout == "two_columns":
        lines = ["type,md5", *(f"{kind},{md5}" for kind, md5 in rows)]
    else:
        lines = [md5.upper() if layout == "upper" else md5 for _, md5 in rows]
        if layout == "header":
            lines.insert(0, "md5")
        elif layout == "bad_rows":
            # Near the start, in the middle and at the end, where readers slip.
            lines.insert(min(1, len(lines)), "not-a-hash")
            lines.insert(len(lines) // 2, "")
            lines.append("12345")
    end = "\r\n" if layout == "crlf" else "\n"
    return "".join(line + end for line in lines).encode("utf-8")


def _info(name: str, *, directory: bool = False) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, _STAMP)
    if directory:
        info.external_attr = (0o40755 << 16) | 0x10  # Unix mode plus the MS-DOS dir bit
    else:
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
    return info


def _write_bomb(archive: zipfile.ZipFile, member: str, rows: Sequence[Row]) -> None:
    md5 = rows[0][1] if rows else hashlib.md5(b"").hexdigest()
    line = f"{md5}\n".encode()
    block = line * (_CHUNK // len(line))
    # Streamed in blocks of whole lines: the 200 MiB never exist in memory at once.
    with archive.open(_info(member), "w") as out:
        remaining = BOMB_SIZE
        while remaining >= len(block):
            out.write(block)
            remaining -= len(block)
        out.write(line * (remaining // len(line)) + b"\n" * (remaining % len(line)))


def _corrupt(good: bytes) -> bytes:
    # A real local header and the start of the data, then bytes that are no ZIP
    # structure, then an end-of-central-directory record cut short.
    head = good[: max(64, len(good) // 2)]
    garbage = hashlib.sha256(good).digest() * 8
    return head + garbage + b"PK\x05\x06\x00\x00\x00\x00\x01\x00"


def build_archive(
    name: str,
    rows: Sequence[Row],
    *,
    layout: CsvLayout = "plain",
    kind: ArchiveKind = "normal",
) -> bytes:
    """The ``.md5.zip`` of an export of the list ``name``, in the shape ``kind``.

    The CSV member is ``<name>.md5.csv``; see ``ExportPlan.archive`` for the shapes.
    """
    if kind == "corrupt":
        return _corrupt(build_archive(name, rows, layout=layout))
    member = f"{name}.md5.csv"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        junk = kind in ("junk", "two_csv")
        if junk:
            archive.writestr(_info(f"__MACOSX/._{member}"), _APPLE_DOUBLE)
            archive.writestr(_info("extra/", directory=True), b"")
        if kind == "bomb":
            _write_bomb(archive, member, rows)
        elif kind == "two_csv":
            half = (len(rows) + 1) // 2
            archive.writestr(_info("part1.csv"), render_csv(rows[:half], layout))
            archive.writestr(_info("part2.csv"), render_csv(rows[half:], layout))
        else:
            archive.writestr(_info(member), render_csv(rows, layout))
        if junk:
            archive.writestr(_info("readme.txt"), _README)
    return buffer.getvalue()
