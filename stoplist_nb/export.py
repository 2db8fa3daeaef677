"""Suppression-list export: start -> wait -> download -> read the hashed CSV.

The service exports a suppression list asynchronously (``suppresses/export``
starts a task, ``tasks/status`` reports on it, ``/api/download/...`` serves the
ZIP of MD5-hashed contacts). :func:`read_suppression_list` runs the whole flow;
the steps are public for when a step must be retried on its own.

Status words: the docs show only ``completed`` (and ``success`` in an older
example) as final. Other words are read as "still running", unless they say
failure (``error``, ``failed``, ``canceled``, ...) or the reply's ``error`` is
non-zero. A task that reports progress 100 with a file is also done.
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from stoplist_nb import errors
from stoplist_nb.client import Client
from stoplist_nb.hashfile import read_hashed_csv

__all__ = [
    "EXPORT_TYPES",
    "TaskStatus",
    "download_export",
    "get_task",
    "read_export_files",
    "read_suppression_list",
    "start_suppression_export",
    "wait_for_task",
]

#: What ``type`` may be: the kind of contacts to export.
EXPORT_TYPES = ("emails", "phones", "domains", "all")
_DONE = frozenset({"completed", "complete", "success", "succeeded", "done", "finished"})
_FAILED = frozenset(
    {"error", "failed", "failure", "fail", "canceled", "cancelled", "aborted", "rejected"}
)


@dataclass(frozen=True)
class TaskStatus:
    """What ``tasks/status`` says of a task.

    Attributes:
        task_id: The task's identifier.
        status: The status word, as sent.
        progress: 0 to 100, or ``None`` if the service sent none.
        result: The ``result`` object (empty until the task is done).
    """

    task_id: str
    status: str
    progress: int | None
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def hashed_files(self) -> tuple[str, ...]:
        """The download paths: ``result.hashed_file`` as a string or a list of strings."""
        value = self.result.get("hashed_file")
        if isinstance(value, str):
            return (value,) if value else ()
        if isinstance(value, list):
            return tuple(v for v in value if isinstance(v, str) and v)
        return ()

    def require_files(self) -> tuple[str, ...]:
        """:attr:`hashed_files`, or ``InvalidReply`` if the task names none."""
        if not self.hashed_files:
            raise errors.InvalidReply(
                f"tasks/status: task {self.task_id!r} is done but names no file"
            )
        return self.hashed_files

    @property
    def failed(self) -> bool:
        """Whether the status word says the task failed."""
        return self.status.strip().lower() in _FAILED

    @property
    def done(self) -> bool:
        """Whether the task finished well: a final word, or 100% with a file."""
        word = self.status.strip().lower()
        return not self.failed and (
            word in _DONE or (self.progress == 100 and bool(self.hashed_files))
        )

    @property
    def total(self) -> int | None:
        """The number of contacts the service says the file holds."""
        total = self.result.get("total")
        return total if isinstance(total, int) and not isinstance(total, bool) else None


def _check_type(type: Any) -> None:
    if type not in EXPORT_TYPES:
        raise errors.InvalidInput(f"type must be one of {', '.join(EXPORT_TYPES)}; not {type!r}")


def start_suppression_export(client: Client, list_id: int, *, type: str = "all") -> str:
    """Start exporting a suppression list; return the task id.

    The request is never replayed (a replay would start a second export).

    Args:
        client: The API client.
        list_id: The suppression list's id.
        type: ``"emails"``, ``"phones"``, ``"domains"`` or ``"all"``.

    >>> task_id = start_suppression_export(client, 7, type="emails")  # doctest: +SKIP
    """
    errors.require_int("list_id", list_id)
    _check_type(type)
    data = client.call("suppresses/export", id=list_id, type=type).get("data")
    task_id = data.get("task_id") if isinstance(data, dict) else None
    if task_id in (None, ""):
        raise errors.InvalidReply("suppresses/export: the reply has no data.task_id")
    return str(task_id)


def get_task(client: Client, task_id: str) -> TaskStatus:
    """Ask for a task's status once.

    >>> get_task(client, task_id).progress  # doctest: +SKIP
    40
    """
    if not isinstance(task_id, str) or not task_id:
        raise errors.InvalidInput(f"task_id must be a non-empty string, not {task_id!r}")
    data = client.call("tasks/status", task_id=task_id).get("data")
    if not isinstance(data, dict):
        raise errors.InvalidReply("tasks/status: the reply has no data object")
    progress = data.get("progress")
    if isinstance(progress, str) and progress.strip().isdigit():
        progress = int(progress)
    result = data.get("result")
    return TaskStatus(
        task_id=task_id,
        status=str(data.get("status") or ""),
        progress=progress if isinstance(progress, int) and not isinstance(progress, bool) else None,
        result=result if isinstance(result, dict) else {},
    )


def wait_for_task(
    client: Client,
    task_id: str,
    *,
    poll_interval: float = 1.0,
    max_interval: float = 10.0,
    timeout: float = 600.0,
    progress: bool = True,
) -> TaskStatus:
    """Poll a task until it is done, with a growing interval and a deadline.

    Args:
        client: The API client.
        task_id: The task to wait for.
        poll_interval: Seconds before the second poll; each wait is 1.5 times
            the one before, up to ``max_interval``.
        max_interval: The longest wait between two polls.
        timeout: Seconds after which to give up (the task goes on at the service).
        progress: Show a bar driven by the reported progress.

    Raises:
        TaskFailed: The task reported failure.
        TaskTimeout: The deadline passed; ``exc.task_id`` resumes the wait.

    >>> status = wait_for_task(client, task_id, timeout=300)  # doctest: +SKIP
    >>> status.hashed_files  # doctest: +SKIP
    ('suppress/2b0e.../Stop list.md5.zip',)
    """
    for name, value in (("poll_interval", poll_interval), ("max_interval", max_interval),
                        ("timeout", timeout)):  # fmt: skip
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise errors.InvalidInput(f"{name} must be a number of seconds, not {value!r}")
    resume = f"the task goes on: wait_for_task(client, {task_id!r}) picks it up"
    deadline = time.monotonic() + timeout
    interval = max(poll_interval, 0.01)
    with tqdm(total=100, desc=f"export task {task_id}", unit="%", disable=not progress) as bar:
        try:
            while True:
                status = get_task(client, task_id)
                if status.progress is not None:
                    bar.update(max(0, min(status.progress, 100) - bar.n))
                bar.set_postfix_str(status.status, refresh=True)
                if status.failed:
                    reason = status.result.get("error") or status.result.get("error_text") or ""
                    raise errors.TaskFailed(
                        f"export task {task_id!r} {status.status}"
                        + (f": {reason}" if reason else ""),
                        task_id=task_id,
                        status=status.status,
                    )
                if status.done:
                    return status
                left = deadline - time.monotonic()
                if left <= 0:
                    raise errors.TaskTimeout(
                        f"export task {task_id!r} still {status.status or 'running'} at "
                        f"{status.progress if status.progress is not None else '?'}% after "
                        f"{timeout:g} s; {resume}",
                        task_id=task_id,
                        progress=status.progress,
                    )
                time.sleep(min(interval, left))
                interval = min(interval * 1.5, max(max_interval, poll_interval))
        except (errors.TaskFailed, errors.TaskTimeout):
            raise
        except errors.StoplistError as exc:
            exc.hint = resume
            raise
        except KeyboardInterrupt as exc:
            if sys.version_info >= (3, 11):
                exc.add_note(f"export task {task_id!r}: {resume}")
            print(f"export task {task_id!r}: {resume}", file=sys.stderr)
            raise


def download_export(
    client: Client,
    hashed_file: str | list[str],
    dest: str | os.PathLike[str] | None = None,
    *,
    progress: bool = True,
) -> pathlib.Path:
    """Download an export's ZIP of hashed contacts; return where it was saved.

    Args:
        client: The API client (the file comes only from its service).
        hashed_file: ``result.hashed_file`` of the task (a path, or a list of one).
        dest: A file or a directory; default: the current directory.
        progress: Show a byte progress bar.

    >>> download_export(client, status.hashed_files[0], "exports/")  # doctest: +SKIP
    PosixPath('exports/Stop list.md5.zip')
    """
    if isinstance(hashed_file, list):
        if len(hashed_file) != 1:
            raise errors.InvalidInput("hashed_file lists more than one file: download each")
        hashed_file = hashed_file[0]
    return client.download(hashed_file, dest, progress=progress)


def read_suppression_list(
    client: Client,
    list_id: int,
    *,
    type: str = "all",
    progress: bool = True,
    keep_file: str | os.PathLike[str] | None = None,
    poll_interval: float = 1.0,
    timeout: float = 600.0,
    max_size: int = 4 * 2**30,
    max_ratio: float = 200,
) -> pd.DataFrame:
    """Export a suppression list and read its MD5 hashes into a DataFrame.

    Starts the export, waits for it, downloads the ZIP and reads the CSV in
    it (see :func:`~stoplist_nb.hashfile.read_hashed_csv` for the columns).

    Args:
        client: The API client.
        list_id: The suppression list's id.
        type: ``"emails"``, ``"phones"``, ``"domains"`` or ``"all"``.
        progress: Show progress bars for the task and the download.
        keep_file: Keep the ZIP here (a file or a directory); default: a
            temporary directory removed afterwards.
        poll_interval: Seconds before the second status poll (it grows after).
        timeout: Seconds to wait for the task.
        max_size, max_ratio: The zip-bomb limits of
            :func:`~stoplist_nb.hashfile.read_hashed_csv`, to raise for a huge list.

    Returns:
        The hashes; ``attrs`` hold ``task_id``, ``list_id``, ``type``,
        ``total`` (as the service reported it) and ``file``.

    Raises:
        TaskFailed, TaskTimeout: The task failed or ran past ``timeout``; both
            name the task, and ``wait_for_task`` resumes a timed-out one.

    >>> stop = read_suppression_list(client, 7, type="emails")  # doctest: +SKIP
    >>> stop["md5"].head(2)  # doctest: +SKIP
    """
    errors.require_int("list_id", list_id)
    _check_type(type)
    task_id = start_suppression_export(client, list_id, type=type)
    status = wait_for_task(
        client, task_id, poll_interval=poll_interval, timeout=timeout, progress=progress
    )
    with tempfile.TemporaryDirectory(prefix="stoplist_nb-") as tmp:
        dest = pathlib.Path(keep_file) if keep_file is not None else pathlib.Path(tmp)
        frame, paths = read_export_files(
            client, status, dest, progress=progress, max_size=max_size, max_ratio=max_ratio,
            what=f"suppression list {list_id}",
        )  # fmt: skip
    frame.attrs = {
        "task_id": task_id,
        "list_id": list_id,
        "type": type,
        "total": status.total,
        "file": paths[0].name if len(paths) == 1 else [p.name for p in paths],
    }
    return frame


def read_export_files(
    client: Client,
    status: TaskStatus,
    dest: str | os.PathLike[str],
    *,
    progress: bool = True,
    max_size: int = 4 * 2**30,
    max_ratio: float = 200,
    what: str = "the export",
) -> tuple[pd.DataFrame, list[pathlib.Path]]:
    """Download the files of a finished export task into ``dest`` and read them as one frame.

    The step after :func:`wait_for_task` in :func:`read_suppression_list`, apart
    for a task that was started elsewhere (``stoplist-nb export --task-id``).

    Returns:
        The hashes of every file, in order, and the paths they were saved to.

    Raises:
        InvalidReply: The task names no file.

    Warns:
        UserWarning: The rows differ from the ``total`` the service reported.
    """
    paths, frames = [], []
    for name in status.require_files():
        # Read each file before the next download: two files of one export may share a name.
        path = client.download(name, dest, progress=progress)
        frames.append(read_hashed_csv(path, max_size=max_size, max_ratio=max_ratio))
        paths.append(path)
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if status.total is not None and status.total != len(frame):
        warnings.warn(
            f"{what}: the service reported {status.total} contacts, "
            f"the file holds {len(frame)} rows",
            stacklevel=3,
        )
    return frame, paths
