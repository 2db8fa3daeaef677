"""An export of a suppression list, up to its ZIP on disk: start the task, download."""

from __future__ import annotations

import os
import pathlib
import time
import zipfile
from collections.abc import Collection
from typing import Any

from stoplist_nb import errors
from stoplist_nb._atomic import refuse_existing
from stoplist_nb._checks import check_int, check_number
from stoplist_nb._redact import redact
from stoplist_nb.client import Client
from stoplist_nb.suppression.tasks import (
    DEFAULT_TASK_TIMEOUT,
    TaskStatus,
    backoff,
    check_not_failed,
    check_task_id,
    get_task,
    how_to_resume,
    naming_task,
)

__all__ = ["EXPORT_TYPES", "download_export", "start_suppression_export"]

#: What ``type`` may be: the kind of contacts to export.
EXPORT_TYPES = ("emails", "phones", "domains", "all")


def check_type(type: Any) -> None:
    if type not in EXPORT_TYPES:
        raise errors.InvalidInput(f"type must be one of {', '.join(EXPORT_TYPES)}; not {type!r}")


def start_suppression_export(client: Client, list_id: int, *, type: str = "all") -> str:
    """Start exporting a suppression list; return the task id (the request is never replayed).

    Args:
        client: The API client.
        list_id: The suppression list's id.
        type: ``"emails"``, ``"phones"``, ``"domains"`` or ``"all"``.

    Returns:
        The task id, for :func:`~stoplist_nb.wait_for_task`.

    >>> task_id = start_suppression_export(client, 7, type="emails")  # doctest: +SKIP
    """
    check_int("list_id", list_id)
    check_type(type)
    data = client.call("suppresses/export", id=list_id, type=type).get("data")
    task_id = data.get("task_id") if isinstance(data, dict) else None
    if task_id in (None, ""):
        raise errors.InvalidReply("suppresses/export: the reply has no data.task_id")
    return str(task_id)


def download_export(
    client: Client,
    hashed_file: str | list[str],
    dest: str | os.PathLike[str] | None = None,
    *,
    progress: bool = True,
    overwrite: bool = False,
    task_id: str | None = None,
    task_timeout: float = DEFAULT_TASK_TIMEOUT,
    poll_interval: float = 2.0,
    max_interval: float = 30.0,
) -> pathlib.Path:
    """Same as :meth:`~stoplist_nb.client.Client.download`, for an export's ZIP of hashed contacts.

    Args:
        hashed_file: ``result.hashed_file`` of the task (a path, or a list of one).
        task_id: The task that named the file: then the download must be a ZIP
            and a file not served yet (404) is asked for again, as
            :func:`~stoplist_nb.suppression.tasks.wait_for_task` polls (its
            ``task_timeout``, ``poll_interval`` and ``max_interval``; then
            ``TaskTimeout``); without it a 404 is an ``APIError``.

    Returns:
        The path the ZIP was saved to.

    >>> download_export(client, status.hashed_files[0], "exports/")  # doctest: +SKIP
    PosixPath('exports/Stop list.md5.zip')
    """
    if isinstance(hashed_file, list):
        if len(hashed_file) != 1:
            raise errors.InvalidInput("hashed_file lists more than one file: download each")
        hashed_file = hashed_file[0]
    if task_id is None:
        return client.download(hashed_file, dest, progress=progress, overwrite=overwrite)
    check_task_id(task_id)
    check_number("task_timeout", task_timeout, unit="seconds")
    check_number("poll_interval", poll_interval, unit="seconds")
    check_number("max_interval", max_interval, unit="seconds")
    wait = (time.monotonic(), task_timeout, poll_interval, max_interval)
    with naming_task(task_id):
        refuse_existing(client.download_target(hashed_file, dest), overwrite)
        status = get_task(client, task_id)
        check_not_failed(status)
        what, where = f"export task {redact(task_id)}", "." if dest is None else dest
        return download_zip(
            client, hashed_file, where, status, what, progress, 2**63, overwrite, (), wait
        )


def download_zip(
    client: Client,
    name: str,
    dest: str | os.PathLike[str],
    status: TaskStatus,
    what: str,
    progress: bool,
    max_size: int,
    overwrite: bool,
    replaceable: Collection[pathlib.Path] = (),
    wait: tuple[float, float, float, float] | None = None,
) -> pathlib.Path:
    """One ZIP of ``status``'s export, over a file of ``replaceable``; ``wait`` retries 404s."""
    start, timeout, poll_interval, max_interval = wait or (0, 0, 0, 0)
    for attempt in backoff(start + timeout, poll_interval, max_interval) if wait else [0]:
        if attempt:
            # Asking lets the service say the task failed after all, or finish it.
            status = get_task(client, status.task_id)
            check_not_failed(status)
        try:
            # Packed, a CSV is no larger than unpacked: past max_size it could not be read anyway.
            path = client.download(
                name,
                dest,
                progress=progress,
                max_bytes=max_size,
                overwrite=overwrite or client.download_target(name, dest) in replaceable,
            )
            break
        except errors.APIError as exc:
            if wait is None or exc.http_status != 404:
                raise
            missing = exc
    else:
        raise errors.TaskTimeout(
            f"export task {redact(status.task_id)!r} is done but its file "
            f"{redact(name)!r} is not ready: the service still answers 404 after "
            f"{timeout:g} s",
            task_id=status.task_id,
            progress=status.progress,
            hint=how_to_resume(status.task_id),
        ) from missing
    if not zipfile.is_zipfile(path):
        # An empty body or a proxy's sign-in page would read as a list of no hashes.
        raise errors.BadArchive(
            f"{what}: the download {redact(name)!r} is not a ZIP archive "
            f"({path.stat().st_size:,} bytes), so it is not the hashed list"
        )
    return path
