"""Read a suppression-list export (``<list name>.md5.zip``) into a DataFrame.

The service does not document the CSV inside the archive, so the layout of
each member is detected from its first 64 KiB:

* **Members**: regular files named ``*.csv`` (any case), else ``*.txt`` and
  ``*.md5``; directories, ``__MACOSX/``, names starting with ``.`` and links
  are ignored. Several members are read in name order and stacked.
* **Separator**: among ``,`` ``;`` and tab, the one that splits the most
  sampled lines into one same number (above one) of fields, ties in that
  order; if none splits a line, the file has a single column.
* **MD5 column**: the one with the most values matching ``^[0-9a-fA-F]{32}$``
  (spaces and quotes around aside) in the lines after the first; failing that
  in the first line; failing that, the column whose first-line name contains
  ``md5`` or ``hash``; a single column as it is. Otherwise ``BadArchive``.
* **Header**: the first line is one when none of its fields is 32-hex, its
  MD5-column field is not hex digits only (a damaged hash stays data), and a
  later line has a 32-hex value there or the field names a hash.

A UTF-8 BOM and ``\\r\\n`` line ends are accepted. The MD5 column comes first,
named ``md5``, lowercased; the others keep their header names (``col<i>``, ``i``
counted from 0 in the file, without one); all are ``string[pyarrow]``, empty
fields ``<NA>``. Rows whose md5 is not 32 hex digits are kept, rows with the
wrong number of fields skipped, both reported in one warning.
``df.attrs["members"]`` lists the members read, ``df.attrs["layout"]`` what was
detected. When a column is named ``type`` or ``kind`` (any case),
``df.attrs["kinds"]`` counts its rows per kind word: ``email``/``emails`` as
``"email"``, ``phone``/``phones``/``sms`` as ``"phone"``, ``domain``/``domains``
as ``"domain"`` (any case; these first, in that order), other words as they are
written, and empty fields under ``""``. Members are streamed from the archive
into pyarrow's CSV reader, never written to disk, and never read beyond their
declared size.

Against zip bombs (see :mod:`stoplist_nb.suppression.zipmembers`): an archive listing
more than 10,000 members is refused before its directory is parsed; the
members read must declare no more than ``max_size`` bytes together, nor more
than ``max_ratio`` times the archive's size together or their own packed size
each (below 1 MiB unpacked, no ratio applies); and what they actually yield
is counted, together, against ``max_size``.
"""

from __future__ import annotations

import functools
import io
import os
import warnings
import zipfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import IO, Any, Union

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from stoplist_nb.errors import BadArchive, InvalidInput
from stoplist_nb.suppression.csvlayout import SAMPLE, Layout, detect
from stoplist_nb.suppression.hexdigits import hex_bytes, lower_hex
from stoplist_nb.suppression.matching import kind_column, kind_counts
from stoplist_nb.suppression.zipmembers import (
    Budget,
    Capped,
    check_bomb,
    csv_members,
    open_archive,
    zip_faults,
)

__all__ = ["hashed_csv_members", "read_hashed_csv"]

Opener = Callable[[], AbstractContextManager[Any]]
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]

_STR = pd.StringDtype("pyarrow")


def _parse(opener: Opener, layout: Layout, label: str, skipped: list[str]) -> Any:
    def on_bad_row(row: Any) -> str:
        skipped.append(str(row.text)[:60])
        return "skip"

    # First without a row handler: pyarrow calls it with the row decoded as UTF-8,
    # which fails (unraisably) on a non-UTF-8 row; it is only needed when a row
    # has the wrong number of fields, and then the member is parsed again.
    for handler in (None, on_bad_row):
        try:
            with opener() as stream:
                native = stream if isinstance(stream, pa.NativeFile) else pa.PythonFile(stream, "r")
                return pcsv.read_csv(
                    native,
                    read_options=pcsv.ReadOptions(
                        column_names=list(layout.names),
                        skip_rows=layout.skip_rows,
                        block_size=4 << 20,
                    ),
                    parse_options=pcsv.ParseOptions(
                        delimiter=layout.delimiter or "\x1f", invalid_row_handler=handler
                    ),
                    convert_options=pcsv.ConvertOptions(
                        column_types=dict.fromkeys(layout.names, pa.large_string()),
                        strings_can_be_null=True,
                        null_values=[""],
                    ),
                )
        except pa.ArrowInvalid as exc:
            # Arrow's message may quote a line of the file: keep it out.
            if handler is None and "columns, got" in str(exc):
                continue
            what = "it is not UTF-8 text" if "utf8" in str(exc).lower() else "malformed CSV"
            raise BadArchive(f"{label}: cannot be read as CSV ({what})") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _read_member(label: str, opener: Opener, skipped: list[str]) -> list[tuple[str, Layout, Any]]:
    with opener() as stream:
        sample = stream.read(SAMPLE + 1)
    layout = detect(sample[:SAMPLE], len(sample) <= SAMPLE, label)
    return [] if layout is None else [(label, layout, _parse(opener, layout, label, skipped))]


def _as_input(source: Any) -> bytes | bytearray | memoryview | IO[bytes]:
    """Bytes as they are; a path opened; a file object that cannot seek read whole."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return source
    if isinstance(source, (str, os.PathLike)):
        return open(source, "rb")  # closed by the caller
    if isinstance(source, io.TextIOBase) or not callable(getattr(source, "read", None)):
        raise InvalidInput(
            "source must be a path, bytes or a binary file object (mode 'rb'), "
            f"not {type(source).__name__}"
        )
    seekable = getattr(source, "seekable", None)
    return source if seekable is not None and seekable() else memoryview(source.read())


def _open_zip(data: Any) -> tuple[zipfile.ZipFile, int] | None:
    """The archive and its size in bytes; ``None`` for what is not a ZIP archive."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        head, file = bytes(data[:4]), io.BytesIO(data)
    else:
        start = data.tell()
        head, file = data.read(4), data
        data.seek(start)
    if head not in (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08"):
        return None
    with zip_faults():
        return open_archive(file)


def hashed_csv_members(source: Source) -> list[str]:
    """Return the names of the members :func:`read_hashed_csv` would read, in order.

    An empty list means ``source`` is not a ZIP archive (a bare CSV).

    >>> import io, zipfile
    >>> buf = io.BytesIO()
    >>> with zipfile.ZipFile(buf, "w") as zf:
    ...     for name in ("__MACOSX/._b.csv", "b.csv", "a.csv", "readme.txt"):
    ...         zf.writestr(name, "")
    >>> hashed_csv_members(buf.getvalue())
    ['a.csv', 'b.csv']
    """
    data = _as_input(source)
    try:
        opened = _open_zip(data)
        if opened is None:
            return []
        with opened[0] as archive:
            return [info.filename for info in csv_members(archive)]
    finally:
        if data is not source and hasattr(data, "close"):
            data.close()


def _read_tables(
    data: Any, max_size: int, max_ratio: float, skipped: list[str]
) -> tuple[list[str], list[tuple[str, Layout, Any]]]:
    opened = _open_zip(data)
    if opened is None and isinstance(data, (bytes, bytearray, memoryview)):
        return [], _read_member("the CSV", lambda: nullcontext(pa.BufferReader(data)), skipped)
    if opened is None:
        start = data.tell()

        @contextmanager
        def rewound() -> Iterator[Capped]:
            data.seek(start)
            yield Capped(data, None, "the CSV")

        return [], _read_member("the CSV", rewound, skipped)

    archive, size = opened
    # What every member yields counts against max_size together, whatever they declare.
    budget = Budget(max_size)

    @contextmanager
    def member(info: zipfile.ZipInfo) -> Iterator[Capped]:
        with archive.open(info) as raw:
            yield Capped(raw, info.file_size, info.filename, budget, key=info)

    with zip_faults(), archive:
        infos = csv_members(archive)
        check_bomb(infos, size, max_size, max_ratio)
        tables = []
        for info in infos:
            tables += _read_member(info.filename, functools.partial(member, info), skipped)
        return [info.filename for info in infos], tables


def _clean_md5(column: Any) -> tuple[Any, int, list[str]]:
    """Lowercase the md5 column; count (and show a few of) the values that are not MD5."""
    chunks, bad, examples = [], 0, list[Any]()
    for chunk in column.chunks:
        if hex_bytes(chunk) is not None:
            chunks.append(lower_hex(chunk))
            continue
        lowered = pc.utf8_lower(pc.utf8_trim_whitespace(chunk))
        lowered = pc.if_else(pc.equal(lowered, ""), pa.scalar(None, lowered.type), lowered)
        wrong = pc.invert(pc.fill_null(pc.match_substring_regex(lowered, "^[0-9a-f]{32}$"), False))
        bad += pc.sum(wrong).as_py() or 0
        examples += pc.filter(lowered, wrong).slice(0, 3 - len(examples)).to_pylist()
        chunks.append(lowered)
    return pa.chunked_array(chunks, column.type), bad, [repr(e or "")[:50] for e in examples]


def read_hashed_csv(
    source: Source, *, max_size: int = 4 * 2**30, max_ratio: float = 200
) -> pd.DataFrame:
    """Read the MD5 hashes of a suppression-list export (see the module for the layout).

    Args:
        source: The ``.md5.zip`` (or a bare CSV): a path, bytes or a binary file object.
        max_size: Refuse an archive whose CSV members declare, or yield as
            they are read, more bytes in total.
        max_ratio: Refuse CSV members that together declare more than this many
            times the archive's size in bytes, or one that declares more than
            this many times its packed size; not below 1 MiB unpacked (an MD5
            list packs about 2:1).

    Returns:
        ``md5`` (lowercase hex) then the file's other columns, all
        ``string[pyarrow]``; a RangeIndex; ``attrs["members"]``,
        ``attrs["layout"]`` and, with a kind column, ``attrs["kinds"]``.

    Raises:
        BadArchive: Not a readable ZIP, no CSV member, no MD5 column, not UTF-8.
        ArchiveTooLarge: Beyond ``max_size`` or ``max_ratio``, or more than
            10,000 members.
        InvalidInput: A bad ``source`` or limit.

    Warns:
        UserWarning: Rows without a valid MD5 (kept) or with the wrong number of
            fields (skipped): how many, and up to 3 examples.

    >>> import io, zipfile
    >>> buf = io.BytesIO()
    >>> with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
    ...     zf.writestr("list.csv", "type;md5\\nemail;0CC175B9C0F1B6A831C399E269772661\\n")
    >>> df = read_hashed_csv(buf.getvalue())
    >>> df
                                    md5   type
    0  0cc175b9c0f1b6a831c399e269772661  email
    >>> df.attrs["kinds"]
    {'email': 1}
    """
    if isinstance(max_size, bool) or not (isinstance(max_size, int) and max_size > 0):
        raise InvalidInput(f"max_size must be a positive number of bytes, not {max_size!r}")
    if isinstance(max_ratio, bool) or not (isinstance(max_ratio, (int, float)) and max_ratio > 0):
        raise InvalidInput(f"max_ratio must be a positive number, not {max_ratio!r}")
    skipped: list[str] = []
    data = _as_input(source)
    try:
        members, tables = _read_tables(data, max_size, max_ratio, skipped)
    finally:
        if data is not source and hasattr(data, "close"):
            data.close()
    if not tables:
        empty = pd.DataFrame({"md5": pd.array([], dtype=_STR)})
        empty.attrs.update(members=members, layout=None)
        return empty
    label, layout, _ = tables[0]
    for other, shape, _ in tables[1:]:
        if (len(shape.names), shape.md5_index) != (len(layout.names), layout.md5_index):
            raise BadArchive(f"{other!r} has other columns than {label!r}")
    table = pa.concat_tables(t.rename_columns(list(layout.names)) for _, _, t in tables)
    md5, bad, examples = _clean_md5(table.column("md5"))
    others = [name for name in layout.names if name != "md5"]
    frame: pd.DataFrame = pa.table(
        [md5, *(table.column(name) for name in others)], names=["md5", *others]
    ).to_pandas(types_mapper={pa.string(): _STR, pa.large_string(): _STR}.get)
    frame.attrs.update(
        members=members,
        layout={
            "delimiter": layout.delimiter,
            "header": layout.header,
            "md5_column": layout.md5_index,
        },
    )
    kind = kind_column(others)
    if kind is not None:
        frame.attrs["kinds"] = kind_counts(table.column(kind))
    notes = (
        [
            f"{bad:,} of {len(frame):,} rows have no valid MD5 (32 hex digits): kept, "
            f"lowercased, empty ones as <NA>; e.g. {', '.join(examples)}"
        ]
        if bad
        else []
    )
    if skipped:
        shown = ", ".join(repr(text) for text in skipped[:3])
        notes.append(f"{len(skipped):,} rows with the wrong number of fields skipped, e.g. {shown}")
    if notes:
        warnings.warn("; ".join(notes), stacklevel=2)
    return frame
