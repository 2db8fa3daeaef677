"""Profiles page by page (one growing schema), Arrow output, dtype_backend and dtypes."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from dataset_helpers import split_options
from demo_fixtures import served_and_cleared

import stoplist_nb as sn
from stoplist_nb.demo import DemoService
from stoplist_nb.profiles.schema import TWIN_SUFFIX, StreamSchema


def person(i: int, **fields: Any) -> dict[str, Any]:
    sub = {"channel": "email", "status": "subscribed", "email_data": {"email": f"p{i}@ex.org"}}
    return {"id": f"p{i:03d}", "_fname": f"Name{i}", "subscriptions": [sub], **fields}


def mixed_profiles() -> list[dict[str, Any]]:
    """Eight profiles whose custom fields change kind and appear late."""
    profiles = [person(i, score=i) for i in range(8)]
    profiles[3]["score"] = "high"  # text in an int column
    profiles[5]["score"] = 2.5  # a fraction in an int column
    profiles[6]["late"] = True  # first seen on the fourth page of two
    profiles[7]["late"] = False
    profiles[2]["tags"] = {"a": [1, 2]}  # an object
    profiles[4]["big"] = 2**53 + 1
    return profiles


mixed, mixed_cleared = served_and_cleared("mixed", profiles=mixed_profiles())


@pytest.fixture
def mixed_client(mixed_cleared: DemoService) -> Iterator[sn.Client]:
    with mixed_cleared.client() as c:
        yield c


def frames(client: sn.Client, db_id: int, **kw: Any) -> list[pd.DataFrame]:
    asked, output = split_options({"limit": 2, "progress": False, **kw})
    return list(sn.ProfilesRequest(client, db_id, **asked).frames(**output))


def test_frames_keep_one_dtype_per_column_and_only_add_columns(
    mixed_client: sn.Client, mixed: DemoService
) -> None:
    got = frames(mixed_client, mixed.db_id)
    assert len(got) == 4
    dtypes: dict[str, Any] = {}
    previous: list[str] = []
    for frame in got:
        assert set(previous) <= set(frame.columns)  # a column never leaves
        for name, dtype in frame.dtypes.items():
            assert dtypes.setdefault(str(name), dtype) == dtype, name
        previous = list(frame.columns)
    assert "late" not in got[2].columns
    assert got[3]["late"].tolist() == [True, False]
    assert dtypes["score"] == pd.Int64Dtype()
    assert dtypes["late"] == pd.BooleanDtype()


def test_values_that_do_not_fit_their_column_go_to_its_text_twin(
    mixed_client: sn.Client, mixed: DemoService
) -> None:
    whole = pd.concat(frames(mixed_client, mixed.db_id), ignore_index=True)
    twin = "score" + TWIN_SUFFIX
    assert whole["score"].tolist() == [0, 1, 2, pd.NA, 4, pd.NA, 6, 7]
    assert whole[twin].tolist() == [pd.NA, pd.NA, pd.NA, "high", pd.NA, "2.5", pd.NA, pd.NA]
    assert whole.loc[2, "tags"] == {"a": [1, 2]}  # what the service sent, as in read_profiles
    # 2**53 + 1 is the first value of "big": the column settles as int and keeps it whole.
    assert whole.loc[4, "big"] == 2**53 + 1


def test_frames_concatenated_hold_what_read_profiles_holds(
    client: sn.Client, demo: DemoService
) -> None:
    streamed = pd.concat(frames(client, demo.db_id), ignore_index=True)
    whole = sn.read_profiles(client, demo.db_id, limit=7, progress=False)
    assert len(streamed) == len(whole)
    for name in whole.columns:
        if str(whole[name].dtype) == str(streamed[name].dtype):
            pd.testing.assert_series_equal(streamed[name], whole[name], check_names=True)
        else:  # only where the pages disagree on a kind: read_profiles made it text
            assert whole[name].dtype == "string", name


def test_each_frame_says_where_a_read_resumes(client: sn.Client, demo: DemoService) -> None:
    got = frames(client, demo.db_id, max_profiles=9)
    assert [f.attrs["profiles"] for f in got] == [2, 4, 6, 8, 9]
    assert got[0].attrs["from_id"] == ""
    for before, after in itertools.pairwise(got):
        assert after.attrs["from_id"] == before.attrs["next_from_id"]
    rest = frames(client, demo.db_id, from_id=got[-1].attrs["next_from_id"])
    ids = [i for f in [*got, *rest] for i in f["profile_id"].unique()]
    assert ids == [p["id"] for p in demo.profiles]


def test_declared_dtypes_are_there_from_the_first_frame(
    mixed_client: sn.Client, mixed: DemoService
) -> None:
    declared = {"late": "boolean", "score": "string", "never": "Float64"}
    got = frames(mixed_client, mixed.db_id, dtypes=declared)
    for frame in got:
        for name, dtype in declared.items():
            assert frame[name].dtype == pd.api.types.pandas_dtype(dtype), (name, frame.attrs)
    whole = pd.concat(got, ignore_index=True)
    assert whole["score"].tolist()[3:6] == ["high", "4", "2.5"]  # text takes every value
    assert ("score" + TWIN_SUFFIX) not in whole.columns
    assert whole["never"].isna().all()


def test_tables_share_the_frames_schema_and_carry_the_cursor(
    mixed_client: sn.Client, mixed: DemoService
) -> None:
    tables = list(sn.ProfilesRequest(mixed_client, mixed.db_id, limit=2, progress=False).tables())
    assert tables[0].schema.field("score").type == pa.int64()
    assert tables[3].schema.field("tags").type == pa.large_string()
    assert json.loads(tables[1].column("tags")[0].as_py()) == {"a": [1, 2]}
    assert [t.schema.metadata[b"profiles"] for t in tables] == [b"2", b"4", b"6", b"8"]
    # One schema a part: every later table holds every earlier column, same type.
    for before, after in itertools.pairwise(tables):
        for field in before.schema:
            assert after.schema.field(field.name).type == field.type


def test_a_resumed_stream_goes_on_with_its_schema(
    mixed_client: sn.Client, mixed: DemoService
) -> None:
    whole = list(sn.ProfilesRequest(mixed_client, mixed.db_id, limit=2, progress=False).tables())
    schema = StreamSchema()
    first = sn.ProfilesRequest(mixed_client, mixed.db_id, limit=2, progress=False).tables(
        schema=schema
    )
    mixed.add_fault("profiles/list", "status", status=400, after=2)
    got = []
    with pytest.raises(sn.StoplistError) as info:
        got.extend(first)
    saved = json.loads(json.dumps(schema.to_dict()))  # what a checkpoint keeps
    assert info.value.resume_from == whole[1].schema.metadata[b"next_from_id"].decode()
    mixed.clear_faults()
    rest = sn.ProfilesRequest(
        mixed_client, mixed.db_id, limit=2, progress=False, from_id=info.value.resume_from
    ).tables(schema=StreamSchema.from_dict(saved))
    got.extend(rest)
    assert [t.replace_schema_metadata() for t in got[2:]] == [
        t.replace_schema_metadata() for t in whole[2:]
    ]


def test_schema_descriptions_that_are_not_schemas_are_refused() -> None:
    for bad in (
        {},
        {"columns": 3},
        {"columns": [["x", "nope", "int"]], "sources": [], "declared": []},
    ):
        with pytest.raises(sn.InvalidInput):
            StreamSchema.from_dict(bad)
    with pytest.raises(sn.InvalidInput):
        StreamSchema({"x": "complex"})


def test_pyarrow_backend_gives_arrow_dtypes_only(client: sn.Client, demo: DemoService) -> None:
    df = sn.read_profiles(client, demo.db_id, progress=False, dtype_backend="pyarrow")
    assert all(isinstance(d, pd.ArrowDtype) for d in df.dtypes), df.dtypes
    assert df["cats"].dtype == pd.ArrowDtype(pa.list_(pa.string()))
    default = sn.read_profiles(client, demo.db_id, progress=False)
    assert df["profile_id"].tolist() == default["profile_id"].tolist()
    assert df["priority"].tolist() == default["priority"].tolist()
    numpy_nullable = sn.read_profiles(
        client, demo.db_id, progress=False, dtype_backend="numpy_nullable"
    )
    pd.testing.assert_frame_equal(numpy_nullable, default)


def test_default_frame_goes_through_parquet_and_back_with_plain_pandas(
    client: sn.Client, demo: DemoService, tmp_path: Path
) -> None:
    df = sn.read_profiles(client, demo.db_id, progress=False)
    assert df["cats"].notna().any()
    df.to_parquet(tmp_path / "p.parquet")
    back = pd.read_parquet(tmp_path / "p.parquet")
    assert list(back.columns) == list(df.columns)
    assert back.dtypes.astype(str).to_dict() == df.dtypes.astype(str).to_dict()
    # Lists come back as arrays: same items.
    lists = back["cats"].map(lambda v: None if v is None else list(v))
    assert lists.tolist() == df["cats"].tolist()
    if int(pd.__version__.split(".")[0]) < 3:
        # pandas 2 records a string column as "string" alone and reads it back at its
        # default storage, python: the same text. The package's own files name the storage.
        strings = [c for c in df if isinstance(df[c].dtype, pd.StringDtype)]
        assert {back[c].dtype.storage for c in strings} == {"python"}
        back = back.astype({c: df[c].dtype for c in strings})
    pd.testing.assert_frame_equal(back.drop(columns="cats"), df.drop(columns="cats"))


def test_to_arrow_matches_the_arrow_backed_frame(client: sn.Client, demo: DemoService) -> None:
    table = sn.ProfilesRequest(client, demo.db_id, progress=False).to_arrow()
    df = sn.read_profiles(client, demo.db_id, progress=False, dtype_backend="pyarrow")
    assert table.column_names == list(df.columns)
    for name in table.column_names:
        assert table.column(name).to_pylist() == pa.array(df[name]).to_pylist(), name
    assert table.schema.metadata[b"profiles"] == str(len(demo.profiles)).encode()


def test_dtypes_override_and_add_columns(client: sn.Client, demo: DemoService) -> None:
    df = sn.read_profiles(
        client, demo.db_id, progress=False, dtypes={"priority": "float64", "missing": "Int64"}
    )
    assert df["priority"].dtype == "float64"
    assert df["missing"].dtype == "Int64"
    assert df["missing"].isna().all()
    table = sn.ProfilesRequest(client, demo.db_id, progress=False).to_arrow(
        dtypes={"priority": pa.int8()}
    )
    assert table.schema.field("priority").type == pa.int8()


@pytest.mark.parametrize(
    "kw",
    [
        {"dtype_backend": "arrow"},
        {"dtypes": {"x": "not-a-dtype"}},
        {"dtypes": {3: "Int64"}},
        {"dtypes": ["Int64"]},
    ],
)
def test_bad_output_options_are_refused_before_any_request(
    client: sn.Client, demo: DemoService, kw: dict[str, Any]
) -> None:
    request = sn.ProfilesRequest(client, demo.db_id, progress=False)
    for read in (request.to_frame, request.frames):
        with pytest.raises(sn.InvalidInput):
            list(read(**kw))
    if "dtype_backend" not in kw:
        for read in (request.to_arrow, request.tables):
            with pytest.raises(sn.InvalidInput):
                list(read(**kw))
    assert demo.requests == []


def test_a_failed_arrow_read_keeps_the_table_so_far(client: sn.Client, demo: DemoService) -> None:
    demo.add_fault("profiles/list", "status", status=400, after=2)
    with pytest.raises(sn.StoplistError) as info:
        sn.ProfilesRequest(client, demo.db_id, limit=10, progress=False).to_arrow()
    partial = info.value.partial
    assert isinstance(partial, pa.Table)
    assert partial.schema.metadata[b"profiles"] == b"20"
    demo.clear_faults()
    rest = sn.ProfilesRequest(
        client, demo.db_id, limit=10, progress=False, from_id=info.value.resume_from
    ).to_arrow()
    ids = partial.column("profile_id").to_pylist() + rest.column("profile_id").to_pylist()
    assert list(dict.fromkeys(ids)) == [p["id"] for p in demo.profiles]
