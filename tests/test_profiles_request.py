"""ProfilesRequest: one request of profiles/list, checked once, read every way.

And the single Parquet / CSV files it writes: complete, or not there at all.
Everything runs against the embedded demo service on loopback.
"""

from __future__ import annotations

import dataclasses
import io
import pathlib
from contextlib import closing
from typing import Any

import pandas as pd
import pytest

import stoplist_nb as sn
from stoplist_nb.demo import DemoService, serve
from stoplist_nb.demo._data import generate_profiles
from stoplist_nb.profiles import request as request_module
from stoplist_nb.profiles.files import csv_ready

LIMIT = 25


def build(client: sn.Client, demo: DemoService, **kwargs: Any) -> sn.ProfilesRequest:
    options: dict[str, Any] = {"limit": LIMIT, "progress": False, **kwargs}
    return sn.ProfilesRequest(client, demo.db_id, **options)


def listing(directory: pathlib.Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def sent(demo: DemoService) -> int:
    return sum(r.method == "profiles/list" for r in demo.requests)


# --- built and checked once -----------------------------------------------------------


def test_it_is_frozen_and_replace_checks_again(client: sn.Client, demo: DemoService) -> None:
    req = build(client, demo, query={"_city": "Moscow"}, fields=["_id", "_city"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.limit = 10  # type: ignore[misc]
    assert req.fields == ("_id", "_city")
    smaller = dataclasses.replace(req, limit=5)
    assert (smaller.limit, smaller.query, req.limit) == (5, {"_city": "Moscow"}, LIMIT)
    with pytest.raises(sn.InvalidInput, match="limit"):
        dataclasses.replace(req, limit=0)
    assert demo.requests == []


def test_its_repr_shows_the_url_and_never_the_token(client: sn.Client, demo: DemoService) -> None:
    req = build(client, demo, query=sn.F("_city") == "Kazan")
    text = repr(req)
    assert demo.token not in text
    assert text.startswith(f"ProfilesRequest(client=Client({demo.base_url!r}), db_id=1,")
    assert "query={'_city': 'Kazan'}" in text  # a built query is held as it is sent
    assert demo.token not in str(req)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"db_id": "1"}, sn.InvalidInput, "db_id"),
        ({"limit": 0}, sn.InvalidInput, "limit"),
        ({"limit": True}, sn.InvalidInput, "limit"),
        ({"max_profiles": 0}, sn.InvalidInput, "max_profiles"),
        ({"from_id": 12}, sn.InvalidInput, "from_id"),
        ({"fields": "_fname"}, sn.InvalidInput, "fields"),
        ({"lookahead": -1}, sn.InvalidInput, "lookahead"),
        ({"progress": "yes"}, sn.InvalidInput, "progress"),
        ({"query": {"_city": {"$bogus": 1}}}, sn.InvalidQuery, r"\$bogus"),
    ],
)
def test_a_bad_argument_is_refused_before_anything_is_sent(
    client: sn.Client, demo: DemoService, kwargs: dict[str, Any], error: type, match: str
) -> None:
    options: dict[str, Any] = {"db_id": demo.db_id, **kwargs}
    db_id = options.pop("db_id")
    with pytest.raises(error, match=match):
        sn.ProfilesRequest(client, db_id, **options)
    with pytest.raises(sn.InvalidInput, match="client"):
        sn.ProfilesRequest("not a client", 1)  # type: ignore[arg-type]
    assert demo.requests == []


def test_the_query_is_checked_once_however_often_it_is_read(
    client: sn.Client, demo: DemoService, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[object] = []
    real = request_module.validate_query

    def counted(query: Any) -> Any:
        checks.append(query)
        return real(query)

    monkeypatch.setattr(request_module, "validate_query", counted)
    req = build(client, demo, query={"_city": "Moscow"})
    assert len(checks) == 1
    first = req.to_frame()
    again = req.to_arrow()
    with closing(req.pages()) as pages:
        ids = [row["id"] for page in pages for row in page.records]
    assert len(checks) == 1  # no method checks the request again
    assert first["profile_id"].drop_duplicates().tolist() == ids
    assert again.num_rows == len(first)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda r, d: r.to_frame(dtype_backend="numpy"), "dtype_backend"),
        (lambda r, d: r.frames(dtypes={"age": "no such dtype"}), "dtypes"),
        (lambda r, d: r.tables(schema={}), "schema"),
        (lambda r, d: r.to_arrow(dtypes=["age"]), "dtypes"),
        (lambda r, d: r.to_dataset(d / "ds", resume="no"), "resume must be True or False"),
        (lambda r, d: r.to_csv(d / "x.csv", overwrite="yes"), "overwrite must be True or False"),
        (lambda r, d: r.to_dataset(d / "ds", commit_seconds=-1), "commit_seconds"),
        (lambda r, d: r.to_parquet(d / "nowhere" / "x.parquet"), "no directory"),
        (lambda r, d: r.to_csv(d), "names a directory"),
        (lambda r, d: r.to_dataset(d / "ds", profiles_per_part=0), "per_part"),
        (lambda r, d: r.to_parquet(d), "names a directory"),
        (lambda r, d: dataclasses.replace(r, max_profiles=5).to_dataset(f"{d}/ds/"), "checkpoint"),
    ],
)
def test_a_bad_option_of_a_method_is_refused_before_anything_is_sent(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, call: Any, match: str
) -> None:
    req = build(client, demo)
    with pytest.raises(sn.InvalidInput, match=match):
        call(req, tmp_path)
    assert demo.requests == []
    assert listing(tmp_path) == []


# --- read_profiles is to_frame in one call -----------------------------------------------


def test_read_profiles_gives_what_to_frame_gives(client: sn.Client, demo: DemoService) -> None:
    options: dict[str, Any] = {"limit": 20, "progress": False, "query": {"_city": "Moscow"}}
    req = sn.ProfilesRequest(client, demo.db_id, **options)
    for output in ({}, {"dtype_backend": "pyarrow", "dtypes": {"age": "Int16"}}):
        demo.requests.clear()
        got = req.to_frame(**output)
        by_method = sent(demo)
        demo.requests.clear()
        want = sn.read_profiles(client, demo.db_id, **options, **output)
        assert sent(demo) == by_method  # the same requests, as many
        assert by_method
        pd.testing.assert_frame_equal(got, want)
        assert got.attrs == want.attrs


def test_a_file_and_a_dataset_are_two_methods(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    req = build(client, demo, max_profiles=None)
    done = req.to_dataset(f"{tmp_path}/ds/")
    assert isinstance(done, sn.DatasetSummary)
    assert done.complete
    again = req.to_dataset(tmp_path / "ds")  # that dataset, complete: nothing is sent
    assert again.profiles == len(demo.profiles)
    with pytest.raises(sn.InvalidInput, match="names a directory"):
        req.to_parquet(tmp_path / "ds")
    file = req.to_parquet(tmp_path / "ds.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "ds"), pd.read_parquet(file.path))


# --- one Parquet or CSV file ---------------------------------------------------------------


def test_a_parquet_file_holds_what_read_profiles_reads(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    req = build(client, demo)
    frame = req.to_frame()
    done = req.to_parquet(tmp_path / "p.parquet")
    assert isinstance(done, sn.FileSummary)
    assert done == sn.FileSummary(
        tmp_path / "p.parquet",
        len(frame),
        len(demo.profiles),
        done.columns,
        frame.attrs["next_from_id"],
    )
    assert len(done) == len(frame)
    assert done.written
    back = pd.read_parquet(tmp_path / "p.parquet")
    assert list(back.columns) == list(done.columns)
    assert back["profile_id"].tolist() == frame["profile_id"].tolist()
    plain = [c for c in frame.columns if frame[c].dtype != object]
    pd.testing.assert_frame_equal(back[plain], frame[plain])
    assert listing(tmp_path) == ["p.parquet"]


def test_a_csv_file_is_the_frame_in_csv(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    req = build(client, demo, max_profiles=60, fields=["_id", "_fname", "cats", "subscriptions"])
    frame = req.to_frame()
    done = req.to_csv(tmp_path / "p.csv")
    expected = io.StringIO()
    csv_ready(frame).to_csv(expected, index=False, lineterminator="\n")
    assert (tmp_path / "p.csv").read_text(encoding="utf-8") == expected.getvalue()
    assert (done.rows, done.profiles, done.next_from_id) == (
        len(frame),
        60,
        frame.attrs["next_from_id"],
    )
    assert listing(tmp_path) == ["p.csv"]


def test_a_file_of_no_profile_names_the_columns(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    req = build(client, demo, query={"_city": "Atlantis"})
    done = req.to_parquet(tmp_path / "none.parquet", dtypes={"age": "Int16"})
    back = pd.read_parquet(tmp_path / "none.parquet")
    assert (done.rows, done.profiles, len(back)) == (0, 0, 0)
    assert {"profile_id", "channel", "age"} <= set(back.columns)
    assert back["age"].dtype == "Int16"


@pytest.mark.parametrize("name", ["p.parquet", "p.csv"])
def test_a_fault_mid_pull_leaves_no_file_and_an_old_one_as_it_was(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, name: str
) -> None:
    out = tmp_path / name
    out.write_text("the old file\n")
    demo.add_fault("profiles/list", "status", status=503, retry_after=0, after=2, times=None)
    req = build(client, demo, lookahead=0)
    write = req.to_csv if name.endswith(".csv") else req.to_parquet
    with pytest.raises(sn.ServerError) as info:
        write(out, overwrite=True)
    exc = info.value
    assert listing(tmp_path) == [name]
    assert out.read_text() == "the old file\n"
    cursor = demo.profiles[2 * LIMIT - 1]["id"]
    assert exc.resume_from == cursor  # as every reader says it
    assert isinstance(exc.partial, sn.FileSummary)
    # The message says what was kept: nothing but the count, no rows in .partial.
    assert f"{exc.partial.rows} rows were read, no file was written" in str(exc)
    assert "are in .partial" not in str(exc)
    assert (exc.partial.written, exc.partial.profiles, exc.partial.next_from_id) == (
        False,
        2 * LIMIT,
        cursor,
    )
    # Read again from there, the rest is exactly what was missing.
    demo.clear_faults()
    rest = dataclasses.replace(req, from_id=exc.resume_from).to_frame()
    assert rest["profile_id"].drop_duplicates().tolist() == [
        p["id"] for p in demo.profiles[2 * LIMIT :]
    ]


def test_an_interruption_mid_pull_leaves_no_file(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import stoplist_nb.profiles.stream as stream

    flatten, calls = stream.flatten_profiles, []

    def interrupted(data: Any, records: Any = None) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return flatten(data, records)

    monkeypatch.setattr(stream, "flatten_profiles", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(client, demo).to_parquet(tmp_path / "p.parquet")
    assert listing(tmp_path) == []


@pytest.mark.parametrize("name", ["p.parquet", "p.csv"])
def test_a_column_that_joins_late_is_in_the_file(tmp_path: pathlib.Path, name: str) -> None:
    profiles = generate_profiles(30, seed=2)
    for i, profile in enumerate(profiles[25:], 25):
        profile["late_score"] = i
    with serve(profiles=profiles) as service, service.client() as client:
        req = sn.ProfilesRequest(client, service.db_id, limit=10, progress=False)
        frame = req.to_frame()
        done = (
            req.to_csv(tmp_path / name)
            if name.endswith(".csv")
            else req.to_parquet(tmp_path / name)
        )
    assert "late_score" in done.columns
    if name.endswith(".csv"):
        back = pd.read_csv(tmp_path / name)
    else:
        back = pd.read_parquet(tmp_path / name)
    assert back["late_score"].isna().sum() == (frame["late_score"].isna()).sum()
    assert back["late_score"].dropna().astype(int).tolist() == frame["late_score"].dropna().tolist()
    assert len(back) == done.rows == len(frame)
    assert listing(tmp_path) == [name]


# --- the export's Parquet file with a task the caller started -----------------------------


def test_write_suppression_parquet_records_the_type_of_a_started_task(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    task_id = sn.start_suppression_export(client, demo.suppress_id, type="emails")
    done = sn.write_suppression_parquet(
        client,
        demo.suppress_id,
        tmp_path / "e.parquet",
        task_id=task_id,
        type="emails",
        poll_interval=0.01,
        progress=False,
    )
    back = pd.read_parquet(tmp_path / "e.parquet")
    assert done.task_id == back.attrs["task_id"] == task_id
    assert (back.attrs["list_id"], back.attrs["type"]) == (demo.suppress_id, "emails")
    assert len(back) == len(demo.suppressed["emails"])
    assert [r.method for r in demo.requests].count("suppresses/export") == 1


def test_a_built_request_sends_only_what_was_checked(client: sn.Client, demo: DemoService) -> None:
    query = {"_city": {"$in": ["Moscow", "Kazan"]}}
    req = build(client, demo, query=query, fields=["_city"])
    query["$where"] = "sleep(1)"  # the caller's own dict changes later: not the request's
    query["_city"]["$in"].append("Omsk")
    for change in (
        lambda: req.query.__setitem__("$where", "sleep(1)"),
        lambda: req.query.update({"$where": "sleep(1)"}),
        lambda: req.query["_city"].pop("$in"),
        lambda: req.query["_city"]["$in"].append("Omsk"),  # a tuple
    ):
        with pytest.raises((TypeError, AttributeError)):
            change()
    sent = req.params
    sent["query"]["$where"] = "sleep(1)"  # a copy: the next one is whole again
    assert req.params == {
        "db_id": demo.db_id,
        "format": "json",
        "limit": LIMIT,
        "query": {"_city": {"$in": ["Moscow", "Kazan"]}},
        "fields": ["_city"],
    }
    req.to_frame()
    bodies = [r.params for r in demo.requests if r.method == "profiles/list"]
    assert bodies
    assert all(b["query"] == {"_city": {"$in": ["Moscow", "Kazan"]}} for b in bodies)
