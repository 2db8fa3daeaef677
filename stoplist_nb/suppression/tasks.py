"""Export tasks: what ``tasks/status`` says of a task, and waiting for one to finish.

Words other than ``completed`` (or ``success``) mean "running" unless they say failure.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from stoplist_nb import errors
from stoplist_nb._checks import check_number
from stoplist_nb._redact import redact
from stoplist_nb._threads import Bar
from stoplist_nb.client import Client

__all__ = ["DEFAULT_TASK_TIMEOUT", "TaskStatus", "get_task", "wait_for_task"]

#: Seconds :func:`wait_for_task` waits for a task by default.
DEFAULT_TASK_TIMEOUT = 600.0

_DONE = frozenset({"completed", "complete", "success", "succeeded", "done", "finished"})
_FAILED = frozenset(
    {"error", "failed", "failure", "fail", "canceled", "cancelled", "aborted", "rejected"}
)
_PASSING = (errors.TransportError, errors.ServerError, errors.RateLimited)
_RESUME: ContextVar[Callable[[str], str] | None] = ContextVar("stoplist_nb_resume", default=None)


def how_to_resume(task_id: str) -> str:
    say, shown = _RESUME.get(), redact(task_id)
    return say(shown) if say else f"the task goes on: wait_for_task(client, {shown!r}) picks it up"


@contextmanager
def resume_said_as(say: Callable[[str], str] | None) -> Iterator[None]:
    """Within the block, tell how to pick up a task with ``say(task_id)`` (a command line's way)."""
    token = _RESUME.set(say)
    try:
        yield
    finally:
        _RESUME.reset(token)


@contextmanager
def naming_task(task_id: str, say: Callable[[str], str] | None = None) -> Iterator[None]:
    """Within the block, a StoplistError gets ``exc.task_id``, a resumable one ``say``'s hint."""
    with resume_said_as(_RESUME.get() or say):
        try:
            yield
        except errors.StoplistError as exc:
            exc.task_id = task_id
            # A file too large for the limits given is read with larger ones.
            if exc.hint is None and isinstance(exc, (*_PASSING, errors.ArchiveTooLarge)):
                exc.hint = how_to_resume(task_id)
            raise


@dataclass(frozen=True)
class TaskStatus:
    """What ``tasks/status`` says of a task: ``progress`` is 0 to 100, or ``None`` if not sent."""

    task_id: str
    status: str
    progress: int | None
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def hashed_files(self) -> tuple[str, ...]:
        """The download paths: ``result.hashed_file`` as a string or a list of strings."""
        value = self.result.get("hashed_file")
        values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        return tuple(v for v in values if isinstance(v, str) and v)

    def require_files(self) -> tuple[str, ...]:
        if not self.hashed_files:
            raise errors.InvalidReply(
                f"tasks/status: task {redact(self.task_id)!r} is done but names no file"
            )
        return self.hashed_files

    @property
    def failed(self) -> bool:
        return self.status.strip().lower() in _FAILED

    @property
    def done(self) -> bool:
        """A final word, or 100% with a file."""
        word = self.status.strip().lower()
        return not self.failed and (
            word in _DONE or (self.progress == 100 and bool(self.hashed_files))
        )

    @property
    def total(self) -> int | None:
        """The number of contacts the service says the file holds."""
        total = self.result.get("total")
        return total if isinstance(total, int) and not isinstance(total, bool) else None


def check_task_id(task_id: Any) -> None:
    if not isinstance(task_id, str) or not task_id:
        raise errors.InvalidInput(f"task_id must be a non-empty string, not {task_id!r}")


def get_task(client: Client, task_id: str) -> TaskStatus:
    """Ask for a task's status once.

    Returns:
        Its state, progress (0 to 100) and result files.

    >>> get_task(client, task_id).progress  # doctest: +SKIP
    40
    """
    check_task_id(task_id)
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


def backoff(deadline: float, poll_interval: float, max_interval: float) -> Iterator[int]:
    """Yield try numbers: the first at once, then after waits growing 1.5-fold to ``deadline``."""
    interval = max(poll_interval, 0.01)
    for attempt in itertools.count():
        yield attempt
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(interval, left))
        interval = min(interval * 1.5, max(max_interval, poll_interval))


def check_not_failed(status: TaskStatus) -> None:
    if not status.failed:
        return
    word = redact(status.status)
    reason = status.result.get("error") or status.result.get("error_text") or ""
    raise errors.TaskFailed(
        f"export task {redact(status.task_id)!r} {word}"
        + (f": {redact(str(reason))}" if reason else ""),
        task_id=status.task_id,
        status=word,
    )


def wait_for_task(
    client: Client,
    task_id: str,
    *,
    poll_interval: float = 1.0,
    max_interval: float = 10.0,
    task_timeout: float = DEFAULT_TASK_TIMEOUT,
    progress: bool = True,
) -> TaskStatus:
    """Poll a task until it is done, with a growing interval and a deadline.

    Args:
        client: The API client.
        task_id: The task to wait for.
        poll_interval: Seconds before the second poll; each wait is 1.5 times
            the one before, up to ``max_interval``.
        max_interval: The longest wait between two polls.
        task_timeout: Seconds to wait (not the client's socket ``timeout``).
        progress: Show a bar driven by the reported progress.

    Returns:
        The task's :class:`TaskStatus` once it is done.

    Raises:
        TaskFailed: The task reported failure.
        TaskTimeout: The deadline passed; ``exc.task_id`` resumes the wait.
        StoplistError: A poll failed; ``exc.hint`` says how to pick the task
            up when it may still run (no reply, a 5xx, a 429).

    >>> status = wait_for_task(client, task_id, task_timeout=300)  # doctest: +SKIP
    """
    check_number("poll_interval", poll_interval, unit="seconds", zero=True)
    check_number("max_interval", max_interval, unit="seconds", zero=True)
    check_number("task_timeout", task_timeout, unit="seconds", zero=True)
    shown = repr(redact(task_id))  # the id is the service's: it may echo anything
    resume = how_to_resume(task_id)
    deadline = time.monotonic() + task_timeout
    desc = f"export task {redact(task_id)}"
    with Bar(total=100, desc=desc, unit="%", disable=not progress) as bar:
        try:
            for _ in backoff(deadline, poll_interval, max_interval):
                status = get_task(client, task_id)
                word = redact(status.status)
                if status.progress is not None:
                    bar.update(max(0, min(status.progress, 100) - bar.n))
                bar.set_postfix_str(word, refresh=True)
                check_not_failed(status)
                if status.done:
                    return status
            # Progress 100 without a file: the work is done, the file is not (yet).
            no_file = " with no file yet" if status.progress == 100 else ""
            at = status.progress if status.progress is not None else "?"
            raise errors.TaskTimeout(
                f"export task {shown} still {word or 'running'} at {at}%{no_file} "
                f"after {task_timeout:g} s",
                task_id=task_id,
                progress=status.progress,
            )
        except (*_PASSING, errors.TaskTimeout) as exc:
            exc.hint = resume
            raise
        except KeyboardInterrupt as exc:
            errors.add_note(exc, f"export task {shown}: {resume}")
            print(f"export task {shown}: {resume}", file=sys.stderr)
            raise
