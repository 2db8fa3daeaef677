"""Export tasks of the demo service: their plan, their progress and their files.

A task advances one step per ``tasks/status`` poll, never with the clock, so a test
knows exactly what the n-th poll answers. The archive is built once, on the poll that
first names its file, and kept in memory under its download path; a plan may have
that path answer 404 for a while (a file named before it is served).
"""

from __future__ import annotations

import copy
import secrets
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stoplist_nb.demo._archive import (
    ARCHIVE_KINDS,
    CSV_LAYOUTS,
    ArchiveKind,
    CsvLayout,
    build_archive,
)
from stoplist_nb.demo._suppress import (
    DEFAULT_SUPPRESS_ID,
    DEFAULT_SUPPRESS_NAME,
    build_suppressed,
    canonicalize,
    hashed_rows,
)

__all__ = ["FAIL_TEXT", "ExportPlan", "ExportStore", "ExportTask"]

FAILED = "failed"
FAIL_TEXT = "export failed: list is locked"
# Where a never-ending task's progress sticks, unless its last step got further.
NEVER_PROGRESS = 60


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


@dataclass(frozen=True)
class ExportPlan:
    """How the next export task behaves; see ``DemoService.plan_next_export``.

    Attributes:
        steps: Polls answered before the task ends. Poll ``i`` (1-based, ``i <=
            steps``) reports ``words[min(i - 1, len(words) - 1)]`` with progress
            ``(i - 1) * 200 // (2 * steps - 1)`` (0, 40, 80 for 3 steps) and ``result``
            ``{}``.
        words: Status words of the running task; any word is allowed.
        final: Status word of the completed task (progress 100, ``result`` filled).
        fail: End as ``"failed"`` instead, progress stuck at the last step's, with
            ``result`` ``{"error": "export failed: list is locked"}``.
        never: Never end: after the steps report ``words[-1]`` forever, progress
            stuck at 60 (or at the last step's, if higher).
        hashed_file_as_list: Report ``result.hashed_file`` as ``[path]``.
        hashed_file: Report this string as the path instead of the real one (which
            still serves the archive).
        csv_layout: Layout of the CSV inside the archive.
        archive: Shape of the archive.
        done_before_file: Polls, after the steps, that report ``words[-1]`` with
            progress 100 and ``result`` filled, while the file answers 404; it is
            served from the poll that reports ``final``.
        not_ready_downloads: Downloads of the file, once served, that answer 404
            first.
    """

    steps: int = 3
    words: tuple[str, ...] = ("queued", "processing")
    final: str = "completed"
    fail: bool = False
    never: bool = False
    hashed_file_as_list: bool = False
    hashed_file: str | None = None
    csv_layout: CsvLayout = "plain"
    archive: ArchiveKind = "normal"
    done_before_file: int = 0
    not_ready_downloads: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.steps, int) or _is_bool(self.steps) or self.steps < 0:
            raise ValueError(f"steps must be an int >= 0, got {self.steps!r}")
        words: Any = self.words
        if isinstance(words, str) or not isinstance(words, Sequence):
            raise ValueError(f"words must be a sequence of status words, got {words!r}")
        words = tuple(words)
        if not words or not all(isinstance(w, str) and w for w in words):
            raise ValueError(f"words must be non-empty strings, got {words!r}")
        object.__setattr__(self, "words", words)  # a list given by the caller, frozen
        if not isinstance(self.final, str) or not self.final:
            raise ValueError(f"final must be a non-empty string, got {self.final!r}")
        for name in ("fail", "never", "hashed_file_as_list"):
            if not _is_bool(getattr(self, name)):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.fail and self.never:
            raise ValueError("a task cannot both fail and never end")
        for name in ("done_before_file", "not_ready_downloads"):
            value = getattr(self, name)
            if not isinstance(value, int) or _is_bool(value) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
            if value and (self.fail or self.never):
                raise ValueError(f"{name} needs a task that completes (not fail or never)")
        if self.hashed_file is not None and not isinstance(self.hashed_file, str):
            raise ValueError(f"hashed_file must be a string or None, got {self.hashed_file!r}")
        if self.csv_layout not in CSV_LAYOUTS:
            raise ValueError(f"csv_layout must be one of {sorted(CSV_LAYOUTS)}")
        if self.archive not in ARCHIVE_KINDS:
            raise ValueError(f"archive must be one of {sorted(ARCHIVE_KINDS)}")

    def step(self, poll: int) -> tuple[str, int]:
        """Status word and progress of running poll ``poll`` (1-based, at most ``steps``)."""
        word = self.words[min(poll - 1, len(self.words) - 1)]
        return word, (poll - 1) * 200 // (2 * self.steps - 1)

    def last_progress(self) -> int:
        """Progress of the last running poll (0 without steps)."""
        return self.step(self.steps)[1] if self.steps else 0


@dataclass
class ExportTask:
    """One export started through ``suppresses/export``."""

    task_id: str
    suppress_id: int
    type: str
    plan: ExportPlan
    polls: int = 0
    result: dict[str, Any] | None = None
    #: Whether the file is served: the task has reported its final word.
    served: bool = False
    #: Downloads of the served file answered 404 so far (see ``not_ready_downloads``).
    refused: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)


class ExportStore:
    """The suppression list, the export tasks and the archives they produced.

    Args:
        suppress_id: Id of the one suppression list.
        suppress_name: Its name; the archive is ``<name>.md5.zip``.
        suppressed: Its contacts, canonical values per kind.
    """

    def __init__(
        self, suppress_id: int, suppress_name: str, suppressed: Mapping[str, Iterable[str]]
    ) -> None:
        if not isinstance(suppress_id, int) or _is_bool(suppress_id):
            raise ValueError(f"suppress_id must be an int, got {suppress_id!r}")
        if (
            not isinstance(suppress_name, str)
            or not suppress_name.strip()
            or any(ch in suppress_name for ch in "/\\")  # a path separator would nest the file
            or not suppress_name.isprintable()
        ):
            raise ValueError(
                f"suppress_name must be a printable name without / or \\, got {suppress_name!r}"
            )
        self.suppress_id = suppress_id
        self.suppress_name = suppress_name
        self.suppressed = canonicalize(suppressed)
        self._lock = threading.Lock()
        self._plan = ExportPlan()
        self._tasks: dict[str, ExportTask] = {}
        self._files: dict[str, bytes] = {}
        self._owners: dict[str, ExportTask] = {}

    @classmethod
    def for_profiles(
        cls,
        profiles: Sequence[Mapping[str, Any]],
        seed: int = 0,
        *,
        suppress_id: int = DEFAULT_SUPPRESS_ID,
        suppress_name: str = DEFAULT_SUPPRESS_NAME,
        suppressed: Mapping[str, Iterable[str]] | None = None,
    ) -> ExportStore:
        """A store whose list is ``suppressed``, or else drawn from ``profiles``."""
        if suppressed is None:
            suppressed = build_suppressed(profiles, seed)
        return cls(suppress_id, suppress_name, suppressed)

    def plan_next(self, plan: ExportPlan) -> None:
        """Use ``plan`` for the next export started (replacing a pending one)."""
        with self._lock:
            self._plan = plan

    def start(self, type_: str) -> str:
        """Start an export of ``type_`` with the pending plan; returns the task id."""
        with self._lock:
            plan, self._plan = self._plan, ExportPlan()
            task_id = f"exp-{secrets.token_hex(6)}"
            while task_id in self._tasks:
                task_id = f"exp-{secrets.token_hex(6)}"
            self._tasks[task_id] = ExportTask(task_id, self.suppress_id, type_, plan)
        return task_id

    def poll(self, task_id: str) -> dict[str, Any] | None:
        """Advance the task one step; its ``data`` reply, or ``None`` if it is unknown."""
        with self._lock:
            task = self._tasks.get(task_id)
        if task is None:
            return None
        # One lock per task: building a large archive does not hold up other tasks.
        with task.lock:
            task.polls += 1
            plan = task.plan
            if task.polls <= plan.steps:
                word, progress = plan.step(task.polls)
                return {"status": word, "progress": progress, "result": {}}
            if plan.never:
                progress = max(NEVER_PROGRESS, plan.last_progress())
                return {"status": plan.words[-1], "progress": progress, "result": {}}
            if plan.fail:
                result = {"error": FAIL_TEXT}
                return {"status": FAILED, "progress": plan.last_progress(), "result": result}
            if task.result is None:
                task.result = self._complete(task)
            result = copy.deepcopy(task.result)
            if task.polls <= plan.steps + plan.done_before_file:
                return {"status": plan.words[-1], "progress": 100, "result": result}
            task.served = True
            return {"status": plan.final, "progress": 100, "result": result}

    def _complete(self, task: ExportTask) -> dict[str, Any]:
        rows = hashed_rows(self.suppressed, task.type)
        plan = task.plan
        data = build_archive(self.suppress_name, rows, layout=plan.csv_layout, kind=plan.archive)
        path = f"suppress/{uuid.uuid4()}/{self.suppress_name}.md5.zip"
        with self._lock:
            self._files[path] = data
            self._owners[path] = task
        reported = path if plan.hashed_file is None else plan.hashed_file
        return {
            "hashed_file": [reported] if plan.hashed_file_as_list else reported,
            "regular_file": "",
            "is_api": True,
            "suppress_id": task.suppress_id,
            "total": len(rows),
        }

    def file(self, path: str) -> bytes | None:
        """The archive served at ``/api/download/<path>``, or ``None`` (a 404).

        A file its task's plan holds back (``done_before_file``,
        ``not_ready_downloads``) is ``None`` until it is served.
        """
        with self._lock:
            data, task = self._files.get(path), self._owners.get(path)
        if data is None or task is None:
            return data
        with task.lock:
            if not task.served:
                return None
            if task.refused < task.plan.not_ready_downloads:
                task.refused += 1
                return None
        return data
