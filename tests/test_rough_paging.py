"""Paging through profiles/list on a rough service: pages past ``limit``, missing
cursors on full pages, cursors that go back. Each reader, played over real HTTP.

What every test checks: a read capped by ``max_profiles`` plus a read from its
cursor, and ``exc.partial`` plus a read resumed at ``exc.resume_from``, hold
exactly the profiles of one uninterrupted read, in order, each once.
"""

from __future__ import annotations

import itertools
import json
import pathlib
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest
from dataset_helpers import REQUEST_OPTIONS

import stoplist_nb as sn
from stoplist_nb.demo import DemoService, Fault
from stoplist_nb.profiles.dataset import CHECKPOINT
from stoplist_nb.profiles.reading import ProfilesRequest

READERS = [
    "read_profiles",
    "to_arrow",
    "frames",
    "tables",
    "pages",
]
LOOKAHEAD = [0, 2]


@dataclass
class Outcome:
    """Profile ids in the order read (a profile's rows counted once), the cursor after them."""

    ids: list[str]
    cursor: str | None
    error: sn.StoplistError | None = None


def runs(column: list[str]) -> list[str]:
    # A profile's subscriptions are adjacent rows: one id per run, so a repeat shows.
    return [key for key, _ in itertools.groupby(column)]


def _frames(frames: Iterator[pd.DataFrame], out: Outcome) -> None:
    with closing(frames):
        for frame in frames:
            out.ids += runs(list(frame["profile_id"]))
            out.cursor = frame.attrs["next_from_id"]


def read(reader: str, client: sn.Client, demo: DemoService, **kwargs: Any) -> Outcome:
    """Run one reader; an error gives what it kept and where it says to resume."""
    kwargs.setdefault("limit", 10)
    out = Outcome([], kwargs.get("from_id") or "")
    if reader != "pages":
        kwargs["progress"] = False
    try:
        if reader == "read_profiles":
            try:
                df = sn.read_profiles(client, demo.db_id, **kwargs)
            except sn.StoplistError as exc:
                out.ids = runs(list(exc.partial["profile_id"]))
                raise
            out.ids = runs(list(df["profile_id"]))
            out.cursor = df.attrs["next_from_id"]
        elif reader == "to_arrow":
            try:
                table = sn.ProfilesRequest(client, demo.db_id, **kwargs).to_arrow()
            except sn.StoplistError as exc:
                out.ids = runs(exc.partial["profile_id"].to_pylist())
                raise
            out.ids = runs(table["profile_id"].to_pylist())
            out.cursor = table.schema.metadata[b"next_from_id"].decode()
        elif reader == "frames":
            _frames(sn.ProfilesRequest(client, demo.db_id, **kwargs).frames(), out)
        elif reader == "tables":
            tables = sn.ProfilesRequest(client, demo.db_id, **kwargs).tables()
            with closing(tables):
                for table in tables:
                    out.ids += runs(table["profile_id"].to_pylist())
                    out.cursor = table.schema.metadata[b"next_from_id"].decode()
        else:
            pages = sn.ProfilesRequest(client, demo.db_id, **kwargs).pages()
            with closing(pages):
                for page in pages:
                    out.ids += [row.get("id") for row in page.records]
                    out.cursor = page.next_from_id
    except sn.StoplistError as exc:
        out.error, out.cursor = exc, exc.resume_from
    return out


def all_ids(demo: DemoService, start: int = 0) -> list[str]:
    return [p["id"] for p in demo.profiles[start:]]


def add(demo: DemoService, *faults: dict[str, Any]) -> None:
    """Queue faults for profiles/list, in order (each fires for its ``times`` requests)."""
    for fault in faults:
        demo.add_fault("profiles/list", **fault)


FAIL = {"kind": "status", "status": 500}


# --- 1. a service that ignores limit: no profile becomes unreachable -------------------


@pytest.mark.slow
@pytest.mark.parametrize("lookahead", LOOKAHEAD)
@pytest.mark.parametrize("reader", READERS)
def test_a_capped_read_past_limit_is_cut_and_resumes_at_its_last_profile(
    client: sn.Client, demo: DemoService, reader: str, lookahead: int
) -> None:
    # Pages of 40 when 25 are asked; the cursor is the last profile's id: cut there.
    add(demo, {"kind": "ignore_limit", "size": 40, "times": None})
    every = read(reader, client, demo, limit=25, lookahead=lookahead)
    assert every.error is None
    assert every.ids == all_ids(demo)
    capped = read(reader, client, demo, limit=25, max_profiles=25, lookahead=lookahead)
    assert capped.error is None
    assert capped.ids == all_ids(demo)[:25]
    assert capped.cursor == demo.profiles[24]["id"]
    rest = read(reader, client, demo, limit=25, from_id=capped.cursor, lookahead=lookahead)
    assert capped.ids + rest.ids == every.ids


@pytest.mark.parametrize("lookahead", LOOKAHEAD)
@pytest.mark.parametrize("reader", READERS)
def test_partial_and_a_capped_resume_past_limit_miss_no_profile(
    client: sn.Client, demo: DemoService, reader: str, lookahead: int
) -> None:
    # Pages of 50 for 25 asked; the second request fails.
    add(
        demo,
        {"kind": "ignore_limit", "size": 50},
        FAIL,
        {"kind": "ignore_limit", "size": 50, "times": None},
    )
    first = read(reader, client, demo, limit=25, max_profiles=100, lookahead=lookahead)
    assert isinstance(first.error, sn.ServerError)
    assert first.ids == all_ids(demo)[:50]
    assert first.cursor == demo.profiles[49]["id"]
    more = read(
        reader, client, demo, limit=25, from_id=first.cursor, max_profiles=30, lookahead=lookahead
    )
    assert more.ids == all_ids(demo)[50:80]
    assert more.cursor == demo.profiles[79]["id"]
    rest = read(reader, client, demo, limit=25, from_id=more.cursor, lookahead=lookahead)
    assert first.ids + more.ids + rest.ids == all_ids(demo)


@pytest.mark.parametrize("lookahead", LOOKAHEAD)
@pytest.mark.parametrize("reader", [r for r in READERS if r != "pages"])
def test_a_capped_read_past_limit_keeps_the_whole_page_of_an_opaque_cursor(
    client: sn.Client, demo: DemoService, reader: str, lookahead: int
) -> None:
    # The cursor is no profile id: the page cannot be cut, so all 40 are kept.
    add(demo, {"kind": "opaque_cursor", "size": 40, "times": None})
    capped = read(reader, client, demo, limit=25, max_profiles=25, lookahead=lookahead)
    assert capped.error is None
    assert capped.ids == all_ids(demo)[:40]
    assert capped.cursor == demo.profiles[39]["id"] + "~"
    rest = read(reader, client, demo, limit=25, from_id=capped.cursor, lookahead=lookahead)
    assert capped.ids + rest.ids == all_ids(demo)


@pytest.mark.slow
@pytest.mark.parametrize("lookahead", LOOKAHEAD)
@pytest.mark.parametrize("reader", READERS)
def test_pages_past_limit_without_a_cursor_go_on_from_the_last_profile(
    client: sn.Client, demo: DemoService, reader: str, lookahead: int
) -> None:
    # 40 rows for 25 asked is no short page: not the end, and not a stall.
    add(demo, {"kind": "no_cursor", "size": 40, "times": None})
    every = read(reader, client, demo, limit=25, lookahead=lookahead)
    assert every.error is None
    assert every.ids == all_ids(demo)
    capped = read(reader, client, demo, limit=25, max_profiles=30, lookahead=lookahead)
    assert capped.ids == all_ids(demo)[:30]
    rest = read(reader, client, demo, limit=25, from_id=capped.cursor, lookahead=lookahead)
    assert capped.ids + rest.ids == all_ids(demo)


# --- 2. a full page without a cursor leaves a way forward -------------------------------


@pytest.mark.parametrize("lookahead", LOOKAHEAD)
@pytest.mark.parametrize("reader", READERS)
def test_a_full_last_page_without_a_cursor_is_read(
    client: sn.Client, demo: DemoService, reader: str, lookahead: int
) -> None:
    # 120 profiles in pages of 30: the fourth and last page is full and has no cursor.
    add(demo, {"kind": "no_cursor", "after": 3})
    every = read(reader, client, demo, limit=30, lookahead=lookahead)
    assert every.error is None
    assert every.ids == all_ids(demo)
    assert [r.params.get("from_id") for r in demo.requests][-2:] == [
        demo.profiles[89]["id"],
        demo.profiles[119]["id"],  # the last profile's id: an empty page, the end
    ]


@pytest.mark.slow
@pytest.mark.parametrize("lookahead", LOOKAHEAD)
@pytest.mark.parametrize("reader", READERS)
def test_full_pages_without_cursors_capped_and_interrupted_miss_no_profile(
    client: sn.Client, demo: DemoService, reader: str, lookahead: int
) -> None:
    add(demo, {"kind": "no_cursor", "times": None})
    capped = read(reader, client, demo, limit=30, max_profiles=60, lookahead=lookahead)
    assert capped.error is None
    assert capped.ids == all_ids(demo)[:60]
    assert capped.cursor == demo.profiles[59]["id"]
    rest = read(reader, client, demo, limit=30, from_id=capped.cursor, lookahead=lookahead)
    assert capped.ids + rest.ids == all_ids(demo)
    demo.clear_faults()
    add(demo, {"kind": "no_cursor", "times": 2}, FAIL, {"kind": "no_cursor", "times": None})
    first = read(reader, client, demo, limit=30, lookahead=lookahead)
    assert isinstance(first.error, sn.ServerError)
    assert first.cursor == demo.profiles[59]["id"]
    rest = read(reader, client, demo, limit=30, from_id=first.cursor, lookahead=lookahead)
    assert first.ids + rest.ids == all_ids(demo)


def _rows_without_ids(demo: DemoService, count: int) -> str:
    rows = [{k: v for k, v in p.items() if k != "id"} for p in demo.profiles[:count]]
    return json.dumps({"error": 0, "error_text": "Successful operation", "data": rows})


@pytest.mark.parametrize("lookahead", LOOKAHEAD)
def test_a_full_page_without_a_cursor_or_ids_is_kept_and_says_so(
    client: sn.Client, demo: DemoService, lookahead: int
) -> None:
    add(demo, {"kind": "raw", "text": _rows_without_ids(demo, 5)})
    with pytest.raises(sn.CursorStalled, match="no id to go on from") as info:
        sn.read_profiles(client, demo.db_id, limit=5, progress=False, lookahead=lookahead)
    assert info.value.partial.attrs["profiles"] == 5  # the rows are kept
    assert len(info.value.partial) >= 5
    assert info.value.resume_from is None  # no cursor leads on: none is advised
    assert "resume with from_id" not in str(info.value)
    assert len(demo.requests) == 1
    add(demo, {"kind": "raw", "text": _rows_without_ids(demo, 5)})
    pages = read("pages", client, demo, limit=5, lookahead=lookahead)
    assert isinstance(pages.error, sn.CursorStalled)
    assert pages.ids == [None] * 5  # the page was yielded, its rows without ids
    assert pages.cursor is None


# --- 3. a cursor cycle is caught wherever it starts --------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("lookahead", LOOKAHEAD)
@pytest.mark.parametrize("reader", READERS)
def test_a_cursor_back_to_the_starting_from_id_is_a_stall(
    client: sn.Client, demo: DemoService, reader: str, lookahead: int
) -> None:
    start = demo.profiles[9]["id"]
    whole = read(reader, client, demo, from_id=start, lookahead=lookahead)
    assert whole.ids == all_ids(demo, 10)
    # The third page (profiles 30-39) leads back to where the read started.
    add(demo, {"kind": "cycle", "cursor": start, "after": 2})
    first = read(reader, client, demo, from_id=start, lookahead=lookahead)
    assert isinstance(first.error, sn.CursorStalled)
    assert first.ids == all_ids(demo)[10:30]
    assert first.cursor == demo.profiles[29]["id"]
    rest = read(reader, client, demo, from_id=first.cursor, lookahead=lookahead)
    assert first.ids + rest.ids == whole.ids


# --- the Parquet dataset: resumed pulls --------------------------------------------------


def dataset_ids(path: pathlib.Path) -> list[str]:
    return runs(list(pd.read_parquet(path)["profile_id"]))


def pull(client: sn.Client, demo: DemoService, path: pathlib.Path, **kwargs: Any) -> Any:
    kwargs = {"limit": 10, "progress": False, "profiles_per_part": 20, **kwargs}
    asked = {name: kwargs.pop(name) for name in REQUEST_OPTIONS if name in kwargs}
    return ProfilesRequest(client, demo.db_id, **asked).to_dataset(path, **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("lookahead", LOOKAHEAD)
@pytest.mark.parametrize(
    "quirk",
    [
        pytest.param({"kind": "no_cursor", "size": 40}, id="past-limit-without-cursor"),
        pytest.param({"kind": "no_cursor"}, id="full-pages-without-cursor"),
    ],
)
def test_a_dataset_of_a_rough_service_resumed_holds_each_profile_once(
    client: sn.Client,
    demo: DemoService,
    tmp_path: pathlib.Path,
    quirk: dict[str, Any],
    lookahead: int,
) -> None:
    add(demo, {**quirk, "times": 2}, FAIL, {**quirk, "times": None})
    with pytest.raises(sn.ServerError) as info:
        pull(client, demo, tmp_path, lookahead=lookahead)
    assert info.value.partial.profiles > 0
    summary = pull(client, demo, tmp_path, lookahead=lookahead)
    assert summary.complete
    assert dataset_ids(tmp_path) == all_ids(demo)
    assert summary.profiles == len(demo.profiles)


def test_a_full_last_page_without_a_cursor_completes_a_dataset(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    add(demo, {"kind": "no_cursor", "after": 11})
    summary = pull(client, demo, tmp_path)
    assert summary.complete
    assert dataset_ids(tmp_path) == all_ids(demo)


@pytest.mark.parametrize("lookahead", LOOKAHEAD)
def test_a_cursor_back_to_before_a_resume_is_caught_by_the_checkpoint(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, lookahead: int
) -> None:
    add(demo, {**FAIL, "after": 4})  # parts 0 and 1 (profiles 0-39) are written
    with pytest.raises(sn.ServerError):
        pull(client, demo, tmp_path, lookahead=lookahead)
    saved = json.loads((tmp_path / CHECKPOINT).read_text())
    assert saved["cursors"] == [demo.profiles[i]["id"] for i in (9, 19, 29)]
    # Resumed at profile 40: the second page leads back to a cursor of the first pull.
    # The first page (profiles 40-49) is whole and saved; the one that leads back is not.
    add(demo, {"kind": "cycle", "cursor": demo.profiles[19]["id"], "after": 1})
    with pytest.raises(sn.CursorStalled) as info:
        pull(client, demo, tmp_path, lookahead=lookahead)
    assert info.value.partial.profiles == 50
    summary = pull(client, demo, tmp_path, lookahead=lookahead)
    assert summary.complete
    assert dataset_ids(tmp_path) == all_ids(demo)
    # One a page, the first (asked without a cursor) aside.
    assert len(json.loads((tmp_path / CHECKPOINT).read_text())["cursors"]) == 11


def test_a_checkpoint_without_cursors_is_refused(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    add(demo, {**FAIL, "after": 4})
    with pytest.raises(sn.ServerError):
        pull(client, demo, tmp_path)
    path = tmp_path / CHECKPOINT
    saved = json.loads(path.read_text())
    del saved["cursors"]  # a resumed pull would not catch a cursor that goes back
    path.write_text(json.dumps(saved))
    demo.clear_faults()
    demo.requests.clear()
    with pytest.raises(sn.DatasetDamaged, match="has no 'cursors'"):
        pull(client, demo, tmp_path)
    assert demo.requests == []
    summary = pull(client, demo, tmp_path, overwrite=True)
    assert summary.complete
    assert dataset_ids(tmp_path) == all_ids(demo)


# --- the demo's faults ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "*", "kind": "no_cursor"}, "profiles/list"),
        ({"method": "profiles/list", "kind": "cycle"}, "cursor="),
        ({"method": "profiles/list", "kind": "ignore_limit", "size": 0}, "size"),
        ({"method": "profiles/list", "kind": "status", "size": 5}, "size applies"),
    ],
)
def test_paging_faults_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Fault(**kwargs)


def test_paging_faults_change_only_the_cursor_or_the_page_size(
    client: sn.Client, demo: DemoService
) -> None:
    add(demo, {"kind": "ignore_limit"}, {"kind": "no_cursor"}, {"kind": "opaque_cursor"})
    add(demo, {"kind": "cycle", "cursor": "abc"})
    replies = [client.call("profiles/list", db_id=demo.db_id, limit=3) for _ in range(4)]
    assert [len(r["data"]) for r in replies] == [6, 3, 3, 3]
    assert replies[0]["next_from_id"] == demo.profiles[5]["id"]
    assert "next_from_id" not in replies[1]
    assert replies[2]["next_from_id"] == demo.profiles[2]["id"] + "~"
    assert replies[3]["next_from_id"] == "abc"
    assert [r.params["limit"] for r in demo.requests] == [3, 3, 3, 3]  # as asked
