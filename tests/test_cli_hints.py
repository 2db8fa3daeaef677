"""Hints that work: what the command line advises is what a person can run, as it is.

Each test runs ``python -m stoplist_nb`` in a child process, as a person runs
it, and where a hint gives a command, runs that command too.
"""

from __future__ import annotations

import json
import pathlib
import shlex
import socket
from typing import TYPE_CHECKING

import pandas as pd
import pytest
from archives import make_zip, serve_download
from cli_process import environment, hinted_command, run

import stoplist_nb as sn
from stoplist_nb._http import transport
from stoplist_nb.demo import DemoService

if TYPE_CHECKING:
    from conftest import Run

TOKEN = "t0ken-never-shown"
#: RFC 6761: no name under .invalid resolves, on any resolver.
NOWHERE = "stoplist-nb-test.invalid"


@pytest.fixture
def run_main(run: Run) -> Run:
    """The command line in this process (conftest's ``run``), for a fault's fast retries."""
    return run


@pytest.fixture
def fast_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default retry budget, without the seconds of backoff."""
    default = transport.default_retry
    monkeypatch.setattr(transport, "default_retry", lambda: default().new(backoff_factor=0))


@pytest.mark.parametrize(
    ("url", "suggested"),
    [
        ("127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("localhost:8000/", "http://localhost:8000/"),
        ("api.example.com", "https://api.example.com"),
        ("ftp://api.example.com", "https://api.example.com"),
        ("http//api.example.com", "https://http//api.example.com"),
    ],
)
@pytest.mark.slow  # a child process
def test_an_address_that_is_no_http_url_names_the_variable(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, url: str, suggested: str
) -> None:
    env = environment(STOPLIST_NB_URL=url, STOPLIST_NB_TOKEN=TOKEN)
    code, stdout, stderr = run(
        ["profiles", "--db-id", "1", "--out", "p.csv"], env=env, cwd=tmp_path
    )
    assert (code, stdout) == (2, "")
    assert stderr == (
        f"stoplist-nb: error: STOPLIST_NB_URL must be an http:// or https:// address, "
        f"not {url!r}\n"
        f"stoplist-nb: hint: e.g. export STOPLIST_NB_URL={suggested}\n"
    )
    assert list(tmp_path.iterdir()) == []
    # The library reads the variable by the same rule, and says the same.
    monkeypatch.setenv("STOPLIST_NB_URL", url)
    monkeypatch.setenv("STOPLIST_NB_TOKEN", TOKEN)
    with pytest.raises(sn.InvalidInput, match=r"^STOPLIST_NB_URL must be an http"):
        sn.connect()


# --- what to set -------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["profiles", "--db-id", "1"], ["export", "--list-id", "7"]])
@pytest.mark.slow  # a child process
def test_a_token_without_an_address_says_to_set_the_address_and_how_to_try_the_demo(
    tmp_path: pathlib.Path, command: list[str]
) -> None:
    env = environment(STOPLIST_NB_TOKEN=TOKEN)
    code, _, stderr = run([*command, "--out", "out.parquet"], env=env, cwd=tmp_path)
    assert code == 2
    assert stderr == (
        "stoplist-nb: error: STOPLIST_NB_TOKEN is set but STOPLIST_NB_URL is not\n"
        "stoplist-nb: hint: export STOPLIST_NB_URL=https://your-platform.example (your "
        "Altcraft platform's address) too; to try it on the demo service, run python -m "
        "stoplist_nb.demo in another terminal and paste the export lines it prints\n"
    )
    assert "connect(" not in stderr  # a notebook's way, which the command line has not
    assert TOKEN not in stderr


@pytest.mark.slow  # a child process
def test_an_address_without_a_token_says_to_set_the_token(tmp_path: pathlib.Path) -> None:
    env = environment(STOPLIST_NB_URL="https://api.example.com")
    code, _, stderr = run(["profiles", "--db-id", "1", "--out", "p.csv"], env=env, cwd=tmp_path)
    assert code == 2
    assert stderr == (
        "stoplist-nb: error: STOPLIST_NB_URL is set but STOPLIST_NB_TOKEN is not\n"
        "stoplist-nb: hint: export STOPLIST_NB_TOKEN=<your token> too (it is never printed)\n"
    )


# --- where nothing answers ---------------------------------------------------------------


@pytest.mark.slow  # a child process
def test_nothing_listening_says_refused_and_to_check_the_variable(
    tmp_path: pathlib.Path,
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = environment(STOPLIST_NB_URL=f"http://127.0.0.1:{port}", STOPLIST_NB_TOKEN=TOKEN)
    for command in (["profiles", "--db-id", "1"], ["export", "--list-id", "7"]):
        argv = [*command, "--retries", "0", "--out", "out.parquet"]
        code, _, stderr = run(argv, env=env, cwd=tmp_path)
        assert code == 4
        method = "profiles/list" if command[0] == "profiles" else "suppresses/export"
        assert stderr == (
            f"stoplist-nb: error: {method}: the connection to 127.0.0.1:{port} was refused: "
            "nothing listens there\n"
            f"stoplist-nb: hint: check that the service runs at 127.0.0.1:{port}, the address "
            "STOPLIST_NB_URL names\n"
        )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # a child process
def test_a_name_that_does_not_resolve_says_so_and_to_check_the_variable(
    tmp_path: pathlib.Path,
) -> None:
    env = environment(STOPLIST_NB_URL=f"https://{NOWHERE}:8443", STOPLIST_NB_TOKEN=TOKEN)
    code, _, stderr = run(["profiles", "--db-id", "1", "--out", "p.csv"], env=env, cwd=tmp_path)
    assert code == 4
    assert stderr == (
        f"stoplist-nb: error: profiles/list: the host name {NOWHERE!r} does not resolve "
        "(no such name in DNS)\n"
        f"stoplist-nb: hint: check the host name in STOPLIST_NB_URL ({NOWHERE}:8443)\n"
    )


# --- how to go on ------------------------------------------------------------------------


@pytest.mark.usefixtures("fast_retry")
def test_an_export_that_failed_on_the_way_gives_the_command_that_picks_it_up(
    run_main: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    env.add_fault("tasks/status", "status", status=503, times=None, after=1)
    out = tmp_path / "stop.parquet"
    argv = ["export", "--list-id", "7", "--type", "emails", "--out", str(out)]
    code, _, stderr = run_main(*argv, "--poll-interval", "0.01", "--retries", "0")
    assert code == 4
    again = hinted_command(stderr)
    task_id = again[again.index("--task-id") + 1]
    # --task-id instead of --list-id (not both: argparse refuses that), --type dropped.
    assert again == [
        "export", "--out", str(out), "--poll-interval", "0.01", "--retries", "0",
        "--task-id", task_id,
    ]  # fmt: skip
    env.clear_faults()
    code, stdout, stderr = run_main(*again)
    assert code == 0, stderr
    assert f"wrote {len(env.suppressed['emails'])} hashes of task {task_id} to {out}" in stdout
    assert [r.method for r in env.requests].count("suppresses/export") == 1


@pytest.mark.slow  # a child process
def test_a_pull_stopped_at_max_profiles_gives_the_command_that_reads_on(
    env: DemoService, tmp_path: pathlib.Path
) -> None:
    first = ["profiles", "--db-id", "1", "--limit", "4", "--max-profiles", "10", "--out", "a.csv"]
    code, stdout, stderr = run(first, env=environment(env), cwd=tmp_path)
    assert code == 0, stderr
    line = next(x for x in stdout.splitlines() if x.startswith("stopped at --max-profiles 10"))
    again = shlex.split(line.split("reads on: ", 1)[1])
    assert again[0] == "stoplist-nb"
    code, stdout, stderr = run(again[1:], env=environment(env), cwd=tmp_path)
    assert code == 0, stderr
    ids = [
        *pd.read_csv(tmp_path / "a.csv")["profile_id"].drop_duplicates(),
        *pd.read_csv(tmp_path / "a-2.csv")["profile_id"].drop_duplicates(),
    ]
    assert ids == [p["id"] for p in env.profiles]


# --- what the service says ---------------------------------------------------------------


@pytest.mark.slow  # a child process
def test_a_task_id_that_echoes_the_token_is_printed_scrubbed(
    env: DemoService, tmp_path: pathlib.Path
) -> None:
    echo = json.dumps({"error": 0, "data": {"task_id": f"task-{env.token}"}})
    env.add_fault("suppresses/export", "raw", text=echo)
    code, stdout, stderr = run(
        ["export", "--list-id", "7", "--out", "s.zip", "--poll-interval", "0.01"],
        env=environment(env),
        cwd=tmp_path,
    )
    assert code != 0
    assert stderr.startswith("stoplist-nb: export task task-***\n")
    assert env.token not in stdout + stderr


@pytest.mark.slow  # a child process
def test_a_file_that_echoes_the_token_is_warned_of_scrubbed(
    env: DemoService, tmp_path: pathlib.Path
) -> None:
    # Rows that are no MD5 are quoted in the warning: here, the token itself.
    hashes = "\n".join(["0cc175b9c0f1b6a831c399e269772661", f"echo-{env.token}", ""])
    serve_download(env, make_zip({"list.md5.csv": hashes}))
    code, stdout, stderr = run(
        ["export", "--list-id", "7", "--out", "s.csv", "--poll-interval", "0.01"],
        env=environment(env),
        cwd=tmp_path,
    )
    assert code == 0, stderr
    assert "stoplist-nb: warning: 1 of 2 rows have no valid MD5" in stderr
    assert "e.g. 'echo-***'" in stderr
    assert env.token not in stdout + stderr
