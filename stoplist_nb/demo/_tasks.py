"""Export tasks of the demo service: their plan, their progress and their files.

A task advances one step per ``tasks/status`` poll, never with the clock, so a test
knows exactly what the n-th poll answers. The archive is built once, on the poll that
first names its file, and kept in memory under its download path.
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
from stoplist_nb.demo._suppress import canonicalize, hashed_rows

__all__ = ["ExportPlan", "ExportStore"]


@dataclass(frozen=True)
class ExportPlan:
    """How the next export task behaves; see ``DemoService.plan_next_export``.

    With the defaults, polls 1-3 answer ``queued`` 0, ``processing`` 40, ``processing``
    80 with ``result`` ``{}``, and poll 4 onward ``completed`` 100 with the filled
    ``result``.

    Attributes:
        steps: Running polls before the end (0: the first poll ends it). Poll ``i``
            reports ``words[min(i - 1, len(words) - 1)]`` with progress ``(i - 1) * 200
            // (2 * steps - 1)`` and ``result`` ``{}``.
        words: Status words while running; words the API never documented are allowed
            (``("queued", "exporting", "packing")``).
        final: Status word of completion (progress 100, ``result`` filled), e.g.
            ``"success"``.
        fail: After the steps report ``"failed"`` with the progress stuck and ``result``
            ``{"error": "export failed: list is locked"}``; the envelope's ``error``
            stays 0.
        never: Never end: after the steps report ``words[-1]`` forever, progress stuck
            at 60 (or at the last step's, if higher).
        hashed_file_as_list: Report ``result.hashed_file`` as ``[path]``, the array the
            documentation promises.
        hashed_file: Report this exact string instead of the real path (which keeps
            serving the archive), e.g. ``"https://evil.example/x.zip"``.
        csv_layout: Layout of the CSV inside the archive; see ``render_csv``.
        archive: Shape of the archive: ``"normal"``; ``"junk"`` (plus
            ``__MACOSX/._<name>.md5.csv``, ``readme.txt`` and a directory ``extra/``);
            ``"bomb"`` (the CSV member inflates to 200 MiB of one repeated line, well
            under 1 MB packed); ``"corrupt"`` (a ZIP start, then garbage and a truncated
            end record); ``"two_csv"`` (the hashes split over ``part1.csv`` and
            ``part2.csv``, with the junk members).
        done_before_file: Polls, after the steps, that already report progress 100 and
            the filled ``result`` under ``words[-1]`` while the download of the file
            answers 404 ``file not found``; the file is served from the poll that
            reports ``final``.
        not_ready_downloads: Downloads of the file that answer 404 ``file not found``
            after it is served, before the next one gets it.

    Raises:
        ValueError: On a value out of range, ``fail`` with ``never``, or
            ``done_before_file`` or ``not_ready_downloads`` with either.
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
        words: Any = self.words
        if (
            isinstance(words, str)
            or not isinstance(words, Sequence)
            or not words
            or not all(isinstance(w, str) and w for w in words)
        ):
            raise ValueError(f"words must be a sequence of non-empty status words, got {words!r}")
        object.__setattr__(self, "words", tuple(words))  # a list given by the caller, frozen
        if not isinstance(self.final, str) or not self.final:
            raise ValueError(f"final must be a non-empty string, got {self.final!r}")
        for name in ("fail", "never", "hashed_file_as_list"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.fail and self.never:
            raise ValueError("a task cannot both fail and never end")
        for name in ("steps", "done_before_file", "not_ready_downloads"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
            if value and name != "steps" and (self.fail or self.never):
                raise ValueError(f"{name} needs a task that completes (not fail or never)")
        if self.hashed_file is not None and not isinstance(self.hashed_file, str):
            raise ValueError(f"hashed_file must be a string or None, got {self.hashed_file!r}")
        if self.csv_layout not in CSV_LAYOUTS:
            raise ValueError(f"csv_layout must be one of {sorted(CSV_LAYOUTS)}")
        if self.archive not in ARCHIVE_KINDS:
            raise ValueError(f"archive must be one of {sorted(ARCHIVE_KINDS)}")


@dataclass
class _Task:
    type: str
    plan: ExportPlan
    polls: int = 0
    result: dict[str, Any] | None = None
    served: bool = False  # the task has reported its final word
    refused: int = 0  # downloads of the served file answered 404 so far
    lock: threading.Lock = field(default_factory=threading.Lock)


class ExportStore:
    """The suppression list, the export tasks and the archives they produced."""

    def __init__(
        self, suppress_id: int, suppress_name: str, suppressed: Mapping[str, Iterable[str]]
    ) -> None:
        if not isinstance(suppress_id, int) or isinstance(suppress_id, bool):
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
        self._plan = ExportPlan()
        self._lock = threading.Lock()
        self._tasks: dict[str, _Task] = {}
        self._files: dict[str, tuple[bytes, _Task]] = {}

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
            self._tasks[task_id] = _Task(type_, plan)
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
            steps = plan.steps
            last = (steps - 1) * 200 // (2 * steps - 1) if steps else 0  # the last step's
            if task.polls <= steps:
                word = plan.words[min(task.polls - 1, len(plan.words) - 1)]
                progress = (task.polls - 1) * 200 // (2 * steps - 1)
                return {"status": word, "progress": progress, "result": {}}
            if plan.never:
                return {"status": plan.words[-1], "progress": max(60, last), "result": {}}
            if plan.fail:
                result = {"error": "export failed: list is locked"}
                return {"status": "failed", "progress": last, "result": result}
            if task.result is None:
                task.result = self._complete(task)
            result = copy.deepcopy(task.result)
            if task.polls <= steps + plan.done_before_file:
                return {"status": plan.words[-1], "progress": 100, "result": result}
            task.served = True
            return {"status": plan.final, "progress": 100, "result": result}

    def _complete(self, task: _Task) -> dict[str, Any]:
        rows = hashed_rows(self.suppressed, task.type)
        plan = task.plan
        data = build_archive(self.suppress_name, rows, layout=plan.csv_layout, kind=plan.archive)
        path = f"suppress/{uuid.uuid4()}/{self.suppress_name}.md5.zip"
        with self._lock:
            self._files[path] = (data, task)
        reported = path if plan.hashed_file is None else plan.hashed_file
        return {
            "hashed_file": [reported] if plan.hashed_file_as_list else reported,
            "regular_file": "",
            "is_api": True,
            "suppress_id": self.suppress_id,
            "total": len(rows),
        }

    def file(self, path: str) -> bytes | None:
        """The archive served at ``/api/download/<path>``, or ``None`` (a 404), also
        while its plan holds it back."""
        with self._lock:
            data, task = self._files.get(path, (None, None))
        if task is None:
            return None
        with task.lock:
            if not task.served:
                return None
            if task.refused < task.plan.not_ready_downloads:
                task.refused += 1
                return None
        return data
