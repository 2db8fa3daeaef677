"""The files of a dataset: their names and their Parquet form."""

from __future__ import annotations

import contextlib
import hashlib
import pathlib
import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from stoplist_nb._atomic import Output
from stoplist_nb._parquet import pandas_metadata
from stoplist_nb.profiles.schema import StreamSchema
from stoplist_nb.profiles.stream import cast_columns, cast_frame, frame_from_table

COMMON_METADATA = "_common_metadata"
#: Every reader of a dataset reads it; a third smaller than the default (snappy) on profiles.
COMPRESSION = "zstd"

PART = re.compile(r"part-(\d{5,})\.parquet")
SEGMENT = re.compile(r"\.part-(\d{5,})\.parquet\.seg-(\d{5,})")


class File:
    """A Parquet file written at ``path`` through :class:`Output`, a row group a page."""

    def __init__(self, path: pathlib.Path, schema: pa.Schema, compression: str) -> None:
        self.output = Output(path, overwrite=True).__enter__()
        self.rows = 0
        self.torn = False  # a write that did not finish: the file may hold part of a page
        self.writer: pq.ParquetWriter | None = None
        try:
            self.temp = self.output.temporary("part")
            self.writer = pq.ParquetWriter(self.temp, schema, compression=compression)
        except BaseException:
            self.output.__exit__(None, None, None)
            raise

    def write(self, table: pa.Table) -> None:
        assert self.writer is not None
        self.torn = True
        self.writer.write_table(table, row_group_size=max(1, table.num_rows))
        self.torn = False
        self.rows += table.num_rows

    def close(self) -> None:
        """Give the file its name; raise, removing it, if it does not read back with every row."""
        writer, self.writer = self.writer, None
        try:
            assert writer is not None
            writer.close()
            check_rows(self.temp, self.rows)
            self.output.put(self.temp)
        finally:
            self.output.__exit__(None, None, None)

    def discard(self) -> None:
        with contextlib.suppress(Exception):
            if self.writer is not None:
                self.writer.close()
        self.output.__exit__(None, None, None)


def check_rows(path: pathlib.Path, rows: int) -> None:
    """Raise :class:`OSError` unless the Parquet file at ``path`` reads back with ``rows`` rows."""
    with pq.ParquetFile(path) as file:
        found = file.metadata.num_rows
    if found != rows:
        raise OSError(f"{path.name} reads back with {found} rows where {rows} were written")


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


def empty_table(schema: StreamSchema, declared: Mapping[str, Any]) -> pa.Table:
    """No rows, in the file schema of the stream's columns so far: a file of them says which."""
    empty = cast_columns(schema.arrow_schema.empty_table(), declared)
    return empty.replace_schema_metadata(parquet_schema(empty, schema, declared).metadata)


def sha256(path: pathlib.Path) -> str:
    """The SHA-256 of the file at ``path``, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
