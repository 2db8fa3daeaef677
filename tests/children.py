"""Child processes started as a person's terminal starts them, whoever started the tests.

A script's ``cmd &`` starts the test run with SIGINT ignored, ``nohup`` with
SIGHUP ignored, and an ignored signal stays ignored across ``exec``: a child
that a test stops with a signal would sleep through it. :func:`popen` starts
every such child with the stopping signals at their defaults. A fuzz run in a
child (:func:`fuzz`) takes this run's Hypothesis settings with it. A module of
its own, like demo_fixtures, so that test modules and helpers can import it.
"""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

from hypothesis import settings

from stoplist_nb._threads import STOPPING


def default_signals() -> None:
    """Put the package's stopping signals back to their defaults (in the child, before exec)."""
    for signum in STOPPING:
        signal.signal(signum, signal.SIG_DFL)


def popen(
    args: Any, *, preexec: Callable[[], Any] | None = None, **options: Any
) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **options)`` with the stopping signals at their defaults.

    ``preexec``, when given, runs in the child after that, before ``exec``.
    """

    def prepare() -> None:
        default_signals()
        if preexec is not None:
            preexec()

    return subprocess.Popen(args, preexec_fn=prepare, **options)


def fuzz(test_file: str, *functions: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run the Hypothesis ``functions`` of ``test_file`` in a fresh interpreter; its result.

    A child, so that a crash in native code (pyarrow's readers) fails one test
    instead of ending the run. It runs under this run's settings (the profile's
    examples, no deadline), which it would not have by itself: Hypothesis's own
    default has a 200 ms deadline, which a loaded machine misses.
    """
    here = settings()  # the current profile's values
    checks = [check.name for check in here.suppress_health_check]
    script = f"""
        import runpy, sys
        from hypothesis import HealthCheck, settings
        settings.register_profile(
            "run", max_examples={here.max_examples!r}, deadline={here.deadline!r},
            suppress_health_check=[HealthCheck[name] for name in {checks!r}],
        )
        settings.load_profile("run")
        sys.path.insert(0, {str(pathlib.Path(__file__).parent)!r})  # the tests' own helpers
        module = runpy.run_path({test_file!r})
        for name in {list(functions)!r}:
            module[name]()
        """
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
