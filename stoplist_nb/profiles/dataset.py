"""A Parquet dataset of profiles on disk: its parts, its checkpoint, its lock, its sealing.

:func:`write_dataset` (behind :func:`~stoplist_nb.profiles.reading.write_profiles_parquet`
and ``ProfilesRequest.to_parquet`` of a directory) writes a directory that ``pd.read_parquet``,
``pyarrow.dataset``, DuckDB (``read_parquet('dir/*.parquet')``) and Dask read
as one table::

    part-00000.parquet   part-00001.parquet   ...   _common_metadata   _checkpoint.json

Memory holds a few pages: each page of the stream
(:func:`~stoplist_nb.profiles.stream.tables`) goes through a
:class:`pyarrow.parquet.ParquetWriter` as one row group, on a thread of its
own that works one page behind the stream (the next page is read and
flattened meanwhile, and Ctrl-C, which Python raises in the calling thread,
never lands between a page's rows and their record). A part is closed at
``profiles_per_part`` profiles, or when a column joins the stream (a Parquet
file has one schema). Between the two, its progress is committed every
``commit_seconds`` or ``commit_bytes`` of pages: each page is also written
into a hidden, uncompressed segment file (``.part-00003.parquet.seg-00001``),
which a commit closes and records. The part's own file is written page by
page beside them and takes its name when the part closes; a pull carried on
after an interruption copies the part's committed segments into a new file
first, so that a part is the same file however its pull went. On an error or
Ctrl-C the pages written since the last commit are committed too, when their
segment reads back whole; a killed process loses the window and the page
being written.

A file is written under a hidden name and renamed when whole; only then does
the checkpoint move on to it. The checkpoint (``_checkpoint.json``, replaced
atomically) holds what the pull is (the service, database, query, fields,
dtypes), each committed file (its profiles, rows, size, SHA-256, the cursor
after it, the page cursors it added and the stream's
:class:`~stoplist_nb.profiles.schema.StreamSchema` after it, where that
changed), the cursors of the committed pages (one a page, so that a resumed
pull catches a cursor that goes back to one of them) and the totals. It is
checked, never believed: every value's type, the totals, cursors and files
against one another, and every file against its size, checksum and rows,
before a resumed pull sends anything (:class:`~stoplist_nb.errors.DatasetDamaged`).

One writer at a time: the writer holds an OS lock on ``.lock`` in the
directory (its host, process and start are written in it) from before it
looks at the directory until after the sealing; a second writer gets
:class:`~stoplist_nb.errors.DatasetLocked`. A killed writer's lock dies with
its process.

When the stream ends the dataset is sealed: the parts written before a column
joined are rewritten with it (all null), so that every part has the final
schema, and ``_common_metadata`` holds that schema. Files whose names start
with ``_`` or ``.`` are ignored by pyarrow, DuckDB's ``*.parquet`` and Dask.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime
import errno
import hashlib
import json
import os
import pathlib
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq

from stoplist_nb import errors
from stoplist_nb._parquet import pandas_metadata
from stoplist_nb._threads import leave_signals_to_main
from stoplist_nb.profiles import request
from stoplist_nb.profiles.schema import StreamSchema
from stoplist_nb.profiles.stream import (
    META_FROM,
    META_NEXT,
    META_PROFILES,
    FlatPages,
    cast_columns,
    cast_frame,
    frame_from_table,
    tables,
)

__all__ = [
    "CHECKPOINT",
    "COMPRESSION",
    "DEFAULT_COMMIT_BYTES",
    "DEFAULT_COMMIT_SECONDS",
    "DEFAULT_PROFILES_PER_PART",
    "LOCK",
    "DatasetSummary",
    "PagesFrom",
    "conform_to",
    "dataset_summary",
    "parquet_schema",
    "service_origin",
    "write_dataset",
]

#: The pages of the pull from a cursor (``None``: the start), the cursors
#: reached before counting as seen: :func:`~stoplist_nb.profiles.stream.flat_pages`.
PagesFrom = Callable[[str | None, list[str]], Generator[FlatPages, None, None]]

#: The checkpoint's file name; a leading ``_`` keeps it out of the readers' sight.
CHECKPOINT = "_checkpoint.json"
COMMON_METADATA = "_common_metadata"
#: The lock file of the writer; a leading ``.`` keeps it out of the readers' sight.
LOCK = ".lock"
#: Profiles per part file: some 15 MB of Parquet on profiles like the demo's.
DEFAULT_PROFILES_PER_PART = 100_000
#: Seconds of pages after which the part being written has its progress committed.
DEFAULT_COMMIT_SECONDS = 5.0
#: Bytes of pages (as Arrow tables in memory) after which the same happens:
#: about 19,000 profiles like the demo's, 2.5 MB of Parquet.
DEFAULT_COMMIT_BYTES = 16 * 2**20
#: Every reader named above reads it; a third smaller than the default (snappy) on profiles.
COMPRESSION = "zstd"
#: The checkpoint's layout; a checkpoint of another is refused, never guessed at.
FORMAT = 2

_PART = re.compile(r"part-(\d{5,})\.parquet")
_SEGMENT = re.compile(r"\.part-(\d{5,})\.parquet\.seg-(\d{5,})")
_TEMP = re.compile(r"\.(part-\d{5,}\.parquet(\.seg-\d{5,})?|checkpoint\.json|common_metadata)\.tmp")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_PULL = ("service", "db_id", "query", "fields", "dtypes")
_KEYS = (
    "format",
    *_PULL,
    "profiles",
    "rows",
    "next_from_id",
    "parts",
    "open",
    "cursors",
    "ended",
    "complete",
    "sealing",
)
_ENTRY = ("name", "profiles", "rows", "bytes", "sha256", "next_from_id", "cursors")
_START_OVER = "pass overwrite=True to start again"


@dataclass(frozen=True)
class DatasetSummary:
    """What a Parquet dataset of profiles holds, as its checkpoint says.

    ``len(summary)`` is its number of rows.

    Attributes:
        path: The dataset's directory.
        parts: Part files written (``part-00000.parquet`` ...).
        profiles: Profiles saved: in the part files, and in the part being
            written as far as its progress was committed.
        rows: Rows of those profiles (one per subscription, one for a profile
            without any).
        complete: Whether the pull reached the end and the dataset is sealed
            (every part in the final schema, ``_common_metadata`` written).
        next_from_id: The cursor after the last page saved: where the pull
            carries on (``""``: from the start).
    """

    path: pathlib.Path
    parts: int
    profiles: int
    rows: int
    complete: bool
    next_from_id: str

    def __len__(self) -> int:
        return self.rows


@dataclass(frozen=True)
class _Entry:
    """A committed file: a part, or a segment of the part being written."""

    name: str
    profiles: int
    rows: int
    bytes: int
    sha256: str
    next_from_id: str  # the cursor after its last page
    cursors: int  # the page cursors it added to the checkpoint's list
    schema: dict[str, Any]  # the stream's schema after its last page

    def to_json(self, before: dict[str, Any] | None) -> dict[str, Any]:
        data: dict[str, Any] = {key: getattr(self, key) for key in _ENTRY}
        if self.schema != before:  # most parts share the schema of the one before
            data["schema"] = self.schema
        return data


@dataclass(frozen=True)
class _State:
    """The checkpoint: what the pull is, and how far it went (the totals follow the files)."""

    pull: dict[str, Any]
    parts: tuple[_Entry, ...] = ()
    open: tuple[_Entry, ...] = ()  # the segments of the part being written
    cursors: tuple[str, ...] = ()  # of the committed pages, one a page (the first aside)
    ended: bool = False  # no request left to send: only the sealing may be missing
    complete: bool = False
    sealing: dict[str, Any] | None = None  # a part the sealing is replacing, and its new file

    @property
    def entries(self) -> tuple[_Entry, ...]:
        return self.parts + self.open

    @property
    def profiles(self) -> int:
        return sum(e.profiles for e in self.entries)

    @property
    def rows(self) -> int:
        return sum(e.rows for e in self.entries)

    @property
    def next_from_id(self) -> str:
        return self.entries[-1].next_from_id if self.entries else ""

    @property
    def schema(self) -> dict[str, Any] | None:
        return self.entries[-1].schema if self.entries else None

    def to_json(self) -> dict[str, Any]:
        before: dict[str, Any] | None = None
        files: dict[str, list[dict[str, Any]]] = {"parts": [], "open": []}
        for key, entries in (("parts", self.parts), ("open", self.open)):
            for entry in entries:
                files[key].append(entry.to_json(before))
                before = entry.schema
        return {
            "format": FORMAT,
            **self.pull,
            "profiles": self.profiles,
            "rows": self.rows,
            "next_from_id": self.next_from_id,
            **files,
            "cursors": list(self.cursors),
            "ended": self.ended,
            "complete": self.complete,
            "sealing": self.sealing,
        }

    def summary(self, directory: pathlib.Path) -> DatasetSummary:
        return DatasetSummary(
            directory, len(self.parts), self.profiles, self.rows, self.complete, self.next_from_id
        )


def service_origin(base_url: str) -> str:
    """The service a dataset belongs to: scheme, host, port and base path of ``base_url``.

    Never its user name, password or query string; the port is always said,
    so that ``https://api.example.com`` and ``https://api.example.com:443/``
    are one service.

    Raises:
        InvalidInput: ``base_url`` is not an http(s) address with a host.

    >>> service_origin("https://user:secret@API.example.com/platform/?x=1")
    'https://api.example.com:443/platform'
    """
    split = urlsplit(base_url)
    scheme = split.scheme.lower()
    try:
        port = split.port
    except ValueError:
        port = None
        scheme = ""
    if scheme not in ("http", "https") or not split.hostname:
        raise errors.InvalidInput("base_url must be an http:// or https:// address with a host")
    host = f"[{split.hostname}]" if ":" in split.hostname else split.hostname
    if port is None:
        port = 443 if scheme == "https" else 80
    return f"{scheme}://{host}:{port}{split.path.rstrip('/')}"


def write_dataset(
    directory: pathlib.Path,
    pull: dict[str, Any],
    declared: Mapping[str, Any],
    pages_from: PagesFrom,
    *,
    resume: bool,
    overwrite: bool,
    repair: bool,
    per_part: int,
    commit_seconds: float,
    commit_bytes: int,
) -> DatasetSummary:
    """Write (or carry on) the dataset of ``pull`` in ``directory``; its arguments are checked.

    ``pull`` is what the checkpoint compares (``service``, ``db_id``, ``query``
    as sent, ``fields``, ``dtypes`` as text), ``declared`` the dtypes,
    ``pages_from`` the pages from a cursor.

    Raises:
        DatasetLocked: Another writer is writing ``directory``.
        DatasetMismatch: As :func:`~stoplist_nb.profiles.reading.write_profiles_parquet` says.
        DatasetDamaged: The checkpoint or a file it lists is not what was written.
        StoplistError: A request failed; ``exc.partial`` is the summary so far.
    """
    if directory.exists() and not directory.is_dir():
        raise errors.InvalidInput(f"{directory} is a file, not a directory for a dataset")
    directory.mkdir(parents=True, exist_ok=True)
    # Held from before the directory is looked at until the sealing is saved:
    # a second writer would delete the first's files as leftovers of a crash.
    with _writer_lock(directory):
        state = _open(directory, pull, resume=resume, overwrite=overwrite, repair=repair)
        if state.complete:
            return state.summary(directory)
        if not state.ended:
            window = _Window(per_part, commit_seconds, commit_bytes)
            state = _pull(directory, state, declared, pages_from, window)
        try:
            state = _seal(directory, state)
        except BaseException as exc:
            _say_what_is_saved(exc, directory, state)
            raise
    return state.summary(directory)


def dataset_summary(path: str | os.PathLike[str], *, checksums: bool = True) -> DatasetSummary:
    """Read and check the dataset in a directory: how many profiles are safe there.

    The checkpoint is checked as a resumed
    :func:`~stoplist_nb.profiles.reading.write_profiles_parquet` checks it
    (each value's type, its totals and cursors against its files), and so is
    every file it lists (its size, its rows and, with
    ``checksums``, its SHA-256). After an interrupted pull it says what is
    saved: a pull resumed there carries on after ``profiles`` profiles. It
    sends nothing and changes nothing; it refuses a directory a writer holds,
    and holds no lock itself (a writer that starts while it reads may change
    a file under it).

    Args:
        path: The dataset's directory.
        checksums: Read every file through to check its checksum; ``False``
            checks sizes and rows only (quicker on a big dataset).

    Returns:
        The :class:`DatasetSummary` of what the checkpoint records.

    Raises:
        InvalidInput: ``path`` is not a directory that holds a dataset.
        DatasetMismatch: The checkpoint is of another version's format.
        DatasetDamaged: The checkpoint or a file it lists is not what was
            written (``exc.part`` names the file).
        DatasetLocked: A writer is writing the directory now.

    >>> dataset_summary("profiles/")  # doctest: +SKIP
    DatasetSummary(path=PosixPath('profiles'), parts=2, profiles=230000, rows=415000, ...)
    """
    directory = pathlib.Path(os.fspath(path))
    request.check_flag("checksums", checksums)
    if not (directory / CHECKPOINT).is_file():
        what = "not a directory" if not directory.is_dir() else f"holds no {CHECKPOINT}"
        raise errors.InvalidInput(f"{directory} is {what}: there is no dataset to sum up")
    _check_no_writer(directory)
    state, damage = _checked_files(directory, _read_checkpoint(directory), checksums=checksums)
    if damage is not None:
        raise _damaged_file(directory, state, damage)
    return state.summary(directory)


# --- opening a directory -----------------------------------------------------------------------


def _open(
    directory: pathlib.Path,
    pull: dict[str, Any],
    *,
    resume: bool,
    overwrite: bool,
    repair: bool,
) -> _State:
    """The state to go on from: the checkpoint's, checked, or a new one (the directory ready)."""
    names = sorted(p.name for p in directory.iterdir())
    foreign = [n for n in names if not _ours(n) and not n.startswith((".", "_"))]
    if foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise errors.DatasetMismatch(
            f"{directory} holds files that are not part of a dataset ({shown}): "
            "a dataset needs a directory of its own; nothing was removed"
        )
    parts = [n for n in names if _PART.fullmatch(n)]
    has_checkpoint = CHECKPOINT in names
    if overwrite:
        for name in names:
            if _ours(name):
                (directory / name).unlink()
    elif has_checkpoint or parts:
        if not resume:
            raise _exists(directory, "holds a dataset already")
        if not has_checkpoint:
            raise _refused(f"{directory} holds part files without a checkpoint")
        state = _read_checkpoint(directory)
        _check_same_pull(directory, state.pull, pull)
        state, damage = _checked_files(directory, state, checksums=True)
        if damage is not None:
            if not repair:
                raise _damaged_file(directory, state, damage)
            state = _repaired(directory, state, damage)
        if not state.complete:
            # A file renamed but not checkpointed, or one being written: its pages come again.
            listed = {e.name for e in state.entries}
            for name in names:
                if _TEMP.fullmatch(name) or (
                    (_PART.fullmatch(name) or _SEGMENT.fullmatch(name)) and name not in listed
                ):
                    (directory / name).unlink(missing_ok=True)
        return state
    for name in names:
        if _TEMP.fullmatch(name) or _SEGMENT.fullmatch(name):
            (directory / name).unlink(missing_ok=True)
    return _saved(directory, _State(pull))


def _ours(name: str) -> bool:
    return name in (CHECKPOINT, COMMON_METADATA) or bool(
        _PART.fullmatch(name) or _SEGMENT.fullmatch(name) or _TEMP.fullmatch(name)
    )


def _exists(directory: pathlib.Path, what: str) -> errors.DatasetMismatch:
    exc = errors.DatasetMismatch(f"{directory} {what}")
    exc.hint = "pass resume=True to carry on from its checkpoint, or overwrite=True to start again"
    return exc


def _refused(message: str) -> errors.DatasetMismatch:
    exc = errors.DatasetMismatch(message)
    exc.hint = _START_OVER
    return exc


def _check_same_pull(
    directory: pathlib.Path, saved: Mapping[str, Any], pull: Mapping[str, Any]
) -> None:
    # Compared as JSON text: a query that differs in order or in 1 against 1.0
    # is not provably the same pull, and a mixed dataset cannot be undone.
    differ = [k for k in pull if json.dumps(saved.get(k)) != json.dumps(pull[k])]
    if differ:
        said = "; ".join(f"{k}: {saved.get(k)!r} there, {pull[k]!r} now" for k in differ)
        exc = errors.DatasetMismatch(
            f"{directory} holds the checkpoint of another pull ({said}); it is not carried on"
        )
        exc.hint = "use another directory, or pass overwrite=True to replace that dataset"
        raise exc


# --- the checkpoint, read and checked ----------------------------------------------------------


class _Bad(Exception):
    """A checkpoint that is not what a pull writes: what is wrong, for the message."""


def _read_checkpoint(directory: pathlib.Path) -> _State:
    """The checkpoint, every value checked against its type and against the others.

    Raises:
        DatasetMismatch: It is of another format.
        DatasetDamaged: It is not what a pull of this format writes (``part`` ``None``).
    """
    path = directory / CHECKPOINT
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _damaged_checkpoint(path, f"it is not JSON text ({exc})") from None
    other = data.get("format") if isinstance(data, dict) else None
    if type(other) is int and other != FORMAT:
        version = "an earlier" if other < FORMAT else "a later"
        raise _refused(
            f"{path} was written by {version} version (format {other}); "
            f"this one reads format {FORMAT} and does not carry that pull on"
        )
    try:
        return _state_from_json(data)
    except _Bad as exc:
        raise _damaged_checkpoint(path, str(exc)) from None


def _damaged_checkpoint(path: pathlib.Path, problem: str) -> errors.DatasetDamaged:
    exc = errors.DatasetDamaged(
        f"{path} is not the checkpoint a pull wrote: {problem}; the dataset is not carried on"
    )
    exc.hint = f"it was changed after it was written; {_START_OVER}"
    return exc


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _need(value: Any, where: str, kind: str) -> Any:
    """``value`` if it is of ``kind`` as JSON says it (``true`` is no number, ``1`` no flag)."""
    fits = {
        "count": type(value) is int and value >= 0,
        "int": type(value) is int,
        "text": type(value) is str,
        "flag": type(value) is bool,
        "object": type(value) is dict,
        "list": type(value) is list,
    }[kind]
    if not fits:
        said = {
            "count": "a whole number of at least 0",
            "int": "a whole number",
            "text": "a string",
            "flag": "true or false",
            "object": "an object",
            "list": "a list",
        }[kind]
        raise _Bad(f"{where} is {_shown(value)}, not {said}")
    return value


def _keys(data: Any, where: str, required: Sequence[str], optional: Sequence[str] = ()) -> None:
    _need(data, where, "object")
    missing = [k for k in required if k not in data]
    if missing:
        raise _Bad(f"{where} has no {missing[0]!r}")
    unknown = [k for k in data if k not in required and k not in optional]
    if unknown:
        raise _Bad(f"{where} has {unknown[0]!r}, which no pull writes")


def _state_from_json(data: Any) -> _State:
    _keys(data, "the checkpoint", _KEYS)
    if _need(data["format"], "'format'", "int") != FORMAT:
        raise _Bad(f"'format' is {_shown(data['format'])}, not {FORMAT}")
    _need(data["service"], "'service'", "text")
    _need(data["profiles"], "'profiles'", "count")
    _need(data["rows"], "'rows'", "count")
    _need(data["next_from_id"], "'next_from_id'", "text")
    _need(data["db_id"], "'db_id'", "int")
    if data["query"] is not None:
        _need(data["query"], "'query'", "object")
    if data["fields"] is not None:
        for i, name in enumerate(_need(data["fields"], "'fields'", "list")):
            _need(name, f"'fields'[{i}]", "text")
    for name, dtype in _need(data["dtypes"], "'dtypes'", "object").items():
        _need(dtype, f"'dtypes'[{name!r}]", "text")
    schema: dict[str, Any] | None = None
    files: dict[str, list[_Entry]] = {"parts": [], "open": []}
    for key in files:
        for i, item in enumerate(_need(data[key], f"{key!r}", "list")):
            where = f"{key}[{i}]"
            _keys(item, where, _ENTRY, ("schema",))
            if "schema" in item:
                schema = _checked_schema(item["schema"], f"{where}.schema")
            elif schema is None:
                raise _Bad(f"{where} has no 'schema', and no file before it has one")
            files[key].append(
                _Entry(
                    name=_need(item["name"], f"{where}.name", "text"),
                    profiles=_need(item["profiles"], f"{where}.profiles", "count"),
                    rows=_need(item["rows"], f"{where}.rows", "count"),
                    bytes=_need(item["bytes"], f"{where}.bytes", "count"),
                    sha256=_need(item["sha256"], f"{where}.sha256", "text"),
                    next_from_id=_need(item["next_from_id"], f"{where}.next_from_id", "text"),
                    cursors=_need(item["cursors"], f"{where}.cursors", "count"),
                    schema=schema,
                )
            )
    cursors = _need(data["cursors"], "'cursors'", "list")
    for i, cursor in enumerate(cursors):
        if not _need(cursor, f"'cursors'[{i}]", "text"):
            raise _Bad(f"'cursors'[{i}] is empty")
    sealing = data["sealing"]
    if sealing is not None:
        _keys(sealing, "'sealing'", ("name", "bytes", "sha256"))
        _need(sealing["name"], "'sealing'.name", "text")
        _need(sealing["bytes"], "'sealing'.bytes", "count")
        _need(sealing["sha256"], "'sealing'.sha256", "text")
    state = _State(
        pull={k: data[k] for k in _PULL},
        parts=tuple(files["parts"]),
        open=tuple(files["open"]),
        cursors=tuple(cursors),
        ended=_need(data["ended"], "'ended'", "flag"),
        complete=_need(data["complete"], "'complete'", "flag"),
        sealing=sealing,
    )
    _check_consistent(state, data)
    return state


def _checked_schema(value: Any, where: str) -> dict[str, Any]:
    _keys(value, where, ("columns", "sources", "declared"))
    for key in ("columns", "sources"):
        for i, triple in enumerate(_need(value[key], f"{where}.{key}", "list")):
            if type(triple) is not list or len(triple) != 3:
                raise _Bad(f"{where}.{key}[{i}] is {_shown(triple)}, not a list of three strings")
            for j, text in enumerate(triple):
                _need(text, f"{where}.{key}[{i}][{j}]", "text")
    for i, name in enumerate(_need(value["declared"], f"{where}.declared", "list")):
        _need(name, f"{where}.declared[{i}]", "text")
    try:
        StreamSchema.from_dict(value)
    except errors.InvalidInput as exc:
        raise _Bad(f"{where}: {exc}") from None
    schema: dict[str, Any] = value
    return schema


def _check_consistent(state: _State, data: Mapping[str, Any]) -> None:
    """The totals, cursors, names and flags against the files listed."""
    if data["profiles"] != state.profiles or data["rows"] != state.rows:
        raise _Bad(
            f"it counts {_shown(data['profiles'])} profiles and {_shown(data['rows'])} rows, "
            f"its files {state.profiles} and {state.rows}"
        )
    if data["next_from_id"] != state.next_from_id:
        last = state.entries[-1].name if state.entries else "no file"
        raise _Bad(
            f"'next_from_id' is {_shown(data['next_from_id'])}, but the pull stopped after "
            f"{last} at {state.next_from_id!r}"
        )
    segment = f".part-{len(state.parts):05d}.parquet.seg-"
    for i, entry in enumerate(state.parts):
        if entry.name != f"part-{i:05d}.parquet":
            raise _Bad(f"parts[{i}] is named {entry.name!r}, not part-{i:05d}.parquet")
    for i, entry in enumerate(state.open):
        if entry.name != f"{segment}{i:05d}":
            raise _Bad(f"open[{i}] is named {entry.name!r}, not {segment}{i:05d}")
    entries = state.entries
    empty = len(entries) == 1 and state.parts and entries[0].profiles == 0 and state.ended
    offset = 0
    for k, entry in enumerate(entries):
        if not _SHA256.fullmatch(entry.sha256):
            raise _Bad(f"{entry.name}: {_shown(entry.sha256)} is not a SHA-256 in hex")
        if entry.rows < entry.profiles or (entry.profiles == 0 and not empty) or entry.bytes == 0:
            raise _Bad(
                f"{entry.name}: {entry.profiles} profiles in {entry.rows} rows and "
                f"{entry.bytes} bytes is no file a pull writes"
            )
        if entry.cursors > max(entry.profiles, 0):
            raise _Bad(f"{entry.name}: {entry.cursors} page cursors for {entry.profiles} profiles")
        if k > 0:
            # A file's first page was asked with the cursor after the file before.
            before = entries[k - 1].next_from_id
            first = state.cursors[offset] if offset < len(state.cursors) else None
            if entry.cursors == 0 or first != before:
                raise _Bad(
                    f"{entry.name} does not start at the cursor after {entries[k - 1].name} "
                    f"({before!r}): 'cursors' says {first!r}"
                )
        offset += entry.cursors
    if offset != len(state.cursors):
        raise _Bad(f"'cursors' holds {len(state.cursors)} cursors, its files added {offset}")
    if len(set(state.cursors)) != len(state.cursors):
        raise _Bad("'cursors' holds a cursor twice: a pull never goes back to one")
    if (
        entries
        and not state.ended
        and (not state.next_from_id or state.next_from_id in state.cursors)
    ):
        raise _Bad(
            f"'next_from_id' {state.next_from_id!r} does not lead on from the pages saved: "
            "a pull carried on there would read them again"
        )
    if state.complete and not state.ended:
        raise _Bad("'complete' is true, 'ended' false: a pull is complete only once it ended")
    if state.ended and (state.open or not state.parts):
        raise _Bad("'ended' is true, but the last part is not closed")
    if state.sealing is not None and (
        state.complete
        or not state.ended
        or state.sealing["name"] not in {e.name for e in state.parts}
        or not _SHA256.fullmatch(state.sealing["sha256"])
    ):
        raise _Bad(f"'sealing' is {_shown(state.sealing)}, which no sealing writes")


# --- the files, checked --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Damage:
    """The first file that is not what was written."""

    index: int | None  # among the state's entries; None: the common metadata
    name: str
    problem: str


def _checked_files(
    directory: pathlib.Path, state: _State, *, checksums: bool
) -> tuple[_State, _Damage | None]:
    """The state as its files on disk are, and the first file that differs from its record.

    A part the sealing was replacing when it stopped may be either file: the
    new one, where it is the one there, is recorded in the state returned.
    """
    parts = list(state.parts)
    for index, entry in enumerate(state.entries):
        path = directory / entry.name
        problem = _file_problem(path, entry, checksums=checksums)
        sealing = state.sealing
        if problem is not None and sealing is not None and sealing["name"] == entry.name:
            sealed = replace(entry, bytes=sealing["bytes"], sha256=sealing["sha256"])
            if _file_problem(path, sealed, checksums=checksums) is None:
                parts[index], problem = sealed, None
        if problem is not None:
            return replace(state, parts=tuple(parts)), _Damage(index, entry.name, problem)
    state = replace(state, parts=tuple(parts), sealing=None)
    if state.complete:
        path = directory / COMMON_METADATA
        try:
            same = pq.read_schema(path).equals(
                pq.read_schema(directory / state.parts[-1].name), check_metadata=True
            )
        except (OSError, ValueError, pa.ArrowException) as exc:
            return state, _Damage(None, COMMON_METADATA, f"cannot be read ({exc})")
        if not same:
            return state, _Damage(None, COMMON_METADATA, "does not hold the schema of the parts")
    return state, None


def _file_problem(path: pathlib.Path, entry: _Entry, *, checksums: bool) -> str | None:
    """What differs between the file and its record, or ``None``."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    try:
        with pq.ParquetFile(path) as file:
            rows = file.metadata.num_rows
    except (OSError, ValueError, pa.ArrowException) as exc:
        return f"is not a Parquet file a reader can open ({exc})"
    if rows != entry.rows:
        return f"holds {rows:,} rows where {entry.rows:,} were written"
    if size != entry.bytes:
        return f"is {size:,} bytes where {entry.bytes:,} were written"
    if checksums and _sha256(path) != entry.sha256:
        return "does not hold the bytes that were written (its SHA-256 differs)"
    return None


def _damaged_file(directory: pathlib.Path, state: _State, damage: _Damage) -> errors.DatasetDamaged:
    exc = errors.DatasetDamaged(
        f"{directory}: {damage.name}, listed in the checkpoint, {damage.problem}; nothing was sent",
        part=damage.name,
    )
    if damage.index is None:
        exc.hint = f"pass repair=True to seal the dataset again, or {_START_OVER}"
        return exc
    kept = state.entries[: damage.index]
    after = len(state.entries) - damage.index - 1
    dropped = f"{damage.name} and the {after} files after it" if after else damage.name
    where = f"after {kept[-1].name}" if kept else "from the start"
    saved = sum(e.profiles for e in kept)
    exc.hint = (
        f"pass repair=True to drop {dropped} and pull on {where} ({saved} profiles are "
        f"kept), or {_START_OVER}"
    )
    return exc


def _repaired(directory: pathlib.Path, state: _State, damage: _Damage) -> _State:
    """The state without the damaged file and those after it; the pull goes on from there."""
    (directory / COMMON_METADATA).unlink(missing_ok=True)
    if damage.index is None:
        return _saved(directory, replace(state, complete=False))
    kept = state.entries[: damage.index]
    parts = kept[: len(state.parts)]
    return _saved(
        directory,
        replace(
            state,
            parts=parts,
            open=kept[len(parts) :],
            cursors=state.cursors[: sum(e.cursors for e in kept)],
            ended=False,
            complete=False,
            sealing=None,
        ),
    )


# --- pulling -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Window:
    """When the part being written is closed, and when its progress is committed."""

    per_part: int
    seconds: float
    bytes: int


def _pull(
    directory: pathlib.Path,
    state: _State,
    declared: Mapping[str, Any],
    pages_from: PagesFrom,
    window: _Window,
) -> _State:
    """Read the pages after the checkpoint into parts, their progress committed as it goes."""
    if state.schema is None:
        schema = StreamSchema.from_dtypes(declared)
    else:
        schema = StreamSchema.from_dict(state.schema)
    # The cursors of the pull before an interruption count as reached: a cursor
    # that goes back to one of them is a stall, not pages read twice.
    pages = pages_from(state.next_from_id or None, list(state.cursors))
    stream = tables(schema, declared, pages)
    writer = _Writer(directory, state, declared, window)
    # The writer has a thread of its own, a page behind the stream: the next
    # page is read while one is written, and Ctrl-C (which Python raises in
    # the calling thread) never falls between a page's rows and their record.
    with ThreadPoolExecutor(1, "stoplist-nb-writer", leave_signals_to_main) as thread:
        writes: deque[Future[None]] = deque()
        try:
            with closing(stream):
                for table in stream:
                    # Taken here: the stream's schema changes as the next page is read.
                    writes.append(thread.submit(writer.add, table, schema.to_dict()))
                    while len(writes) > _WRITES_AHEAD:
                        writes.popleft().result()
            while writes:
                writes.popleft().result()
            thread.submit(writer.finish, schema).result()
        except BaseException as exc:
            _settled(writes)
            _settled([thread.submit(writer.save_what_is_whole)])
            _say_what_is_saved(exc, directory, writer.state)
            raise
    return writer.state


#: Pages handed to the writer and not yet written, beside the one it writes.
_WRITES_AHEAD = 1


def _settled(futures: Iterable[Future[None]]) -> None:
    """Wait until the writer is done with ``futures``, whatever they raise.

    On the way out of an error: a page is written in milliseconds, and a
    second Ctrl-C that stopped the wait would leave it half recorded.
    """
    pending = set(futures)
    while pending:
        with contextlib.suppress(KeyboardInterrupt):
            pending = concurrent.futures.wait(pending).not_done


def _say_what_is_saved(exc: BaseException, directory: pathlib.Path, state: _State) -> None:
    again = (
        f"{state.profiles} profiles are saved in {directory}; call "
        "write_profiles_parquet again with resume=True to carry on from there"
    )
    if isinstance(exc, errors.StoplistError):
        exc.partial = state.summary(directory)
        # The checkpoint carries on, not a from_id: the message must not advise one.
        exc.resume_from = None
        exc.hint = f"{exc.hint}; {again}" if exc.hint else again
    else:  # Ctrl-C, a full disk: the traceback says it
        errors.add_note(exc, again)


class _File:
    """A Parquet file being written under a hidden name, a row group a page."""

    def __init__(self, temp: pathlib.Path, schema: pa.Schema, compression: str) -> None:
        self.temp = temp
        self.writer: pq.ParquetWriter | None = pq.ParquetWriter(
            temp, schema, compression=compression
        )
        self.rows = 0
        self.torn = False  # a write that did not finish: the file may hold part of a page

    def write(self, table: pa.Table) -> None:
        assert self.writer is not None
        self.torn = True
        self.writer.write_table(table, row_group_size=max(1, table.num_rows))
        self.torn = False
        self.rows += table.num_rows

    def close(self) -> None:
        """Close the file and make it durable; raise if it does not read back with every row."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        _check_rows(self.temp, self.rows)
        _fsync(self.temp)

    def discard(self) -> None:
        with contextlib.suppress(Exception):
            if self.writer is not None:
                self.writer.close()
        self.temp.unlink(missing_ok=True)


@dataclass(frozen=True)
class _Page:
    """A page written since the last commit: what its commit records."""

    profiles: int
    cursor: str  # the one it was asked with ("": the first page)
    next_from_id: str
    schema: dict[str, Any]  # the stream's schema after it
    ending: bool  # it has no cursor of its own: nothing follows it
    nbytes: int  # as an Arrow table


class _Writer:
    """The pages of a pull into part files, the part being written committed as it goes.

    Each page goes into the part's file, under a hidden name until the part
    closes, and into a segment file, which a commit closes and records: a
    pull carried on after an interruption copies the part's segments into
    its file first, so that a part is the same file however its pull went.
    Segments are not compressed: they are read only by such a pull.
    """

    def __init__(
        self,
        directory: pathlib.Path,
        state: _State,
        declared: Mapping[str, Any],
        window: _Window,
    ) -> None:
        self.directory = directory
        self.state = state
        self.declared = declared
        self.window = window
        self.part: _File | None = None
        self.segment: _File | None = None
        self.pages: list[_Page] = []  # those in the segment
        self.opened = 0.0  # when the segment's first page came
        self.read = 0  # profiles of this call: the tables count from where it started
        self.failed = False
        # The part whose segments a resumed pull goes on with has their file schema.
        self.file_schema: pa.Schema | None = (
            _file_schema(state.open[-1].schema, declared) if state.open else None
        )

    def add(self, table: pa.Table, schema: dict[str, Any]) -> None:
        """Write a page, ``schema`` the stream's after it; after a failed page, nothing."""
        if self.failed:
            return
        try:
            self._add(table, schema)
        except BaseException:
            self.failed = True
            raise

    def _add(self, table: pa.Table, schema: dict[str, Any]) -> None:
        if self.file_schema is not None and not table.schema.equals(
            self.file_schema, check_metadata=False
        ):
            self.close_part(ended=False)  # a column joined: a file has one schema
        if self.file_schema is None:
            self.file_schema = parquet_schema(table, StreamSchema.from_dict(schema), self.declared)
        if self.part is None:
            self.part = self._open_part()
        if self.segment is None:
            self.segment = self._open_segment()
            self.opened = time.monotonic()
        # The part first: a part cut by a failed write goes, the segment stays whole.
        self.part.write(table)
        self.segment.write(table)
        meta = table.schema.metadata
        count = int(meta[META_PROFILES])
        page = _Page(
            profiles=count - self.read,
            cursor=meta[META_FROM].decode(),
            next_from_id=meta[META_NEXT].decode(),
            schema=schema,
            ending=meta[META_NEXT] == meta[META_FROM],
            nbytes=table.nbytes,
        )
        self.read = count
        self.pages.append(page)
        window = self.window
        if sum(e.profiles for e in self.state.open) + _profiles(self.pages) >= window.per_part:
            self.close_part(ended=page.ending)
        elif not page.ending and (
            sum(p.nbytes for p in self.pages) >= window.bytes
            or time.monotonic() - self.opened >= window.seconds
        ):
            self.commit()

    def finish(self, schema: StreamSchema) -> None:
        """The stream ended: close the part being written, or say that it ended."""
        if self.file_schema is not None:
            self.close_part(ended=True)
        elif not self.state.parts:
            # No profile at all: one empty part still says which columns there are.
            empty = cast_columns(schema.arrow_schema.empty_table(), self.declared)
            self.file_schema = parquet_schema(empty, schema, self.declared)
            self.part = self._open_part()
            self.part.write(empty)
            self.pages.append(_Page(0, "", "", schema.to_dict(), ending=True, nbytes=0))
            self.close_part(ended=True)
        else:
            self.state = _saved(self.directory, replace(self.state, ended=True))

    def commit(self) -> None:
        """Commit the pages since the last commit: their segment takes its name."""
        state, segment, pages = self.state, self.segment, self.pages
        assert segment is not None
        self.segment, self.pages = None, []
        name = segment.temp.name.removesuffix(".tmp")
        try:
            segment.close()
            entry = _entry(name, segment, pages, ())
            os.replace(segment.temp, self.directory / name)
        finally:
            segment.temp.unlink(missing_ok=True)  # gone once renamed; else its pages come again
        self.state = _saved(
            self.directory,
            replace(state, open=(*state.open, entry), cursors=(*state.cursors, *_cursors(pages))),
        )

    def close_part(self, *, ended: bool) -> None:
        """Close the part: its file, written page by page, takes its name."""
        state, pages = self.state, self.pages
        if self.part is None:  # a resumed part to which no page came
            self.part = self._open_part()
        part, self.part = self.part, None
        segment, self.segment, self.pages = self.segment, None, []
        if segment is not None:
            segment.discard()  # its pages are in the part
        name = f"part-{len(state.parts):05d}.parquet"
        try:
            part.close()
            entry = _entry(name, part, pages, state.open)
            os.replace(part.temp, self.directory / name)
        finally:
            part.temp.unlink(missing_ok=True)  # gone once renamed; else the part comes again
        self.file_schema = None
        self.state = _saved(
            self.directory,
            replace(
                state,
                parts=(*state.parts, entry),
                open=(),
                cursors=(*state.cursors, *_cursors(pages)),
                ended=ended,
            ),
        )
        for committed in state.open:
            (self.directory / committed.name).unlink(missing_ok=True)  # in the part now

    def save_what_is_whole(self) -> None:
        """On the way out of an error: commit the pages since the last commit if they are whole."""
        part, self.part = self.part, None
        if part is not None:
            part.discard()  # a pull that carries on writes it again from the segments
        segment = self.segment
        if segment is None:
            return
        if segment.torn or not self.pages or self.pages[-1].ending:
            # Half a page; or a last page, which a pull carried on from its cursor would read again.
            self.segment, self.pages = None, []
            segment.discard()
            return
        # When they cannot be saved (a full disk), their pages come again.
        with contextlib.suppress(Exception):
            self.commit()

    def _open_part(self) -> _File:
        """The part's file, with the segments a resumed pull goes on from copied in."""
        assert self.file_schema is not None
        temp = self.directory / f".part-{len(self.state.parts):05d}.parquet.tmp"
        part = _File(temp, self.file_schema, COMPRESSION)
        try:
            for segment in self.state.open:
                with pq.ParquetFile(self.directory / segment.name) as source:
                    for i in range(source.num_row_groups):
                        # Read back, a list's item is named "element": the cast names it as written.
                        part.write(source.read_row_group(i).cast(self.file_schema))
        except BaseException:
            part.discard()
            raise
        return part

    def _open_segment(self) -> _File:
        assert self.file_schema is not None
        state = self.state
        name = f".part-{len(state.parts):05d}.parquet.seg-{len(state.open):05d}.tmp"
        return _File(self.directory / name, self.file_schema, _SEGMENT_COMPRESSION)


#: Segments are read back only by a pull carried on after an interruption.
_SEGMENT_COMPRESSION = "none"


def _profiles(pages: Sequence[_Page]) -> int:
    return sum(p.profiles for p in pages)


def _cursors(pages: Sequence[_Page]) -> list[str]:
    return [p.cursor for p in pages if p.cursor]


def _entry(name: str, file: _File, pages: Sequence[_Page], before: Sequence[_Entry]) -> _Entry:
    """The record of ``file``: the committed segments ``before`` it, then ``pages``."""
    last = pages[-1] if pages else before[-1]
    return _Entry(
        name,
        profiles=sum(e.profiles for e in before) + _profiles(pages),
        rows=file.rows,
        bytes=file.temp.stat().st_size,
        sha256=_sha256(file.temp),
        next_from_id=last.next_from_id,
        cursors=sum(e.cursors for e in before) + len(_cursors(pages)),
        schema=last.schema,
    )


def _file_schema(schema: Mapping[str, Any], declared: Mapping[str, Any]) -> pa.Schema:
    """The file schema of the pages of a stream whose schema is ``schema``."""
    stream = StreamSchema.from_dict(schema)
    empty = cast_columns(stream.arrow_schema.empty_table(), declared)
    return parquet_schema(empty, stream, declared)


def _check_rows(path: pathlib.Path, rows: int) -> None:
    with pq.ParquetFile(path) as file:
        found = file.metadata.num_rows
    if found != rows:
        raise OSError(f"{path.name} reads back with {found} rows where {rows} were written")


# --- sealing -----------------------------------------------------------------------------------


def _seal(directory: pathlib.Path, state: _State) -> _State:
    """Give every part the final schema, write ``_common_metadata``, mark the dataset complete."""
    final = pq.read_schema(directory / state.parts[-1].name)
    for i, entry in enumerate(state.parts[:-1]):
        path = directory / entry.name
        if pq.read_schema(path).equals(final, check_metadata=True):
            continue
        temp = directory / f".{entry.name}.tmp"
        try:
            with (
                pq.ParquetFile(path) as source,
                pq.ParquetWriter(temp, final, compression=COMPRESSION) as writer,
            ):
                for g in range(source.num_row_groups):
                    table = conform_to(source.read_row_group(g), final)
                    writer.write_table(table, row_group_size=max(1, table.num_rows))
            _check_rows(temp, entry.rows)
            _fsync(temp)
            sealed = replace(entry, bytes=temp.stat().st_size, sha256=_sha256(temp))
            # Said before the rename: whichever of the two files a crash leaves is known.
            pending = {"name": entry.name, "bytes": sealed.bytes, "sha256": sealed.sha256}
            state = _saved(directory, replace(state, sealing=pending))
            os.replace(temp, path)
            parts = (*state.parts[:i], sealed, *state.parts[i + 1 :])
            state = _saved(directory, replace(state, parts=parts, sealing=None))
        finally:
            temp.unlink(missing_ok=True)  # gone once renamed; else half a part
    temp = directory / ".common_metadata.tmp"
    try:
        pq.write_metadata(final, temp)
        _fsync(temp)
        os.replace(temp, directory / COMMON_METADATA)
    finally:
        temp.unlink(missing_ok=True)
    return _saved(directory, replace(state, ended=True, complete=True))


def conform_to(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` in ``schema``: its columns in that order, the missing ones all null."""
    rows = table.num_rows
    columns = [
        table.column(f.name) if f.name in table.column_names else pa.nulls(rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def parquet_schema(table: pa.Table, schema: StreamSchema, declared: Mapping[str, Any]) -> pa.Schema:
    """The file schema of a stream's table: its columns, and pandas' metadata for its dtypes."""
    kinds = {name: schema.kind(name) for name in table.column_names}
    frame = cast_frame(frame_from_table(table.slice(0, 0), kinds, None), declared)
    return table.schema.remove_metadata().with_metadata(pandas_metadata(frame))


# --- saving ------------------------------------------------------------------------------------


def _saved(directory: pathlib.Path, state: _State) -> _State:
    _save(directory, state)
    return state


def _save(directory: pathlib.Path, state: _State) -> None:
    """Replace the checkpoint, durably: the file, then the directory entry."""
    temp = directory / ".checkpoint.json.tmp"
    # One line per key and per file: readable, and the schema's many short lists stay short.
    lines = []
    for key, value in state.to_json().items():
        if key in ("parts", "open") and value:
            files = ",\n  ".join(json.dumps(v, ensure_ascii=False) for v in value)
            lines.append(f"{json.dumps(key)}: [\n  {files}\n ]")
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    text = "{\n " + ",\n ".join(lines) + "\n}\n"
    try:
        with open(temp, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, directory / CHECKPOINT)
    finally:
        temp.unlink(missing_ok=True)  # gone once renamed; else the checkpoint before stands
    _fsync_directory(directory)


def _sha256(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync(path: pathlib.Path) -> None:
    with open(path, "rb+") as file:
        os.fsync(file.fileno())


def _fsync_directory(directory: pathlib.Path) -> None:
    # A rename is durable once the directory is; Windows cannot open one, and need not.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --- one writer at a time ------------------------------------------------------------------------

#: The directories this process writes, and who it is: a lock the OS would grant a
#: second time to the same process (POSIX locks where flock is emulated, as on NFS).
_WRITING: dict[tuple[int, int], str] = {}
_WRITING_GUARD = threading.Lock()
#: Windows locks bytes, and a locked byte cannot be read: the lock is far past the text.
_WINDOWS_LOCK_AT = 1 << 30


@contextlib.contextmanager
def _writer_lock(directory: pathlib.Path) -> Iterator[None]:
    """Hold the directory's lock, or raise :class:`~stoplist_nb.errors.DatasetLocked`."""
    key = _identity(os.stat(directory))
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    holder = f"host {socket.gethostname()}, process {os.getpid()}, started {started}"
    with _WRITING_GUARD:
        if key in _WRITING:
            raise _locked(directory, _WRITING[key])
        _WRITING[key] = holder
    try:
        try:
            fd = _lock(directory, exclusive=True)
        except _NoLocks as exc:
            raise errors.DatasetLocked(
                f"{directory / LOCK} cannot be locked: the filesystem refused ({exc}); "
                "one writer at a time cannot be ensured there, so nothing is written "
                "(a local disk locks)"
            ) from None
        assert fd is not None
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"{holder}\n".encode())
            yield
        finally:
            _unlock(directory / LOCK, fd)
    finally:
        with _WRITING_GUARD:
            del _WRITING[key]


def _check_no_writer(directory: pathlib.Path) -> None:
    """Raise :class:`~stoplist_nb.errors.DatasetLocked` if a writer holds the directory now."""
    with _WRITING_GUARD:
        # This process writes it: opening the lock file here would end a POSIX lock.
        mine = _WRITING.get(_identity(os.stat(directory)))
    if mine is not None:
        raise _locked(directory, mine, summary=True)
    try:
        fd = _lock(directory, exclusive=False, summary=True)
    except _NoLocks:
        return  # a filesystem that locks nothing: nothing to learn
    if fd is not None:
        os.close(fd)  # a reader holds nothing while it reads: a writer may start


class _NoLocks(Exception):
    """The filesystem refuses to lock the lock file (an NFS mount without its lock service)."""


def _identity(stat: os.stat_result) -> tuple[int, int]:
    return (stat.st_dev, stat.st_ino)


def _lock(directory: pathlib.Path, *, exclusive: bool, summary: bool = False) -> int | None:
    """The file descriptor of the locked lock file (``None``: no lock file, no writer)."""
    path = directory / LOCK
    if sys.platform == "win32" and not exclusive:
        return None  # Windows has no shared lock to try without blocking a writer
    for _ in range(100):
        try:
            if exclusive:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            else:
                fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            got = _try_lock(fd, exclusive=exclusive)
        except OSError as exc:
            os.close(fd)
            raise _NoLocks(exc.strerror or str(exc)) from None
        if not got:
            holder = _holder(fd)
            os.close(fd)
            raise _locked(directory, holder, summary=summary)
        # A writer that just ended removed the file it locked: lock the one at the path.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)
    raise errors.DatasetLocked(f"{path} kept being replaced while it was being locked")


def _locked(directory: pathlib.Path, holder: str, *, summary: bool = False) -> errors.DatasetLocked:
    who = holder or "which has not written who it is yet"
    if summary:
        exc = errors.DatasetLocked(
            f"{directory} is being written by another writer ({who}): what it holds "
            "changes as it goes",
            holder=holder,
        )
        exc.hint = "ask again once that writer ends"
        return exc
    exc = errors.DatasetLocked(
        f"{directory} is being written by another writer ({who}); nothing was sent or changed",
        holder=holder,
    )
    exc.hint = (
        "one writer at a time: wait for that pull to end (or stop it), then call again; "
        "a writer that was killed holds no lock"
    )
    return exc


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return os.read(fd, 1000).decode("utf-8", "replace").strip()
    except OSError:
        return ""


if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int, *, exclusive: bool) -> bool:
        os.lseek(fd, _WINDOWS_LOCK_AT, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(path: pathlib.Path, fd: int) -> None:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.lseek(fd, _WINDOWS_LOCK_AT, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        os.close(fd)
        with contextlib.suppress(OSError):  # another writer has it open: it stays
            path.unlink()

else:
    import fcntl

    def _try_lock(fd: int, *, exclusive: bool) -> bool:
        # flock, not lockf: a POSIX lock ends when the process closes any descriptor
        # of the file, and two threads of one process would both get it.
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            raise
        return True

    def _unlock(path: pathlib.Path, fd: int) -> None:
        # Removed while still held: a writer that opened it meanwhile finds it gone
        # once it gets the lock, and locks the file at the path instead.
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)
