"""A suppression list's export (start or pick up, wait, download, read) into a DataFrame or Parquet.

The ZIPs not kept go to a hidden directory (beside the Parquet file, or a temporary one).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import time
import warnings
from typing import Any, NamedTuple, cast

import pandas as pd

from stoplist_nb import errors
from stoplist_nb._atomic import check_target, scratch_directory
from stoplist_nb._checks import check_int
from stoplist_nb._redact import redact
from stoplist_nb.client import Client
from stoplist_nb.suppression.archive import check_limits, read_hashed_csv
from stoplist_nb.suppression.contacts import add_counts
from stoplist_nb.suppression.download import check_type, download_zip, start_suppression_export
from stoplist_nb.suppression.parquet import HashedParquet
from stoplist_nb.suppression.tasks import (
    DEFAULT_TASK_TIMEOUT,
    TaskStatus,
    check_task_id,
    naming_task,
    wait_for_task,
)

__all__ = [
    "SuppressionSummary", "read_export_files", "read_suppression_list", "write_suppression_parquet"
]  # fmt: skip


class _Options(NamedTuple):
    dest: str | os.PathLike[str] | None
    overwrite: bool
    progress: bool
    poll_interval: float
    max_interval: float
    task_timeout: float
    max_size: int
    max_ratio: float


def _check_request(
    func: str, list_id: Any, task_id: Any, type: Any, max_size: Any, max_ratio: Any
) -> None:
    if list_id is None and task_id is None:
        raise errors.InvalidInput(f"{func}: give list_id (a new export) or task_id (a started one)")
    if list_id is not None:
        check_int("list_id", list_id)
    if task_id is not None:
        check_task_id(task_id)
    check_type(type)
    check_limits(max_size, max_ratio)


def read_suppression_list(
    client: Client,
    list_id: int | None = None,
    *,
    type: str = "all",
    task_id: str | None = None,
    progress: bool = True,
    dest: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    poll_interval: float = 1.0,
    max_interval: float = 10.0,
    task_timeout: float = DEFAULT_TASK_TIMEOUT,
    max_size: int = 4 * 2**30,
    max_ratio: float = 200,
) -> pd.DataFrame:
    """Export a suppression list and read its MD5 hashes into a DataFrame.

    Starts the export (or picks up ``task_id``), waits for it as
    :func:`~stoplist_nb.suppression.tasks.wait_for_task` and reads the ZIP as
    :func:`~stoplist_nb.suppression.archive.read_hashed_csv`, whose arguments it
    takes. Once the task exists, every error names it (``exc.task_id``), and
    ``exc.hint`` says how to pick it up when the task or its file is still there.

    Args:
        list_id: Needed unless ``task_id`` (an export already started) is given.
        type: As :func:`~stoplist_nb.start_suppression_export`; for a new export only.
        dest: Where the ZIP is kept (a file, or a directory for several files);
            default: a hidden temporary directory, removed afterwards.
        overwrite: Replace a ZIP already in ``dest`` (else ``OutputExists``).
        task_timeout: Also how long a file not served yet (404) is waited for;
            ``max_size`` also caps the download.

    Returns:
        The hashes; ``attrs`` hold ``task_id``, ``list_id``, ``type`` (``None``
        for a task picked up), ``total`` (the service's), ``file`` and maybe
        ``kinds``, scrubbed of the token.

    Raises:
        InvalidInput: No ``list_id`` nor ``task_id``, or a bad argument; else as
            ``wait_for_task`` and ``read_hashed_csv`` (of the download too).

    Warns:
        UserWarning: As ``read_hashed_csv``, or a row count other than the service's total.

    >>> stop = read_suppression_list(client, 7, type="emails")  # doctest: +SKIP
    """
    func = "read_suppression_list"
    _check_request(func, list_id, task_id, type, max_size, max_ratio)
    polls = (poll_interval, max_interval, task_timeout)
    o = _Options(dest, overwrite, progress, *polls, max_size, max_ratio)
    args = [] if list_id is None else [repr(list_id)]
    recorded = type if task_id is None else None
    return cast(pd.DataFrame, _export(client, func, args, list_id, task_id, recorded, None, o))


def read_export_files(
    client: Client,
    status: TaskStatus,
    dest: str | os.PathLike[str],
    *,
    progress: bool = True,
    max_size: int = 4 * 2**30,
    max_ratio: float = 200,
    what: str = "the export",
    overwrite: bool = False,
) -> tuple[pd.DataFrame, list[pathlib.Path]]:
    """Download the files of a finished export task into ``dest`` and read them as one frame.

    Same as the step of :func:`read_suppression_list` after the wait; ``what`` names
    the export in messages, and a file not served yet (404) is not waited for.

    Returns:
        The hashes of every file, in order, and the paths they were saved to.

    >>> frame, paths = read_export_files(client, status, "exports/")  # doctest: +SKIP
    """
    o = _Options(dest, overwrite, progress, 0, 0, 0, max_size, max_ratio)
    with naming_task(status.task_id):
        frame, paths = _read_files(client, status, dest, None, None, o, what, 3)
    assert frame is not None
    return frame, paths


def _read_files(
    client: Client,
    status: TaskStatus,
    dest: str | os.PathLike[str],
    wait: tuple[float, float, float, float] | None,
    sink: HashedParquet | None,
    o: _Options,
    what: str,
    stacklevel: int,
) -> tuple[pd.DataFrame | None, list[pathlib.Path]]:
    paths: list[pathlib.Path] = []
    frames = []
    for name in status.require_files():
        # Each file is read before the next download: two files of one export may share a name.
        path = download_zip(
            client, name, dest, status, what, o.progress, o.max_size, o.overwrite, paths, wait
        )
        limits: dict[str, Any] = {"max_size": o.max_size, "max_ratio": o.max_ratio}
        if sink is None:
            frames.append(read_hashed_csv(path, **limits))
        else:
            sink.add(path, **limits, label=f"{what}: {redact(name)!r}", stacklevel=stacklevel)
        paths.append(path)
    frame, rows = None, 0 if sink is None else sink.rows
    if frames:
        frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        if len(frames) > 1 and any("kinds" in f.attrs for f in frames):
            frame.attrs["kinds"] = add_counts(f.attrs.get("kinds", {}) for f in frames)
        rows = len(frame)
    if status.total is not None and status.total != rows:
        warnings.warn(
            f"{what}: the service reported {status.total} contacts, the file holds {rows} rows",
            stacklevel=stacklevel,
        )
    return frame, paths


@dataclasses.dataclass(frozen=True)
class SuppressionSummary:
    """What :func:`write_suppression_parquet` wrote; ``kinds`` as ``attrs["kinds"]`` or ``None``."""

    path: pathlib.Path
    rows: int
    task_id: str
    kinds: dict[str, int] | None


def write_suppression_parquet(
    client: Client,
    list_id: int | None,
    path: str | os.PathLike[str],
    *,
    type: str | None = None,
    task_id: str | None = None,
    progress: bool = True,
    overwrite: bool = False,
    dest: str | os.PathLike[str] | None = None,
    poll_interval: float = 1.0,
    max_interval: float = 10.0,
    task_timeout: float = DEFAULT_TASK_TIMEOUT,
    max_size: int = 4 * 2**30,
    max_ratio: float = 200,
) -> SuppressionSummary:
    """Export a suppression list into a Parquet file, in bounded memory.

    Same as :func:`read_suppression_list`, but the CSV is streamed into ``path`` 1 MiB
    (a row group) at a time, about 10 MiB of Arrow memory whatever the list's size,
    written whole or not at all; ``pd.read_parquet(path)`` gives back the frame.

    Args:
        list_id: ``None`` with ``task_id``.
        path: The Parquet file to write; its directory must exist.
        type: ``None`` is ``"all"``; with ``task_id``, only recorded in ``attrs``.
        overwrite: Replace a file at ``path`` too (else refused before the export starts).

    Returns:
        A :class:`SuppressionSummary`.

    Raises:
        OutputExists: A file is at ``path`` and ``overwrite`` is false.
        BadArchive: Also an export of several files whose columns differ.

    >>> done = write_suppression_parquet(client, 7, "stop.parquet")  # doctest: +SKIP
    """
    func = "write_suppression_parquet"
    out = check_target(path)
    _check_request(func, list_id, task_id, "all" if type is None else type, max_size, max_ratio)
    polls = (poll_interval, max_interval, task_timeout)
    o = _Options(dest, overwrite, progress, *polls, max_size, max_ratio)
    # Opened first: a file that is there, or a directory that cannot be written, is
    # found before an export is started for nothing.
    with HashedParquet(out, overwrite=overwrite) as sink:
        args = [repr(list_id), repr(str(out))]
        summary = _export(client, func, args, list_id, task_id, type, sink, o)
    return cast(SuppressionSummary, summary)


def _export(
    client: Client,
    func: str,
    args: list[str],
    list_id: int | None,
    task_id: str | None,
    type: str | None,
    sink: HashedParquet | None,
    o: _Options,
) -> pd.DataFrame | SuppressionSummary:
    """The export, started unless ``task_id``, into a frame or ``sink``; hints call ``func``."""
    if task_id is None:
        assert list_id is not None  # checked by the caller
        type = type or "all"
        task_id = start_suppression_export(client, list_id, type=type)

    def say(task_id: str) -> str:
        call = ", ".join(["client", *args, f"task_id={task_id!r}"])
        return f"the export goes on at the service: {func}({call}) picks it up"

    with naming_task(task_id, say):
        # The files are waited for up to the task's own deadline.
        wait = (time.monotonic(), o.task_timeout, o.poll_interval, o.max_interval)
        polls = {"poll_interval": o.poll_interval, "max_interval": o.max_interval}
        status = wait_for_task(
            client, task_id, task_timeout=o.task_timeout, progress=o.progress, **polls
        )
        what = f"export task {redact(task_id)}"
        what = what if list_id is None else f"suppression list {list_id}"
        files, dest = status.require_files(), o.dest
        # As Client.download reads it: a directory exists, or is written with a trailing /.
        directory = dest is None or pathlib.Path(dest).is_dir() or str(dest).endswith(("/", os.sep))
        if len(files) > 1 and not directory:
            raise errors.InvalidInput(
                f"{what}: the export has {len(files)} files and dest={str(dest)!r} names "
                "one file: give a directory"
            )
        with contextlib.ExitStack() as stack:
            if dest is not None:
                target = pathlib.Path(dest)
            elif sink is not None:
                target = sink.output.temporary("zips", directory=True)
            else:
                target = stack.enter_context(scratch_directory("zips"))
            o = o._replace(overwrite=o.overwrite or dest is None)
            frame, paths = _read_files(client, status, target, wait, sink, o, what, 4)
            names = [redact(path.name) for path in paths]
            attrs: dict[Any, Any] = {
                "task_id": redact(task_id),
                "list_id": list_id,
                "type": type,
                "total": status.total,
                "file": names[0] if len(names) == 1 else names,
            }
            if sink is not None:
                sink.finish(attrs)
                return SuppressionSummary(sink.path, sink.rows, task_id, sink.kinds)
    assert frame is not None
    frame.attrs = attrs | ({"kinds": frame.attrs["kinds"]} if "kinds" in frame.attrs else {})
    return frame
