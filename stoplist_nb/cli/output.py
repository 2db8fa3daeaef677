"""Shared pieces of the command line: exit codes, its own error, what it prints and writes.

Output files are written beside their destination and renamed into place only
when complete, so a failed or interrupted run never leaves half a file under
the name a later step would trust.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from stoplist_nb import errors
from stoplist_nb.profiles.dataset import COMPRESSION, conform_to, parquet_schema
from stoplist_nb.profiles.schema import StreamSchema
from stoplist_nb.profiles.stream import frame_from_table

__all__ = [
    "EXIT_AUTH",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NETWORK",
    "EXIT_OK",
    "EXIT_USAGE",
    "FRAME_SUFFIXES",
    "CliError",
    "Ui",
    "write_frame",
    "write_profile_tables",
]

EXIT_OK = 0
#: An error reported by the service or the library that is none of the below.
EXIT_ERROR = 1
#: Bad arguments or configuration: nothing was sent.
EXIT_USAGE = 2
#: The service refused the token (401/403).
EXIT_AUTH = 3
#: No usable reply, or the service kept failing (5xx, 429) after every retry.
EXIT_NETWORK = 4
#: Ctrl-C, as a shell reports a SIGINT.
EXIT_INTERRUPTED = 130

FRAME_SUFFIXES = (".parquet", ".csv")


class CliError(Exception):
    """An error of the command line itself: a file it cannot write, a missing extra.

    Attributes:
        code: The exit code.
        hint: How to carry on, printed on its own line, or ``None``.
    """

    def __init__(self, message: str, *, code: int = EXIT_ERROR, hint: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.hint = hint


@dataclass(frozen=True)
class Ui:
    """Where the command's words go: results on stdout, notes on stderr.

    Attributes:
        progress: Show progress bars (on stderr).
        quiet: Print no results and no notes (errors are still printed).
    """

    progress: bool
    quiet: bool

    def say(self, text: str) -> None:
        """Print a result line on stdout."""
        if not self.quiet:
            print(text, flush=True)

    def note(self, text: str) -> None:
        """Print a note on stderr, where it stays out of piped results."""
        if not self.quiet:
            print(f"stoplist-nb: {text}", file=sys.stderr, flush=True)


def _plain(value: Any) -> Any:
    """``json.dumps``' fallback: arrays (from pyarrow) as lists, anything else as text."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def _as_text(value: Any) -> str | None:
    """A cell as text: lists and objects as JSON, strings as they are, missing as ``None``."""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple | dict | np.ndarray):
        return json.dumps(value, ensure_ascii=False, default=_plain)
    if _missing(value):
        return None
    return json.dumps(value, ensure_ascii=False, default=_plain)


def _nested(series: pd.Series) -> bool:
    # Frames here have the default dtypes: lists and objects are Python values.
    dtype = series.dtype
    if pd.api.types.is_object_dtype(dtype):
        return any(isinstance(v, list | tuple | dict | np.ndarray) for v in series)
    return False


def _text_column(series: pd.Series) -> pd.Series:
    return pd.Series(
        pd.array([_as_text(v) for v in series], dtype=pd.StringDtype("pyarrow")),
        index=series.index,
        name=series.name,
    )


def _for_csv(frame: pd.DataFrame) -> pd.DataFrame:
    # CSV has no lists: JSON keeps them readable back (json.loads) and unambiguous,
    # where "a,b" would clash with the separator and lose empty lists.
    out = frame.copy(deep=False)
    for name in frame.columns:
        if _nested(frame[name]):
            out[name] = _text_column(frame[name])
    return out


def _for_parquet(frame: pd.DataFrame) -> pd.DataFrame:
    # Parquet keeps lists (``cats``); only a column pyarrow cannot type (values of
    # mixed JSON types from the service) is written as text rather than failing.
    out = frame.copy(deep=False)
    for name in frame.columns:
        if pd.api.types.is_object_dtype(frame[name].dtype):
            try:
                pa.array(frame[name], from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                out[name] = _text_column(frame[name])
    # pandas stores attrs in the file's metadata as JSON; keep the ones that are.
    out.attrs = {k: v for k, v in frame.attrs.items() if _is_json(v)}
    return out


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def write_frame(frame: pd.DataFrame, path: pathlib.Path) -> None:
    """Write a frame as Parquet or CSV (by the suffix of ``path``), whole or not at all.

    CSV is UTF-8 with a header and no index; list and object cells are JSON
    (``["promo", "news"]``), missing values empty.

    Raises:
        CliError: The suffix is neither ``.parquet`` nor ``.csv``, or the file
            cannot be written.
    """
    suffix = path.suffix.lower()
    if suffix not in FRAME_SUFFIXES:
        raise CliError(f"{path}: the file name must end in .parquet or .csv", code=EXIT_USAGE)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        if suffix == ".csv":
            _for_csv(frame).to_csv(tmp, index=False, encoding="utf-8", lineterminator="\n")
        else:
            _for_parquet(frame).to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def write_profile_tables(
    tables: Iterable[pa.Table], schema: StreamSchema, path: pathlib.Path
) -> tuple[int, int]:
    """Write the tables of ``iter_profile_tables`` (in ``schema``) as one file, whole or not at all.

    Memory holds a page, never the whole: pages go to hidden Parquet segments
    beside ``path``, a new one each time a column joins the stream. At the end
    a single segment is the Parquet file; several are copied into it row group
    by row group, in the final columns; a CSV file is written from them the
    same way, under a header of every column. A column that joined on a later
    page is empty in the rows before it. Cells as :func:`write_frame` writes them.

    Returns:
        The rows and the columns written.

    Raises:
        CliError: The suffix is neither ``.parquet`` nor ``.csv``, or a file
            cannot be written.
    """
    suffix = path.suffix.lower()
    if suffix not in FRAME_SUFFIXES:
        raise CliError(f"{path}: the file name must end in .parquet or .csv", code=EXIT_USAGE)
    stem = f".{path.name}.{os.getpid()}"
    tmp = path.with_name(f"{stem}.part")
    segments: list[pathlib.Path] = []
    rows = 0
    try:
        writer: pq.ParquetWriter | None = None
        try:
            for table in tables:
                if writer is None or not table.schema.equals(writer.schema, check_metadata=False):
                    if writer is not None:
                        writer.close()
                    segments.append(path.with_name(f"{stem}.{len(segments)}.segment"))
                    writer = pq.ParquetWriter(
                        segments[-1], parquet_schema(table, schema, {}), compression=COMPRESSION
                    )
                writer.write_table(table, row_group_size=max(1, table.num_rows))
                rows += table.num_rows
        finally:
            if writer is not None:
                writer.close()
        if not segments:  # no profile: the file still names the columns
            empty = schema.arrow_schema.empty_table()
            segments.append(path.with_name(f"{stem}.0.segment"))
            meta = parquet_schema(empty, schema, {}).metadata
            pq.write_table(
                empty.replace_schema_metadata(meta), segments[-1], compression=COMPRESSION
            )
        final = pq.read_schema(segments[-1])
        if suffix == ".parquet" and len(segments) == 1:
            os.replace(segments[0], path)
            return rows, len(final)
        if suffix == ".parquet":
            with pq.ParquetWriter(tmp, final, compression=COMPRESSION) as combined:
                for table in _row_groups(segments, final):
                    combined.write_table(table, row_group_size=max(1, table.num_rows))
        else:
            kinds = {name: schema.kind(name) for name in final.names}
            with open(tmp, "w", encoding="utf-8", newline="") as file:
                _for_csv(frame_from_table(final.empty_table(), kinds, None)).to_csv(
                    file, index=False, lineterminator="\n"
                )
                for table in _row_groups(segments, final):
                    _for_csv(frame_from_table(table, kinds, None)).to_csv(
                        file, index=False, header=False, lineterminator="\n"
                    )
        os.replace(tmp, path)
    except errors.StoplistError:
        raise  # some are OSErrors too (AuthError is a PermissionError), none is the file's
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        for segment in segments:
            segment.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    return rows, len(final)


def _row_groups(segments: list[pathlib.Path], final: pa.Schema) -> Iterator[pa.Table]:
    """Each row group of the segments, in order, in the columns of ``final``."""
    for segment in segments:
        with pq.ParquetFile(segment) as source:
            for i in range(source.num_row_groups):
                yield conform_to(source.read_row_group(i), final)
