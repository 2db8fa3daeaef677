"""The export side of :class:`~stoplist_nb.demo.DemoService`: its list and its plans.

A mixin, so the service module stays about the server's life cycle.
"""

from __future__ import annotations

from collections.abc import Sequence

from stoplist_nb.demo._api import Backend
from stoplist_nb.demo._archive import ArchiveKind, CsvLayout
from stoplist_nb.demo._tasks import ExportPlan

__all__ = ["ExportControls"]


class ExportControls:
    """The suppression list of the service and the plan of its next export."""

    _backend: Backend

    @property
    def suppress_id(self) -> int:
        """Id of the suppression list."""
        return self._backend.exports.suppress_id

    @property
    def suppress_name(self) -> str:
        """Name of the suppression list; the export is ``<name>.md5.zip``."""
        return self._backend.exports.suppress_name

    @property
    def suppressed(self) -> dict[str, list[str]]:
        """A copy of the list's contacts, whose MD5 hashes the exports hold.

        Keys ``"emails"``, ``"phones"``, ``"domains"``, each a sorted list of canonical
        values: e-mails and domains stripped and lower-cased, phones ``+`` and digits.
        """
        return {kind: list(values) for kind, values in self._backend.exports.suppressed.items()}

    def plan_next_export(
        self,
        *,
        steps: int = 3,
        words: Sequence[str] = ("queued", "processing"),
        final: str = "completed",
        fail: bool = False,
        never: bool = False,
        hashed_file_as_list: bool = False,
        hashed_file: str | None = None,
        csv_layout: CsvLayout = "plain",
        archive: ArchiveKind = "normal",
        done_before_file: int = 0,
        not_ready_downloads: int = 0,
    ) -> ExportPlan:
        """Script the next export task started; later ones get the defaults again.

        A task moves one step per ``tasks/status`` poll, not with time. With the
        defaults, polls 1-3 answer ``queued`` 0, ``processing`` 40, ``processing`` 80
        with ``result`` ``{}``, and poll 4 onward ``completed`` 100 with the filled
        ``result``. A second call before the export starts replaces the first.

        Args:
            steps: Running polls before the end (0: the first poll ends it). Poll ``i``
                reports ``words[min(i - 1, len(words) - 1)]``.
            words: Status words while running; words the API never documented are
                allowed (``("queued", "exporting", "packing")``).
            final: Status word of completion, e.g. ``"success"``.
            fail: After the steps report ``"failed"`` with the progress stuck and
                ``result`` ``{"error": "export failed: list is locked"}``; the
                envelope's ``error`` stays 0.
            never: Never end: after the steps report ``words[-1]`` forever, the
                progress stuck at 60 (or the last step's, if higher).
            hashed_file_as_list: Report ``result.hashed_file`` as ``[path]``, the
                array the documentation promises.
            hashed_file: Report this exact string instead of the real path (which
                keeps serving the archive), e.g. ``"https://evil.example/x.zip"``.
            csv_layout: ``"plain"`` (one column of hashes, no header), ``"header"``
                (first line ``md5``), ``"semicolon"`` (``md5;type`` rows),
                ``"two_columns"`` (``type,md5``: the hash is not first), ``"crlf"``,
                ``"upper"`` (upper-case hex) or ``"bad_rows"`` (plus the lines
                ``not-a-hash``, an empty one and ``12345``).
            archive: ``"normal"``; ``"junk"`` (plus ``__MACOSX/._<name>.md5.csv``,
                ``readme.txt`` and a directory ``extra/``); ``"bomb"`` (the CSV member
                inflates to 200 MiB of one repeated line, well under 1 MB packed);
                ``"corrupt"`` (a ZIP start, then garbage and a truncated end record);
                ``"two_csv"`` (the hashes split over ``part1.csv`` and ``part2.csv``,
                with the junk members).
            done_before_file: Polls, after the steps, that already report progress
                100 and the filled ``result`` under ``words[-1]`` (``processing``)
                while the download of the file answers 404 ``file not found``; the
                file is served from the poll that reports ``final``.
            not_ready_downloads: Downloads of the file that answer 404 ``file not
                found`` after it is served, before the next one gets it: a task
                that says it is done a moment before its file is there.

        Returns:
            The validated plan.

        Raises:
            ValueError: On an argument out of range, ``fail`` with ``never``, or
                ``done_before_file`` or ``not_ready_downloads`` with either.
        """
        if isinstance(words, str):
            raise ValueError(f"words must be a sequence of status words, not {words!r}")
        plan = ExportPlan(
            steps=steps,
            words=tuple(words),
            final=final,
            fail=fail,
            never=never,
            hashed_file_as_list=hashed_file_as_list,
            hashed_file=hashed_file,
            csv_layout=csv_layout,
            archive=archive,
            done_before_file=done_before_file,
            not_ready_downloads=not_ready_downloads,
        )
        self._backend.exports.plan_next(plan)
        return plan
