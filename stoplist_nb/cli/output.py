"""What the command line shares: exit codes, its own error, what it prints and writes."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pathlib
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from stoplist_nb import errors
from stoplist_nb._atomic import Output
from stoplist_nb._parquet import to_table
from stoplist_nb._redact import redact
from stoplist_nb.profiles.files import as_text, csv_ready

PROG = "stoplist-nb"
EXIT_ERROR = 1  # an error of the service or the library that is none of the below
EXIT_USAGE = 2  # bad arguments or configuration: nothing was sent
EXIT_AUTH = 3  # the service refused the token (401/403)
EXIT_NETWORK = 4  # no usable reply, or 5xx/429 after every retry
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); other signals give 128 + theirs

FRAME_SUFFIXES = (".parquet", ".csv")
_OTHER = "add --overwrite to replace it, or name another --out"


class CliError(Exception):
    """An error of the command line itself, with its exit ``code`` and a ``hint`` line or None."""

    def __init__(self, message: str, *, code: int = EXIT_ERROR, hint: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.hint = hint


def plural(count: int, word: str, words: str | None = None) -> str:
    """``count`` and ``word``, in the plural unless ``count`` is 1.

    >>> plural(1, "part file"), plural(3, "part file"), plural(0, "hash", "hashes")
    ('1 part file', '3 part files', '0 hashes')
    """
    return f"{count} {word if count == 1 else (words or word + 's')}"


def refuse_existing(paths: Iterable[pathlib.Path], *, overwrite: bool) -> None:
    """Refuse (exit 2) to run over files that are there, unless ``--overwrite`` was given."""
    if overwrite:
        return
    there = [path for path in paths if path.exists() or path.is_symlink()]
    if there:
        more = f" (and {plural(len(there) - 1, 'other file')} it would write)" if there[1:] else ""
        raise CliError(f"{there[0]} exists{more}; nothing was sent", code=EXIT_USAGE, hint=_OTHER)


def appeared(path: object) -> CliError:
    """The error of an output that was not there at the start, and is there at the end."""
    return CliError(
        f"{path} appeared while the command ran; it was left as it was, and nothing was written",
        code=EXIT_USAGE,
        hint=_OTHER,
    )


def cannot_write(path: pathlib.Path | str, exc: OSError) -> CliError:
    """``cannot write <path>: <reason>`` (exit 1): a file named elsewhere instead, OS words."""
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
    """What an interruption leaves at ``path``, looked at when said (it may just be named)."""

    def identity() -> tuple[int, int, int] | None:
        with contextlib.suppress(OSError):
            stat = path.stat()
            return (stat.st_dev, stat.st_ino, stat.st_mtime_ns)
        return None

    before = identity()

    def kept() -> str:
        now = identity()
        if now is None:
            return f"nothing was written: no {path}"
        if now == before:
            return f"{path} was left as it was"
        return f"{path} was written whole before the interruption"

    return kept


def said_on_interrupt(exc: BaseException, *lines: str) -> None:
    """Keep on ``exc`` the lines ``main`` prints after saying the run was interrupted."""
    said: list[str] = getattr(exc, "stoplist_nb_said", [])
    said.extend(lines)
    exc.stoplist_nb_said = said  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Ui:
    """Results on stdout, notes on stderr: scrubbed (they may quote the service), or quiet."""

    progress: bool
    quiet: bool

    def say(self, text: str) -> None:
        if not self.quiet:
            print(redact(text), flush=True)

    def note(self, text: str) -> None:
        if not self.quiet:
            print(f"stoplist-nb: {redact(text)}", file=sys.stderr, flush=True)


def _for_parquet(frame: pd.DataFrame) -> pd.DataFrame:
    # Parquet keeps lists (``cats``); only a column pyarrow cannot type (values of
    # mixed JSON types from the service) is written as text rather than failing.
    out = frame.copy(deep=False)
    for name in frame.columns:
        if pd.api.types.is_object_dtype(frame[name].dtype):
            try:
                pa.array(frame[name], from_pandas=True)
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                text = [as_text(v) for v in frame[name]]
                out[name] = pd.array(text, dtype=pd.StringDtype("pyarrow"))
    # pandas stores attrs in the file's metadata as JSON; keep the ones that are.
    out.attrs = {}
    for key, value in frame.attrs.items():
        with contextlib.suppress(TypeError, ValueError):
            json.dumps(value)
            out.attrs[key] = value
    return out


def write_frame(frame: pd.DataFrame, path: pathlib.Path, *, overwrite: bool = False) -> None:
    """Write a frame as Parquet or CSV (UTF-8, no index, lists as JSON), whole or not at all."""
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
