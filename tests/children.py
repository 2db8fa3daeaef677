"""Child processes started as a person's terminal starts them, whoever started the tests.

A script's ``cmd &`` starts the test run with SIGINT ignored, ``nohup`` with
SIGHUP ignored, and an ignored signal stays ignored across ``exec``: a child
that a test stops with a signal would sleep through it. :func:`popen` starts
every such child with the stopping signals at their defaults. A module of its
own, like demo_fixtures, so that test modules and helpers can import it.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from typing import Any

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
