"""Shared pieces of the command line: exit codes, its own error, what it prints and writes.

Frames are written beside their destination and renamed into place only when
complete, so a failed or interrupted run never leaves half a file under the
name a later step would trust; CSV cells as the library writes them
(:func:`~stoplist_nb.profiles.files.csv_ready`). Profiles go to a file through
``ProfilesRequest.to_parquet`` / ``to_csv``, page by page.
"""

from __future__ import annotations

import json
import pathlib
import sys
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

from stoplist_nb import errors
from stoplist_nb._output import Output
from stoplist_nb.profiles.files import as_text, csv_ready

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


def _text_column(series: pd.Series) -> pd.Series:
    return pd.Series(
        pd.array([as_text(v) for v in series], dtype=pd.StringDtype("pyarrow")),
        index=series.index,
        name=series.name,
    )


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


def write_frame(frame: pd.DataFrame, path: pathlib.Path, *, overwrite: bool = False) -> None:
    """Write a frame as Parquet or CSV (by the suffix of ``path``), whole or not at all.

    CSV is UTF-8 with a header and no index; list and object cells are JSON
    (``["promo", "news"]``), missing values empty. The file is the library's
    :class:`~stoplist_nb._output.Output`: hidden beside ``path`` until
    complete, with the umask's mode, never over a file that is there unless
    ``overwrite``.

    Raises:
        CliError: The suffix is neither ``.parquet`` nor ``.csv``, or the file
            cannot be written.
        OutputExists: A file is at ``path`` and ``overwrite`` is false.
    """
    suffix = path.suffix.lower()
    if suffix not in FRAME_SUFFIXES:
        raise CliError(f"{path}: the file name must end in .parquet or .csv", code=EXIT_USAGE)
    try:
        with Output(path, overwrite=overwrite) as output:
            part = output.temporary("part")
            if suffix == ".csv":
                csv_ready(frame).to_csv(part, index=False, encoding="utf-8", lineterminator="\n")
            else:
                _for_parquet(frame).to_parquet(part, index=False)
            output.put(part)
    except errors.OutputExists:
        raise
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
