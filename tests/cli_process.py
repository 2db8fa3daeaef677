"""The command line run as a person runs it: ``python -m stoplist_nb ...`` in a process of its own.

For the tests that send it real signals or run it under limits of the
system (a file size limit, a directory it may not write). A module of its
own, like demo_fixtures, so that test modules can import it.
"""

from __future__ import annotations

import os
import pathlib
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from children import popen

from stoplist_nb.demo import DemoService

#: Seconds a child gets for anything: a bound against a hang, never a measure.
PATIENCE = 120


def environment(svc: DemoService | None = None, **extra: str) -> dict[str, str]:
    """This process's environment without STOPLIST_NB_*, naming ``svc`` when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPLIST_NB_")}
    if svc is not None:
        env.update(STOPLIST_NB_URL=svc.base_url, STOPLIST_NB_TOKEN=svc.token)
    return {**env, **extra}


def start(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    cwd: pathlib.Path,
    preexec: Callable[[], Any] | None = None,
) -> subprocess.Popen[str]:
    """Start ``python -m stoplist_nb`` with ``argv``, its stdout and stderr piped."""
    return popen(
        # -X faulthandler: a command that never ends prints where each thread is
        # when finish() stops it with SIGABRT.
        [sys.executable, "-X", "faulthandler", "-m", "stoplist_nb", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
        preexec=preexec,
        start_new_session=True,  # the signals of the test go to the command alone
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    """Wait for the command; return (exit code, stdout, stderr)."""
    try:
        stdout, stderr = proc.communicate(timeout=PATIENCE)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)  # the stack of every thread, to stderr
        try:
            stdout, stderr = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        pytest.fail(f"the command did not end: {stderr}")
    return proc.returncode, stdout, stderr


def run(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    cwd: pathlib.Path,
    preexec: Callable[[], Any] | None = None,
) -> tuple[int, str, str]:
    """Run the command to its end; return (exit code, stdout, stderr)."""
    return finish(start(argv, env=env, cwd=cwd, preexec=preexec))


def wait_until(done: Callable[[], bool], what: str, proc: subprocess.Popen[str]) -> None:
    """Poll ``done`` until it holds; fail, saying ``what`` never happened, if the command ends."""
    limit = time.monotonic() + PATIENCE
    while not done():
        if proc.poll() is not None:
            _, stderr = proc.communicate()
            pytest.fail(f"the command ended (exit {proc.returncode}) before {what}: {stderr}")
        if time.monotonic() > limit:
            proc.kill()
            pytest.fail(f"{what} never happened")
        time.sleep(0.01)


def hinted_command(stderr: str) -> list[str]:
    """The arguments of the command a hint says to run (after ``run: stoplist-nb``)."""
    line = next(line for line in stderr.splitlines() if "run: stoplist-nb " in line)
    words = shlex.split(line.split("run: ", 1)[1])
    assert words[0] == "stoplist-nb"
    return words[1:]


def hidden(directory: pathlib.Path) -> list[str]:
    """Files and directories left anywhere under ``directory`` whose names start with a dot."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob(".*"))
