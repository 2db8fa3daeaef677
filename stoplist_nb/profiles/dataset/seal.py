"""The files of a dataset checked against the checkpoint, repaired, and sealed.

Sealing rewrites the parts written before a column joined, so that every part
has the final schema, and writes it to ``_common_metadata``.
"""

from __future__ import annotations

import pathlib
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq

from stoplist_nb import errors
from stoplist_nb._atomic import Output
from stoplist_nb.profiles.dataset.checkpoint import START_OVER, Checkpoint, Entry
from stoplist_nb.profiles.dataset.parts import (
    COMMON_METADATA,
    COMPRESSION,
    check_rows,
    conform_to,
    sha256,
)


def checked_files(
    directory: pathlib.Path, state: Checkpoint, *, checksums: bool, repair: bool = False
) -> Checkpoint:
    """The checkpoint as its files are (one being sealed: either); damage raises (or is dropped)."""
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
            state = replace(state, parts=tuple(parts))
            return _damaged(directory, state, index, problem, repair=repair)
    state = replace(state, parts=tuple(parts), sealing=None)
    if not state.complete:
        return state
    try:
        final = pq.read_schema(directory / state.parts[-1].name)
        if pq.read_schema(directory / COMMON_METADATA).equals(final, check_metadata=True):
            return state
        problem = "does not hold the schema of the parts"
    except (OSError, ValueError, pa.ArrowException) as exc:
        problem = f"cannot be read ({exc})"
    return _damaged(directory, state, None, problem, repair=repair)


def _file_problem(path: pathlib.Path, entry: Entry, *, checksums: bool) -> str | None:
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
    if checksums and sha256(path) != entry.sha256:
        return "does not hold the bytes that were written (its SHA-256 differs)"
    return None


def _damaged(
    directory: pathlib.Path, state: Checkpoint, index: int | None, problem: str, *, repair: bool
) -> Checkpoint:
    """Drop the entry at ``index`` (``None``: the common metadata) and those after; else raise."""
    name = COMMON_METADATA if index is None else state.entries[index].name
    kept = state.entries[:index]
    if repair:
        (directory / COMMON_METADATA).unlink(missing_ok=True)
        if index is None:
            return replace(state, complete=False).save(directory)
        parts = kept[: len(state.parts)]
        return replace(
            state,
            parts=parts,
            open=kept[len(parts) :],
            cursors=state.cursors[: sum(e.cursors for e in kept)],
            ended=False,
            complete=False,
            sealing=None,
        ).save(directory)
    hint = "seal the dataset again"
    if index is not None:
        after = len(state.entries) - index - 1
        dropped = f"{name} and the {after} files after it" if after else name
        where = f"after {kept[-1].name}" if kept else "from the start"
        kept_profiles = sum(e.profiles for e in kept)
        hint = f"drop {dropped} and pull on {where} ({kept_profiles} profiles are kept)"
    raise errors.DatasetDamaged(
        f"{directory}: {name}, listed in the checkpoint, {problem}; nothing was sent",
        part=name,
        hint=f"pass repair=True to {hint}, or {START_OVER}",
    )


def seal(directory: pathlib.Path, state: Checkpoint) -> Checkpoint:
    """Give every part the final schema, write ``_common_metadata``, mark the dataset complete."""
    final = pq.read_schema(directory / state.parts[-1].name)
    for i, entry in enumerate(state.parts[:-1]):
        path = directory / entry.name
        if pq.read_schema(path).equals(final, check_metadata=True):
            continue
        with Output(path, overwrite=True) as out:
            temp = out.temporary("part")
            with (
                pq.ParquetFile(path) as source,
                pq.ParquetWriter(temp, final, compression=COMPRESSION) as writer,
            ):
                for g in range(source.num_row_groups):
                    table = conform_to(source.read_row_group(g), final)
                    writer.write_table(table, row_group_size=max(1, table.num_rows))
            check_rows(temp, entry.rows)
            sealed = replace(entry, bytes=temp.stat().st_size, sha256=sha256(temp))
            # Said before the rename: whichever of the two files a crash leaves is known.
            pending = {"name": entry.name, "bytes": sealed.bytes, "sha256": sealed.sha256}
            state = replace(state, sealing=pending).save(directory)
            out.put(temp)
        parts = (*state.parts[:i], sealed, *state.parts[i + 1 :])
        state = replace(state, parts=parts, sealing=None).save(directory)
    with Output(directory / COMMON_METADATA, overwrite=True) as out:
        temp = out.temporary("schema")
        pq.write_metadata(final, temp)
        out.put(temp)
    return replace(state, ended=True, complete=True).save(directory)
