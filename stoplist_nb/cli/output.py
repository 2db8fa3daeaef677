"""Shared pieces of the command line: exit codes, its own error, what it prints and writes.

Frames are written beside their destination and renamed into place only when
complete, so a failed or interrupted run never leaves half a file under the
name a later step would trust; CSV cells as the library writes them
(:func:`~stoplist_nb.profiles.files.csv_ready`). Profiles go to a file through
``ProfilesRequest.to_parquet`` / ``to_csv``, page by page.

One rule for every output: a file that is there is replaced only with
``--overwrite`` (:func:`refuse_existing`, before anything is sent), and a write
that fails, for a full disk or a read-only directory, is one line,
``cannot write <path>: <reason>`` (:func:`cannot_write`).
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from stoplist_nb import errors
from stoplist_nb._atomic import Output
from stoplist_nb._parquet import to_table
from stoplist_nb._redact import redact
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
    "appeared",
    "cannot_write",
    "plural",
    "refuse_existing",
    "said_on_interrupt",
    "signal_exit_code",
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
#: Ctrl-C, as a shell reports a SIGINT (128 + 2); SIGTERM gives 143 and SIGHUP 129.
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


def signal_exit_code(signum: int) -> int:
    """The exit code of a run stopped by signal ``signum``: 128 + its number, as shells say it.

    >>> signal_exit_code(15)
    143
    """
    return 128 + signum


def plural(count: int, word: str, words: str | None = None) -> str:
    """``count`` and ``word``, in the plural unless ``count`` is 1.

    >>> plural(1, "part file"), plural(3, "part file"), plural(0, "hash", "hashes")
    ('1 part file', '3 part files', '0 hashes')
    """
    return f"{count} {word if count == 1 else (words or word + 's')}"


def refuse_existing(paths: Iterable[pathlib.Path], *, overwrite: bool) -> None:
    """Refuse to run over files that are there, unless ``--overwrite`` was given.

    Called before anything is sent, so a refused run costs nothing. The
    library's writers check again as they put a file in place, so a file that
    appears meanwhile is still not replaced (``OutputExists``).

    Raises:
        CliError: One of ``paths`` exists (exit 2), naming it.
    """
    if overwrite:
        return
    there = [path for path in paths if path.exists() or path.is_symlink()]
    if there:
        more = f" (and {plural(len(there) - 1, 'other file')} it would write)" if there[1:] else ""
        raise CliError(
            f"{there[0]} exists{more}; nothing was sent",
            code=EXIT_USAGE,
            hint="add --overwrite to replace it, or name another --out",
        )


def appeared(path: object) -> CliError:
    """The error of an output that was not there at the start, and is there at the end (exit 2).

    The library's writers refuse it atomically (``OutputExists``); it is kept.
    """
    return CliError(
        f"{path} appeared while the command ran; it was left as it was, and nothing was written",
        code=EXIT_USAGE,
        hint="add --overwrite to replace it, or name another --out",
    )


def cannot_write(path: pathlib.Path | str, exc: OSError) -> CliError:
    """The error of a write that failed: ``cannot write <path>: <reason>`` (exit 1).

    ``path`` is the output; a file the error names elsewhere (a download kept
    in the system's temporary directory while it is read) is named instead,
    since that is where room or rights are missing. The reason is the system's
    words for the error number when there is one (pyarrow wraps
    ``File too large`` in words of its own), else the message.
    """
    where = pathlib.Path(path)
    named = pathlib.Path(os.fsdecode(exc.filename)) if exc.filename else None
    if named is not None and where.parent != named.parent and where not in named.parents:
        where = named
    shown = f"{where}/" if str(path).endswith("/") and where == pathlib.Path(path) else where
    reason = (
        os.strerror(exc.errno) if exc.errno is not None and exc.errno in errno.errorcode else None
    )
    return CliError(f"cannot write {shown}: {reason or exc.strerror or exc}")


def what_is_kept(path: pathlib.Path) -> Callable[[], str]:
    """What an interruption leaves at ``path``, said when it comes: what was there, or not.

    Looked at again when it is said: the write may have given the file its
    name in the instant before the interruption.
    """
    before = _identity(path)

    def kept() -> str:
        now = _identity(path)
        if now is None:
            return f"nothing was written: no {path}"
        if now == before:
            return f"{path} was left as it was"
        return f"{path} was written whole before the interruption"

    return kept


def _identity(path: pathlib.Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_mtime_ns)


def said_on_interrupt(exc: BaseException, *lines: str) -> None:
    """Keep, on an interruption, what the command has to say: what was kept, how to go on.

    ``main`` prints the lines after the word that it was interrupted; a line
    that starts with ``hint:`` is printed as a hint.
    """
    said: list[str] = getattr(exc, "stoplist_nb_said", [])
    said.extend(lines)
    exc.stoplist_nb_said = said  # type: ignore[attr-defined]


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
        """Print a result line on stdout (scrubbed: it may hold the service's words)."""
        if not self.quiet:
            print(redact(text), flush=True)

    def note(self, text: str) -> None:
        """Print a note on stderr, where it stays out of piped results (scrubbed too)."""
        if not self.quiet:
            print(f"stoplist-nb: {redact(text)}", file=sys.stderr, flush=True)


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
    :class:`~stoplist_nb._atomic.Output`: hidden beside ``path`` until
    complete, with the umask's mode, never over a file that is there unless
    ``overwrite`` (:func:`refuse_existing` says so before anything is sent).

    Raises:
        CliError: The suffix is neither ``.parquet`` nor ``.csv``, or the file
            cannot be written (:func:`cannot_write`).
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
                pq.write_table(to_table(_for_parquet(frame)), part)
            output.put(part)
    except errors.OutputExists:
        raise
    except OSError as exc:
        raise cannot_write(path, exc) from None
