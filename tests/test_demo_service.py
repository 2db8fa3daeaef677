"""The embedded demo service, spoken to with plain ``requests`` over loopback HTTP."""

from __future__ import annotations

import ast
import doctest
import hashlib
import http.client
import ipaddress
import itertools
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from children import popen
from demo_fixtures import served_and_cleared

import stoplist_nb.demo._data
import stoplist_nb.demo._server
from stoplist_nb.demo import DemoService, Fault, RequestRecord, generate_profiles, serve

Profile = dict[str, Any]
TIMEOUT = 5.0


#: One service of 100 profiles for the whole module; ``fresh``: it, cleared.
service, fresh = served_and_cleared("service", profiles=100, seed=3, token="s3cr3t-token-value")


@pytest.fixture(scope="module")
def quiet() -> Iterator[DemoService]:
    """A service that answers API errors with HTTP 200."""
    with serve(profiles=10, seed=1, http_errors=False) as svc:
        yield svc


def call(
    svc: DemoService,
    method: str,
    *,
    session: requests.Session | None = None,
    timeout: float = TIMEOUT,
    **params: Any,
) -> requests.Response:
    """POST ``params`` plus the service's token to an API method."""
    body = {"token": svc.token, **params}
    poster = session.post if session is not None else requests.post
    return poster(f"{svc.base_url}/api/v1.1/{method}", json=body, timeout=timeout)


def until(condition: Callable[[], bool], timeout: float = TIMEOUT) -> bool:
    """Whether ``condition`` comes true within ``timeout`` seconds (looked at every 10 ms)."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        pause.wait(0.01)
    return True


def page(svc: DemoService, **params: Any) -> dict[str, Any]:
    params.setdefault("db_id", svc.db_id)
    reply = call(svc, "profiles/list", **params)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    assert body["error"] == 0
    assert body["error_text"] == "Successful operation"
    return body


def fetch_all(svc: DemoService, limit: int = 1000, **params: Any) -> list[Profile]:
    rows: list[Profile] = []
    from_id = ""
    with requests.Session() as session:
        while True:
            reply = call(
                svc,
                "profiles/list",
                session=session,
                db_id=svc.db_id,
                from_id=from_id,
                limit=limit,
                **params,
            ).json()
            assert reply["error"] == 0, reply
            if not reply["data"]:
                return rows
            rows.extend(reply["data"])
            from_id = reply["next_from_id"]


def assert_error(reply: requests.Response, code: int, http_status: int, text: str = "") -> None:
    assert reply.status_code == http_status
    assert reply.headers["Content-Type"] == "application/json; charset=utf-8"
    body = reply.json()
    assert body["error"] == code
    assert isinstance(body["error_text"], str)
    assert body["error_text"]
    assert text in body["error_text"]


# ---------------------------------------------------------------- profiles/list


def test_paging_returns_every_profile_once_in_order(fresh: DemoService) -> None:
    pages: list[list[Profile]] = []
    from_id = ""
    while True:
        body = page(fresh, from_id=from_id, limit=7)
        pages.append(body["data"])
        if not body["data"]:
            assert body["next_from_id"] == ""
            break
        assert body["next_from_id"] == body["data"][-1]["id"]
        from_id = body["next_from_id"]
    rows = [row for p in pages for row in p]
    assert rows == fresh.profiles
    assert [len(p) for p in pages[:-2]] == [7] * (len(pages) - 2)
    assert pages[-1] == []
    assert len(fresh.requests) == len(pages)
    assert [r.params.get("from_id") for r in fresh.requests[:2]] == ["", pages[0][-1]["id"]]


def test_without_fields_rows_are_the_data_set(fresh: DemoService) -> None:
    body = page(fresh)  # default limit 1000 covers all 100
    assert body["data"] == fresh.profiles
    assert all(next(iter(row)) == "id" for row in body["data"])
    assert page(fresh, from_id=None, limit=None)["data"] == fresh.profiles


def test_ids_sort_in_data_set_order(fresh: DemoService) -> None:
    ids = [p["id"] for p in fresh.profiles]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("limit", [0, -1, 10_001, "5", 2.0, True])
def test_bad_limit_is_refused(fresh: DemoService, limit: Any) -> None:
    assert_error(call(fresh, "profiles/list", db_id=fresh.db_id, limit=limit), 400, 400, "limit")


def test_max_limit_is_accepted(fresh: DemoService) -> None:
    assert len(page(fresh, limit=10_000)["data"]) == len(fresh.profiles)


def test_fields_projection(fresh: DemoService) -> None:
    rows = page(fresh, fields=["_id", "_fname", "_city"], limit=50)["data"]
    by_id = {p["id"]: p for p in fresh.profiles}
    assert len(rows) == 50
    for row in rows:
        assert next(iter(row)) == "id"
        assert set(row) <= {"id", "_fname", "_city"}
        full = by_id[row["id"]]
        assert row == {k: full[k] for k in ("id", "_fname", "_city") if k in full}


def test_fields_without_id_still_return_id(fresh: DemoService) -> None:
    rows = page(fresh, fields=["_lname"], limit=5)["data"]
    assert [set(row) for row in rows] == [{"id", "_lname"}] * 5
    only_id = page(fresh, fields=["_id"], limit=3)["data"]
    assert only_id == [{"id": p["id"]} for p in fresh.profiles[:3]]


def test_fields_dotted_path(fresh: DemoService) -> None:
    rows = page(fresh, fields=["subscriptions.channel"])["data"]
    expected = [
        {"id": p["id"], "subscriptions": [{"channel": s["channel"]} for s in p["subscriptions"]]}
        for p in fresh.profiles
    ]
    assert rows == expected


@pytest.mark.parametrize(
    "fields", ["_fname", [1], [""], {"_fname": 1}, ["subscriptions", "subscriptions.channel"]]
)
def test_bad_fields_are_refused(fresh: DemoService, fields: Any) -> None:
    assert_error(call(fresh, "profiles/list", db_id=fresh.db_id, fields=fields), 400, 400)


def _regex_an(p: Profile) -> bool:
    return re.match("an", p["_fname"], re.IGNORECASE) is not None


QUERIES: list[tuple[dict[str, Any], Callable[[Profile], bool]]] = [
    (
        {"$or": [{"_city": "Moscow"}, {"_city": "Москва"}, {"_country": "Germany"}]},
        lambda p: p.get("_city") in ("Moscow", "Москва") or p.get("_country") == "Germany",
    ),
    (
        {"_city": {"$in": ["Kazan", "Казань", "Berlin", "New York"]}},
        lambda p: p.get("_city") in ("Kazan", "Казань", "Berlin", "New York"),
    ),
    ({"_fname": {"$regex": "^an", "$options": "i"}}, _regex_an),
    (
        {"subscriptions.channel": "telegram_bot"},
        lambda p: any(s["channel"] == "telegram_bot" for s in p["subscriptions"]),
    ),
    (
        {"subscriptions": {"$elemMatch": {"channel": "email", "status": "subscribed"}}},
        lambda p: any(
            s["channel"] == "email" and s["status"] == "subscribed" for s in p["subscriptions"]
        ),
    ),
    ({"_bdate": {"$exists": False}}, lambda p: "_bdate" not in p),
    ({"_city": {"$exists": True}}, lambda p: "_city" in p),  # null counts as existing
    ({"subscriptions": {"$size": 0}}, lambda p: p["subscriptions"] == []),
    (
        {"$and": [{"vip": False}, {"loyalty_level": {"$gte": 3}}, {"score": {"$lt": 50.5}}]},
        lambda p: not p["vip"] and p["loyalty_level"] >= 3 and p["score"] < 50.5,
    ),
]


@pytest.mark.parametrize(("query", "predicate"), QUERIES)
def test_query_matches_mongodb_semantics(
    fresh: DemoService, query: dict[str, Any], predicate: Callable[[Profile], bool]
) -> None:
    expected = [p for p in fresh.profiles if predicate(p)]
    assert expected, "the data set should exercise the query"
    assert len(expected) < len(fresh.profiles)
    assert page(fresh, query=query)["data"] == expected
    assert fetch_all(fresh, limit=4, query=query) == expected


def test_query_with_fields(fresh: DemoService) -> None:
    query = {"subscriptions.channel": "sms"}
    rows = page(fresh, query=query, fields=["_id", "_lname"])["data"]
    expected = [
        {"id": p["id"], "_lname": p["_lname"]}
        for p in fresh.profiles
        if any(s["channel"] == "sms" for s in p["subscriptions"])
    ]
    assert rows == expected


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ({"$foo": 1}, "$foo"),
        ({"_city": {"$bar": 1}}, "$bar"),
        ({"_city": {"$in": "Moscow"}}, "$in"),
        ({"_fname": {"$regex": "("}}, "invalid query"),
        ({"$or": []}, "invalid query"),
        ({"$where": "true"}, "invalid query"),
    ],
)
def test_bad_query_is_a_400_envelope(fresh: DemoService, query: Any, words: str) -> None:
    reply = call(fresh, "profiles/list", db_id=fresh.db_id, query=query)
    assert_error(reply, 400, 400, words)
    assert fresh.requests[-1].status == 400


@pytest.mark.parametrize(
    "params",
    [
        {"query": [{"_city": "Moscow"}]},
        {"query": "{}"},
        {"db_id": "1"},
        {"db_id": None},
        {"format": "xml"},
        {"from_id": 5},
    ],
)
def test_bad_parameters_are_refused(fresh: DemoService, params: dict[str, Any]) -> None:
    body = {"db_id": fresh.db_id, **params}
    if body["db_id"] is None:
        del body["db_id"]
    assert_error(call(fresh, "profiles/list", **body), 400, 400)


def test_explicit_json_format_is_accepted(fresh: DemoService) -> None:
    assert len(page(fresh, format="json", limit=2)["data"]) == 2


# ---------------------------------------------------------------- errors and auth


@pytest.mark.parametrize("http_errors", [True, False])
def test_auth_and_database_errors(
    service: DemoService, quiet: DemoService, http_errors: bool
) -> None:
    svc = service if http_errors else quiet
    url = f"{svc.base_url}/api/v1.1/profiles/list"

    def status(code: int) -> int:
        return code if http_errors else 200

    no_token = requests.post(url, json={"db_id": svc.db_id}, timeout=TIMEOUT)
    assert_error(no_token, 401, status(401), "API token required")
    empty = requests.post(url, json={"token": "", "db_id": svc.db_id}, timeout=TIMEOUT)
    assert_error(empty, 401, status(401))
    wrong = requests.post(url, json={"token": "nope", "db_id": svc.db_id}, timeout=TIMEOUT)
    assert_error(wrong, 403, status(403), "Access denied")
    not_str = requests.post(url, json={"token": 12, "db_id": svc.db_id}, timeout=TIMEOUT)
    assert_error(not_str, 403, status(403))
    unknown_db = call(svc, "profiles/list", db_id=svc.db_id + 1)
    assert_error(unknown_db, 400, status(400), "database not found")
    unknown_method = call(svc, "profiles/nope", db_id=svc.db_id)
    assert_error(unknown_method, 404, status(404), "unknown method")


def test_http_errors_is_switchable(fresh: DemoService) -> None:
    fresh.http_errors = False
    try:
        assert_error(call(fresh, "profiles/list", db_id=999), 400, 200)
    finally:
        fresh.http_errors = True
    assert_error(call(fresh, "profiles/list", db_id=999), 400, 400)


def test_bearer_header_is_accepted(fresh: DemoService) -> None:
    reply = requests.post(
        f"{fresh.base_url}/api/v1.1/profiles/list",
        json={"db_id": fresh.db_id, "limit": 1},
        headers={"Authorization": f"Bearer {fresh.token}"},
        timeout=TIMEOUT,
    )
    assert reply.status_code == 200
    assert reply.json()["data"] == fresh.profiles[:1]


@pytest.mark.parametrize(
    ("verb", "path"),
    [
        ("GET", "/api/v1.1/profiles/list"),
        ("POST", "/profiles/list"),
        ("POST", "/api/v1.2/profiles/list"),
        ("POST", "/"),
        ("DELETE", "/api/v1.1/profiles/list"),
    ],
)
def test_unknown_routes_are_404(fresh: DemoService, verb: str, path: str) -> None:
    reply = requests.request(
        verb, fresh.base_url + path, json={"token": fresh.token}, timeout=TIMEOUT
    )
    assert_error(reply, 404, 404, "unknown method")


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b"", b'"text"', b"\xff\xfe"])
def test_body_must_be_a_json_object(fresh: DemoService, body: bytes) -> None:
    reply = requests.post(
        f"{fresh.base_url}/api/v1.1/profiles/list",
        data=body,
        headers={"Content-Type": "application/json"},
        timeout=TIMEOUT,
    )
    assert_error(reply, 400, 400)


# ---------------------------------------------------------------- databases/fields_get


def test_fields_get_describes_the_data_set(fresh: DemoService) -> None:
    reply = call(fresh, "databases/fields_get", id=fresh.db_id)
    assert reply.status_code == 200
    body = reply.json()
    assert (body["error"], body["error_text"]) == (0, "Successful operation")
    fields = {f["name"]: f for f in body["data"]}
    for f in body["data"]:
        assert set(f) == {"name", "title", "type", "category", "required"}
        assert f["type"] in {"int", "float", "string", "boolean", "array", "object"}
        assert f["category"] in {"system", "custom"}
        if f["category"] == "custom":
            assert not f["name"].startswith("_")
        assert isinstance(f["required"], bool)
    assert fields["_fname"]["category"] == "system"
    assert fields["loyalty_level"]["category"] == "custom"
    py_types = {"int": int, "float": float, "string": str, "boolean": bool, "array": list}
    for profile in fresh.profiles:
        for key, value in profile.items():
            if key == "id" or value is None:
                continue
            expected = py_types[fields[key]["type"]]
            assert type(value) is expected, (key, value)


def test_fields_get_errors(fresh: DemoService) -> None:
    assert_error(call(fresh, "databases/fields_get", id=fresh.db_id + 5), 400, 400, "not found")
    assert_error(call(fresh, "databases/fields_get"), 400, 400, "id")
    no_token = requests.post(
        f"{fresh.base_url}/api/v1.1/databases/fields_get", json={"id": 1}, timeout=TIMEOUT
    )
    assert_error(no_token, 401, 401)


# ---------------------------------------------------------------- faults


def test_status_fault_with_retry_after(fresh: DemoService) -> None:
    fresh.add_fault("profiles/list", "status", status=429, retry_after=7)
    reply = call(fresh, "profiles/list", db_id=fresh.db_id)
    assert_error(reply, 429, 429, "Too Many Requests")
    assert reply.headers["Retry-After"] == "7"
    after = call(fresh, "profiles/list", db_id=fresh.db_id, limit=1)
    assert after.status_code == 200
    assert "Retry-After" not in after.headers
    assert [r.status for r in fresh.requests] == [429, 200]


def test_status_fault_defaults_and_overrides(fresh: DemoService) -> None:
    fresh.add_fault("profiles/list", "status")
    fresh.add_fault("profiles/list", "status", status=500, code=1001, text="db is down")
    assert_error(call(fresh, "profiles/list", db_id=1), 503, 503, "Service Unavailable")
    assert_error(call(fresh, "profiles/list", db_id=1), 1001, 500, "db is down")


def test_html_fault(fresh: DemoService) -> None:
    fresh.add_fault("profiles/list", "html")
    reply = call(fresh, "profiles/list", db_id=fresh.db_id)
    assert reply.status_code == 502
    assert reply.headers["Content-Type"] == "text/html"
    assert reply.text.startswith("<html>")
    assert "502 Bad Gateway" in reply.text
    with pytest.raises(requests.exceptions.JSONDecodeError):
        reply.json()


def test_malformed_fault(fresh: DemoService) -> None:
    fresh.add_fault("profiles/list", "malformed")
    fresh.add_fault("profiles/list", "malformed", text="")
    for _ in range(2):
        reply = call(fresh, "profiles/list", db_id=fresh.db_id)
        assert reply.status_code == 200
        assert reply.headers["Content-Type"].startswith("application/json")
        with pytest.raises(json.JSONDecodeError):
            json.loads(reply.content)


def test_api_error_fault(fresh: DemoService) -> None:
    fresh.add_fault("profiles/list", "api_error")
    fresh.add_fault("profiles/list", "api_error", code=402, text="tariff limit reached")
    assert_error(call(fresh, "profiles/list", db_id=fresh.db_id), 500, 200)
    assert_error(call(fresh, "profiles/list", db_id=fresh.db_id), 402, 200, "tariff limit")


@pytest.mark.slow
@pytest.mark.network
def test_slow_fault(fresh: DemoService) -> None:
    # The slow request is logged, then held: one sent after it is answered first, and
    # the slow one gets the normal reply after that.
    fresh.add_fault("profiles/list", "slow", delay=1.0)
    replies: list[tuple[str, dict[str, Any]]] = []
    slow = threading.Thread(target=lambda: replies.append(("slow", page(fresh, limit=2))))
    slow.start()
    assert until(lambda: len(fresh.requests) == 1)  # logged before the wait
    replies.append(("quick", page(fresh, limit=1)))
    slow.join(timeout=TIMEOUT)
    assert [name for name, _ in replies] == ["quick", "slow"]
    assert replies[1][1]["data"] == fresh.profiles[:2]
    # A client that waits less than the delay gets nothing.
    fresh.add_fault("profiles/list", "slow", delay=1.0)
    with pytest.raises(requests.exceptions.ReadTimeout):
        call(fresh, "profiles/list", db_id=fresh.db_id, timeout=0.2)
    assert [r.status for r in fresh.requests] == [200, 200, 200]


def test_stall_fault_repeats_the_cursor(fresh: DemoService) -> None:
    cursor = fresh.profiles[4]["id"]
    fresh.add_fault("profiles/list", "stall", times=2)
    first = page(fresh, limit=3)
    assert first["data"] == fresh.profiles[:3]
    assert first["next_from_id"] == ""
    stalled = page(fresh, from_id=cursor, limit=3)
    assert stalled["data"] == fresh.profiles[5:8]
    assert stalled["next_from_id"] == cursor
    assert page(fresh, from_id=cursor, limit=3)["next_from_id"] == fresh.profiles[7]["id"]


def test_reset_fault(fresh: DemoService) -> None:
    with requests.Session() as session:
        call(fresh, "profiles/list", session=session, db_id=fresh.db_id, limit=1)
        fresh.add_fault("profiles/list", "reset")  # hits the kept-alive connection
        with pytest.raises(requests.exceptions.ConnectionError, match=r"reset|aborted"):
            call(fresh, "profiles/list", session=session, db_id=fresh.db_id)
        reply = call(fresh, "profiles/list", session=session, db_id=fresh.db_id, limit=1)
    assert reply.status_code == 200
    assert [r.status for r in fresh.requests] == [200, 0, 200]


def test_fault_times_counting(fresh: DemoService) -> None:
    fault = fresh.add_fault("profiles/list", "status", status=503, times=2)
    assert isinstance(fault, Fault)
    statuses = [call(fresh, "profiles/list", db_id=1, limit=1).status_code for _ in range(3)]
    assert statuses == [503, 503, 200]
    assert (fault.fired, fault.remaining) == (2, 0)


def test_fault_forever_until_cleared(fresh: DemoService) -> None:
    fault = fresh.add_fault("profiles/list", "api_error", times=None)
    for _ in range(5):
        assert call(fresh, "profiles/list", db_id=1).json()["error"] == 500
    assert fault.fired == 5
    assert fault.remaining is None
    fresh.clear_faults()
    assert call(fresh, "profiles/list", db_id=1, limit=1).json()["error"] == 0


def test_faults_fire_in_fifo_order(fresh: DemoService) -> None:
    fresh.add_fault("profiles/list", "status", status=503)
    fresh.add_fault("profiles/list", "html", status=504, times=2)
    fresh.add_fault("profiles/list", "status", status=429)
    statuses = [call(fresh, "profiles/list", db_id=1, limit=1).status_code for _ in range(5)]
    assert statuses == [503, 504, 504, 429, 200]


def test_faults_are_per_method(fresh: DemoService) -> None:
    fresh.add_fault("databases/fields_get", "status", status=500)
    assert call(fresh, "profiles/list", db_id=1, limit=1).status_code == 200
    assert call(fresh, "databases/fields_get", id=1).status_code == 500
    assert call(fresh, "databases/fields_get", id=1).status_code == 200


def test_wildcard_fault_and_precedence(fresh: DemoService) -> None:
    fresh.add_fault("*", "status", status=502, times=2)
    fresh.add_fault("profiles/list", "status", status=504)
    assert call(fresh, "profiles/list", db_id=1).status_code == 504  # the method's own first
    assert call(fresh, "profiles/list", db_id=1).status_code == 502
    assert call(fresh, "databases/fields_get", id=1).status_code == 502
    assert call(fresh, "databases/fields_get", id=1).status_code == 200


def test_fault_fires_before_validation(fresh: DemoService) -> None:
    fresh.add_fault("profiles/list", "status", status=503)
    assert call(fresh, "profiles/list", db_id="bad").status_code == 503


@pytest.mark.parametrize(
    ("method", "kind", "extra"),
    [
        ("profiles/list", "explode", {}),
        ("databases/fields_get", "stall", {}),
        ("*", "stall", {}),
        ("profiles/list", "status", {"times": 0}),
        ("profiles/list", "status", {"status": 99}),
        ("profiles/list", "slow", {"delay": -1}),
        ("", "status", {}),
    ],
)
def test_bad_fault_arguments(
    fresh: DemoService, method: str, kind: Any, extra: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match=r"kind|stall|times|status|delay|method"):
        fresh.add_fault(method, kind, **extra)


# ---------------------------------------------------------------- HTTP behaviour


def test_keep_alive_serves_several_requests_on_one_connection(fresh: DemoService) -> None:
    host, port = fresh.base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    try:
        for limit in (1, 2, 3):
            body = json.dumps({"token": fresh.token, "db_id": fresh.db_id, "limit": limit})
            conn.request("POST", "/api/v1.1/profiles/list", body=body)
            reply = conn.getresponse()
            assert reply.status == 200
            assert reply.getheader("Connection") != "close"
            content = reply.read()
            assert int(reply.getheader("Content-Length", "-1")) == len(content)
            assert len(json.loads(content)["data"]) == limit
    finally:
        conn.close()


def test_concurrent_requests(fresh: DemoService) -> None:
    results: list[list[Profile]] = []

    def worker() -> None:
        results.append(fetch_all(fresh, limit=25))

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert results == [fresh.profiles] * 6
    assert len(fresh.requests) == 6 * 5


def test_request_log_never_holds_the_token(fresh: DemoService) -> None:
    fresh.add_fault("profiles/list", "reset")
    with pytest.raises(requests.exceptions.ConnectionError):
        call(fresh, "profiles/list", db_id=1)
    call(fresh, "profiles/list", db_id=1, limit=1, fields=["_fname"])
    call(fresh, "databases/fields_get", id=1)
    requests.post(f"{fresh.base_url}/api/v1.1/profiles/list", json={"token": "x"}, timeout=5)
    download = requests.get(
        f"{fresh.base_url}/api/download/suppress/x/list.md5.zip",
        params={"token": fresh.token, "n": "1"},
        timeout=TIMEOUT,
    )
    assert download.status_code == 404
    log = fresh.requests
    assert len(log) == 5
    assert all(isinstance(r, RequestRecord) for r in log)
    assert all("token" not in r.params for r in log)
    assert fresh.token not in repr(log)
    assert log[1] == RequestRecord(
        "profiles/list",
        "/api/v1.1/profiles/list",
        {"db_id": 1, "limit": 1, "fields": ["_fname"]},
        200,
    )
    assert log[4] == RequestRecord(
        "download", "/api/download/suppress/x/list.md5.zip", {"n": "1"}, 404
    )


def test_repr_and_lifecycle() -> None:
    svc = DemoService(profiles=3, seed=2)
    assert len(svc.token) == 32
    assert svc.token not in repr(svc)
    assert "not running" in repr(svc)
    with pytest.raises(RuntimeError):
        _ = svc.base_url
    with svc:
        assert svc.running
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", svc.base_url)
        assert repr(svc) == f"<DemoService {svc.base_url} db_id=1 profiles=3>"
        assert svc.token not in repr(svc)
        with pytest.raises(RuntimeError):
            svc.start()
        assert page(svc)["data"] == svc.profiles
    assert "not running" in repr(svc)
    svc.stop()  # idempotent
    svc.start()  # and restartable
    try:
        assert len(page(svc)["data"]) == 3
    finally:
        svc.stop()


def test_stop_is_prompt_with_idle_and_slow_connections() -> None:
    # Neither an idle keep-alive (open until stop() returns) nor a reply due in 30 s
    # holds stop() up, and the slow request is answered or cut off, not left hanging:
    # all of it well before the slow reply or the client's own timeout could end it.
    outcome: list[object] = []
    stopped = threading.Event()

    def slow_call(svc: DemoService) -> None:
        try:
            outcome.append(call(svc, "profiles/list", db_id=1, timeout=60).status_code)
        except requests.exceptions.RequestException as exc:
            outcome.append(exc)

    def stop(svc: DemoService) -> None:
        svc.stop()
        stopped.set()

    with serve(profiles=5) as svc, requests.Session() as session:
        call(svc, "profiles/list", session=session, db_id=1)  # leaves an idle keep-alive
        svc.add_fault("profiles/list", "slow", delay=30)
        sleeper = threading.Thread(target=slow_call, args=(svc,), daemon=True)
        sleeper.start()
        assert until(lambda: len(svc.requests) == 2)  # the slow one is in, waiting
        threading.Thread(target=stop, args=(svc,), daemon=True).start()
        assert stopped.wait(timeout=10)
        sleeper.join(timeout=10)
        assert not sleeper.is_alive()
    assert len(outcome) == 1


def test_explicit_profiles_and_token() -> None:
    rows: list[Profile] = [
        {"id": "b", "_fname": "Bo"},
        {"id": "a", "_fname": "Al", "subscriptions": []},
    ]
    with serve(rows, token="tok", db_id=42) as svc:
        assert svc.token == "tok"
        assert page(svc)["data"] == [rows[1], rows[0]]  # answered in id order
        assert page(svc, query={"_fname": "Bo"})["data"] == [rows[0]]
    with pytest.raises(ValueError, match="unique"):
        DemoService([{"id": "a"}, {"id": "a"}])
    with pytest.raises(ValueError, match="token"):
        DemoService(1, token="")


# ---------------------------------------------------------------- the data set


def test_generate_profiles_is_deterministic() -> None:
    random.seed(123)
    before = random.random()
    random.seed(123)
    first = generate_profiles(60, seed=5)
    assert random.random() == before  # the global random state is left alone
    assert generate_profiles(60, seed=5) == first
    assert generate_profiles(60, seed=6) != first
    assert generate_profiles(30, seed=5) == first[:30]
    assert generate_profiles(0) == []
    with pytest.raises(ValueError, match="non-negative"):
        generate_profiles(-1)


def test_ids_look_like_object_ids_and_increase() -> None:
    ids = [p["id"] for p in generate_profiles(500, seed=9)]
    assert all(re.fullmatch(r"[0-9a-f]{24}", i) for i in ids)
    assert all(a < b for a, b in itertools.pairwise(ids))


def test_data_set_variety() -> None:
    profiles = generate_profiles(300, seed=0)
    subs = [s for p in profiles for s in p["subscriptions"]]
    assert {s["channel"] for s in subs} == {"email", "sms", "push", "viber", "telegram_bot"}
    statuses = {s["status"] for s in subs}
    assert "subscribed" in statuses
    assert len(statuses) >= 5
    names = [p["_fname"] + " " + p["_lname"] for p in profiles]
    assert any(re.search("[\u0400-\u04ff]", n) for n in names)  # Cyrillic
    assert any(re.search("[éüöäíóñçèï]", n) for n in names)
    assert any("'" in p["_lname"] or " " in p["_fname"] + p["_lname"] for p in profiles)
    empty = sum(1 for p in profiles if p["subscriptions"] == [])
    assert 0.03 * len(profiles) <= empty <= 0.2 * len(profiles)
    assert all(0 <= len(p["subscriptions"]) <= 4 for p in profiles)
    assert any("custom_fields" in s for s in subs)
    assert any("cats" in s for s in subs)
    assert any(p.get("_city") is None and "_city" in p for p in profiles)
    assert any("_city" not in p for p in profiles)
    assert any("_bdate" not in p for p in profiles)
    assert any(p["phones"] == [] for p in profiles)
    assert all(p["email"].isascii() for p in profiles if "email" in p)
    for p in profiles:
        assert isinstance(p["loyalty_level"], int)
        assert isinstance(p["vip"], bool)
        assert isinstance(p["score"], float)
        assert isinstance(p["segment"], str)
        if "_bdate" in p:
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", p["_bdate"])


def test_subscription_shape() -> None:
    profiles = generate_profiles(300, seed=0)
    subs = [s for p in profiles for s in p["subscriptions"]]
    blocks = {
        "email": "email_data",
        "sms": "phone_data",
        "viber": "phone_data",
        "push": "push_data",
        "telegram_bot": "cc_data",
    }
    all_blocks = set(blocks.values())
    hash_ids = [s["hash_id"] for s in subs]
    assert len(set(hash_ids)) == len(hash_ids)
    for s in subs:
        assert re.fullmatch(r"[0-9a-f]{16}", s["hash_id"])
        assert isinstance(s["is_delete"], bool)
        assert s["priority"] in range(4)
        assert s["resource_id"] in range(1, 4)
        assert re.fullmatch(r"202[2-5]-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", s["reg_info"]["date"])
        assert ipaddress.ip_address(s["reg_info"]["ip"]).version == 4
        block = blocks[s["channel"]]
        assert all_blocks & set(s) == {block}
        data = s[block]
        if block == "email_data":
            assert data["email"] == data["email"].lower()
            assert data["email"].endswith("@" + data["domain"])
            assert data["md5"] == hashlib.md5(data["email"].encode()).hexdigest()
            assert data["domain_group"] in {"gmail", "yandex", "mailru", "other"}
        elif block == "phone_data":
            assert re.fullmatch(r"\+\d{10,13}", data["phone"])
            assert data["md5"] == hashlib.md5(data["phone"].encode()).hexdigest()
        elif block == "push_data":
            assert data["provider"] in {"Firebase", "APNs", "WebPush"}
            assert data["subscription_id"]
        else:
            assert data["id"].isdigit()
        assert set(s.get("custom_fields", {})) <= {
            "_browser_name",
            "_device_type",
            "_os",
            "utm_source",
        }
        assert set(s.get("cats", [])) <= {"news", "promo", "digest", "partners"}
    # A contact belongs to one profile only.
    owners: dict[str, str] = {}
    for p in profiles:
        contacts = {p.get("email"), *p["phones"]}
        for s in p["subscriptions"]:
            contacts.add(s.get("email_data", {}).get("email"))
            contacts.add(s.get("phone_data", {}).get("phone"))
        for contact in contacts - {None}:
            assert owners.setdefault(contact, p["id"]) == p["id"]


def test_profile_email_is_an_email_subscription() -> None:
    for p in generate_profiles(100, seed=4):
        emails = [s["email_data"]["email"] for s in p["subscriptions"] if s["channel"] == "email"]
        if emails and "email" in p:
            assert emails[0] == p["email"]


# ---------------------------------------------------------------- docs and CLI


@pytest.mark.parametrize(
    "module",
    [stoplist_nb.demo, stoplist_nb.demo._api, stoplist_nb.demo._data, stoplist_nb.demo._server],
)
def test_docstring_examples(module: Any) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0


def test_demo_imports_nothing_else_from_the_package_at_module_level() -> None:
    package = Path(stoplist_nb.demo.__file__).parent
    for source in sorted(package.glob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in tree.body:  # module level only; TYPE_CHECKING blocks are not run
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name == "stoplist_nb" or name.startswith("stoplist_nb."):
                    assert name.startswith("stoplist_nb.demo"), f"{source.name} imports {name}"


@pytest.mark.slow
def test_cli_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "stoplist_nb.demo", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0
    assert "--profiles" in done.stdout


@pytest.mark.slow
@pytest.mark.skipif(os.name == "nt", reason="SIGINT to a child process is POSIX-only")
def test_cli_serves_until_interrupted() -> None:
    proc = popen(
        [sys.executable, "-m", "stoplist_nb.demo", "--port", "0", "--profiles", "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]
        info = dict(line.split(":", 1) for line in lines[:3])
        base_url, token = info["base_url"].strip(), info["token"].strip()
        assert info["db_id"].strip() == "1"
        reply = requests.post(
            f"{base_url}/api/v1.1/profiles/list",
            json={"token": token, "db_id": 1},
            timeout=TIMEOUT,
        ).json()
        assert reply["data"] == generate_profiles(4)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
