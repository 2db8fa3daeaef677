"""One public API: the same names for the same things, query objects, sessions, hints.

Everything runs against the embedded demo service on loopback.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from contextlib import closing
from typing import TYPE_CHECKING

import pandas as pd
import pytest
import requests
import requests.adapters

import stoplist_nb as sn
from stoplist_nb.demo import DemoService, serve
from stoplist_nb.query import And, F, Or
from stoplist_nb.suppression import tasks as tasks_module

if TYPE_CHECKING:
    from conftest import Run

EXIT_USAGE, EXIT_ERROR, EXIT_INTERRUPTED = 2, 1, 130


def without(module: str, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where ``module`` cannot be imported."""
    prelude = f"import sys; sys.modules[{module!r}] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120
    )


# --- the command line ---------------------------------------------------------------


def test_export_of_an_unknown_task_does_not_advise_the_same_id(
    run: Run, env: DemoService, tmp_path: pathlib.Path
) -> None:
    code, _, stderr = run(
        "export", "--task-id", "no-such-task", "--out", str(tmp_path / "s.csv"),
        "--poll-interval", "0.01",
    )  # fmt: skip
    assert code == EXIT_ERROR  # the service refused the request
    assert "task not found" in stderr
    assert "add --task-id" not in stderr
    assert "stoplist-nb: hint: check --task-id no-such-task" in stderr


def test_export_interrupted_names_the_option_that_resumes(
    run: Run, env: DemoService, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C: no server can send that, so the second poll raises it here.
    env.plan_next_export(never=True)
    polls: list[str] = []
    get_task = tasks_module.get_task

    def interrupted(client: sn.Client, task_id: str) -> sn.TaskStatus:
        polls.append(task_id)
        if len(polls) == 2:
            raise KeyboardInterrupt
        return get_task(client, task_id)

    monkeypatch.setattr(tasks_module, "get_task", interrupted)
    code, _, stderr = run(
        "export", "--list-id", str(env.suppress_id), "--out", str(tmp_path / "s.zip"),
        "--poll-interval", "0.01",
    )  # fmt: skip
    assert code == EXIT_INTERRUPTED
    assert f"to pick it up, run: stoplist-nb export --out {tmp_path / 's.zip'}" in stderr
    assert f"--task-id {polls[0]}" in stderr
    assert "--list-id" not in stderr.split("to pick it up, run:")[1]
    assert "wait_for_task" not in stderr
    assert "stoplist-nb: interrupted\n" in stderr
    assert stderr.rstrip().endswith(f"nothing was written: no {tmp_path / 's.zip'}")


def test_wait_for_an_unknown_task_has_no_resume_hint(client: sn.Client) -> None:
    with pytest.raises(sn.APIError) as info:
        sn.wait_for_task(client, "no-such-task", progress=False)
    assert info.value.hint is None
    assert "picks it up" not in str(info.value)


@pytest.mark.parametrize(("total", "more"), [(12, False), (13, True)])
def test_max_profiles_on_the_last_profile_says_the_read_is_complete(
    run: Run, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, total: int, more: bool
) -> None:
    with serve(profiles=total, seed=3) as svc:
        monkeypatch.setenv("STOPLIST_NB_URL", svc.base_url)
        monkeypatch.setenv("STOPLIST_NB_TOKEN", svc.token)
        out = tmp_path / "p.parquet"
        code, stdout, _ = run(
            "profiles", "--db-id", str(svc.db_id), "--max-profiles", "12", "--limit", "4",
            "--out", str(out),
        )  # fmt: skip
        assert code == 0
        if more:
            assert "the read is complete" not in stdout
            cursor = stdout.split("--from-id ")[1].split()[0]
            rest = tmp_path / "r.parquet"
            code, _, _ = run("profiles", "--db-id", str(svc.db_id), "--from-id", cursor,
                             "--out", str(rest))  # fmt: skip
            assert code == 0
            assert pd.read_parquet(rest)["profile_id"].nunique() == total - 12
        else:
            assert "--from-id" not in stdout
            assert "the read is complete: no profile follows the 12 profiles read" in stdout
    assert pd.read_parquet(out)["profile_id"].nunique() == 12


def test_demo_out_an_existing_file_exits_2(run: Run, tmp_path: pathlib.Path) -> None:
    target = tmp_path / "taken.csv"
    target.write_text("mine\n")
    code, _, stderr = run("demo", "--out", str(target), "--profiles", "10", "--no-plots")
    assert code == EXIT_USAGE
    assert "is a file, not a directory" in stderr
    assert target.read_text() == "mine\n"


def test_demo_without_its_extra_prints_one_line_and_the_install(tmp_path: pathlib.Path) -> None:
    out = without(
        "mongomock",
        "from stoplist_nb.cli import main\n"
        f"sys.exit(main(['demo', '--out', {str(tmp_path / 'd')!r}, '--no-plots']))\n",
    )
    assert out.returncode == EXIT_USAGE, out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines == [
        "stoplist-nb: error: the embedded demo service needs mongomock, which is not installed",
        "stoplist-nb: hint: pip install 'stoplist_nb[demo]'",
    ]


def test_plots_without_matplotlib_says_what_to_install() -> None:
    out = without("matplotlib", "import stoplist_nb.plots\n")
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == (
        "ImportError: stoplist_nb.plots needs matplotlib: pip install 'stoplist_nb[plots]'"
    )


# --- query objects ------------------------------------------------------------------


QUERIES = [
    (F("_city") == "Moscow", {"_city": "Moscow"}),
    (
        And([F("_city").isin(["Moscow", "Kazan"]), F("_fname").exists()]),
        {"_city": {"$in": ["Moscow", "Kazan"]}, "_fname": {"$exists": True}},
    ),
    (Or([F("_city") == "Kazan", ~F("_city").exists()]), None),
]


@pytest.mark.parametrize(("built", "plain"), QUERIES)
def test_read_profiles_takes_a_built_query(
    client: sn.Client, demo: DemoService, built: sn.Query, plain: dict[str, object] | None
) -> None:
    mongo = built.to_mongo()
    if plain is not None:
        assert mongo == plain
    frame = sn.read_profiles(client, demo.db_id, query=built, fields=["_id"], progress=False)
    sent = [r.params["query"] for r in demo.requests if r.method == "profiles/list"]
    assert sent
    assert all(q == mongo for q in sent)
    as_dict = sn.read_profiles(client, demo.db_id, query=mongo, fields=["_id"], progress=False)
    assert frame["profile_id"].tolist() == as_dict["profile_id"].tolist()
    assert 0 < frame.attrs["profiles"] < len(demo.profiles)


def test_pages_takes_a_built_query(client: sn.Client, demo: DemoService) -> None:
    query = F("_city") == "Moscow"
    with closing(sn.ProfilesRequest(client, demo.db_id, query=query, limit=5).pages()) as pages:
        ids = [row["id"] for page in pages for row in page.records]
    expected = [p["id"] for p in demo.profiles if p.get("_city") == "Moscow"]
    assert ids == expected
    assert {str(r.params["query"]) for r in demo.requests} == {"{'_city': 'Moscow'}"}


def test_a_bad_built_query_is_refused_before_any_request(
    client: sn.Client, demo: DemoService
) -> None:
    with pytest.raises(sn.InvalidQuery):
        sn.read_profiles(client, demo.db_id, query=F("a") == float("nan"), progress=False)
    assert demo.requests == []


# --- a session passed in ------------------------------------------------------------


class CountingSession(requests.Session):
    """A caller's session that counts its ``close()`` calls."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    def close(self) -> None:
        self.closed += 1
        super().close()


def test_a_session_passed_in_is_neither_closed_nor_changed_for_other_urls(
    demo: DemoService,
) -> None:
    session = CountingSession()
    mine = requests.adapters.HTTPAdapter()
    session.mount("http://elsewhere.example/", mine)
    before = dict(session.adapters)
    demo.add_fault("profiles/list", "status", status=503, retry_after=0)
    with sn.Client(demo.base_url, demo.token, session=session) as client:
        # Retried: the client's policy holds for base_url...
        assert client.call("profiles/list", db_id=demo.db_id, limit=1)["error"] == 0
        assert [r.method for r in demo.requests] == ["profiles/list"] * 2
        # ...and nowhere else.
        for prefix, adapter in before.items():
            assert session.adapters[prefix] is adapter
        assert session.get_adapter("http://elsewhere.example/x") is mine
        assert session.get_adapter(demo.base_url + "/api/v1.1/x") not in before.values()
    assert session.closed == 0
    assert dict(session.adapters) == before
    # Still the caller's to use.
    reply = session.post(
        f"{demo.base_url}/api/v1.1/profiles/list",
        json={"token": demo.token, "db_id": demo.db_id, "limit": 1},
        timeout=10,
    )
    assert reply.json()["error"] == 0
    session.close()
    assert session.closed == 1


def test_a_session_the_client_made_is_closed(demo: DemoService) -> None:
    client = demo.client()
    closed: list[bool] = []
    original = client.session.close
    client.session.close = lambda: closed.append(True) or original()  # type: ignore[method-assign,func-returns-value]
    client.close()
    assert closed == [True]


# --- the retry policy ---------------------------------------------------------------


def test_default_retry_is_public_and_is_the_client_default(demo: DemoService) -> None:
    policy = sn.default_retry()
    assert policy is not sn.default_retry()  # a fresh one each call
    assert policy.total == 5
    assert policy.is_retry("POST", 503)
    assert not policy.is_retry("POST", 400)
    assert "default_retry" in sn.__all__
    assert sn.__all__ == sorted(sn.__all__)
    assert sn.default_retry.__doc__
    # A client given the public policy, adjusted, uses it.
    with sn.Client(demo.base_url, demo.token, retry=policy.new(total=1, backoff_factor=0)) as c:
        demo.add_fault("profiles/list", "status", status=503, times=2)
        with pytest.raises(sn.ServerError):
            c.call("profiles/list", db_id=demo.db_id, limit=1)
    assert len(demo.requests) == 2


# --- the same names for the same things -----------------------------------------------


def test_pages_stops_at_max_profiles(client: sn.Client, demo: DemoService) -> None:
    with closing(sn.ProfilesRequest(client, demo.db_id, limit=4, max_profiles=10).pages()) as pages:
        got = list(pages)
    assert [len(p) for p in got] == [4, 4, 2]
    assert [r.params["limit"] for r in demo.requests] == [4, 4, 2]
    rest = sn.read_profiles(client, demo.db_id, from_id=got[-1].next_from_id, progress=False)
    ids = [row["id"] for page in got for row in page.records]
    ids += rest["profile_id"].drop_duplicates().tolist()
    assert ids == [p["id"] for p in demo.profiles]


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3"])
def test_pages_refuses_a_bad_max_profiles(
    client: sn.Client, demo: DemoService, bad: object
) -> None:
    with pytest.raises(sn.InvalidInput, match="max_profiles"):
        sn.ProfilesRequest(client, demo.db_id, max_profiles=bad).pages()  # type: ignore[arg-type]
    assert demo.requests == []


def test_wait_for_task_takes_task_timeout_only(client: sn.Client, demo: DemoService) -> None:
    demo.plan_next_export(never=True)
    task_id = sn.start_suppression_export(client, demo.suppress_id)
    with pytest.raises(sn.TaskTimeout, match=r"after 0\.05 s"):
        sn.wait_for_task(client, task_id, poll_interval=0.01, task_timeout=0.05, progress=False)
    polls = len(demo.requests)
    # The client's socket timeout is another thing: no keyword of that name here.
    with pytest.raises(TypeError, match="timeout"):
        sn.wait_for_task(client, task_id, timeout=0.05, progress=False)  # type: ignore[call-arg]
    assert len(demo.requests) == polls


def test_read_suppression_list_picks_up_a_started_export(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    task_id = sn.start_suppression_export(client, demo.suppress_id, type="phones")
    frame = sn.read_suppression_list(
        client, task_id=task_id, poll_interval=0.01, max_interval=0.02, dest=tmp_path,
        progress=False,
    )  # fmt: skip
    assert len(frame) == len(demo.suppressed["phones"])
    assert frame.attrs["task_id"] == task_id
    assert (frame.attrs["list_id"], frame.attrs["type"]) == (None, None)
    assert [p.name for p in tmp_path.iterdir()] == [frame.attrs["file"]]
    assert [r.method for r in demo.requests].count("suppresses/export") == 1
    with pytest.raises(sn.InvalidInput, match="list_id"):
        sn.read_suppression_list(client, progress=False)


@pytest.mark.parametrize("name", ["keep_file", "timeout"])
def test_read_suppression_list_has_one_name_per_argument(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, name: str
) -> None:
    # dest= and task_timeout= only; an unknown keyword starts no export.
    with pytest.raises(TypeError, match=name):
        sn.read_suppression_list(client, demo.suppress_id, **{name: tmp_path})
    assert demo.requests == []


def test_read_suppression_list_max_interval_bounds_the_polls(
    client: sn.Client, demo: DemoService
) -> None:
    demo.plan_next_export(steps=6)
    sn.read_suppression_list(
        client, demo.suppress_id, poll_interval=0.01, max_interval=0.01, progress=False
    )
    assert [r.method for r in demo.requests].count("tasks/status") == 7


def test_export_by_task_id_goes_through_read_suppression_list(
    run: Run, env: DemoService, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[dict[str, object]] = []
    real = sn.read_suppression_list

    def spy(*args: object, **kwargs: object) -> pd.DataFrame:
        calls.append(kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("stoplist_nb.cli.commands.read_suppression_list", spy)
    with env.client() as client:
        task_id = sn.start_suppression_export(client, env.suppress_id, type="emails")
    out = tmp_path / "e.csv"  # a .parquet output streams instead (test_suppression_parquet.py)
    code, stdout, stderr = run(
        "export", "--task-id", task_id, "--out", str(out), "--poll-interval", "0.01",
        "--task-timeout", "30",
    )  # fmt: skip
    assert code == 0, stderr
    assert calls[0]["task_id"] == task_id
    assert calls[0]["task_timeout"] == 30
    assert len(pd.read_csv(out)) == len(env.suppressed["emails"])
    assert f"of task {task_id} to" in stdout


def test_dest_naming_one_file_for_an_export_of_several_is_refused(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    paths = []
    for kind in ("emails", "phones"):
        task_id = sn.start_suppression_export(client, demo.suppress_id, type=kind)
        status = sn.wait_for_task(client, task_id, poll_interval=0.01, progress=False)
        paths.append(status.hashed_files[0])
    reply = {"status": "completed", "progress": 100, "result": {"hashed_file": paths}}
    demo.add_fault("tasks/status", "raw", text=json.dumps({"error": 0, "data": reply}))
    target = tmp_path / "one.zip"
    with pytest.raises(sn.InvalidInput, match=r"has 2 files and dest=.*give a directory"):
        sn.read_suppression_list(
            client, demo.suppress_id, poll_interval=0.01, dest=target, progress=False
        )
    assert "download" not in [r.method for r in demo.requests]
    assert list(tmp_path.iterdir()) == []
