"""Which members of a ZIP archive to read, and the limits against zip bombs.

The end record is checked before :mod:`zipfile` parses the directory, the
members chosen before anything is unpacked (:func:`check_bomb`), and each is
read through a :class:`Capped` stream.
"""

from __future__ import annotations

import lzma
import os
import stat
import struct
import zipfile
import zlib
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from typing import IO

from stoplist_nb.errors import ArchiveTooLarge, BadArchive, StoplistError

#: A member, or the members together, unpacking to no more than this are never
#: refused for their ratio: they can do no harm.
RATIO_FLOOR = 1 << 20
#: The most entries an archive may list (an export holds one or two).
MAX_MEMBERS = 10_000
#: The most bytes the archive's directory may take: :mod:`zipfile` parses all
#: of it on opening, 46 bytes or more an entry, whatever count the end record gives.
MAX_DIRECTORY = MAX_MEMBERS * 256

# The end of central directory record, its ZIP64 locator and the ZIP64 record.
_END = struct.Struct("<4s4H2LH")
_END64_LOCATOR = struct.Struct("<4sLQL")
_END64 = struct.Struct("<4sQ2H2L4Q")
_TRUSTED = "if the archive is trusted, extract its CSV and pass that to read_hashed_csv"
# What zipfile and the decompressors raise on damaged data (bz2 raises a bare
# OSError, a bad offset a ValueError from seek, bad UTF-8 names UnicodeDecodeError).
_DAMAGED = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    ValueError,
    struct.error,
    OverflowError,
)


@contextmanager
def zip_faults() -> Iterator[None]:
    """Turn what :mod:`zipfile` raises on a damaged or unsupported archive into BadArchive."""
    try:
        yield
    except StoplistError:
        raise  # ours (BadArchive is a ValueError too): it already says what is wrong
    except (RuntimeError, NotImplementedError) as exc:
        # zipfile's words for an encrypted member, an unsupported compression or version.
        raise BadArchive(f"the ZIP archive cannot be read: {exc}") from exc
    except _DAMAGED as exc:
        raise BadArchive(f"the ZIP archive is truncated or corrupt ({exc})") from exc


def _mib(size: float) -> str:
    return f"{size / 2**20:,.1f} MiB"


def _directory(file: IO[bytes]) -> tuple[int, int, int]:
    """The archive's size, and its entries and directory bytes as zipfile finds them (or 0)."""
    size = file.seek(0, os.SEEK_END)
    start = max(size - _END.size - (1 << 16), 0)  # the comment after it is under 64 KiB
    file.seek(start)
    tail = file.read()
    at = len(tail) - _END.size
    if not (at >= 0 and tail.startswith(b"PK\x05\x06", at) and tail.endswith(b"\0\0")):
        at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _END.size:
        return size, 0, 0
    entries, directory = _END.unpack_from(tail, at)[4:6]
    locator = start + at - _END64_LOCATOR.size
    if locator - _END64.size >= 0:
        file.seek(locator - _END64.size)
        data = file.read(_END64.size + _END64_LOCATOR.size)
        if data[_END64.size :].startswith(b"PK\x06\x07") and data.startswith(b"PK\x06\x06"):
            entries, directory = _END64.unpack_from(data)[7:9]
    return size, entries, directory


def open_archive(file: IO[bytes]) -> tuple[zipfile.ZipFile, int]:
    """Open a seekable ZIP archive and return it with its size, refusing one too large."""
    here = file.tell()
    size, entries, directory = _directory(file)
    file.seek(here)
    if entries > MAX_MEMBERS or directory > MAX_DIRECTORY:
        found = (
            f"lists {entries:,} members"
            if entries > MAX_MEMBERS
            else f"has a directory of {_mib(directory)}"
        )
        raise ArchiveTooLarge(
            f"the ZIP archive {found}, beyond the {MAX_MEMBERS:,} members "
            f"({_mib(MAX_DIRECTORY)} of directory) read_hashed_csv accepts; {_TRUSTED}"
        )
    archive = zipfile.ZipFile(file)
    listed = len(archive.infolist())
    if listed > MAX_MEMBERS:  # the end record's count understated it
        archive.close()
        raise ArchiveTooLarge(
            f"the ZIP archive holds {listed:,} members, beyond the {MAX_MEMBERS:,} "
            f"read_hashed_csv accepts; {_TRUSTED}"
        )
    return archive, size


class Capped:
    """A read-only stream refusing to yield more than ``limit`` bytes (its declared size).

    A Capped of no stream (``raw=None``) is an archive's budget: what each
    stream given it as ``budget`` yields is also counted there under ``key``
    (default: ``label``), each key once to the furthest point read, and past
    its ``limit`` (``max_size``) for all keys together it raises.
    """

    def __init__(
        self,
        raw: IO[bytes] | None,
        limit: int | None,
        label: str,
        budget: Capped | None = None,
        key: Hashable = None,
    ) -> None:
        self._raw, self._limit, self._label, self._budget = raw, limit, label, budget
        self._key = label if key is None else key
        self._reached: dict[Hashable, int] = {}
        self.total, self.closed = 0, False

    def read(self, size: int = -1) -> bytes:
        assert self._raw is not None
        data = self._raw.read(size)
        self.charge(self._key, self.total + len(data))
        return data

    def charge(self, key: Hashable, count: int) -> None:
        """Record that ``key`` has yielded ``count`` bytes from its start."""
        before = self._reached.get(key, 0)
        if count > before:
            self._reached[key] = count
            self.total += count - before
        if self._limit is not None and self.total > self._limit:
            if self._raw is not None:
                # zipfile already stops at the declared size: this only holds it to that.
                raise ArchiveTooLarge(
                    f"{self._label}: unpacks beyond its declared {self._limit:,} B"
                )
            raise ArchiveTooLarge(
                f"the CSV in the archive unpacks to more than max_size={self._limit:,} bytes "
                f"({_mib(self._limit)}); if the archive is trusted, pass a larger max_size= "
                "to read_hashed_csv"
            )
        if self._budget is not None:
            self._budget.charge(key, count)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True  # the caller closes the underlying stream


def csv_members(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    def regular(info: zipfile.ZipInfo) -> bool:
        parts = info.filename.split("/")
        kind = stat.S_IFMT(info.external_attr >> 16)
        hidden = "__MACOSX" in parts or parts[-1].startswith(".")
        # Not info.is_dir(): it fails on an empty name (one cut short by a NUL byte).
        directory = info.filename.endswith("/")
        return not (directory or hidden) and kind in (0, stat.S_IFREG)

    files = [info for info in archive.infolist() if regular(info)]
    chosen = [i for i in files if i.filename.lower().endswith(".csv")] or [
        i for i in files if i.filename.lower().endswith((".txt", ".md5"))
    ]
    if not chosen:
        names = [repr(info.filename) for info in archive.infolist()]
        more = f" and {len(names) - 10} more" if len(names) > 10 else ""
        held = ", ".join(names[:10]) + more if names else "nothing"
        raise BadArchive(f"no CSV file in the ZIP archive; it holds {held}")
    return sorted(chosen, key=lambda info: info.filename)


def check_bomb(
    infos: list[zipfile.ZipInfo], archive_size: int, max_size: int, max_ratio: float
) -> None:
    """Refuse members that declare too much, before any is unpacked.

    The whole's ratio is against ``archive_size``: packed sizes may share bytes.
    """
    total = sum(info.file_size for info in infos)
    if total > max_size:
        raise ArchiveTooLarge(
            f"the CSV in the archive would unpack to {_mib(total)}, above max_size="
            f"{max_size:,} bytes ({_mib(max_size)}); if the archive is trusted, pass a "
            "larger max_size= to read_hashed_csv"
        )
    for info in infos:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > RATIO_FLOOR and ratio > max_ratio:
            raise ArchiveTooLarge(
                f"{info.filename!r} would unpack to {_mib(info.file_size)} from "
                f"{_mib(info.compress_size)}, {ratio:,.0f} times its packed size, above "
                f"max_ratio={max_ratio:g}: it looks like a zip bomb; if the archive is "
                "trusted, pass a larger max_ratio= to read_hashed_csv"
            )
    ratio = total / max(archive_size, 1)
    if total > RATIO_FLOOR and ratio > max_ratio:
        members = "1 member" if len(infos) == 1 else f"{len(infos):,} members"
        raise ArchiveTooLarge(
            f"the CSV in the archive ({members}) would unpack to {_mib(total)} from an "
            f"archive of {_mib(archive_size)}, {ratio:,.0f} times its size, above "
            f"max_ratio={max_ratio:g}: it looks like a zip bomb; if the archive is trusted, "
            "pass a larger max_ratio= to read_hashed_csv"
        )
