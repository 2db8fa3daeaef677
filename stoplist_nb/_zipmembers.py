"""Which members of a ZIP archive to read, and the limits against zip bombs.

Behind :mod:`stoplist_nb.hashfile`: members are chosen by name and kind, their
declared sizes and packing ratios checked before anything is unpacked, and
each is then read through :class:`Capped`, which holds it to its declared size.
"""

from __future__ import annotations

import stat
import zipfile
from typing import IO

from stoplist_nb.errors import ArchiveTooLarge, BadArchive

#: A member below this size is never refused for its ratio: it can do no harm.
_RATIO_FLOOR = 1 << 20


class Capped:
    """A read-only stream that refuses to yield more than ``limit`` bytes."""

    def __init__(self, raw: IO[bytes], limit: int | None, label: str) -> None:
        self._raw, self._limit, self._label, self._count = raw, limit, label, 0
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self._count += len(data)
        if self._limit is not None and self._count > self._limit:
            # zipfile already stops at the declared size: this only holds it to that.
            raise ArchiveTooLarge(f"{self._label}: unpacks beyond its declared {self._limit:,} B")
        return data

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
        return not (info.is_dir() or hidden) and kind in (0, stat.S_IFREG)

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


def check_bomb(infos: list[zipfile.ZipInfo], max_size: int, max_ratio: float) -> None:
    def mib(size: float) -> str:
        return f"{size / 2**20:,.1f} MiB"

    total = sum(info.file_size for info in infos)
    if total > max_size:
        raise ArchiveTooLarge(
            f"the CSV in the archive would unpack to {mib(total)}, above max_size="
            f"{max_size:,} bytes ({mib(max_size)}); if the archive is trusted, pass a "
            "larger max_size= to read_hashed_csv"
        )
    for info in infos:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > _RATIO_FLOOR and ratio > max_ratio:
            raise ArchiveTooLarge(
                f"{info.filename!r} would unpack to {mib(info.file_size)} from "
                f"{mib(info.compress_size)}, {ratio:,.0f} times its packed size, above "
                f"max_ratio={max_ratio:g}: it looks like a zip bomb; if the archive is "
                "trusted, pass a larger max_ratio= to read_hashed_csv"
            )
