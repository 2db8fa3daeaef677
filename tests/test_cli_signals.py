"""A signal stops the command line as Ctrl-C does: what was kept is said, nothing half-made stays.

Each test starts ``python -m stoplist_nb`` against a demo service of this
process, holds one of its requests open (a ``slow`` fault), sends a real
signal once that request has arrived, and then checks the exit code, the
words, the files left, and that the command the words give carries on to
the rows of a pull that was never stopped.
"""

from __future__ import annotations

import os
import pathlib
import re
import signal
from typing import Any

import pandas as pd
import pytest
from cli_process import environment, finish, hidden, hinted_command, run, start, wait_until
from demo_fixtures import served_and_cleared

import stoplist_nb
from stoplist_nb.demo import DemoService, generate_profiles
from stoplist_nb.suppression.archive import read_hashed_csv

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals"),
]

#: Long enough that the command is surely stopped while it waits; the service's
#: stop() wakes the handler when the module ends.
HELD = 600


def late_profiles() -> list[dict[str, Any]]:
    """120 profiles that gain a field from the 36th on: a dataset's first part closes at 30."""
    profiles = generate_profiles(120, seed=4)
    for i, profile in enumerate(profiles[35:], 35):
        profile["late_score"] = i
    return profiles


service, fresh = served_and_cleared("service", profiles=late_profiles())

SIGNALS = [
    pytest.param(signal.SIGTERM, 143, "interrupted by SIGTERM", id="SIGTERM"),
    pytest.param(signal.SIGINT, 130, "interrupted", id="SIGINT"),
    pytest.param(signal.SIGHUP, 129, "interrupted by SIGHUP", id="SIGHUP"),
]


def held(svc: DemoService, method: str, after: int) -> Any:
    """Hold the reply to the request of ``method`` after ``after`` others."""
    return svc.add_fault(method, "slow", delay=HELD, after=after)


def stopped_at(
    svc: DemoService, fault: Any, argv: list[str], cwd: pathlib.Path, signum: int
) -> tuple[int, str, str]:
    """Run the command until ``fault`` holds its request, then send ``signum``."""
    proc = start(argv, env=environment(svc), cwd=cwd)
    wait_until(lambda: fault.fired == 1, f"the request held by {fault.method}", proc)
    proc.send_signal(signum)
    return finish(proc)


@pytest.mark.parametrize(("signum", "code", "words"), SIGNALS)
@pytest.mark.parametrize("name", ["p.parquet", "p.csv"])
def test_a_signal_during_a_pull_into_a_file_leaves_no_file(
    fresh: DemoService, tmp_path: pathlib.Path, signum: int, code: int, words: str, name: str
) -> None:
    out = tmp_path / name
    argv = ["profiles", "--db-id", "1", "--limit", "10", "--out", name]
    fault = held(fresh, "profiles/list", after=3)
    got, stdout, stderr = stopped_at(fresh, fault, argv, tmp_path, signum)
    assert (got, stdout) == (code, "")
    assert stderr == (
        f"stoplist-nb: {words}\n"
        f"stoplist-nb: nothing was written: no {name}\n"
        "stoplist-nb: hint: the same command reads the profiles again\n"
    )
    assert list(tmp_path.iterdir()) == []  # no segment, no hidden file
    # The same command, run again, reads every profile.
    got, _, stderr = run(argv, env=environment(fresh), cwd=tmp_path)
    assert got == 0, stderr
    back = pd.read_csv(out) if name.endswith(".csv") else pd.read_parquet(out)
    with fresh.client() as client:
        whole = stoplist_nb.read_profiles(client, 1, limit=10, progress=False)
    assert back["profile_id"].tolist() == whole["profile_id"].tolist()
    assert len(back) == len(whole)
    assert hidden(tmp_path) == []


#: Installed in the command's process as ``sitecustomize``: code of another library that
#: swallows a KeyboardInterrupt, as pyarrow's time-zone lookup does, where it sends
#: itself the signal (the first page) or a second one while the first is on its way.
HOOK = """
import os, signal, time
import stoplist_nb._atomic, stoplist_nb.profiles.files as files
signum = int(os.environ["HOOK_SIGNAL"])
schema, discard = files.parquet_schema, stoplist_nb._atomic.Output.discard

def swallowing(*args, **kwargs):
    files.parquet_schema = schema  # once
    try:
        os.kill(os.getpid(), signum)
        time.sleep(5)
    except KeyboardInterrupt:
        pass
    return schema(*args, **kwargs)

def signalled_again(self):
    os.kill(os.getpid(), signum)
    time.sleep(1.2)  # the second signal and two of the raises again: cut nothing
    discard(self)

files.parquet_schema = swallowing
stoplist_nb._atomic.Output.discard = signalled_again
"""


@pytest.mark.parametrize(("signum", "code", "words"), SIGNALS[:2])
def test_a_stop_swallowed_by_another_library_is_raised_again(
    fresh: DemoService, tmp_path: pathlib.Path, signum: int, code: int, words: str
) -> None:
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
    (out := tmp_path / "out").mkdir()
    path = os.pathsep.join(filter(None, [str(tmp_path / "hook"), os.environ.get("PYTHONPATH")]))
    env = environment(fresh, PYTHONPATH=path, HOOK_SIGNAL=str(int(signum)))
    held(fresh, "profiles/list", after=3)  # so the run cannot end before it is stopped
    argv = ["profiles", "--db-id", "1", "--limit", "10", "--out", "p.csv"]
    got, stdout, stderr = run(argv, env=env, cwd=out)
    assert (got, stdout) == (code, "")
    assert stderr == (
        f"stoplist-nb: {words}\n"
        "stoplist-nb: nothing was written: no p.csv\n"
        "stoplist-nb: hint: the same command reads the profiles again\n"
    )
    assert list(out.iterdir()) == []


def test_a_signal_with_overwrite_leaves_the_file_that_was_there(
    fresh: DemoService, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "p.csv"
    out.write_text("id\nbefore\n")
    argv = ["profiles", "--db-id", "1", "--limit", "10", "--out", "p.csv", "--overwrite"]
    fault = held(fresh, "profiles/list", after=2)
    got, _, stderr = stopped_at(fresh, fault, argv, tmp_path, signal.SIGTERM)
    assert got == 143
    assert "stoplist-nb: p.csv was left as it was\n" in stderr
    assert out.read_text() == "id\nbefore\n"
    assert [p.name for p in tmp_path.iterdir()] == ["p.csv"]


def test_a_signal_during_a_dataset_pull_keeps_its_parts_and_says_how_to_carry_on(
    fresh: DemoService, tmp_path: pathlib.Path
) -> None:
    with fresh.client() as client:
        stoplist_nb.ProfilesRequest(client, 1, limit=10, progress=False).to_dataset(
            tmp_path / "whole"
        )
    argv = ["profiles", "--db-id", "1", "--limit", "10", "--out", "ds/", "--overwrite"]
    # The 11th page is held: by then late_score has joined (on page 4) and closed a part.
    fault = held(fresh, "profiles/list", after=10)
    got, _, stderr = stopped_at(fresh, fault, argv, tmp_path, signal.SIGTERM)
    assert got == 143
    ds = tmp_path / "ds"
    # The checkpoint and the files it lists agree (checked, not believed): what is said is kept.
    saved = stoplist_nb.dataset_summary(ds)
    assert 30 <= saved.profiles < 120
    assert not [p.name for p in ds.iterdir() if ".stoplist_nb-" in p.name]  # none half-written
    # --overwrite would start again: the command given carries on with --resume.
    assert stderr == (
        "stoplist-nb: interrupted by SIGTERM\n"
        f"stoplist-nb: {saved.profiles} profiles are saved in ds/\n"
        "stoplist-nb: hint: to carry on from there, run: "
        "stoplist-nb profiles --db-id 1 --limit 10 --out ds/ --resume\n"
    )
    resume = hinted_command(stderr)
    fresh.requests.clear()
    got, stdout, stderr = run(resume, env=environment(fresh), cwd=tmp_path)
    assert got == 0, stderr
    assert "ds/ holds 214 rows (120 profiles, " in stdout
    assert fresh.requests[0].params["from_id"] == saved.next_from_id  # after what was saved
    pd.testing.assert_frame_equal(pd.read_parquet(ds), pd.read_parquet(tmp_path / "whole"))
    assert sorted(p.name for p in ds.iterdir() if not p.name.startswith((".", "_"))) == sorted(
        p.name for p in (tmp_path / "whole").iterdir() if not p.name.startswith((".", "_"))
    )


def exported(svc: DemoService, tmp_path: pathlib.Path) -> pd.DataFrame:
    """The list as one export that was never stopped writes it."""
    whole = tmp_path / "whole.parquet"
    with svc.client() as client:
        stoplist_nb.write_suppression_parquet(client, 7, whole, progress=False, poll_interval=0.01)
    frame = pd.read_parquet(whole)
    whole.unlink()
    return frame


@pytest.mark.parametrize(
    ("method", "after"),
    [("download", 0), ("tasks/status", 1)],
    ids=["during-the-download", "during-the-wait"],
)
@pytest.mark.parametrize("name", ["stop.parquet", "stop.csv", "stop.zip"])
def test_a_signal_during_an_export_gives_the_command_that_picks_it_up(
    fresh: DemoService, tmp_path: pathlib.Path, method: str, after: int, name: str
) -> None:
    whole = exported(fresh, tmp_path)
    argv = ["export", "--list-id", "7", "--type", "all", "--out", name, "--poll-interval", "0.01"]
    fault = held(fresh, method, after=after)
    got, _, stderr = stopped_at(fresh, fault, argv, tmp_path, signal.SIGTERM)
    assert got == 143
    task_id = re.match(r"stoplist-nb: export task (exp-\w+)\n", stderr)
    assert task_id is not None, stderr
    assert (
        f"stoplist-nb: interrupted by SIGTERM\nstoplist-nb: nothing was written: no {name}\n"
        in (stderr)
    )
    again = ["export", "--out", name, "--poll-interval", "0.01", "--task-id", task_id[1]]
    assert stderr.count(f"to pick it up, run: stoplist-nb {' '.join(again)}\n") == 1
    assert hinted_command(stderr) == again
    assert list(tmp_path.iterdir()) == []
    # What the words say to run picks the task up: no second export, the same hashes.
    fresh.requests.clear()
    got, _, stderr = run(again, env=environment(fresh), cwd=tmp_path)
    assert got == 0, stderr
    assert "suppresses/export" not in [r.method for r in fresh.requests]
    if name.endswith(".zip"):
        back = read_hashed_csv(tmp_path / name)
    elif name.endswith(".csv"):
        back = pd.read_csv(tmp_path / name, dtype=str)
    else:
        back = pd.read_parquet(tmp_path / name)
    assert back["md5"].tolist() == whole["md5"].tolist()
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_a_signal_during_the_demo_leaves_no_directory(tmp_path: pathlib.Path) -> None:
    # One profile a request: the pull of the demo's 2000 lasts well past the signal.
    argv = ["demo", "--out", "d", "--limit", "1", "--no-plots"]
    proc = start(argv, env=environment(), cwd=tmp_path)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the service is up, the pull begins
    assert first.startswith("demo data: 2000 generated profiles")
    proc.send_signal(signal.SIGTERM)
    got, _, stderr = finish(proc)
    assert got == 143
    assert stderr == (
        "stoplist-nb: interrupted by SIGTERM\nstoplist-nb: no d\n"
        "stoplist-nb: hint: the same command runs the demo again\n"
    )
    assert list(tmp_path.iterdir()) == []
    assert "http://" not in first  # the service ends with the command: no address to keep


def test_handlers_are_given_back_when_main_returns(
    env: DemoService, tmp_path: pathlib.Path
) -> None:
    from stoplist_nb.cli import main

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    assert main(["profiles", "--db-id", "1", "--out", str(tmp_path / "p.csv"), "-q"]) == 0
    assert {s: signal.getsignal(s) for s in before} == before
