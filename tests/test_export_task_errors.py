"""Export errors that name their task, files not served yet, and download paths on the same origin.

Every fault is played by the demo service on loopback: a task that says it is
done a moment before its file is served (``not_ready_downloads``,
``done_before_file``), a status call that refuses, a download that breaks, and a
``hashed_file`` that names the file by a rooted path or a URL.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import time
import traceback
from typing import Any
from urllib.parse import quote, urlsplit

import pandas as pd
import pytest
import requests

import stoplist_nb as sn
from stoplist_nb._http.addresses import safe_download_path
from stoplist_nb.demo import DemoService

FAST: dict[str, Any] = {"poll_interval": 0.01, "max_interval": 0.02, "progress": False}


def sent(demo: DemoService, method: str) -> int:
    return sum(r.method == method for r in demo.requests)


def expected_hashes(demo: DemoService, *kinds: str) -> list[str]:
    kinds = kinds or ("emails", "phones", "domains")
    return sorted(hashlib.md5(v.encode()).hexdigest() for k in kinds for v in demo.suppressed[k])


def task_reply(status: str, progress: Any, **result: Any) -> str:
    return json.dumps(
        {"error": 0, "data": {"status": status, "progress": progress, "result": result}}
    )


def read(client: sn.Client, list_id: int | None = None, **kwargs: Any) -> pd.DataFrame:
    """``read_suppression_list`` polling fast, without bars."""
    return sn.read_suppression_list(client, list_id, **{**FAST, **kwargs})


def said(exc: BaseException) -> str:
    """Everything a user may see of an error: message, hint, traceback, attributes."""
    return "".join(traceback.format_exception(exc)) + Exception.__str__(exc) + repr(vars(exc))


def resume_call(demo: DemoService, task_id: str) -> str:
    return f"read_suppression_list(client, {demo.suppress_id}, task_id={task_id!r})"


def started_task(client: sn.Client, demo: DemoService, **plan: Any) -> str:
    """Start an export with ``plan``; return its task id (read by ``task_id=`` next)."""
    demo.plan_next_export(**plan)
    return sn.start_suppression_export(client, demo.suppress_id)


def finished_path(client: sn.Client, demo: DemoService) -> str:
    """The download path of a real finished export (the demo keeps serving it)."""
    task_id = started_task(client, demo, steps=0)
    return sn.wait_for_task(client, task_id, **FAST).hashed_files[0]


# --- a file not served yet is waited for -------------------------------------------------------


def test_a_download_answering_404_once_is_asked_again(client: sn.Client, demo: DemoService) -> None:
    demo.plan_next_export(steps=1, not_ready_downloads=1)
    df = read(client, demo.suppress_id)
    assert sorted(df["md5"]) == expected_hashes(demo)
    assert sent(demo, "download") == 2
    # Two polls to see it done, one more between the two downloads.
    assert sent(demo, "tasks/status") == 3


def test_progress_100_with_a_file_before_the_final_word_is_waited_for(
    client: sn.Client, demo: DemoService
) -> None:
    # Polls 2 and 3 say "processing" at 100% and name the file, which answers 404
    # until poll 4 says "completed": the file is asked for again, with a growing pause.
    demo.plan_next_export(steps=1, words=("processing",), done_before_file=2)
    began = time.monotonic()
    df = sn.read_suppression_list(
        client, demo.suppress_id, poll_interval=0.05, max_interval=1, progress=False
    )
    took = time.monotonic() - began
    assert sorted(df["md5"]) == expected_hashes(demo)
    assert sent(demo, "download") == 3
    assert sent(demo, "tasks/status") == 4
    # Waits of 0.05 s (before poll 2), then 0.05 s and 0.075 s before each new try.
    assert took >= 0.05 + 0.05 + 0.075


@pytest.mark.slow
@pytest.mark.network
def test_a_file_never_served_ends_in_a_timeout_naming_the_task(
    client: sn.Client, demo: DemoService
) -> None:
    task_id = started_task(client, demo, steps=2, not_ready_downloads=10_000)
    began = time.monotonic()
    with pytest.raises(sn.TaskTimeout) as info:
        sn.read_suppression_list(
            client, demo.suppress_id, task_id=task_id, poll_interval=0.05, max_interval=0.1,
            task_timeout=0.6, progress=False,
        )  # fmt: skip
    took = time.monotonic() - began
    err = info.value
    assert isinstance(err, TimeoutError)
    assert err.task_id == task_id
    assert err.progress == 100
    message = Exception.__str__(err)
    assert repr(task_id) in message
    assert "404" in message
    assert "not ready" in message
    assert err.hint is not None
    assert f"{resume_call(demo, task_id)} picks it up" in err.hint
    assert f"({err.hint})" in str(err)  # said with the message, once
    assert demo.token not in said(err)
    # Bounded: a growing pause, never a busy loop, never far past the deadline.
    downloads = sent(demo, "download")
    assert 2 <= downloads <= 0.6 / 0.05 + 1
    assert took < 0.6 + 0.5


def test_a_file_never_served_is_resumed_by_the_named_call(
    client: sn.Client, demo: DemoService
) -> None:
    task_id = started_task(client, demo, steps=0, not_ready_downloads=6)
    with pytest.raises(sn.TaskTimeout) as info:
        read(client, demo.suppress_id, task_id=task_id, task_timeout=0)
    assert resume_call(demo, task_id) in str(info.value)
    assert sent(demo, "download") == 1  # the deadline had passed: one try, no pause
    # The call the message names reads the list once the file is served.
    df = read(client, demo.suppress_id, task_id=task_id)
    assert sorted(df["md5"]) == expected_hashes(demo)
    assert df.attrs["task_id"] == task_id


def test_a_task_failing_while_its_file_is_awaited_is_a_task_failure(
    client: sn.Client, demo: DemoService
) -> None:
    # 100% with a file that is not there (404), then the task reports failure.
    demo.add_fault(
        "tasks/status", "raw", text=task_reply("processing", 100, hashed_file="suppress/x/l.zip")
    )
    demo.add_fault("tasks/status", "raw", text=task_reply("failed", 100, error="disk full"))
    demo.plan_next_export(steps=0)
    with pytest.raises(sn.TaskFailed, match="failed: disk full") as info:
        read(client, demo.suppress_id)
    assert info.value.task_id.startswith("exp-")
    assert sent(demo, "download") == 1


def test_progress_100_without_a_file_is_waited_for_and_its_timeout_says_so(
    client: sn.Client, demo: DemoService
) -> None:
    for _ in range(3):
        demo.add_fault("tasks/status", "raw", text=task_reply("processing", 100))
    demo.plan_next_export(steps=0)
    df = read(client, demo.suppress_id)
    assert sorted(df["md5"]) == expected_hashes(demo)
    assert sent(demo, "tasks/status") == 4

    demo.add_fault("tasks/status", "raw", text=task_reply("processing", 100), times=None)
    with pytest.raises(sn.TaskTimeout) as info:
        read(client, demo.suppress_id, task_timeout=0.1)
    message = str(info.value)
    assert "at 100% with no file yet" in message
    assert resume_call(demo, info.value.task_id) in message


def test_parquet_export_waits_for_the_file_and_names_its_own_call(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "stop.parquet"
    demo.plan_next_export(steps=1, not_ready_downloads=2)
    done = sn.write_suppression_parquet(client, demo.suppress_id, out, **FAST)
    assert sorted(pd.read_parquet(out)["md5"]) == expected_hashes(demo)
    assert sent(demo, "download") == 3

    out.unlink()
    demo.plan_next_export(steps=0, not_ready_downloads=10_000)
    with pytest.raises(sn.TaskTimeout) as info:
        sn.write_suppression_parquet(client, demo.suppress_id, out, task_timeout=0.1, **FAST)
    task_id = info.value.task_id
    assert task_id is not None
    assert task_id != done.task_id
    call = (
        f"write_suppression_parquet(client, {demo.suppress_id}, {str(out)!r}, task_id={task_id!r})"
    )
    assert call in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_download_export_alone_still_does_not_wait(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    # The single step knows no task, so no deadline: a 404 is the service's answer.
    task_id = started_task(client, demo, steps=0, done_before_file=1)
    status = sn.wait_for_task(client, task_id, **FAST)
    assert status.status == "processing"
    assert status.done
    with pytest.raises(sn.APIError) as info:
        sn.download_export(client, status.hashed_files[0], tmp_path, progress=False)
    assert info.value.http_status == 404
    # Waited on with the task, the same file is read once the task is done.
    df = read(client, task_id=task_id)
    assert sorted(df["md5"]) == expected_hashes(demo)
    assert df.attrs["task_id"] == task_id


# --- every error after the task exists names it ------------------------------------------------


def test_a_status_refusal_names_the_task(client: sn.Client, demo: DemoService) -> None:
    demo.add_fault("tasks/status", "status", status=400, text="Task not found")
    with pytest.raises(sn.BadRequest) as info:
        read(client, demo.suppress_id)
    err = info.value
    assert err.task_id is not None
    assert err.task_id.startswith("exp-")
    assert f"export task {err.task_id!r}" in str(err)
    assert err.text == "Task not found"
    assert err.hint is None  # asked again, the service would say the same


def test_an_unknown_task_id_names_it(client: sn.Client, demo: DemoService) -> None:
    with pytest.raises(sn.BadRequest) as info:
        read(client, task_id="exp-nope")
    assert info.value.task_id == "exp-nope"
    assert "export task 'exp-nope'" in str(info.value)


@pytest.mark.parametrize(
    ("kind", "status", "cls", "resumable"),
    [
        ("status", 403, sn.AuthError, False),
        ("status", 503, sn.ServerError, True),
        ("truncate", None, sn.IncompleteDownload, True),
        ("reset", None, sn.ConnectError, True),
    ],
)
def test_download_errors_name_the_task(
    client: sn.Client,
    demo: DemoService,
    kind: str,
    status: int | None,
    cls: type[sn.StoplistError],
    resumable: bool,
) -> None:
    demo.plan_next_export(steps=1)
    demo.add_fault("download", kind, status=status or 503, times=None)
    with pytest.raises(cls) as info:
        read(client, demo.suppress_id)
    err = info.value
    assert err.task_id is not None
    assert err.task_id.startswith("exp-")
    assert f"export task {err.task_id!r}" in str(err)
    if resumable:
        assert err.hint is not None
        assert resume_call(demo, err.task_id) in err.hint
        assert resume_call(demo, err.task_id) in str(err)
    assert demo.token not in said(err)


def test_an_archive_too_large_names_the_task_and_how_to_read_it(
    client: sn.Client, demo: DemoService
) -> None:
    demo.plan_next_export(steps=1, archive="bomb")
    with pytest.raises(sn.ArchiveTooLarge) as info:
        read(client, demo.suppress_id)
    err = info.value
    assert err.task_id is not None
    assert f"export task {err.task_id!r}" in str(err)
    assert resume_call(demo, err.task_id) in str(err)


# --- the same file on the same service ---------------------------------------------------------


def same_origin_forms(demo: DemoService, path: str) -> dict[str, str]:
    base = urlsplit(demo.base_url)
    quoted = quote(path, safe="/")
    return {
        "rooted": f"/api/download/{path}",
        "rooted, quoted": f"/api/download/{quoted}",
        "url": f"{demo.base_url}/api/download/{quoted}",
        "url, unquoted": f"{demo.base_url}/api/download/{path}",
        "url, upper case": f"HTTP://{base.netloc}/api/download/{quoted}",
        "url, query and fragment": f"{demo.base_url}/api/download/{quoted}?v=2#top",
        "scheme-relative": f"//{base.netloc}/api/download/{quoted}",
    }


FORMS = [
    "rooted", "rooted, quoted", "url", "url, unquoted", "url, upper case",
    "url, query and fragment", "scheme-relative",
]  # fmt: skip


@pytest.mark.parametrize("form", FORMS)
def test_hashed_file_on_the_same_origin_is_read(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, form: str
) -> None:
    path = finished_path(client, demo)
    demo.requests.clear()
    demo.plan_next_export(steps=1, hashed_file=same_origin_forms(demo, path)[form])
    df = read(client, demo.suppress_id, dest=tmp_path)
    assert sorted(df["md5"]) == expected_hashes(demo)
    assert [r.path for r in demo.requests if r.method == "download"] == [f"/api/download/{path}"]
    assert df.attrs["file"] == f"{demo.suppress_name}.md5.zip"
    assert [p.name for p in tmp_path.iterdir()] == [df.attrs["file"]]


def other_forms(demo: DemoService, path: str) -> dict[str, str]:
    base = urlsplit(demo.base_url)
    host, port = base.hostname, base.port
    quoted = quote(path, safe="/")
    return {
        "other port": f"http://{host}:{port + 1 if port else 81}/api/download/{quoted}",
        "other scheme": f"https://{host}:{port}/api/download/{quoted}",
        "other host": f"http://localhost:{port}/api/download/{quoted}",
        "user name": f"http://user@{host}:{port}/api/download/{quoted}",
        "host as user name": f"http://{host}:{port}@evil.example/api/download/{quoted}",
        "scheme-relative elsewhere": f"//evil.example/api/download/{quoted}",
        "outside the downloads": f"{demo.base_url}/api/v1.1/tasks/status",
        "rooted outside": "/api/v1.1/profiles/list",
        "dot dot": f"/api/download/{quoted}/../../v1.1/x",
        "dot dot, encoded": f"{demo.base_url}/api/download/suppress/%2e%2E/%2E%2e/v1.1/x",
        "slash, encoded": f"{demo.base_url}/api/download%2f..%2fv1.1%2fx",
        "dot dot, encoded twice": "/api/download/suppress/%252e%252e/x",
        "backslashes": f"http:\\\\{host}:{port}\\api\\download\\{path}",
        "backslash, encoded": "/api/download/suppress%5c..%5cx",
        "newline, encoded": "/api/download/suppress/x%0A.zip",
        "bad port": f"http://{host}:99999/api/download/{quoted}",
    }


@pytest.mark.parametrize(
    "form",
    [
        "other port", "other scheme", "other host", "user name", "host as user name",
        "scheme-relative elsewhere", "outside the downloads", "rooted outside", "dot dot",
        "dot dot, encoded", "slash, encoded", "dot dot, encoded twice", "backslashes",
        "backslash, encoded", "newline, encoded", "bad port",
    ],
)  # fmt: skip
def test_hashed_file_elsewhere_is_still_refused(
    client: sn.Client, demo: DemoService, form: str
) -> None:
    path = finished_path(client, demo)
    demo.requests.clear()
    demo.plan_next_export(steps=1, hashed_file=other_forms(demo, path)[form])
    with pytest.raises(sn.UnsafePath) as info:
        read(client, demo.suppress_id)
    assert sent(demo, "download") == 0
    task_id = info.value.task_id
    assert task_id is not None
    assert f"export task {task_id!r}" in str(info.value)
    assert demo.token not in said(info.value)


@pytest.mark.parametrize(
    ("base_url", "path", "relative"),
    [
        ("http://api.example.com", "http://api.example.com:80/api/download/a/b.zip", "a/b.zip"),
        ("http://api.example.com:80", "http://API.Example.COM/api/download/a/b.zip", "a/b.zip"),
        (
            "https://api.example.com",
            "HTTPS://api.example.com:443/api/download/a%20b.zip",
            "a%20b.zip",
        ),
        ("http://[::1]:8080", "http://[::1]:8080/api/download/a.zip#x", "a.zip"),
        ("https://h.example/altcraft", "/altcraft/api/download/a.zip", "a.zip"),
        ("https://h.example/altcraft/", "https://h.example/altcraft/api/download/a.zip", "a.zip"),
        ("https://h.example/altcraft", "/api/download/a.zip", "a.zip"),
    ],
)
def test_same_origin_forms_default_ports_and_base_paths(
    base_url: str, path: str, relative: str
) -> None:
    assert safe_download_path(path, base_url=base_url) == relative


@pytest.mark.parametrize(
    ("base_url", "path"),
    [
        ("http://api.example.com", "http://api.example.com:8080/api/download/a.zip"),
        ("http://api.example.com", "http://api.example.com:443/api/download/a.zip"),
        ("https://api.example.com", "https://api.example.com:80/api/download/a.zip"),
        ("https://api.example.com", "http://api.example.com/api/download/a.zip"),
        ("http://api.example.com", "http://api.example.com.evil.example/api/download/a.zip"),
        ("http://api.example.com", "http://[::1/api/download/a.zip"),
        ("https://h.example/altcraft", "/altcraft/api/v1.1/profiles/list"),
        ("http://api.example.com", "/api/download/a/%ff.zip"),
        ("http://api.example.com", "http:/api/download/a.zip"),
    ],
)
def test_other_origins_and_paths_are_refused(base_url: str, path: str) -> None:
    with pytest.raises(sn.UnsafePath):
        safe_download_path(path, base_url=base_url)
    with pytest.raises(sn.UnsafePath):  # without the base URL, no rooted path or URL at all
        safe_download_path(path)


# --- the demo service plays the quirks ---------------------------------------------------------


def post(demo: DemoService, method: str, **params: Any) -> dict[str, Any]:
    reply = requests.post(
        f"{demo.base_url}/api/v1.1/{method}", json={"token": demo.token, **params}, timeout=5
    )
    data: dict[str, Any] = reply.json()["data"]
    return data


def fetch(demo: DemoService, path: str) -> int:
    url = f"{demo.base_url}/api/download/{quote(path)}"
    return requests.get(url, params={"token": demo.token}, timeout=5).status_code


def test_demo_done_before_file_names_the_file_before_serving_it(demo: DemoService) -> None:
    demo.plan_next_export(steps=1, words=("processing",), done_before_file=2)
    task_id = post(demo, "suppresses/export", id=demo.suppress_id)["task_id"]
    first = post(demo, "tasks/status", task_id=task_id)
    assert (first["status"], first["progress"], first["result"]) == ("processing", 0, {})
    for _ in range(2):
        early = post(demo, "tasks/status", task_id=task_id)
        assert (early["status"], early["progress"]) == ("processing", 100)
        assert fetch(demo, early["result"]["hashed_file"]) == 404
    done = post(demo, "tasks/status", task_id=task_id)
    assert (done["status"], done["progress"]) == ("completed", 100)
    assert done["result"] == early["result"]
    assert fetch(demo, done["result"]["hashed_file"]) == 200


def test_demo_not_ready_downloads_answer_404_first(demo: DemoService) -> None:
    demo.plan_next_export(steps=0, not_ready_downloads=2)
    task_id = post(demo, "suppresses/export", id=demo.suppress_id)["task_id"]
    path = post(demo, "tasks/status", task_id=task_id)["result"]["hashed_file"]
    assert [fetch(demo, path) for _ in range(4)] == [404, 404, 200, 200]
    # Another export's file is not held back.
    demo.plan_next_export(steps=0)
    other = post(demo, "suppresses/export", id=demo.suppress_id)["task_id"]
    assert fetch(demo, post(demo, "tasks/status", task_id=other)["result"]["hashed_file"]) == 200


@pytest.mark.parametrize(
    "kwargs",
    [
        {"done_before_file": -1},
        {"not_ready_downloads": True},
        {"not_ready_downloads": 1.5},
        {"done_before_file": 1, "fail": True},
        {"not_ready_downloads": 1, "never": True},
    ],
    ids=repr,
)
def test_demo_refuses_bad_not_ready_options(demo: DemoService, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"done_before_file|not_ready_downloads"):
        demo.plan_next_export(**kwargs)
