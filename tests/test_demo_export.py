"""The demo service's suppression-list export, spoken to with plain ``requests``.

Covers ``suppresses/export``, ``tasks/status`` and ``GET /api/download/<path>``: the
list and its hashes, the step-per-poll task, every plan option, the download's
authentication and its faults.
"""

from __future__ import annotations

import doctest
import hashlib
import io
import re
import uuid
import zipfile
from typing import Any
from urllib.parse import quote

import pytest
import requests
from demo_fixtures import served_and_cleared

import stoplist_nb.demo._suppress
from stoplist_nb.demo import DemoService, ExportPlan, serve
from stoplist_nb.demo._suppress import BOMB_SIZE

TOKEN = "exp-s3cr3t-T0KEN-value"
NAME = "Стоп-лист 2024 (main)"
MEMBER = f"{NAME}.md5.csv"
TIMEOUT = 5.0
KINDS = ("emails", "phones", "domains")
MD5 = re.compile(r"[0-9a-f]{32}")
RESULT_KEYS = {"hashed_file", "regular_file", "is_api", "suppress_id", "total"}


#: One service of 150 profiles for the whole module; ``fresh``: it, cleared, with the
#: default plan for its next export before and after each test.
service, fresh = served_and_cleared(
    "service", reset=DemoService.plan_next_export, profiles=150, seed=4, token=TOKEN
)


def md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def expected(svc: DemoService, type_: str = "all") -> list[str]:
    """The hashes an export of ``type_`` holds, in file order."""
    kinds = KINDS if type_ == "all" else (type_,)
    return [md5(value) for kind in kinds for value in svc.suppressed[kind]]


def post(svc: DemoService, method: str, **params: Any) -> requests.Response:
    body = {"token": svc.token, **params}
    return requests.post(f"{svc.base_url}/api/v1.1/{method}", json=body, timeout=TIMEOUT)


def data(reply: requests.Response) -> dict[str, Any]:
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    assert (body["error"], body["error_text"]) == (0, "Successful operation")
    payload: dict[str, Any] = body["data"]
    return payload


def start(svc: DemoService, **params: Any) -> str:
    params.setdefault("id", svc.suppress_id)
    task_id: str = data(post(svc, "suppresses/export", **params))["task_id"]
    return task_id


def poll(svc: DemoService, task_id: str) -> dict[str, Any]:
    return data(post(svc, "tasks/status", task_id=task_id))


def finish(svc: DemoService, task_id: str, limit: int = 20) -> list[dict[str, Any]]:
    """Every status reply up to and including the first with progress 100."""
    replies = [poll(svc, task_id)]
    while replies[-1]["progress"] != 100:
        assert len(replies) < limit, replies
        replies.append(poll(svc, task_id))
    return replies


def export(svc: DemoService, type_: str | None = None, **plan: Any) -> dict[str, Any]:
    """Run one export with ``plan`` (one step) to completion; its ``result``."""
    svc.plan_next_export(steps=plan.pop("steps", 1), **plan)
    task_id = start(svc) if type_ is None else start(svc, type=type_)
    result: dict[str, Any] = finish(svc, task_id)[-1]["result"]
    return result


def fetch(svc: DemoService, path: str, **kwargs: Any) -> requests.Response:
    """GET the download of ``path`` (URL-quoted here), token in the query by default."""
    kwargs.setdefault("params", {"token": svc.token})
    kwargs.setdefault("timeout", TIMEOUT)
    return requests.get(f"{svc.base_url}/api/download/{quote(path)}", **kwargs)


def archive(svc: DemoService, result: dict[str, Any]) -> zipfile.ZipFile:
    reply = fetch(svc, result["hashed_file"])
    assert reply.status_code == 200
    assert reply.headers["Content-Type"] == "application/zip"
    assert int(reply.headers["Content-Length"]) == len(reply.content)
    return zipfile.ZipFile(io.BytesIO(reply.content))


def lines(svc: DemoService, result: dict[str, Any], member: str = MEMBER) -> list[str]:
    return archive(svc, result).read(member).decode("utf-8").split("\n")[:-1]


def assert_error(reply: requests.Response, status: int, text: str) -> None:
    assert reply.status_code == status
    body = reply.json()
    assert body["error"] == 400
    assert text in body["error_text"]


# ---------------------------------------------------------------- the list


def test_list_overlaps_the_profiles_and_is_canonical(service: DemoService) -> None:
    subs = [s for p in service.profiles for s in p["subscriptions"]]
    emails = {s["email_data"]["email"] for s in subs if "email_data" in s}
    phones = {s["phone_data"]["phone"] for s in subs if "phone_data" in s}
    domains = {e.rsplit("@", 1)[1] for e in emails}
    listed = service.suppressed
    assert (service.suppress_id, service.suppress_name) == (7, NAME)
    assert set(listed) == set(KINDS)
    for values in listed.values():
        assert values == sorted(set(values))
    for email in listed["emails"]:
        assert email == email.strip().lower()
        assert "@" in email
    assert all(re.fullmatch(r"\+\d{10,13}", phone) for phone in listed["phones"])
    own = {"emails": emails, "phones": phones, "domains": domains}
    for kind, share in (("emails", 0.15), ("phones", 0.15), ("domains", 0.10)):
        hits = len(set(listed[kind]) & own[kind])
        assert 1 <= hits <= max(1, round(share * len(own[kind]))) + 1, kind
        assert len(listed[kind]) == 2 * hits, kind  # as many again that match nobody
    listed["emails"].clear()
    assert service.suppressed["emails"]  # a copy each time


def test_list_is_deterministic(service: DemoService) -> None:
    same = DemoService(150, seed=4)
    assert same.suppressed == service.suppressed
    assert DemoService(150, seed=5).suppressed != service.suppressed


def test_own_list_id_and_name() -> None:
    given = {"emails": [" Ann@Example.COM", "bo@x.org", "bo@x.org"], "phones": ["+7 (900) 1-2"]}
    with serve(profiles=3, suppress_id=42, suppress_name="my list", suppressed=given) as svc:
        assert svc.suppressed == {
            "emails": ["ann@example.com", "bo@x.org"],
            "phones": ["+790012"],
            "domains": [],
        }
        assert_error(post(svc, "suppresses/export", id=7), 400, "suppression list not found")
        result = export(svc, "all")
        assert result["hashed_file"].endswith("/my list.md5.zip")
        assert result["suppress_id"] == 42
        assert lines(svc, result, "my list.md5.csv") == [
            md5("ann@example.com"),
            md5("bo@x.org"),
            md5("+790012"),
        ]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"suppressed": {"mails": []}},
        {"suppressed": {"emails": "a@b.c"}},
        {"suppressed": {"phones": ["no digits"]}},
        {"suppressed": {"emails": [1]}},
        {"suppress_name": "a/b"},
        {"suppress_name": ""},
        {"suppress_id": "7"},
    ],
)
def test_bad_list_options(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
        DemoService(2, **kwargs)


# ---------------------------------------------------------------- export and status


@pytest.mark.parametrize("type_", ["emails", "phones", "domains", "all"])
def test_export_of_every_type_holds_its_hashes(fresh: DemoService, type_: str) -> None:
    result = export(fresh, type_)
    assert archive(fresh, result).namelist() == [MEMBER]
    rows = lines(fresh, result)
    assert rows == expected(fresh, type_)
    assert all(MD5.fullmatch(row) for row in rows)
    assert result["total"] == len(rows) > 0


def test_default_type_is_all(fresh: DemoService) -> None:
    assert lines(fresh, export(fresh)) == expected(fresh, "all")


def test_task_moves_one_step_per_poll(fresh: DemoService) -> None:
    task_id = start(fresh, type="emails")
    assert re.fullmatch(r"exp-[0-9a-f]{12}", task_id)
    with pytest.raises(ValueError):  # noqa: PT011 - not a UUID, as on the platform
        uuid.UUID(task_id)
    replies = [poll(fresh, task_id) for _ in range(5)]
    assert [(r["status"], r["progress"], r["result"]) for r in replies[:3]] == [
        ("queued", 0, {}),
        ("processing", 40, {}),
        ("processing", 80, {}),
    ]
    done = replies[3]
    assert (done["status"], done["progress"]) == ("completed", 100)
    assert replies[4] == done  # later polls repeat the same result
    result = done["result"]
    assert set(result) == RESULT_KEYS
    assert (result["regular_file"], result["is_api"]) == ("", True)
    assert result["suppress_id"] == fresh.suppress_id
    assert result["total"] == len(fresh.suppressed["emails"])
    match = re.fullmatch(r"suppress/([0-9a-f-]{36})/(.+)\.md5\.zip", result["hashed_file"])
    assert match is not None
    assert uuid.UUID(match[1]).version == 4
    assert match[2] == NAME


def test_tasks_are_independent(fresh: DemoService) -> None:
    fresh.plan_next_export(steps=1)
    first = start(fresh)
    second = start(fresh)  # the plan was used up: three steps again
    assert first != second
    assert len(finish(fresh, first)) == 2
    assert len(finish(fresh, second)) == 4
    assert lines(fresh, finish(fresh, first)[-1]["result"]) == expected(fresh)


def test_export_and_status_errors(fresh: DemoService) -> None:
    for bad_id in (8, "7", 7.0, True, None):
        params = {} if bad_id is None else {"id": bad_id}
        reply = requests.post(
            f"{fresh.base_url}/api/v1.1/suppresses/export",
            json={"token": fresh.token, **params},
            timeout=TIMEOUT,
        )
        text = "not found" if bad_id == 8 else "id"
        assert_error(reply, 400, text)
    for bad_type in ("email", "ALL", "", 1, ["emails"]):
        assert_error(post(fresh, "suppresses/export", id=7, type=bad_type), 400, "type")
    assert_error(post(fresh, "tasks/status", task_id="exp-000000000000"), 400, "task not found")
    assert_error(post(fresh, "tasks/status"), 400, "task_id")
    assert_error(post(fresh, "tasks/status", task_id=12), 400, "task_id")
    no_token = requests.post(
        f"{fresh.base_url}/api/v1.1/suppresses/export", json={"id": 7}, timeout=TIMEOUT
    )
    assert no_token.status_code == 401
    fresh.http_errors = False
    try:
        assert_error(post(fresh, "suppresses/export", id=8), 200, "not found")
        assert_error(post(fresh, "tasks/status", task_id="nope"), 200, "task not found")
    finally:
        fresh.http_errors = True


def test_a_faulted_poll_does_not_advance_the_task(fresh: DemoService) -> None:
    fresh.plan_next_export(steps=2)
    task_id = start(fresh)
    fresh.add_fault("tasks/status", "status", status=503)
    assert post(fresh, "tasks/status", task_id=task_id).status_code == 503
    assert [r["progress"] for r in finish(fresh, task_id)] == [0, 66, 100]


# ---------------------------------------------------------------- plan options


def test_hashed_file_as_string_or_list(fresh: DemoService) -> None:
    as_string = export(fresh)["hashed_file"]
    as_list = export(fresh, hashed_file_as_list=True)["hashed_file"]
    assert isinstance(as_string, str)
    assert isinstance(as_list, list)
    assert len(as_list) == 1
    assert as_list[0].startswith("suppress/")
    assert lines(fresh, {"hashed_file": as_list[0]}) == expected(fresh)


@pytest.mark.parametrize(
    "path",
    [
        "https://evil.example/x.zip",
        "//evil.example/x",
        "/etc/passwd",
        "suppress/../../x",
        "suppress\\x.zip",
        "",
    ],
)
def test_hashed_file_override_is_reported_verbatim(fresh: DemoService, path: str) -> None:
    assert export(fresh, hashed_file=path)["hashed_file"] == path
    assert export(fresh, hashed_file=path, hashed_file_as_list=True)["hashed_file"] == [path]
    if path.startswith("suppress"):
        assert fetch(fresh, path).status_code == 404  # only the real path serves a file


def test_fail_plan(fresh: DemoService) -> None:
    fresh.plan_next_export(fail=True)
    task_id = start(fresh)
    replies = [poll(fresh, task_id) for _ in range(6)]
    assert [r["status"] for r in replies] == ["queued", "processing", "processing"] + ["failed"] * 3
    assert [r["progress"] for r in replies] == [0, 40, 80, 80, 80, 80]
    assert replies[-1]["result"] == {"error": "export failed: list is locked"}
    raw = post(fresh, "tasks/status", task_id=task_id).json()
    assert raw["error"] == 0  # the failure is in the task, not in the call


def test_never_plan(fresh: DemoService) -> None:
    fresh.plan_next_export(steps=1, never=True)
    task_id = start(fresh)
    replies = [poll(fresh, task_id) for _ in range(8)]
    assert replies[0] == {"status": "queued", "progress": 0, "result": {}}
    assert all(r == {"status": "processing", "progress": 60, "result": {}} for r in replies[1:])


@pytest.mark.parametrize("final", ["success", "completed", "done"])
def test_final_word(fresh: DemoService, final: str) -> None:
    fresh.plan_next_export(steps=0, final=final)
    reply = poll(fresh, start(fresh))
    assert (reply["status"], reply["progress"]) == (final, 100)
    assert lines(fresh, reply["result"]) == expected(fresh)


def test_custom_words(fresh: DemoService) -> None:
    fresh.plan_next_export(steps=4, words=["queued", "exporting", "packing"])
    replies = finish(fresh, start(fresh))
    assert [(r["status"], r["progress"]) for r in replies] == [
        ("queued", 0),
        ("exporting", 28),
        ("packing", 57),
        ("packing", 85),
        ("completed", 100),
    ]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"steps": -1},
        {"steps": True},
        {"words": ()},
        {"words": "queued"},
        {"words": ("queued", "")},
        {"final": ""},
        {"fail": True, "never": True},
        {"fail": 1},
        {"hashed_file": 5},
        {"csv_layout": "tsv"},
        {"archive": "tar"},
    ],
)
def test_bad_plans_are_refused(fresh: DemoService, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
        fresh.plan_next_export(**kwargs)


def test_plan_is_returned_and_used_once(fresh: DemoService) -> None:
    plan = fresh.plan_next_export(steps=0, final="success")
    assert plan == ExportPlan(steps=0, final="success")
    assert poll(fresh, start(fresh))["status"] == "success"
    assert poll(fresh, start(fresh))["status"] == "queued"


# ---------------------------------------------------------------- CSV layouts


def test_csv_layouts(fresh: DemoService) -> None:
    hashes = expected(fresh, "all")
    kinds = [
        word
        for kind, word in zip(KINDS, ("email", "phone", "domain"), strict=True)
        for _ in fresh.suppressed[kind]
    ]
    plain = "".join(h + "\n" for h in hashes)
    wanted = {
        "plain": plain,
        "header": "md5\n" + plain,
        "semicolon": "md5;type\n"
        + "".join(f"{h};{k}\n" for h, k in zip(hashes, kinds, strict=True)),
        "two_columns": "type,md5\n"
        + "".join(f"{k},{h}\n" for h, k in zip(hashes, kinds, strict=True)),
        "crlf": "".join(h + "\r\n" for h in hashes),
        "upper": plain.upper(),
    }
    for layout, text in wanted.items():
        result = export(fresh, csv_layout=layout)
        assert archive(fresh, result).read(MEMBER).decode() == text, layout
        assert result["total"] == len(hashes)


def test_bad_rows_layout(fresh: DemoService) -> None:
    result = export(fresh, "emails", csv_layout="bad_rows")
    rows = lines(fresh, result)
    good = [row for row in rows if MD5.fullmatch(row)]
    assert good == expected(fresh, "emails")
    assert sorted(set(rows) - set(good)) == ["", "12345", "not-a-hash"]
    assert len(rows) == len(good) + 3
    assert rows[1] == "not-a-hash"
    assert rows[-1] == "12345"
    assert result["total"] == len(good)


# ---------------------------------------------------------------- archive shapes


def test_junk_archive(fresh: DemoService) -> None:
    zf = archive(fresh, export(fresh, archive="junk"))
    names = zf.namelist()
    assert sorted(names) == sorted([f"__MACOSX/._{MEMBER}", "extra/", MEMBER, "readme.txt"])
    assert zf.getinfo("extra/").is_dir()
    assert zf.read(f"__MACOSX/._{MEMBER}").startswith(b"\x00\x05\x16\x07")
    assert b"MD5" in zf.read("readme.txt")
    assert zf.read(MEMBER).decode().split() == expected(fresh)


def test_two_csv_archive(fresh: DemoService) -> None:
    zf = archive(fresh, export(fresh, "phones", archive="two_csv", csv_layout="header"))
    assert MEMBER not in zf.namelist()
    assert {"part1.csv", "part2.csv", "readme.txt", "extra/"} <= set(zf.namelist())
    parts = [zf.read(name).decode().split("\n")[:-1] for name in ("part1.csv", "part2.csv")]
    assert all(part[0] == "md5" and len(part) > 1 for part in parts)
    assert parts[0][1:] + parts[1][1:] == expected(fresh, "phones")


def test_bomb_archive(fresh: DemoService) -> None:
    result = export(fresh, archive="bomb")
    reply = fetch(fresh, result["hashed_file"])
    assert len(reply.content) < 1_000_000
    zf = zipfile.ZipFile(io.BytesIO(reply.content))
    (info,) = zf.infolist()
    assert info.filename == MEMBER
    assert info.file_size == BOMB_SIZE == 200 * 1024 * 1024
    assert info.compress_type == zipfile.ZIP_DEFLATED
    with zf.open(info) as member:
        head = member.read(66)
    assert head == (expected(fresh)[0] + "\n").encode() * 2


def test_corrupt_archive(fresh: DemoService) -> None:
    reply = fetch(fresh, export(fresh, archive="corrupt")["hashed_file"])
    assert reply.status_code == 200
    assert reply.content.startswith(b"PK\x03\x04")
    with pytest.raises(zipfile.BadZipFile):
        zipfile.ZipFile(io.BytesIO(reply.content))


# ---------------------------------------------------------------- download


def test_download_auth_and_paths(fresh: DemoService) -> None:
    path = export(fresh)["hashed_file"]
    good = fetch(fresh, path)
    bearer = fetch(fresh, path, params={}, headers={"Authorization": f"Bearer {fresh.token}"})
    assert bearer.status_code == 200
    assert bearer.content == good.content
    for kwargs in (
        {"params": {}},
        {"params": {"token": ""}},
        {"params": {"token": "wrong"}},
        {"params": {}, "headers": {"Authorization": "Bearer wrong"}},
        {"params": {"token": "wrong"}, "headers": {"Authorization": f"Bearer {fresh.token}"}},
    ):
        refused = fetch(fresh, path, **kwargs)
        assert refused.status_code == 403, kwargs
        assert refused.json()["error"] == 403
        assert b"PK" not in refused.content
    assert fetch(fresh, path.replace("suppress/", "suppress/x")).status_code == 404
    assert fetch(fresh, "suppress/nope/x.md5.zip", params={}).status_code == 403  # auth first
    fresh.http_errors = False  # a file server: real statuses whatever the API does
    try:
        assert fetch(fresh, path, params={}).status_code == 403
        assert fetch(fresh, path + "x").status_code == 404
    finally:
        fresh.http_errors = True
    posted = requests.post(
        f"{fresh.base_url}/api/download/{quote(path)}", json={"token": TOKEN}, timeout=TIMEOUT
    )
    assert posted.status_code == 404


def test_download_path_is_unquoted(fresh: DemoService) -> None:
    path = export(fresh)["hashed_file"]
    quoted = quote(path)
    assert "%D0%A1" in quoted  # the first letter of the name, as UTF-8
    assert "%20" in quoted
    raw = requests.get(f"{fresh.base_url}/api/download/{path}", params={"token": TOKEN}, timeout=5)
    assert raw.status_code == 200  # requests quotes it the same way
    reply = fetch(fresh, path)
    assert reply.content == raw.content
    assert reply.headers["Content-Disposition"].endswith(quote(f"{NAME}.md5.zip", safe=""))
    downloads = [r for r in fresh.requests if r.method == "download"]
    assert [r.path for r in downloads] == [f"/api/download/{path}"] * 2
    assert [r.status for r in downloads] == [200, 200]
    assert all(r.params == {} for r in downloads)


def test_truncate_fault(fresh: DemoService) -> None:
    path = export(fresh)["hashed_file"]
    size = len(fetch(fresh, path).content)
    fresh.add_fault("download", "truncate")
    got: list[bytes] = []

    def drain(reply: requests.Response) -> None:
        # One byte at a time: urllib3 drops a partly filled chunk when the read fails.
        got.extend(reply.iter_content(1))

    with fetch(fresh, path, stream=True) as reply:
        assert reply.status_code == 200
        assert int(reply.headers["Content-Length"]) == size
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            drain(reply)
    assert len(got) == size // 2 > 0
    assert len(fetch(fresh, path).content) == size  # fired once


def test_truncate_fault_on_an_api_call(fresh: DemoService) -> None:
    fresh.add_fault("suppresses/export", "truncate")
    with pytest.raises(requests.exceptions.RequestException):
        post(fresh, "suppresses/export", id=7)


@pytest.mark.parametrize("status", [404, 403, 503])
def test_status_fault_on_download(fresh: DemoService, status: int) -> None:
    path = export(fresh)["hashed_file"]
    fresh.add_fault("download", "status", status=status)
    reply = fetch(fresh, path)
    assert reply.status_code == status
    assert reply.json()["error"] == status
    assert fetch(fresh, path).status_code == 200


def test_reset_and_slow_faults_on_download(fresh: DemoService) -> None:
    path = export(fresh)["hashed_file"]
    fresh.add_fault("download", "reset")
    with pytest.raises(requests.exceptions.ConnectionError):
        fetch(fresh, path)
    fresh.add_fault("download", "slow", delay=0.3)
    with pytest.raises(requests.exceptions.ReadTimeout):
        fetch(fresh, path, timeout=0.1)
    assert fetch(fresh, path).status_code == 200


def test_the_token_never_reaches_the_request_log(fresh: DemoService) -> None:
    path = export(fresh)["hashed_file"]
    fetch(fresh, path)
    fetch(fresh, path, params={}, headers={"Authorization": f"Bearer {TOKEN}"})
    fetch(fresh, path, params={"token": TOKEN, "n": "1"})
    fresh.add_fault("download", "reset")
    with pytest.raises(requests.exceptions.ConnectionError):
        fetch(fresh, path)
    fresh.add_fault("download", "truncate")
    with pytest.raises(requests.exceptions.RequestException):
        fetch(fresh, path)
    methods = {r.method for r in fresh.requests}
    assert methods == {"suppresses/export", "tasks/status", "download"}
    for record in fresh.requests:
        assert TOKEN not in record.path
        assert "token" not in record.params
        assert TOKEN not in repr(record)
    assert [r.params for r in fresh.requests if r.method == "download"][2] == {"n": "1"}


@pytest.mark.parametrize("module", [stoplist_nb.demo._suppress])
def test_docstring_examples(module: Any) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
