"""The pull: the pages of a stream written into part files, their progress committed as it goes.

Each page goes, as one row group, into the part's hidden file and into an
uncompressed segment file (``.part-00003.parquet.seg-00001``), which a commit
closes and records. A part closes at ``profiles_per_part`` profiles or when a
column joins (a Parquet file has one schema); a pull carried on after an
interruption copies the part's committed segments into a new file first, so
that a part is the same file however its pull went.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import pathlib
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from stoplist_nb import errors
from stoplist_nb._stream import Stream
from stoplist_nb._threads import leave_signals_to_main
from stoplist_nb.profiles.dataset.checkpoint import Checkpoint, Entry
from stoplist_nb.profiles.dataset.parts import (
    COMPRESSION,
    File,
    empty_table,
    parquet_schema,
    sha256,
)
from stoplist_nb.profiles.schema import StreamSchema
from stoplist_nb.profiles.stream import META_FROM, META_NEXT, META_PROFILES, PageRead, tables

#: Profiles per part file: some 15 MB of Parquet on profiles like the demo's.
DEFAULT_PROFILES_PER_PART = 100_000
#: Seconds of pages after which the part being written has its progress committed.
DEFAULT_COMMIT_SECONDS = 5.0
#: Bytes of pages (as Arrow tables in memory) after which the same happens:
#: about 19,000 profiles like the demo's, 2.5 MB of Parquet.
DEFAULT_COMMIT_BYTES = 16 * 2**20

#: The pages from a cursor (``None``: the start), the cursors given counting as seen.
PagesFrom = Callable[[str | None, list[str]], Stream[PageRead]]


def pull_parts(
    directory: pathlib.Path,
    state: Checkpoint,
    declared: Mapping[str, Any],
    pages_from: PagesFrom,
    window: tuple[int, float, int],
) -> Checkpoint:
    """Read the pages after the checkpoint into parts of ``window``'s profiles, seconds, bytes."""
    last = state.entries[-1:]
    schema = StreamSchema.from_dict(last[0].schema) if last else StreamSchema.from_dtypes(declared)
    # Cursors of the pull before count as reached: going back to one is a stall, not new pages.
    pages = pages_from(state.next_from_id or None, list(state.cursors))
    stream = tables(schema, declared, pages)
    writer = _Writer(directory, state, declared, window)
    # Its own thread, a page behind: the next page is read meanwhile; Ctrl-C never cuts a record.
    with ThreadPoolExecutor(1, "stoplist-nb-writer", leave_signals_to_main) as thread:
        writes: list[Future[None]] = []
        try:
            with stream:
                for table in stream:
                    # Taken here: the stream's schema changes as the next page is read.
                    writes.append(thread.submit(writer.add, table, schema.to_dict()))
                    if len(writes) > 1:  # one page is written while the next is read
                        writes.pop(0).result()
            for write in writes:
                write.result()
            thread.submit(writer.finish, schema).result()
        except BaseException as exc:
            # Run after the writes; a second Ctrl-C waits too: else a page would be half recorded.
            pending = {*writes, thread.submit(writer.save_what_is_whole)}
            while pending:
                with contextlib.suppress(KeyboardInterrupt):
                    pending = concurrent.futures.wait(pending).not_done
            say_what_is_saved(exc, directory, writer.state)
            raise
    return writer.state


def say_what_is_saved(exc: BaseException, directory: pathlib.Path, state: Checkpoint) -> None:
    again = (
        f"{state.profiles} profiles are saved in {directory}; call "
        "to_dataset again with resume=True to carry on from there"
    )
    if isinstance(exc, errors.StoplistError):
        exc.partial = state.summary(directory)
        # The checkpoint carries on, not a from_id: the message must not advise one.
        exc.resume_from = None
        exc.hint = f"{exc.hint}; {again}" if exc.hint else again
    else:  # Ctrl-C, a full disk: the traceback says it
        errors.add_note(exc, again)


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
    def __init__(
        self,
        directory: pathlib.Path,
        state: Checkpoint,
        declared: Mapping[str, Any],
        window: tuple[int, float, int],
    ) -> None:
        self.directory = directory
        self.state = state
        self.declared = declared
        self.per_part, self.seconds, self.bytes = window
        self.part: File | None = None
        self.segment: File | None = None
        self.pages: list[_Page] = []  # those in the segment
        self.opened = 0.0  # when the segment's first page came
        self.read = 0  # profiles of this call: the tables count from where it started
        self.failed = False
        # The part whose segments a resumed pull goes on with has their file schema.
        self.file_schema: pa.Schema | None = (
            empty_table(StreamSchema.from_dict(state.open[-1].schema), declared).schema
            if state.open
            else None
        )

    def add(self, table: pa.Table, schema: dict[str, Any]) -> None:
        """Write a page, ``schema`` the stream's after it; after a failed page, nothing."""
        if self.failed:
            return
        try:
            if self.file_schema is not None and not table.schema.equals(
                self.file_schema, check_metadata=False
            ):
                self.close_part(ended=False)  # a column joined: a file has one schema
            if self.file_schema is None:
                self.file_schema = parquet_schema(
                    table, StreamSchema.from_dict(schema), self.declared
                )
            if self.part is None:
                self.part = self._open_part()
            if self.segment is None:
                # Read back only by a pull carried on after an interruption: not compressed.
                seg = f".part-{len(self.state.parts):05d}.parquet.seg-{len(self.state.open):05d}"
                self.segment = File(self.directory / seg, self.file_schema, "none")
                self.opened = time.monotonic()
            # The part first: a part cut by a failed write goes, the segment stays whole.
            self.part.write(table)
            self.segment.write(table)
            meta = table.schema.metadata
            cursor, after = meta[META_FROM].decode(), meta[META_NEXT].decode()
            count, self.read = self.read, int(meta[META_PROFILES])
            page = _Page(self.read - count, cursor, after, schema, after == cursor, table.nbytes)
            self.pages.append(page)
            held = sum(e.profiles for e in self.state.open)
            if held + sum(p.profiles for p in self.pages) >= self.per_part:
                self.close_part(ended=page.ending)
            elif not page.ending and (
                sum(p.nbytes for p in self.pages) >= self.bytes
                or time.monotonic() - self.opened >= self.seconds
            ):
                self.commit()
        except BaseException:
            self.failed = True
            raise

    def finish(self, schema: StreamSchema) -> None:
        """The stream ended: close the part being written, or say that it ended."""
        if self.file_schema is not None:
            self.close_part(ended=True)
        elif not self.state.parts:
            # No profile at all: one empty part still says which columns there are.
            empty = empty_table(schema, self.declared)
            self.file_schema = empty.schema
            self.part = self._open_part()
            self.part.write(empty)
            self.pages.append(_Page(0, "", "", schema.to_dict(), ending=True, nbytes=0))
            self.close_part(ended=True)
        else:
            self.state = replace(self.state, ended=True).save(self.directory)

    def commit(self) -> None:
        """Commit the pages since the last commit: their segment takes its name."""
        state, segment, pages = self.state, self.segment, self.pages
        assert segment is not None
        self.segment, self.pages = None, []
        segment.close()  # else its pages come again
        entry = _entry(segment, pages, ())
        self.state = replace(
            state, open=(*state.open, entry), cursors=(*state.cursors, *_cursors(pages))
        ).save(self.directory)

    def close_part(self, *, ended: bool) -> None:
        """Close the part: its file, written page by page, takes its name."""
        state, pages = self.state, self.pages
        # No part yet: a resumed part to which no page came.
        part, self.part = self.part or self._open_part(), None
        segment, self.segment, self.pages = self.segment, None, []
        if segment is not None:
            segment.discard()  # its pages are in the part
        part.close()  # else the part comes again
        self.file_schema = None
        self.state = replace(
            state,
            parts=(*state.parts, _entry(part, pages, state.open)),
            open=(),
            cursors=(*state.cursors, *_cursors(pages)),
            ended=ended,
        ).save(self.directory)
        for committed in state.open:
            (self.directory / committed.name).unlink(missing_ok=True)  # in the part now

    def save_what_is_whole(self) -> None:
        """On the way out of an error: commit the pages since the last commit if they are whole."""
        part, self.part = self.part, None
        if part is not None:
            part.discard()  # a pull that carries on writes it again from the segments
        segment = self.segment
        if segment is not None and (segment.torn or not self.pages or self.pages[-1].ending):
            # Half a page; or a last page, which a pull carried on from its cursor would read again.
            self.segment, self.pages = None, []
            segment.discard()
        elif segment is not None:
            with contextlib.suppress(Exception):  # not saved (a full disk): its pages come again
                self.commit()

    def _open_part(self) -> File:
        # The segments a resumed pull goes on from are copied in.
        assert self.file_schema is not None
        name = f"part-{len(self.state.parts):05d}.parquet"
        part = File(self.directory / name, self.file_schema, COMPRESSION)
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


def _cursors(pages: Sequence[_Page]) -> list[str]:
    return [p.cursor for p in pages if p.cursor]


def _entry(file: File, pages: Sequence[_Page], before: Sequence[Entry]) -> Entry:
    last = pages[-1] if pages else before[-1]
    path = file.output.path
    return Entry(
        path.name,
        profiles=sum(e.profiles for e in before) + sum(p.profiles for p in pages),
        rows=file.rows,
        bytes=path.stat().st_size,
        sha256=sha256(path),
        next_from_id=last.next_from_id,
        cursors=sum(e.cursors for e in before) + len(_cursors(pages)),
        schema=last.schema,
    )
