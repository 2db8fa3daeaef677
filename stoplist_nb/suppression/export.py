"""A suppression list's export read: into a DataFrame, or into a Parquet file.

:func:`read_suppression_list` runs the whole flow of
:mod:`stoplist_nb.suppression.download` (start or pick up the export, wait,
download) into a DataFrame, :func:`write_suppression_parquet` into a Parquet
file in bounded memory; :func:`read_export_files` reads the files of a task
already done.

The Parquet file follows the one rule of :class:`~stoplist_nb._atomic.Output`:
hidden temporaries beside it, its name only when complete, never over a file
that is there unless ``overwrite=True``. The downloads a call does not keep go
to a hidden directory of that scheme: beside the Parquet file, or in the
system's temporary directory for a frame; what a killed run left there is
cleared by the next one. What the service names (the task id, the file names)
is scrubbed of the token before it reaches a file, its metadata or ``attrs``.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd

from stoplist_nb import errors
from stoplist_nb._atomic import check_target
from stoplist_nb._checks import check_int
from stoplist_nb._redact import redact
from stoplist_nb.client import Client
from stoplist_nb.suppression.archive import check_limits, read_hashed_csv
from stoplist_nb.suppression.contacts import add_counts
from stoplist_nb.suppression.download import (
    FileWait,
    check_type,
    done_task,
    download_target,
    download_zip,
    start_suppression_export,
)
from stoplist_nb.suppression.parquet import HashedParquet
from stoplist_nb.suppression.tasks import (
    DEFAULT_TASK_TIMEOUT,
    TaskStatus,
    check_task_id,
    naming_task,
)

__all__ = [
    "SuppressionSummary",
    "read_export_files",
    "read_suppression_list",
    "write_suppression_parquet",
]


def _check_request(
    func: str, list_id: Any, task_id: Any, type: Any, max_size: Any, max_ratio: Any
) -> None:
    """The checks on what to export, made before anything is sent."""
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

    Starts the export (or picks up one already started, by ``task_id``),
    waits for it, downloads the ZIP and reads the CSV in it (see
    :func:`~stoplist_nb.suppression.archive.read_hashed_csv` for the columns).

    Args:
        client: The API client.
        list_id: The suppression list's id; needed unless ``task_id`` is given.
        type: ``"emails"``, ``"phones"``, ``"domains"`` or ``"all"``: what a
            new export holds (an export picked up by ``task_id`` holds what it
            was started with).
        task_id: An export task already started (by
            :func:`start_suppression_export`, ``exc.task_id`` of a
            :class:`~stoplist_nb.errors.TaskTimeout`, or another program):
            wait for it and read its file instead of starting an export.
        progress: Show progress bars for the task and the download.
        dest: Where the downloaded ZIP goes and stays (a file or a directory,
            as in :func:`~stoplist_nb.suppression.download.download_export`;
            a directory when the export has several files); default: a hidden
            directory in the system's temporary one, removed afterwards.
        overwrite: Replace a ZIP already in ``dest`` under the name of a
            file of the export (else ``OutputExists``, once the name is known).
        poll_interval: Seconds before the second status poll (it grows after).
        max_interval: The longest wait between two status polls.
        task_timeout: Seconds to wait for the task (not the client's socket
            ``timeout``).
        max_size: The zip-bomb limit on unpacked bytes of
            :func:`~stoplist_nb.suppression.archive.read_hashed_csv`, to raise for a huge
            list; it also caps the download.
        max_ratio: The zip-bomb limit on the packing ratio, as in
            :func:`~stoplist_nb.suppression.archive.read_hashed_csv`.

    Returns:
        The hashes; ``attrs`` hold ``task_id``, ``list_id`` (``None`` for a
        task picked up without one), ``type`` (``None`` for a task picked
        up), ``total`` (as the service reported it), ``file`` and, when the
        CSV names the kind of each row, ``kinds`` (rows per kind, see
        :func:`~stoplist_nb.suppression.archive.read_hashed_csv`). The task
        id and the file names are the service's words scrubbed of the token.

    Raises:
        InvalidInput: Neither ``list_id`` nor ``task_id``, a bad argument, or
            a ``dest`` that is a file for an export of several files (nothing
            is downloaded then).
        TaskFailed, TaskTimeout: The task failed or ran past ``task_timeout``;
            both name the task, and ``task_id=`` picks a timed-out one up.
            A file the done task names but the service does not serve yet
            (404) is asked for again, with growing pauses, up to the same
            deadline, counted from the start of the wait: then ``TaskTimeout``.
        ArchiveTooLarge: The download or the archive is beyond ``max_size`` or
            ``max_ratio``.
        StoplistError: Any error once the task exists names it (``exc.task_id``
            and its message); ``exc.hint`` says how to pick it up when the task
            or its file is still there.

    Warns:
        UserWarning: Rows without a valid MD5 (kept) or with the wrong number
            of fields (skipped), or a row count other than the service's total.

    >>> stop = read_suppression_list(client, 7, type="emails")  # doctest: +SKIP
    >>> stop["md5"].head(2)  # doctest: +SKIP
    >>> late = read_suppression_list(client, 7, task_id="exp-42")  # doctest: +SKIP
    """
    func = "read_suppression_list"
    _check_request(func, list_id, task_id, type, max_size, max_ratio)
    started = task_id is None
    if task_id is None:
        assert list_id is not None  # checked above
        task_id = start_suppression_export(client, list_id, type=type)
    say = _resume_call(func, *([repr(list_id)] if list_id is not None else []))
    with naming_task(task_id, say):
        status, wait = done_task(
            client,
            task_id,
            poll_interval=poll_interval,
            max_interval=max_interval,
            task_timeout=task_timeout,
            progress=progress,
        )
        what = _what(list_id, task_id)
        with download_target(status, dest, what) as target:
            frame, paths = _read_files(
                client,
                status,
                target,
                progress=progress,
                max_size=max_size,
                max_ratio=max_ratio,
                what=what,
                overwrite=overwrite or dest is None,
                wait=wait,
            )
    kinds = frame.attrs.get("kinds")
    frame.attrs.clear()
    frame.attrs.update(_attrs(task_id, list_id, type if started else None, status, paths))
    if kinds is not None:
        frame.attrs["kinds"] = kinds
    return frame


def _attrs(
    task_id: str,
    list_id: int | None,
    type: str | None,
    status: TaskStatus,
    paths: list[pathlib.Path],
) -> dict[str, Any]:
    """What a list read or written records of its export (``attrs``, the file's metadata).

    The task id and the file names are the service's: scrubbed of the token,
    they can be shown, saved and shared.
    """
    names = [redact(path.name) for path in paths]
    return {
        "task_id": redact(task_id),
        "list_id": list_id,
        "type": type,
        "total": status.total,
        "file": names[0] if len(names) == 1 else names,
    }


def _what(list_id: int | None, task_id: str) -> str:
    if list_id is not None:
        return f"suppression list {list_id}"
    return f"export task {redact(task_id)}"


def _resume_call(func: str, *args: str) -> Callable[[str], str]:
    """How to pick an export up again with ``func(client, *args, task_id=...)``."""

    def say(task_id: str) -> str:
        call = ", ".join(["client", *args, f"task_id={task_id!r}"])
        return f"the export goes on at the service: {func}({call}) picks it up"

    return say


def _check_total(status: TaskStatus, rows: int, what: str) -> None:
    if status.total is not None and status.total != rows:
        warnings.warn(
            f"{what}: the service reported {status.total} contacts, the file holds {rows} rows",
            stacklevel=4,
        )


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

    The step after :func:`~stoplist_nb.suppression.tasks.wait_for_task` in
    :func:`read_suppression_list`, apart, for a task that was started
    elsewhere (``stoplist-nb export --task-id``); ``progress``, ``max_size``,
    ``max_ratio`` and ``overwrite`` are as there, ``what`` names the export in
    messages. Each download is tried once: a file not served yet (404) is
    waited for only by :func:`read_suppression_list` and
    :func:`write_suppression_parquet`, which know the task's deadline.

    Returns:
        The hashes of every file, in order, and the paths they were saved to;
        ``attrs["kinds"]`` sums the rows per kind of the files that name them.

    Raises:
        StoplistError: Each names the task (``exc.task_id`` and its message).
        InvalidReply: The task names no file.
        OutputExists: A ZIP is in ``dest`` under a file's name and
            ``overwrite`` is false (before that file's download).
        ArchiveTooLarge: A download or an archive is beyond ``max_size`` or ``max_ratio``.

    Warns:
        UserWarning: As in :func:`read_suppression_list`.

    >>> frame, paths = read_export_files(client, status, "exports/")  # doctest: +SKIP
    """
    with naming_task(status.task_id):
        return _read_files(
            client,
            status,
            dest,
            progress=progress,
            max_size=max_size,
            max_ratio=max_ratio,
            what=what,
            overwrite=overwrite,
        )


def _read_files(
    client: Client,
    status: TaskStatus,
    dest: str | os.PathLike[str],
    *,
    progress: bool,
    max_size: int,
    max_ratio: float,
    what: str,
    overwrite: bool,
    wait: FileWait | None = None,
) -> tuple[pd.DataFrame, list[pathlib.Path]]:
    """:func:`read_export_files`; with ``wait``, a file not served yet is waited for."""
    paths: list[pathlib.Path] = []
    frames = []
    for name in status.require_files():
        # Read each file before the next download: two files of one export may share a name.
        path = download_zip(
            client,
            name,
            dest,
            progress=progress,
            max_size=max_size,
            what=what,
            overwrite=overwrite,
            replaceable=paths,
            status=status,
            wait=wait,
        )
        frames.append(read_hashed_csv(path, max_size=max_size, max_ratio=max_ratio))
        paths.append(path)
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if len(frames) > 1 and any("kinds" in f.attrs for f in frames):
        frame.attrs["kinds"] = add_counts(f.attrs.get("kinds", {}) for f in frames)
    _check_total(status, len(frame), what)
    return frame, paths


@dataclasses.dataclass(frozen=True)
class SuppressionSummary:
    """What :func:`write_suppression_parquet` wrote.

    The file's own metadata holds more: ``pd.read_parquet(path).attrs`` are
    the ``attrs`` :func:`read_suppression_list` gives.

    Attributes:
        path: The Parquet file.
        rows: The rows written: the list's hashes.
        task_id: The export task, to pick the export up again.
        kinds: Rows per kind (``{"email": n, "phone": n, "domain": n, ...}``, as
            ``attrs["kinds"]`` of :func:`~stoplist_nb.suppression.archive.read_hashed_csv`)
            when the file names the kind of each row; ``None`` otherwise.
    """

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

    Same as :func:`read_suppression_list` (the flow, the arguments, limits,
    checks, errors and warnings), but the CSV is streamed out of the ZIP into
    ``path`` one block at a time, never held whole: 1 MiB of CSV (about 27,000
    rows of ``md5;type``) at once, a row group each; about 10 MiB of Arrow
    memory whatever the size of the list. ``pd.read_parquet(path)`` then gives
    the frame ``read_suppression_list`` would have returned for the same
    export: the same columns, ``string[pyarrow]`` dtypes, rows, order and
    ``attrs``.

    The file is written under a hidden name in the same directory and given
    the name ``path`` once complete: after an error or an interruption there
    is no new file at ``path`` (one already there is left as it was) and no
    temporary one. A file already at ``path`` is replaced only with
    ``overwrite=True``; without it, it is refused before the export is
    started, and a file that appears there meanwhile is kept too. The ZIPs
    not kept (no ``dest``) are downloaded to a hidden directory beside
    ``path``, so that a directory that cannot be written is found before
    anything is sent.

    Args:
        list_id: ``None`` with ``task_id``. The source comes first and the
            file second, as in :meth:`~stoplist_nb.ProfilesRequest.to_parquet`.
        path: The Parquet file to write (``str`` or ``os.PathLike``); its
            directory must exist.
        type: As in :func:`read_suppression_list` (``None``: ``"all"``). With
            ``task_id``, what that export was started with, if known: it is
            recorded in the file's ``attrs["type"]`` (``None``: not known),
            nothing is sent for it.
        overwrite: Replace a file at ``path`` too.
        dest: As in :func:`read_suppression_list`; default: a hidden directory
            beside ``path``, removed afterwards.

    Returns:
        A :class:`SuppressionSummary`: ``path``, ``rows``, ``task_id`` and
        ``kinds`` (rows per kind, or ``None`` when the file names no kind).

    Raises:
        InvalidInput: Also a ``path`` that is a directory or in none, before
            anything is sent.
        OutputExists: A file is at ``path`` and ``overwrite`` is false
            (nothing was sent), or one appeared there during the export.
        OSError: The file cannot be written (a full disk, a read-only
            directory: then before anything is sent), naming ``path``.
        BadArchive: Also an export of several files whose columns differ
            (one file holds one table).

    >>> done = write_suppression_parquet(client, 7, "stop.parquet")  # doctest: +SKIP
    >>> done.rows, done.kinds  # doctest: +SKIP
    (1234, None)
    >>> pd.read_parquet("stop.parquet")["md5"].head(2)  # doctest: +SKIP
    >>> task_id = start_suppression_export(client, 7, type="emails")  # doctest: +SKIP
    >>> write_suppression_parquet(client, 7, "e.parquet", task_id=task_id)  # doctest: +SKIP
    """
    out = check_target(path)
    kind = "all" if type is None else type
    _check_request("write_suppression_parquet", list_id, task_id, kind, max_size, max_ratio)
    # Opened first: a file that is there, or a directory that cannot be written, is
    # found before an export is started for nothing.
    with HashedParquet(out, overwrite=overwrite) as sink:
        if task_id is None:
            assert list_id is not None  # checked above
            task_id = start_suppression_export(client, list_id, type=kind)
            type = kind
        return _write_task_parquet(
            client,
            task_id,
            sink,
            list_id=list_id,
            type=type,
            progress=progress,
            overwrite=overwrite,
            dest=dest,
            poll_interval=poll_interval,
            max_interval=max_interval,
            task_timeout=task_timeout,
            max_size=max_size,
            max_ratio=max_ratio,
            say=_resume_call("write_suppression_parquet", repr(list_id), repr(str(out))),
        )


def _write_task_parquet(
    client: Client,
    task_id: str,
    sink: HashedParquet,
    *,
    list_id: int | None,
    type: str | None,
    progress: bool,
    overwrite: bool,
    dest: str | os.PathLike[str] | None,
    poll_interval: float,
    max_interval: float,
    task_timeout: float,
    max_size: int,
    max_ratio: float,
    say: Callable[[str], str],
) -> SuppressionSummary:
    """:func:`write_suppression_parquet` once the task is known, into the open ``sink``.

    ``type`` is what the file records.

    ``say`` tells how to pick the task up again, as :func:`naming_task` takes it.
    """
    with naming_task(task_id, say):
        status, wait = done_task(
            client,
            task_id,
            poll_interval=poll_interval,
            max_interval=max_interval,
            task_timeout=task_timeout,
            progress=progress,
        )
        # In this frame, not a helper's: the warnings' stacklevel counts on it.
        what = _what(list_id, task_id)
        with download_target(status, dest, what, beside=sink.output) as target:
            paths: list[pathlib.Path] = []
            for name in status.require_files():
                # Each file goes in before the next download: two may share a name.
                path = download_zip(
                    client,
                    name,
                    target,
                    progress=progress,
                    max_size=max_size,
                    what=what,
                    overwrite=overwrite or dest is None,
                    replaceable=paths,
                    status=status,
                    wait=wait,
                )
                label = f"{what}: {redact(name)!r}"
                sink.add(path, max_size=max_size, max_ratio=max_ratio, label=label, stacklevel=4)
                paths.append(path)
            _check_total(status, sink.rows, what)
            sink.finish(_attrs(task_id, list_id, type, status, paths))
        return SuppressionSummary(path=sink.path, rows=sink.rows, task_id=task_id, kinds=sink.kinds)
