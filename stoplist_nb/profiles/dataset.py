"""A Parquet dataset of profiles on disk: its parts, its checkpoint, its sealing.

:func:`write_dataset` (behind :func:`~stoplist_nb.profiles.reading.write_profiles_parquet`
and ``ProfilesRequest.to_parquet`` of a directory) writes a directory that ``pd.read_parquet``,
``pyarrow.dataset``, DuckDB (``read_parquet('dir/*.parquet')``) and Dask read
as one table::

    part-00000.parquet   part-00001.parquet   ...   _common_metadata   _checkpoint.json

Memory holds about one page: each page of the stream
(:func:`~stoplist_nb.profiles.stream.tables`) goes through a
:class:`pyarrow.parquet.ParquetWriter` as one row group. A part is closed at
``profiles_per_part`` profiles, or when a column joins the stream (a Parquet
file has one schema). A part is written under a hidden name
(``.part-00003.parquet.tmp``) and renamed when whole; only then does the
checkpoint move on to it. The checkpoint (``_checkpoint.json``, replaced
atomically) holds what the pull is (database, query, fields, dtypes), how far
it went (the cursor after the last committed part, profiles, rows, the parts,
and the cursors of the committed pages, one a page, so that a resumed pull
catches a cursor that goes back to one of them) and the stream's
:class:`~stoplist_nb.profiles.schema.StreamSchema`, so that a pull that
stopped, however it stopped, carries on where its last part ends and gives the
same files as one that never stopped.

When the stream ends the dataset is sealed: the parts written before a column
joined are rewritten with it (all null), so that every part has the final
schema, and ``_common_metadata`` holds that schema. Files whose names start
with ``_`` or ``.`` are ignored by pyarrow, DuckDB's ``*.parquet`` and Dask.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
from collections.abc import Callable, Generator, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from stoplist_nb import errors
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
    "DEFAULT_PROFILES_PER_PART",
    "DatasetSummary",
    "PagesFrom",
    "conform_to",
    "parquet_schema",
    "write_dataset",
]

#: The pages of the pull from a cursor (``None``: the start), the cursors
#: reached before counting as seen: :func:`~stoplist_nb.profiles.stream.flat_pages`.
PagesFrom = Callable[[str | None, list[str]], Generator[FlatPages, None, None]]

#: The checkpoint's file name; a leading ``_`` keeps it out of the readers' sight.
CHECKPOINT = "_checkpoint.json"
COMMON_METADATA = "_common_metadata"
#: Profiles per part file: some 15 MB of Parquet on profiles like the demo's.
DEFAULT_PROFILES_PER_PART = 100_000
#: Every reader named above reads it; a third smaller than the default (snappy) on profiles.
COMPRESSION = "zstd"
FORMAT = 1

_PART = re.compile(r"part-(\d{5,})\.parquet")
_TEMP = re.compile(r"\.(part-\d{5,}\.parquet|checkpoint\.json|common_metadata)\.tmp")


@dataclass(frozen=True)
class DatasetSummary:
    """What a Parquet dataset of profiles holds, as its checkpoint says.

    ``len(summary)`` is its number of rows.

    Attributes:
        path: The dataset's directory.
        parts: Part files written (``part-00000.parquet`` ...).
        profiles: Profiles in them.
        rows: Rows in them (one per subscription, one for a profile without any).
        complete: Whether the pull reached the end and the dataset is sealed
            (every part in the final schema, ``_common_metadata`` written).
        next_from_id: The cursor after the last part written: where the pull
            carries on (``""``: from the start).
    """

    path: pathlib.Path
    parts: int
    profiles: int
    rows: int
    complete: bool
    next_from_id: str


@dataclass
class _State:
    """The checkpoint: what the pull is, and how far it went."""

    pull: dict[str, Any]
    schema: dict[str, Any]
    next_from_id: str = ""
    profiles: int = 0
    rows: int = 0
    parts: list[dict[str, Any]] = field(default_factory=list)
    cursors: list[str] = field(default_factory=list)  # of the committed pages, one a page
    ended: bool = False  # no request left to send: only the sealing may be missing
    complete: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            **self.pull,
            "next_from_id": self.next_from_id,
            "profiles": self.profiles,
            "rows": self.rows,
            "parts": self.parts,
            "schema": self.schema,
            "cursors": self.cursors,
            "ended": self.ended,
            "complete": self.complete,
        }

    def summary(self, directory: pathlib.Path) -> DatasetSummary:
        return DatasetSummary(
            directory, len(self.parts), self.profiles, self.rows, self.complete, self.next_from_id
        )


def write_dataset(
    directory: pathlib.Path,
    pull: dict[str, Any],
    declared: Mapping[str, Any],
    pages_from: PagesFrom,
    *,
    resume: bool,
    overwrite: bool,
    per_part: int,
) -> DatasetSummary:
    """Write (or carry on) the dataset of ``pull`` in ``directory``; its arguments are checked.

    ``pull`` is what the checkpoint compares (``db_id``, ``query`` as sent,
    ``fields``, ``dtypes`` as text), ``declared`` the dtypes, ``pages_from``
    the pages from a cursor.

    Raises:
        DatasetMismatch: As :func:`~stoplist_nb.profiles.reading.write_profiles_parquet` says.
        StoplistError: A request failed; ``exc.partial`` is the summary so far.
    """
    state = _open(directory, pull, resume=resume, overwrite=overwrite, declared=declared)
    if state.complete:
        return state.summary(directory)
    if not state.ended:
        _pull(directory, state, declared, pages_from, per_part=per_part)
    _seal(directory, state)
    return state.summary(directory)


def _open(
    directory: pathlib.Path,
    pull: dict[str, Any],
    *,
    resume: bool,
    overwrite: bool,
    declared: Mapping[str, Any],
) -> _State:
    """The state to go on from: the checkpoint's, or a new one (the directory made ready)."""
    if directory.exists() and not directory.is_dir():
        raise errors.InvalidInput(f"{directory} is a file, not a directory for a dataset")
    directory.mkdir(parents=True, exist_ok=True)
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
        listed = [p["name"] for p in state.parts]
        missing = [n for n in listed if n not in parts]
        if missing:
            raise _refused(f"{directory}: {missing[0]}, listed in the checkpoint, is missing")
        if not state.complete:
            # A part renamed but not checkpointed, or one being written: its pages come again.
            for name in names:
                if _TEMP.fullmatch(name) or (_PART.fullmatch(name) and name not in listed):
                    (directory / name).unlink()
        return state
    for name in names:
        if _TEMP.fullmatch(name):
            (directory / name).unlink(missing_ok=True)
    schema = StreamSchema({name: request.dtype_kind(d) for name, d in declared.items()})
    state = _State(pull, schema.to_dict())
    _save(directory, state)
    return state


def _ours(name: str) -> bool:
    return name in (CHECKPOINT, COMMON_METADATA) or bool(
        _PART.fullmatch(name) or _TEMP.fullmatch(name)
    )


def _exists(directory: pathlib.Path, what: str) -> errors.DatasetMismatch:
    exc = errors.DatasetMismatch(f"{directory} {what}")
    exc.hint = "pass resume=True to carry on from its checkpoint, or overwrite=True to start again"
    return exc


def _refused(message: str) -> errors.DatasetMismatch:
    exc = errors.DatasetMismatch(message)
    exc.hint = "pass overwrite=True to start again"
    return exc


def _read_checkpoint(directory: pathlib.Path) -> _State:
    path = directory / CHECKPOINT
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise _refused(
                f"{path} is of format {data.get('format')!r}; this version reads {FORMAT}"
            )
        parts = [
            {"name": str(p["name"]), "profiles": int(p["profiles"]), "rows": int(p["rows"])}
            for p in data["parts"]
        ]
        if [p["name"] for p in parts] != [f"part-{i:05d}.parquet" for i in range(len(parts))]:
            raise ValueError("the parts are not part-00000.parquet, part-00001.parquet, ...")
        state = _State(
            pull={k: data[k] for k in ("db_id", "query", "fields", "dtypes")},
            schema=data["schema"],
            next_from_id=str(data["next_from_id"]),
            profiles=int(data["profiles"]),
            rows=int(data["rows"]),
            parts=parts,
            # Absent from checkpoints written before it was kept: nothing to catch then.
            cursors=[str(cursor) for cursor in data.get("cursors", [])],
            ended=bool(data["ended"]),
            complete=bool(data["complete"]),
        )
        StreamSchema.from_dict(state.schema)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, errors.DatasetMismatch):
            raise
        raise _refused(f"{path} is not a checkpoint this version can read ({exc})") from None
    return state


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


def _pull(
    directory: pathlib.Path,
    state: _State,
    declared: Mapping[str, Any],
    pages_from: PagesFrom,
    *,
    per_part: int,
) -> None:
    """Read the pages after the checkpoint into parts, each checkpointed once renamed."""
    schema = StreamSchema.from_dict(state.schema)
    # The cursors of the pull before an interruption count as reached: a cursor
    # that goes back to one of them is a stall, not pages read twice.
    pages = pages_from(state.next_from_id or None, state.cursors)
    stream = tables(schema, declared, pages)
    part: _Part | None = None
    read = 0  # profiles of this call: the tables count from where it started
    try:
        with closing(stream):
            for table in stream:
                meta = table.schema.metadata
                if part is not None and not part.fits(table):
                    _commit(directory, state, part)
                    part = None
                if part is None:
                    file_schema = parquet_schema(table, schema, declared)
                    part = _Part(directory, len(state.parts), file_schema)
                part.write(table)
                part.cursors.append(meta[META_FROM].decode())
                count = int(meta[META_PROFILES])
                part.profiles += count - read
                read = count
                part.cursor = meta[META_NEXT].decode()
                # A page without a cursor of its own is the last one.
                part.ended = meta[META_NEXT] == meta[META_FROM]
                part.schema = schema.to_dict()  # as it was after this page, not the next
                if part.profiles >= per_part:
                    _commit(directory, state, part)
                    part = None
            if part is not None:
                part.ended = True
                _commit(directory, state, part)
                part = None
            elif not state.parts:
                # No profile at all: one empty part still says which columns there are.
                empty = cast_columns(schema.arrow_schema.empty_table(), declared)
                part = _Part(directory, 0, parquet_schema(empty, schema, declared))
                part.write(empty)
                part.ended = True
                _commit(directory, state, part)
                part = None
            else:
                state.ended = True
                _save(directory, state)
    except BaseException as exc:
        if part is not None:
            part.discard()
        if isinstance(exc, errors.StoplistError):
            exc.partial = state.summary(directory)
            # The checkpoint carries on, not a from_id: the message must not advise one.
            exc.resume_from = None
            again = (
                f"{state.profiles} profiles are saved in {directory}; call "
                "write_profiles_parquet again with resume=True to carry on from there"
            )
            exc.hint = f"{exc.hint}; {again}" if exc.hint else again
        raise


class _Part:
    """The part being written, under its hidden name until it is whole."""

    def __init__(self, directory: pathlib.Path, index: int, schema: pa.Schema) -> None:
        self.name = f"part-{index:05d}.parquet"
        self.path = directory / self.name
        self.temp = directory / f".{self.name}.tmp"
        self.writer = pq.ParquetWriter(self.temp, schema, compression=COMPRESSION)
        self.profiles = self.rows = 0
        self.cursor = ""
        self.cursors: list[str] = []  # those its pages were asked with
        self.ended = False
        self.schema: dict[str, Any] = {}

    def fits(self, table: pa.Table) -> bool:
        return bool(table.schema.equals(self.writer.schema, check_metadata=False))

    def write(self, table: pa.Table) -> None:
        self.writer.write_table(table, row_group_size=max(1, table.num_rows))
        self.rows += table.num_rows

    def close(self) -> None:
        self.writer.close()
        _fsync(self.temp)
        os.replace(self.temp, self.path)

    def discard(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()
        self.temp.unlink(missing_ok=True)


def _commit(directory: pathlib.Path, state: _State, part: _Part) -> None:
    part.close()
    state.parts.append({"name": part.name, "profiles": part.profiles, "rows": part.rows})
    state.profiles += part.profiles
    state.rows += part.rows
    state.cursors.extend(cursor for cursor in part.cursors if cursor)
    state.next_from_id = part.cursor or state.next_from_id
    state.schema = part.schema or state.schema
    state.ended = part.ended
    _save(directory, state)


def _seal(directory: pathlib.Path, state: _State) -> None:
    """Give every part the final schema, write ``_common_metadata``, mark the dataset complete."""
    paths = [directory / p["name"] for p in state.parts]
    final = pq.read_schema(paths[-1])
    for path in paths[:-1]:
        if pq.read_schema(path).equals(final, check_metadata=True):
            continue
        temp = directory / f".{path.name}.tmp"
        try:
            with (
                pq.ParquetFile(path) as source,
                pq.ParquetWriter(temp, final, compression=COMPRESSION) as writer,
            ):
                for i in range(source.num_row_groups):
                    table = conform_to(source.read_row_group(i), final)
                    writer.write_table(table, row_group_size=max(1, table.num_rows))
            _fsync(temp)
            os.replace(temp, path)
        finally:
            temp.unlink(missing_ok=True)  # gone once renamed; else half a part
    temp = directory / ".common_metadata.tmp"
    pq.write_metadata(final, temp)
    _fsync(temp)
    os.replace(temp, directory / COMMON_METADATA)
    state.ended = state.complete = True
    _save(directory, state)


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
    pandas = pa.Schema.from_pandas(frame, preserve_index=False).metadata
    return table.schema.remove_metadata().with_metadata(pandas)


def _save(directory: pathlib.Path, state: _State) -> None:
    """Replace the checkpoint, durably: the file, then the directory entry."""
    temp = directory / ".checkpoint.json.tmp"
    # One line per key: readable, and the schema's many short lists stay short.
    lines = (
        f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in state.to_json().items()
    )
    text = "{\n " + ",\n ".join(lines) + "\n}\n"
    with open(temp, "w", encoding="utf-8") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temp, directory / CHECKPOINT)
    _fsync_directory(directory)


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
