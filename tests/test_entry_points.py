"""The two ``python -m`` entry points, run in this process (their subprocess runs are
tested elsewhere, but coverage does not see inside a child process)."""

from __future__ import annotations

import pathlib
import runpy
import socket
import sys

import pytest

import stoplist_nb
from stoplist_nb.demo.__main__ import main as demo_main


def test_python_m_stoplist_nb_runs_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["stoplist-nb", "--version"])
    with pytest.raises(SystemExit) as info:
        runpy.run_module("stoplist_nb", run_name="__main__", alter_sys=True)
    assert info.value.code == 0
    assert stoplist_nb.__version__ in capsys.readouterr().out


def test_the_demo_command_needs_no_variable_since_it_names_the_demo(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: pathlib.Path,
) -> None:
    # The README's first set-up command: no account, no STOPLIST_NB_DEMO, and still the demo.
    for name in ("STOPLIST_NB_URL", "STOPLIST_NB_TOKEN", "STOPLIST_NB_DEMO"):
        monkeypatch.delenv(name, raising=False)
    argv = ["stoplist-nb", "demo", "--out", str(tmp_path), "--profiles", "20", "--no-plots"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as info:
        runpy.run_module("stoplist_nb", run_name="__main__", alter_sys=True)
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "demo data: 20 generated profiles" in out
    assert (tmp_path / "profiles.parquet").is_file()


def test_demo_refuses_a_negative_profile_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_main(["--profiles", "-1"]) == 2
    assert "--profiles must not be negative" in capsys.readouterr().err


def test_demo_says_why_it_cannot_start(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:  # the port is held: binding to it again fails at once
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert demo_main(["--port", str(port), "--profiles", "1"]) == 1
    assert "cannot start the demo service" in capsys.readouterr().err
