"""Read a suppression-list export (``<list name>.md5.zip``, or a bare CSV) into a DataFrame.

Each member's layout is detected from its first 64 KiB and it is streamed into pyarrow's
CSV reader. Against zip bombs, the end record is checked before :mod:`zipfile` parses the
directory, the members' sizes before any is unpacked, and each is read through :class:`Capped`.
"""

from __future__ import annotations

import csv
import functools
import io
import lzma
import math
import os
import re
import stat
import struct
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from typing import IO, Any, NoReturn, Union

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv

from stoplist_nb._checks import check_int, check_number
from stoplist_nb.errors import ArchiveTooLarge, BadArchive, InvalidInput, StoplistError
from stoplist_nb.suppression.contacts import add_counts, kind_column, kind_counts
from stoplist_nb.suppression.matching import clean_md5, unquoted

__all__ = ["hashed_csv_members", "read_hashed_csv"]

#: A member, or all together, unpacking to no more than this is never refused for its ratio.
RATIO_FLOOR = 1 << 20
#: The most entries an archive may list (an export holds one or two).
MAX_MEMBERS = 10_000
#: The most bytes of directory: :mod:`zipfile` parses it all on opening, whatever the count.
MAX_DIRECTORY = MAX_MEMBERS * 256

# The end of central directory record, its ZIP64 locator and the ZIP64 record.
_END = struct.Struct("<4s4H2LH")
_END64_LOCATOR = struct.Struct("<4sLQL")
_END64 = struct.Struct("<4sQ2H2L4Q")
_TRUSTED = "if the archive is trusted, extract its CSV and pass that to read_hashed_csv"
# What damaged data raises (bz2 a bare OSError, a bad offset ValueError, bad names UnicodeError).
_DAMAGED = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, ValueError,
            struct.error, OverflowError)  # fmt: skip


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
    found = f"lists {entries:,} members"
    if entries <= MAX_MEMBERS and directory <= MAX_DIRECTORY:
        archive = zipfile.ZipFile(file)
        entries = len(archive.infolist())
        if entries <= MAX_MEMBERS:
            return archive, size
        archive.close()  # the end record's count understated it
        found = f"holds {entries:,} members"
    elif entries <= MAX_MEMBERS:
        found = f"has a directory of {_mib(directory)}"
    raise ArchiveTooLarge(
        f"the ZIP archive {found}, beyond the {MAX_MEMBERS:,} members "
        f"({_mib(MAX_DIRECTORY)} of directory) read_hashed_csv accepts; {_TRUSTED}"
    )


class Capped(io.RawIOBase):
    """At most ``limit`` bytes of ``raw``; of no ``raw``, a budget counting each ``key`` once."""

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
        self.total = 0

    def read(self, size: int = -1) -> bytes:
        assert self._raw is not None
        data = self._raw.read(size)
        self.charge(self._key, self.total + len(data))
        return data

    def charge(self, key: Hashable, count: int) -> None:
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
            _refuse("the CSV in the archive unpacks to more than", "max_size", self._limit)
        if self._budget is not None:
            self._budget.charge(key, count)

    def readable(self) -> bool:
        return True  # closing it leaves the underlying stream to its owner


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


def _refuse(found: str, limit: str, value: float, why: str = "") -> NoReturn:
    shown = f"{value:,} bytes ({_mib(value)})" if limit == "max_size" else f"{value:g}"
    raise ArchiveTooLarge(
        f"{found} {limit}={shown}{why}; if the archive is trusted, pass a larger "
        f"{limit}= to read_hashed_csv"
    )


def check_bomb(
    infos: list[zipfile.ZipInfo], archive_size: int, max_size: int, max_ratio: float
) -> None:
    """Refuse members declaring too much; all together against ``archive_size`` (shared bytes)."""
    total = sum(info.file_size for info in infos)
    if total > max_size:
        _refuse(
            f"the CSV in the archive would unpack to {_mib(total)}, above", "max_size", max_size
        )
    members = "1 member" if len(infos) == 1 else f"{len(infos):,} members"
    whole = (f"the CSV in the archive ({members})", total, archive_size, "an archive of ")
    for name, size, packed, of in [
        *((repr(i.filename), i.file_size, i.compress_size, "") for i in infos),
        whole,
    ]:
        ratio = size / max(packed, 1)
        if size > RATIO_FLOOR and ratio > max_ratio:
            found = f"{name} would unpack to {_mib(size)} from {of}{_mib(packed)}"
            _refuse(
                f"{found}, {ratio:,.0f} times, above",
                "max_ratio",
                max_ratio,
                ": it looks like a zip bomb",
            )


Opener = Callable[[], AbstractContextManager[Any]]
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]

_STR = pd.StringDtype("pyarrow")
_STRINGS = {pa.string(): _STR, pa.large_string(): _STR}

BLOCK_SIZE = 4 << 20  # bytes of CSV parsed at once, one batch each
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
    label: str


def _cell(value: str) -> str:
    return value.strip().strip('"').strip()


def _names_hash(value: str) -> bool:
    return "md5" in value.lower() or "hash" in value.lower()


def _split(lines: list[str]) -> tuple[str | None, list[list[str]], int]:
    best: tuple[str | None, list[list[str]], int] = (None, [[line] for line in lines], 1)
    most = 0
    for delimiter in (",", ";", "\t"):
        try:
            # Quotes are not read as quoting, nor are they by the reader: the fields
            # counted here are those it will find.
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
    return Layout(delimiter, header, tuple(names), md5, blank + header, label)


def check_limits(max_size: Any, max_ratio: Any) -> None:
    check_int("max_size", max_size, minimum=1)
    check_number("max_ratio", max_ratio)


def _member_batches(
    opener: Opener, layout: Layout, skipped: list[str], block_size: int
) -> Iterator[Any]:
    def on_bad_row(row: Any) -> str:
        skipped.append(str(row.text)[:60])
        return "skip"

    names, sep, given = list(layout.names), layout.delimiter or "\x1f", 0
    read = pcsv.ReadOptions(column_names=names, skip_rows=layout.skip_rows, block_size=block_size)
    types = dict.fromkeys(names, pa.large_string())
    convert = pcsv.ConvertOptions(column_types=types, strings_can_be_null=True, null_values=[""])
    # The handler gets rows decoded as UTF-8 (failing unraisably): only a wrong width reparses.
    for handler in (None, on_bad_row):
        # No quoting: an unclosed quote would silently join lines into one field.
        parse = pcsv.ParseOptions(delimiter=sep, quote_char=False, invalid_row_handler=handler)
        try:
            with opener() as stream:
                reader = pcsv.open_csv(pa.PythonFile(stream, "r"), read, parse, convert)
                again = given
                for batch in reader:
                    if again:
                        cut = min(again, batch.num_rows)
                        batch, again = batch.slice(cut), again - cut
                    if batch.num_rows:
                        given += batch.num_rows
                        yield batch
            return
        except pa.ArrowInvalid as exc:
            # Arrow's message may quote a line of the file: keep it out.
            if handler is None and "columns, got" in str(exc):
                continue
            what = "it is not UTF-8 text" if "utf8" in str(exc).lower() else "malformed CSV"
            raise BadArchive(f"{layout.label}: cannot be read as CSV ({what})") from None


def _as_input(source: Any) -> IO[bytes]:
    """A seekable binary file: bytes wrapped, a path opened, an unseekable file read whole."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return io.BytesIO(source)
    if isinstance(source, (str, os.PathLike)):
        return open(source, "rb")  # closed by the caller
    if isinstance(source, io.TextIOBase) or not callable(getattr(source, "read", None)):
        raise InvalidInput(
            "source must be a path, bytes or a binary file object (mode 'rb'), "
            f"not {type(source).__name__}"
        )
    seekable = getattr(source, "seekable", None)
    return source if seekable is not None and seekable() else io.BytesIO(source.read())


def hashed_csv_members(source: Source) -> list[str]:
    """Return the names of the members :func:`read_hashed_csv` would read; ``[]`` for a bare CSV."""
    with HashedBatches(source, max_size=2**63, max_ratio=math.inf) as reader:
        return reader.members


def text_schema(names: list[str]) -> pa.Schema:
    """Every column of ``names`` as text (large strings), as the list's files hold it."""
    return pa.schema([(name, pa.large_string()) for name in names])


class HashedBatches:
    """:func:`read_hashed_csv` in batches; ``schema``, ``kinds``, ``attrs``, :meth:`warn` last."""

    def __init__(
        self,
        source: Source,
        *,
        max_size: int = 4 * 2**30,
        max_ratio: float = 200,
        block_size: int = BLOCK_SIZE,
    ) -> None:
        check_limits(max_size, max_ratio)
        self._source, self._max_size, self._max_ratio = source, max_size, max_ratio
        self._block_size = block_size
        self._stack = ExitStack()
        self._archive: zipfile.ZipFile | None = None
        self._openers: list[tuple[str, Opener]] = []
        self.members: list[str] = []  # empty for a bare CSV
        self.layout: Layout | None = None  # the first member's with lines
        self.rows = 0
        self.schema = text_schema(["md5"])
        self.kinds: dict[str, int] | None = None  # with a kind column only
        self._bad, self._examples, self._skipped = 0, list[str](), list[str]()

    def __enter__(self) -> HashedBatches:
        try:
            self._open()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _open(self) -> None:
        data = _as_input(self._source)
        if data is not self._source:
            self._stack.callback(data.close)
        start = data.tell()
        head = data.read(4)
        data.seek(start)
        if head not in (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08"):

            @contextmanager
            def rewound() -> Iterator[Capped]:
                data.seek(start)
                yield Capped(data, None, "the CSV")

            self._openers = [("the CSV", rewound)]
            return
        with zip_faults():
            archive, size = open_archive(data)
            self._archive = self._stack.enter_context(archive)
            infos = csv_members(archive)
            check_bomb(infos, size, self._max_size, self._max_ratio)
        # What every member yields counts against max_size together, whatever they declare.
        budget = Capped(None, self._max_size, "the archive")

        @contextmanager
        def member(info: zipfile.ZipInfo) -> Iterator[Capped]:
            with archive.open(info) as raw:
                yield Capped(raw, info.file_size, info.filename, budget, key=info)

        self.members = [info.filename for info in infos]
        self._openers = [(info.filename, functools.partial(member, info)) for info in infos]

    def __iter__(self) -> Iterator[Any]:
        with zip_faults() if self._archive is not None else nullcontext():
            for label, opener in self._openers:
                with opener() as stream:
                    sample = stream.read(SAMPLE + 1)
                layout = detect(sample[:SAMPLE], len(sample) <= SAMPLE, label)
                if layout is None:
                    continue
                first = self.layout = self.layout or layout
                if first is layout:
                    self.schema = text_schema(["md5", *(n for n in layout.names if n != "md5")])
                    self.kinds = None if kind_column(self.schema.names) is None else {}
                elif (len(layout.names), layout.md5_index) != (len(first.names), first.md5_index):
                    raise BadArchive(f"{label!r} has other columns than {first.label!r}")
                at = first.md5_index  # a later member's names are not kept
                for batch in _member_batches(opener, layout, self._skipped, self._block_size):
                    md5, bad, examples = clean_md5(batch.column(at), 3 - len(self._examples))
                    self._bad += bad
                    self._examples += examples
                    others = [unquoted(c) for i, c in enumerate(batch.columns) if i != at]
                    out = pa.RecordBatch.from_arrays([md5, *others], schema=self.schema)
                    if self.kinds is not None:
                        kind = out.column(kind_column(self.schema.names))
                        self.kinds = add_counts([self.kinds, kind_counts(kind)])
                    self.rows += out.num_rows
                    yield out

    @property
    def attrs(self) -> dict[str, Any]:
        f = self.layout
        layout = f and {"delimiter": f.delimiter, "header": f.header, "md5_column": f.md5_index}
        kinds = {} if self.kinds is None else {"kinds": self.kinds}
        return {"members": list(self.members), "layout": layout, **kinds}

    def warn(self, stacklevel: int = 1) -> None:
        """Warn once of the rows without a valid MD5 and the rows skipped, if any."""
        notes = []
        if self._bad:
            notes.append(
                f"{self._bad:,} of {self.rows:,} rows have no valid MD5 (32 hex digits): kept, "
                f"lowercased, empty ones as <NA>; e.g. {', '.join(self._examples)}"
            )
        if self._skipped:
            shown = ", ".join(repr(text) for text in self._skipped[:3])
            notes.append(
                f"{len(self._skipped):,} rows with the wrong number of fields skipped, e.g. {shown}"
            )
        if notes:
            warnings.warn("; ".join(notes), stacklevel=stacklevel + 1)


def read_hashed_csv(
    source: Source, *, max_size: int = 4 * 2**30, max_ratio: float = 200
) -> pd.DataFrame:
    """Read the MD5 hashes of a suppression-list export.

    The ``md5`` column comes first, lowercased, then the others by their header
    names (``col<i>`` without one), all ``string[pyarrow]``, empty fields
    ``<NA>``. ``attrs`` hold the ``members`` read, the ``layout`` detected and,
    with a ``type`` or ``kind`` column, the rows per ``kinds``. How the layout
    is detected: docs/suppression.md.

    Args:
        source: The ``.md5.zip`` (or a bare CSV): a path, bytes or a binary file object.
        max_size: Refuse CSV members that declare, or yield, more bytes in total.
        max_ratio: Refuse CSV members that declare more than this many times the
            archive's size together, or their packed size each (not below 1 MiB).

    Returns:
        The hashes, on a RangeIndex.

    Raises:
        BadArchive: Not a readable ZIP, no CSV member, no MD5 column, not UTF-8.
        ArchiveTooLarge: Beyond ``max_size`` or ``max_ratio``, or over 10,000 members.
        InvalidInput: A bad ``source`` or limit.

    Warns:
        UserWarning: Rows without a valid MD5 (kept) or of the wrong width (skipped).

    >>> read_hashed_csv(b"type;md5\\nemail;0CC175B9C0F1B6A831C399E269772661\\n")
                                    md5   type
    0  0cc175b9c0f1b6a831c399e269772661  email
    """
    with HashedBatches(source, max_size=max_size, max_ratio=max_ratio) as reader:
        batches = list(reader)
    table = pa.Table.from_batches(batches, schema=reader.schema)
    frame: pd.DataFrame = table.to_pandas(types_mapper=_STRINGS.get)
    frame.attrs.update(reader.attrs)
    reader.warn(stacklevel=2)
    return frame
