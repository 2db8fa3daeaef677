"""Export tasks: what ``tasks/status`` says of a task, and waiting for one to finish.

Apart from :mod:`stoplist_nb.suppression.export` because a task knows nothing of
suppression lists: it has a status word, a progress and, when done, a
``result``. Only the words ``completed`` (and ``success`` in an older example)
are documented as final; other words are read as "still running", unless they
say failure (``error``, ``failed``, ``canceled``, ...) or the reply's ``error``
is non-zero. A task that reports progress 100 with a file is also done.

Every word of the service (task id, status word, failure reason) is scrubbed
of the token before it reaches a message, the progress bar or stderr.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from stoplist_nb import errors
from stoplist_nb._redact import redact
from stoplist_nb.client import Client

__all__ = ["TaskStatus", "get_task", "wait_for_task"]

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
                f"tasks/status: task {redact(self.task_id)!r} is done but names no file"
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
    shown = repr(redact(task_id))  # the id is the service's: it may echo anything
    resume = f"the task goes on: wait_for_task(client, {shown}) picks it up"
    deadline = time.monotonic() + timeout
    interval = max(poll_interval, 0.01)
    with tqdm(
        total=100, desc=f"export task {redact(task_id)}", unit="%", disable=not progress
    ) as bar:
        try:
            while True:
                status = get_task(client, task_id)
                word = redact(status.status)
                if status.progress is not None:
                    bar.update(max(0, min(status.progress, 100) - bar.n))
                bar.set_postfix_str(word, refresh=True)
                if status.failed:
                    reason = status.result.get("error") or status.result.get("error_text") or ""
                    raise errors.TaskFailed(
                        f"export task {shown} {word}"
                        + (f": {redact(str(reason))}" if reason else ""),
                        task_id=task_id,
                        status=word,
                    )
                if status.done:
                    return status
                left = deadline - time.monotonic()
                if left <= 0:
                    raise errors.TaskTimeout(
                        f"export task {shown} still {word or 'running'} at "
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
                exc.add_note(f"export task {shown}: {resume}")
            print(f"export task {shown}: {resume}", file=sys.stderr)
            raise
