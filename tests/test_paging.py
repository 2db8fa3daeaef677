"""Paging with requests sent ahead (lookahead), against the demo service on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

import stoplist_nb as sn
import stoplist_nb.client as client_module
from stoplist_nb._lookahead import peek_cursor
from stoplist_nb.demo import DemoService

PARSE_THREAD = "stoplist_nb-parse"


def ids(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["profile_id"]))


def asked(demo: DemoService) -> list[tuple[Any, Any]]:
    return [(r.params.get("from_id"), r.params.get("limit")) for r in demo.requests]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"data":[{"id":"a"}],"error":0,"next_from_id":"a1"}', "a1"),
        (b'{\n  "next_from_id" : "b2" ,\n  "data": [{"id": "b"}]\n}', "b2"),
        (b'{"data":[{"id":1}],"next_from_id":42}', "42"),
        (b'{"data":[1],"next_from_id":"a\\u0042\\"c"}', 'aB"c'),
        (b'{"data":[{"next_from_id":"x"}],"next_from_id":"y"}', "y"),
        # a wrong guess (the service is free to write the envelope first), caught later
        (b'{"next_from_id":"y","data":[{"next_from_id":"x"}]}', "x"),
        (b'{"data":[1],"next_from_id":null}', None),
        (b'{"data":[1],"next_from_id":""}', None),
        (b'{"data":[1],"next_from_id":1.5}', None),
        (b'{"data":[1],"next_from_id":"\xff"}', None),
        (b'{"data":[1],"error":0}', None),
        (b'{"data":[],"next_from_id":"z"}', None),
        (b'{"data" : [ ] , "next_from_id":"z"}', None),
        (b'{"data":null,"next_from_id":"z"}', None),
        (b"", None),
    ],
)
def test_peek_cursor(content: bytes, expected: str | None) -> None:
    assert peek_cursor(content) == expected


@pytest.mark.parametrize(("limit", "max_profiles"), [(7, None), (7, 17), (50, None), (1000, 5)])
@pytest.mark.parametrize("lookahead", [1, 2, 5])
def test_lookahead_sends_exactly_the_requests_of_plain_paging(
    client: sn.Client,
    demo: DemoService,
    limit: int,
    max_profiles: int | None,
    lookahead: int,
) -> None:
    kwargs: dict[str, Any] = {"limit": limit, "max_profiles": max_profiles, "progress": False}
    plain = sn.read_profiles(client, demo.db_id, lookahead=0, **kwargs)
    plain_requests = asked(demo)
    demo.requests.clear()
    ahead = sn.read_profiles(client, demo.db_id, lookahead=lookahead, **kwargs)
    pd.testing.assert_frame_equal(ahead, plain)
    assert ahead.attrs == plain.attrs
    assert asked(demo) == plain_requests
    assert len(ids(plain)) == min(len(demo.profiles), max_profiles or len(demo.profiles))


@pytest.fixture
def parse_gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Hold the first parse until ``gate["open"]`` is set; record what it saw."""
    gate: dict[str, Any] = {"open": threading.Event(), "threads": [], "requests_at_parse": []}
    real = client_module.read_reply

    def gated(content: bytes) -> Any:
        gate["threads"].append(threading.current_thread().name)
        if len(gate["threads"]) == 1:
            assert gate["open"].wait(10), "the first parse was never released"
            gate["requests_at_parse"].append(len(gate["demo"].requests))
        return real(content)

    monkeypatch.setattr(client_module, "read_reply", gated)
    yield gate
    gate["open"].set()


@pytest.mark.parametrize("lookahead", [0, 1, 2])
def test_requests_leave_while_the_first_page_is_parsed(
    client: sn.Client, demo: DemoService, parse_gate: dict[str, Any], lookahead: int
) -> None:
    parse_gate["demo"] = demo

    def release() -> None:
        # Opens the gate once 1 + lookahead requests are in: with lookahead > 0 the
        # main thread sends them while the first parse waits in a worker.
        for _ in range(1000):
            if len(demo.requests) >= 1 + lookahead:
                break
            threading.Event().wait(0.01)
        parse_gate["open"].set()

    opener = threading.Thread(target=release)
    opener.start()
    # One worker, held by the first parse: the pages in flight are 1 + lookahead.
    df = sn.read_profiles(
        client, demo.db_id, limit=7, lookahead=lookahead, progress=False, workers=1
    )
    opener.join()
    assert ids(df) == [p["id"] for p in demo.profiles]
    assert parse_gate["requests_at_parse"] == [1 + lookahead]
    # A parse worker is "stoplist_nb-parse-<walk>_<n>": its walk's pool, named for close().
    workers = {name.rsplit("-", 1)[0] if lookahead else name for name in parse_gate["threads"]}
    assert workers == ({PARSE_THREAD} if lookahead else {threading.current_thread().name})


def test_a_wrong_guess_is_dropped_and_asked_again(client: sn.Client, demo: DemoService) -> None:
    # The first reply writes next_from_id before data and gives every row a field of
    # that name holding the first row's id: the text search guesses that id.
    sn.read_profiles(client, demo.db_id, limit=7, lookahead=0, progress=False)
    plain = asked(demo)
    demo.requests.clear()
    demo.add_fault("profiles/list", "decoy")
    # One worker: 3 (lookahead + workers) pages in flight at most.
    df = sn.read_profiles(client, demo.db_id, limit=7, lookahead=2, progress=False, workers=1)
    assert ids(df) == [p["id"] for p in demo.profiles]
    assert df["next_from_id"].notna().sum() == len(df[df["profile_id"].isin(ids(df)[:7])])
    p = demo.profiles
    sent = asked(demo)
    # Up to two requests on guesses (the decoy, then the cursor of the decoy's reply),
    # dropped: the fetch thread sends the second only if the first page's parse has not
    # shown the guess wrong by then.
    wrong = sent[1 : len(sent) - len(plain) + 1]
    assert wrong == [(p[0]["id"], 7), (p[7]["id"], 7)][: len(wrong)]
    assert sent[:1] + sent[1 + len(wrong) :] == plain
    assert plain[1] == (p[6]["id"], 7)


@pytest.mark.parametrize("lookahead", [0, 1, 2])
def test_a_request_ahead_on_the_right_cursor_with_another_limit_is_asked_again(
    client: sn.Client, demo: DemoService, lookahead: int
) -> None:
    # The first reply is short (3 rows of 7) yet carries the right cursor: the request
    # sent on it ahead counted 7 rows in and asks for the 3 missing of 10, while plain
    # paging, 3 rows in, asks for 7. Its reply answers another question.
    short = json.dumps(client.call("profiles/list", db_id=demo.db_id, limit=3))
    demo.requests.clear()
    demo.add_fault("profiles/list", "raw", text=short)
    df = sn.read_profiles(
        client, demo.db_id, limit=7, max_profiles=10, lookahead=lookahead, progress=False
    )
    assert ids(df) == [p["id"] for p in demo.profiles[:10]]
    cursor = demo.profiles[2]["id"]
    dropped = [(cursor, 3)] if lookahead else []
    assert asked(demo) == [(None, 7), *dropped, (cursor, 7)]


def test_an_error_on_a_dropped_request_is_not_raised(client: sn.Client, demo: DemoService) -> None:
    demo.add_fault("profiles/list", "decoy")
    demo.add_fault("profiles/list", "status", status=400)  # hits the request on the guess
    df = sn.read_profiles(client, demo.db_id, limit=7, lookahead=2, progress=False)
    assert ids(df) == [p["id"] for p in demo.profiles]
    assert [r.status for r in demo.requests[:3]] == [200, 400, 200]
    assert demo.requests[1].params["from_id"] == demo.profiles[0]["id"]


def test_an_error_ahead_is_raised_when_its_page_comes_up(
    client: sn.Client, demo: DemoService
) -> None:
    demo.add_fault("profiles/list", "slow", delay=0, times=2)
    demo.add_fault("profiles/list", "status", status=400)
    pages = sn.ProfilesRequest(client, demo.db_id, limit=7, lookahead=2).pages()
    first = next(pages)
    # The fetch thread sends the third request without waiting for the caller.
    for _ in range(2000):
        if len(demo.requests) >= 3:
            break
        threading.Event().wait(0.005)
    assert len(demo.requests) == 3  # the failed third request is in, nothing after it
    assert len(first) == 7
    assert len(next(pages)) == 7
    with pytest.raises(sn.BadRequest) as info:
        next(pages)
    assert info.value.resume_from == demo.profiles[13]["id"]


def parse_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(PARSE_THREAD)]


def test_leaving_early_stops_the_workers(client: sn.Client, demo: DemoService) -> None:
    pages = sn.ProfilesRequest(client, demo.db_id, limit=7, lookahead=2, workers=1).pages()
    got = [next(pages), next(pages)]
    assert parse_threads()
    pages.close()
    for thread in parse_threads():
        thread.join(10)
    assert parse_threads() == []
    assert [len(page) for page in got] == [7, 7]
    # two pages read, at most lookahead + workers - 1 = 2 sent ahead of them (the
    # fetch thread may not have sent both when the iterator was closed)
    assert 2 <= len(demo.requests) <= 2 + 2


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True, None])
def test_bad_lookahead_fails_before_any_request(
    client: sn.Client, demo: DemoService, bad: Any
) -> None:
    with pytest.raises(sn.InvalidInput, match="lookahead"):
        sn.ProfilesRequest(client, demo.db_id, lookahead=bad).pages()
    with pytest.raises(sn.InvalidInput, match="lookahead"):
        client.pages("profiles/list", {"db_id": demo.db_id}, lookahead=bad)
    assert demo.requests == []
