"""One Parquet or CSV file of profiles, written page by page: complete, or not there at all.

The pages go to hidden Parquet segments (temporaries of an
:class:`~stoplist_nb._atomic.Output`), a new one each time a column joins;
at the end they become the file.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pathlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from stoplist_nb import errors
from stoplist_nb._atomic import Output
from stoplist_nb._stream import Stream
from stoplist_nb.profiles.dataset.parts import COMPRESSION, conform_to, empty_table, parquet_schema
from stoplist_nb.profiles.schema import StreamSchema
from stoplist_nb.profiles.stream import META_NEXT, META_PROFILES, frame_from_table

__all__ = ["FileSummary", "as_text", "csv_ready", "write_file"]


@dataclass(frozen=True)
class FileSummary:
    """What a single Parquet or CSV file of profiles holds; ``len(summary)`` is its rows.

    Attributes:
        path: The file.
        rows: Rows (one per subscription, one for a profile without any).
        profiles: Profiles read.
        columns: The file's columns, in order.
        next_from_id: Where a read resumed after these profiles starts.
        written: Whether the file was written (false in ``exc.partial``).
    """

    path: pathlib.Path
    rows: int
    profiles: int
    columns: tuple[str, ...]
    next_from_id: str
    written: bool = True

    def __len__(self) -> int:
        return self.rows


def write_file(
    path: str | os.PathLike[str],
    fmt: str,
    schema: StreamSchema,
    declared: Mapping[str, Any],
    pages: Stream[pa.Table],
    *,
    overwrite: bool = False,
) -> FileSummary:
    """Write the tables of a stream (in ``schema``, ``declared`` dtypes) as one ``fmt`` file.

    ``pages`` is not started when a file at ``path`` is refused (``OutputExists``).
    """
    path = pathlib.Path(path)
    rows, meta = 0, dict[bytes, bytes]()

    def summary(columns: tuple[str, ...], written: bool) -> FileSummary:
        cursor = meta.get(META_NEXT, b"").decode()
        return FileSummary(path, rows, int(meta.get(META_PROFILES, b"0")), columns, cursor, written)

    with pages, Output(path, overwrite=overwrite) as output:
        # Before the first page: a directory that cannot be written fails before a request.
        segments = [output.temporary("segment0")]
        try:
            writer: pq.ParquetWriter | None = None
            try:
                for table in pages:
                    if writer is None or not table.schema.equals(
                        writer.schema, check_metadata=False
                    ):
                        if writer is not None:
                            writer.close()
                            segments.append(output.temporary(f"segment{len(segments)}"))
                        file_schema = parquet_schema(table, schema, declared)
                        writer = pq.ParquetWriter(
                            segments[-1], file_schema, compression=COMPRESSION
                        )
                    writer.write_table(table, row_group_size=max(1, table.num_rows))
                    rows += table.num_rows
                    meta = table.schema.metadata or {}
            except BaseException:
                # Closing flushes: on a full disk it fails again, and must not hide why.
                with contextlib.suppress(Exception):
                    if writer is not None:
                        writer.close()
                raise
            if writer is not None:
                writer.close()
            else:  # no profile: the file still names the columns
                pq.write_table(empty_table(schema, declared), segments[-1], compression=COMPRESSION)
            final = pq.read_schema(segments[-1])
            if fmt == "parquet" and len(segments) == 1:
                output.put(segments[0])
            else:
                whole = output.temporary("part")
                _rewrite(fmt, segments, final, schema, whole)
                output.put(whole)
        except errors.StoplistError as exc:
            exc.partial = summary((), written=False)
            raise
    return summary(tuple(final.names), written=True)


def _rewrite(
    fmt: str,
    segments: list[pathlib.Path],
    final: pa.Schema,
    schema: StreamSchema,
    out: pathlib.Path,
) -> None:
    """The segments as one ``fmt`` file in the ``final`` schema."""
    if fmt == "parquet":
        with pq.ParquetWriter(out, final, compression=COMPRESSION) as combined:
            for table in _row_groups(segments, final):
                combined.write_table(table, row_group_size=max(1, table.num_rows))
        return
    kinds = {name: schema.kind(name) for name in final.names}
    with open(out, "w", encoding="utf-8", newline="") as file:
        header = csv_ready(frame_from_table(final.empty_table(), kinds, None))
        header.to_csv(file, index=False, lineterminator="\n")
        for table in _row_groups(segments, final):
            frame = csv_ready(frame_from_table(table, kinds, None))
            frame.to_csv(file, index=False, header=False, lineterminator="\n")


def _row_groups(segments: list[pathlib.Path], final: pa.Schema) -> Iterator[pa.Table]:
    for segment in segments:
        with pq.ParquetFile(segment) as source:
            for i in range(source.num_row_groups):
                yield conform_to(source.read_row_group(i), final)


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def as_text(value: Any) -> str | None:
    """A cell as text: lists and objects as JSON, strings as they are, missing as ``None``.

    >>> as_text(["promo", "news"]), as_text("Kazan"), as_text(None)
    ('["promo", "news"]', 'Kazan', None)
    """
    if isinstance(value, str):
        return value
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return json.dumps(value, ensure_ascii=False, default=_plain)


def csv_ready(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each column of list or object cells as their JSON text (:func:`as_text`)."""
    out = frame.copy(deep=False)
    for name in frame.columns:
        column = frame[name]
        # Frames here have the default dtypes: lists and objects are Python values.
        if pd.api.types.is_object_dtype(column.dtype) and any(
            isinstance(v, list | tuple | dict | np.ndarray) for v in column
        ):
            text = pd.array([as_text(v) for v in column], dtype=pd.StringDtype("pyarrow"))
            out[name] = pd.Series(text, index=frame.index, name=name)
    return out
