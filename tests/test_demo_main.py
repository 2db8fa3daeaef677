"""``python -m stoplist_nb.demo``: one data set with every way to the demo, and one copy-paste.

The service runs as a child process, as a person starts it in a terminal; the
line it prints is pasted into a shell as it is, and ``stoplist-nb profiles``
then reads the service.
"""

from __future__ import annotations

import inspect
import os
import pathlib
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator

import pandas as pd
import pytest
from children import popen
from cli_process import PATIENCE, environment

import stoplist_nb as sn
from stoplist_nb.cli.parser import build_parser
from stoplist_nb.demo import DemoService, serve
from stoplist_nb.demo.__main__ import paste_lines

pytestmark = pytest.mark.slow


def test_every_way_to_the_demo_reads_the_same_data_set() -> None:
    served = inspect.signature(serve).parameters["profiles"].default
    assert served == inspect.signature(DemoService).parameters["profiles"].default == 2000
    assert inspect.signature(sn.connect).parameters["profiles"].default == served
    demo = build_parser().parse_args(["demo"])
    assert demo.profiles == served


def test_its_help_shows_the_defaults() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "stoplist_nb.demo", "--help"],
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
        env=environment(),
    )
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split("options:", 1)[1].split())  # one line, whatever the width
    for option, default in [
        ("--profiles N number of profiles", "2000"),
        ("--port N port to listen on", "8000"),
        ("--host ADDRESS address to listen on", "127.0.0.1"),
        ("--seed N seed of the generated data", "0"),
        ("--db-id N database id", "1"),
        ("--suppress-id N suppression list id", "7"),
    ]:
        assert option in text
        assert f"(default: {default})" in text.split(option, 1)[1].split("--", 1)[0]
    assert "(default: a random one)" in text
    assert "None" not in text


@pytest.fixture
def running() -> Iterator[list[str]]:
    """``python -m stoplist_nb.demo`` in a child, and what it printed before it waits."""
    proc = popen(
        [sys.executable, "-m", "stoplist_nb.demo", "--port", "0", "--profiles", "40"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(),
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:  # up to the commands it suggests, the last thing it prints
        lines.append(line.rstrip("\n"))
        if "stoplist-nb export" in line:
            break
    try:
        yield lines
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=PATIENCE)
        assert proc.returncode == 0


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_the_line_it_prints_is_one_paste_from_reading_it(
    running: list[str], tmp_path: pathlib.Path
) -> None:
    line = next(x.strip() for x in running if x.strip().startswith("export STOPLIST_NB_URL="))
    script = f"{line}\n{sys.executable} -m stoplist_nb profiles --db-id 1 --out p.csv\n"
    done = subprocess.run(
        ["sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
        cwd=tmp_path,
        env=environment(),
    )
    assert done.returncode == 0, done.stderr
    assert "(40 profiles, " in done.stdout
    assert pd.read_csv(tmp_path / "p.csv")["profile_id"].nunique() == 40
    # The commands it suggests are the ones that read it.
    assert "  stoplist-nb profiles --db-id 1 --out profiles.parquet" in running
    assert "  stoplist-nb export --list-id 7 --out stop.parquet" in running


def test_the_lines_for_powershell_and_cmd_say_the_same() -> None:
    url, token = "http://127.0.0.1:8000", "it's-a-token"
    sh, powershell, cmd = paste_lines(url, token)
    assert (
        sh == "export STOPLIST_NB_URL=http://127.0.0.1:8000 STOPLIST_NB_TOKEN='it'\"'\"'s-a-token'"
    )
    assert powershell == (
        "$env:STOPLIST_NB_URL = 'http://127.0.0.1:8000'; $env:STOPLIST_NB_TOKEN = 'it''s-a-token'"
    )
    assert cmd == "set STOPLIST_NB_URL=http://127.0.0.1:8000& set STOPLIST_NB_TOKEN=it's-a-token"
    if os.name != "nt" and shutil.which("sh"):
        echoed = subprocess.run(
            ["sh", "-c", f'{sh}; printf %s "$STOPLIST_NB_TOKEN"'],
            capture_output=True,
            text=True,
            check=True,
            timeout=PATIENCE,
        )
        assert echoed.stdout == token
