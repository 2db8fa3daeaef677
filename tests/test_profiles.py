"""read_profiles and ProfilesRequest.pages against the demo service on loopback."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import stoplist_nb as sn
from stoplist_nb.demo import DemoService
from stoplist_nb.profiles.normalize import normalize_profiles


def ids(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["profile_id"]))


def test_paging_returns_every_profile_once(client: sn.Client, demo: DemoService) -> None:
    pages = list(sn.ProfilesRequest(client, demo.db_id, limit=7).pages())
    got = [r["id"] for page in pages for r in page.records]
    assert got == [p["id"] for p in demo.profiles]
    assert len(pages) == -(-len(demo.profiles) // 7)
    assert pages[0].from_id is None
    for before, after in itertools.pairwise(pages):
        assert after.from_id == before.next_from_id
    # the docs' rule: stop at the first empty page, so one more request was made
    assert len(demo.requests) == len(pages) + 1


def test_read_profiles_equals_normalizing_everything(client: sn.Client, demo: DemoService) -> None:
    df = sn.read_profiles(client, demo.db_id, limit=7, progress=False)
    expected = normalize_profiles(demo.profiles)
    pd.testing.assert_frame_equal(df, expected)
    assert df.attrs["profiles"] == len(demo.profiles)
    assert df.attrs["next_from_id"] == demo.profiles[-1]["id"]


def test_records_are_exactly_what_the_service_sent(client: sn.Client, demo: DemoService) -> None:
    page = next(iter(sn.ProfilesRequest(client, demo.db_id, limit=5).pages()))
    assert page.records == demo.profiles[:5]
    assert len(page) == 5


def test_fields_projection(client: sn.Client, demo: DemoService) -> None:
    df = sn.read_profiles(client, demo.db_id, fields=["_id", "_city"], progress=False)
    assert "_city" in df.columns
    assert not {"_fname", "_lname"} & set(df.columns)
    assert df["channel"].isna().all()  # subscriptions were not asked for
    assert len(df) == len(demo.profiles)


def where(pred: Callable[[dict[str, Any]], bool], profiles: list[dict[str, Any]]) -> list[str]:
    return [p["id"] for p in profiles if pred(p)]


def chans(p: dict[str, Any]) -> set[str]:
    return {s["channel"] for s in p.get("subscriptions") or []}


QUERIES: dict[str, tuple[dict[str, Any], Callable[[dict[str, Any]], bool]]] = {
    "$or": (
        {"$or": [{"_city": "Moscow"}, {"_city": "Berlin"}]},
        lambda p: p.get("_city") in ("Moscow", "Berlin"),
    ),
    "$in": (
        {"_city": {"$in": ["Kazan", "Москва"]}},
        lambda p: p.get("_city") in ("Kazan", "Москва"),
    ),
    "$regex": (
        {"_lname": {"$regex": "^m", "$options": "i"}},
        lambda p: bool(re.match("m", p.get("_lname") or "", re.I)),
    ),
    "channel": ({"subscriptions.channel": "telegram_bot"}, lambda p: "telegram_bot" in chans(p)),
    "channel-$nin": (
        {"subscriptions.channel": {"$nin": ["email", "sms"]}},
        lambda p: not chans(p) & {"email", "sms"},
    ),
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_queries_select_what_mongodb_would(client: sn.Client, demo: DemoService, name: str) -> None:
    query, pred = QUERIES[name]
    expected = where(pred, demo.profiles)
    assert expected, "the demo data set should match this query"
    df = sn.read_profiles(client, demo.db_id, query=query, limit=9, progress=False)
    assert ids(df) == expected


def test_empty_result_keeps_columns_and_dtypes(client: sn.Client, demo: DemoService) -> None:
    df = sn.read_profiles(client, demo.db_id, query={"_city": "Atlantis"}, progress=False)
    empty = normalize_profiles([])
    assert len(df) == 0
    pd.testing.assert_series_equal(df.dtypes, empty.dtypes)
    assert df.attrs["profiles"] == 0


def test_max_profiles_and_resume(client: sn.Client, demo: DemoService) -> None:
    first = sn.read_profiles(client, demo.db_id, limit=7, max_profiles=10, progress=False)
    assert ids(first) == [p["id"] for p in demo.profiles[:10]]
    limits = [r.params["limit"] for r in demo.requests]
    assert limits == [7, 3]  # the last request asks only for what is missing
    rest = sn.read_profiles(
        client, demo.db_id, limit=7, progress=False, from_id=first.attrs["next_from_id"]
    )
    assert ids(first) + ids(rest) == [p["id"] for p in demo.profiles]


def test_failed_page_keeps_rows_and_says_where_to_resume(
    client: sn.Client, demo: DemoService
) -> None:
    demo.add_fault("profiles/list", "slow", delay=0, times=3)  # three good pages
    demo.add_fault("profiles/list", "status", status=503, times=None)
    with pytest.raises(sn.ServerError) as info:
        sn.read_profiles(client, demo.db_id, limit=7, progress=False)
    err = info.value
    assert ids(err.partial) == [p["id"] for p in demo.profiles[:21]]
    assert err.resume_from == demo.profiles[20]["id"]
    assert f"resume with from_id={err.resume_from!r}" in str(err)
    demo.clear_faults()
    rest = sn.read_profiles(client, demo.db_id, limit=7, from_id=err.resume_from, progress=False)
    assert ids(err.partial) + ids(rest) == [p["id"] for p in demo.profiles]


def test_stalled_cursor_is_detected(client: sn.Client, demo: DemoService) -> None:
    demo.add_fault("profiles/list", "slow", delay=0, times=2)
    demo.add_fault("profiles/list", "stall", times=None)
    with pytest.raises(sn.CursorStalled, match="does not move") as info:
        sn.read_profiles(client, demo.db_id, limit=5, progress=False)
    assert len(demo.requests) == 3  # detected on the first repeat, not after a loop
    # The stalled page is not kept: resuming at its own cursor reads it again.
    assert ids(info.value.partial) == [p["id"] for p in demo.profiles[:10]]
    assert info.value.resume_from == demo.profiles[9]["id"]
    assert isinstance(info.value, RuntimeError)


BAD_ARGS: list[tuple[dict[str, Any], str]] = [
    ({"db_id": "1"}, "db_id"),
    ({"db_id": True}, "db_id"),
    ({"limit": 0}, "limit"),
    ({"limit": 2.5}, "limit"),
    ({"query": [("_city", "x")]}, "query must be a dict"),
    ({"query": {"_city": {"$regexp": "x"}}}, "unknown operator '\\$regexp'"),
    ({"query": {"$or": {"_city": "x"}}}, "non-empty list"),
    ({"fields": "_city"}, "fields"),
    ({"fields": ["_city", 3]}, "fields"),
    ({"from_id": 5}, "from_id"),
    ({"max_profiles": 0}, "max_profiles"),
    ({"lookahead": -1}, "lookahead"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_ARGS, ids=[m for _, m in BAD_ARGS])
def test_bad_input_fails_before_any_request(
    client: sn.Client, demo: DemoService, kwargs: dict[str, Any], message: str
) -> None:
    args: dict[str, Any] = {"db_id": demo.db_id, "progress": False, **kwargs}
    db_id = args.pop("db_id")
    with pytest.raises(sn.InvalidInput, match=message) as info:
        sn.read_profiles(client, db_id, **args)
    assert isinstance(info.value, ValueError)
    assert demo.requests == []


def test_pages_checks_input_before_iterating(client: sn.Client, demo: DemoService) -> None:
    with pytest.raises(sn.InvalidQuery):
        sn.ProfilesRequest(client, demo.db_id, query={"$not": {"_city": "x"}}).pages()
    assert demo.requests == []


def test_service_side_query_error_is_bad_request(client: sn.Client, demo: DemoService) -> None:
    # valid for our checker, refused by the service: the error still has its type and text
    with pytest.raises(sn.BadRequest) as info:
        sn.read_profiles(
            client, demo.db_id, query={"_city": {"$type": "no-such-type"}}, progress=False
        )
    assert info.value.code == 400


def body(profiles: list[dict[str, Any]] | list[None], **extra: Any) -> str:
    import json

    return json.dumps({"data": profiles, "error": 0, "error_text": "ok", **extra})


def test_null_profile_from_the_service_is_invalid_reply(
    client: sn.Client, demo: DemoService
) -> None:
    demo.add_fault("profiles/list", "malformed", text=body([None], next_from_id="x"))
    with pytest.raises(sn.InvalidReply, match="null") as info:
        sn.read_profiles(client, demo.db_id, progress=False)
    assert not isinstance(info.value, sn.InvalidInput)
    assert info.value.resume_from == ""


@pytest.mark.parametrize("rows", [2, 3])
def test_page_without_cursor(client: sn.Client, demo: DemoService, rows: int) -> None:
    # A short page without next_from_id can only be the last; a full one is kept, and
    # the read goes on from its last profile's id.
    demo.add_fault("profiles/list", "malformed", text=body(demo.profiles[:rows]))
    df = sn.read_profiles(client, demo.db_id, limit=3, progress=False)
    if rows < 3:
        assert ids(df) == [p["id"] for p in demo.profiles[:rows]]
        assert len(demo.requests) == 1
    else:
        assert ids(df) == [p["id"] for p in demo.profiles]
        assert demo.requests[1].params["from_id"] == demo.profiles[2]["id"]


def test_total_count_sets_the_bar_total(
    client: sn.Client, demo: DemoService, capsys: pytest.CaptureFixture[str]
) -> None:
    demo.add_fault(
        "profiles/list",
        "malformed",
        text=body(demo.profiles[:2], total_count=2, next_from_id=demo.profiles[1]["id"]),
    )
    demo.add_fault("profiles/list", "malformed", text=body([], total_count=2))
    df = sn.read_profiles(client, demo.db_id, limit=2, progress=True)
    assert df.attrs["profiles"] == 2
    err = capsys.readouterr().err
    assert "2/2" in err
    assert demo.token not in err
