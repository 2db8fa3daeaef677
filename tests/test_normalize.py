"""Tests for stoplist_nb.profiles.normalize and stoplist_nb._json.reader (no network)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoplist_nb._json.mixed import is_json
from stoplist_nb._json.reader import Reply, read_reply
from stoplist_nb._json.records import records_to_arrow
from stoplist_nb.errors import InvalidInput
from stoplist_nb.profiles.normalize import (
    COMMON_COLUMNS,
    DTYPES,
    PROFILE_COLUMNS,
    SUBSCRIPTION_COLUMNS,
    ColumnRole,
    FlatPage,
    flatten_profiles,
    frame_from_tables,
    normalize_profiles,
    split_channels,
    table_from_tables,
)

FIXED = [*PROFILE_COLUMNS, *SUBSCRIPTION_COLUMNS, "cats"]


def email_sub(**extra: Any) -> dict[str, Any]:
    sub = {
        "channel": "email",
        "hash_id": "h-email",
        "is_delete": False,
        "priority": 1,
        "resource_id": 5,
        "status": "subscribed",
        "reg_info": {"date": "2023-05-01T12:34:56.789Z", "ip": "10.0.0.1"},
        "email_data": {
            "domain": "example.org",
            "domain_group": "other",
            "email": "ann@example.org",
            "md5": "0cc175b9c0f1b6a831c399e269772661",
        },
    }
    sub.update(extra)
    return sub


def sms_sub(**extra: Any) -> dict[str, Any]:
    sub = {
        "channel": "sms",
        "hash_id": "h-sms",
        "is_delete": False,
        "priority": 2,
        "resource_id": 5,
        "status": "unsubscribed",
        "reg_info": {"date": "2023-05-02T00:00:00.000Z", "ip": "10.0.0.2"},
        "phone_data": {"phone": "+79001234567", "md5": "92eb5ffee6ae2fec3ad71c777531578f"},
    }
    sub.update(extra)
    return sub


def push_sub(**extra: Any) -> dict[str, Any]:
    sub = {
        "channel": "push",
        "hash_id": "h-push",
        "is_delete": True,
        "priority": 0,
        "resource_id": 6,
        "status": "subscribed",
        "reg_info": {"date": "2023-05-03T08:00:00.500Z", "ip": "10.0.0.3"},
        "push_data": {"provider": "fcm", "subscription_id": "tok-1"},
        "custom_fields": {"_browser_name": "Firefox", "_device_type": "desktop"},
    }
    sub.update(extra)
    return sub


def telegram_sub() -> dict[str, Any]:
    return {
        "channel": "telegram_bot",
        "hash_id": "h-tg",
        "status": "subscribed",
        "priority": 3,
        "resource_id": 7,
        "reg_info": {"date": "2023-05-04T00:00:00.000Z", "ip": "10.0.0.4"},
        "cc_data": {"id": 123456789},
    }


def profile(pid: str, subs: Any = None, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"id": pid, "_fname": "Анна", "_lname": "Smith", **fields}
    if subs is not None:
        record["subscriptions"] = subs
    return record


def values(column: pd.Series) -> list[Any]:
    """The column as a list, with None for every missing value."""
    return [None if v is None or v is pd.NA or v is pd.NaT else v for v in column.tolist()]


def page_bytes(records: list[dict[str, Any]], **envelope: Any) -> bytes:
    body = {"data": records, "error": 0, "error_text": "Successful operation", **envelope}
    return json.dumps(body, ensure_ascii=False).encode()


def from_bytes(*pages: list[dict[str, Any]]) -> pd.DataFrame:
    tables = []
    for records in pages:
        reply = read_reply(page_bytes(records))
        assert reply.data is not None
        tables.append(flatten_profiles(reply.data))
    return frame_from_tables(tables)


def from_dicts(*pages: list[dict[str, Any]]) -> pd.DataFrame:
    return frame_from_tables([flatten_profiles(records_to_arrow(p)) for p in pages])


@pytest.fixture
def arrow_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if read_reply leaves the pyarrow route for json.loads."""
    import stoplist_nb._json.reader as aj

    def refuse(records: Any) -> Any:
        raise AssertionError("read_reply fell back to json.loads")

    monkeypatch.setattr(aj, "records_to_arrow", refuse)


SPEC_PAGE = [
    profile("a" * 24, [email_sub(), sms_sub()], _city="Москва"),
    profile("b" * 24, [push_sub(cats=["news", "promo"])]),
    profile("c" * 24, [telegram_sub()]),
    profile("d" * 24, []),
]


# --- rows, columns and values ----------------------------------------------------


def test_spec_example_values() -> None:
    df = normalize_profiles(SPEC_PAGE)
    assert list(df["profile_id"]) == ["a" * 24, "a" * 24, "b" * 24, "c" * 24, "d" * 24]
    assert df["channel"].tolist()[:4] == ["email", "sms", "push", "telegram_bot"]
    assert df["channel"].isna().tolist() == [False] * 4 + [True]
    first = df.iloc[0]
    assert first["email"] == "ann@example.org"
    assert first["email_md5"] == "0cc175b9c0f1b6a831c399e269772661"
    assert first["email_domain"] == "example.org"
    assert first["email_domain_group"] == "other"
    assert first["reg_ip"] == "10.0.0.1"
    assert first["reg_date"] == pd.Timestamp("2023-05-01T12:34:56.789Z")
    assert first["_city"] == "Москва"
    assert df.iloc[1]["phone"] == "+79001234567"
    assert df.iloc[1]["phone_md5"] == "92eb5ffee6ae2fec3ad71c777531578f"
    assert df.iloc[2]["push_provider"] == "fcm"
    assert df.iloc[2]["push_subscription_id"] == "tok-1"
    assert df.iloc[2]["cf._browser_name"] == "Firefox"
    assert list(df.iloc[2]["cats"]) == ["news", "promo"]
    assert df.iloc[3]["cc_data.id"] == 123456789
    assert pd.isna(df.iloc[0]["phone"])
    assert pd.isna(df.iloc[4]["priority"])
    assert isinstance(df.index, pd.RangeIndex)


def test_column_order() -> None:
    df = normalize_profiles(SPEC_PAGE)
    assert list(df.columns) == [
        "profile_id",
        "_fname",
        "_lname",
        "_city",
        *SUBSCRIPTION_COLUMNS,
        "cc_data.id",
        "cf._browser_name",
        "cf._device_type",
        "cats",
    ]


def test_fixed_dtypes() -> None:
    df = normalize_profiles(SPEC_PAGE)
    for name in FIXED:
        assert df[name].dtype == DTYPES[name], name
    assert str(df["profile_id"].dtype) == "string"
    assert df["profile_id"].dtype.storage == "pyarrow"
    assert str(df["priority"].dtype) == "Int64"
    assert str(df["is_delete"].dtype) == "boolean"
    assert str(df["reg_date"].dtype) == "datetime64[ms, UTC]"
    assert df["cats"].dtype == object  # Python lists: the frame goes through to_parquet


def test_profiles_without_subscriptions_appear_once() -> None:
    records = [
        {"id": "1", "subscriptions": []},
        {"id": "2", "subscriptions": None},
        {"id": "3"},
        {"id": "4", "subscriptions": [sms_sub(), email_sub(), push_sub()]},
        {"id": "5", "subscriptions": []},
    ]
    df = normalize_profiles(records)
    assert df["profile_id"].tolist() == ["1", "2", "3", "4", "4", "4", "5"]
    assert df["channel"].tolist()[3:6] == ["sms", "email", "push"]
    assert df.loc[[0, 1, 2, 6], SUBSCRIPTION_COLUMNS].isna().all().all()
    assert df.loc[[0, 1, 2, 6], "cats"].isna().all()


def test_unknown_channels_and_blocks() -> None:
    sub = {
        "channel": "whatsapp",
        "hash_id": "h1",
        "foo_data": {"x": "1", "y": 2},
        "reg_info": {"date": "2023-01-01T00:00:00.000Z", "ua": "Mozilla"},
        "email_data": {"email": "a@b.c", "extra": True},
        "weird": "w",
    }
    df = normalize_profiles([profile("p1", [sub, telegram_sub()])])
    assert df["foo_data.x"].tolist()[0] == "1"
    assert df["foo_data.y"].dtype == "Int64"
    assert df["reg_info.ua"].iloc[0] == "Mozilla"
    assert bool(df["email_data.extra"].iloc[0]) is True
    assert df["subscription.weird"].iloc[0] == "w"
    assert df["cc_data.id"].tolist()[1] == 123456789
    dynamic = list(df.columns[df.columns.get_loc("push_subscription_id") + 1 : -1])
    # blocks (first-seen order), then other keys
    assert dynamic == [
        "foo_data.x",
        "foo_data.y",
        "reg_info.ua",
        "email_data.extra",
        "cc_data.id",
        "subscription.weird",
    ]


def test_missing_blocks_and_keys_are_null() -> None:
    df = normalize_profiles([profile("p", [{"channel": "email"}, {"status": "subscribed"}])])
    assert df["channel"].tolist()[0] == "email"
    assert pd.isna(df["channel"].iloc[1])
    assert df[["email", "reg_date", "priority", "is_delete", "cats"]].isna().all().all()
    assert list(df.columns) == ["profile_id", "_fname", "_lname", *SUBSCRIPTION_COLUMNS, "cats"]


def test_custom_fields_become_cf_columns() -> None:
    subs = [
        email_sub(custom_fields={"_device_type": "mobile", "score": 5}),
        sms_sub(custom_fields={"source": "form", "score": 7.5}),
        sms_sub(),
    ]
    df = normalize_profiles([profile("p", subs)])
    assert df["cf._device_type"].tolist()[0] == "mobile"
    assert df["cf.source"].tolist()[1] == "form"
    assert df["cf.score"].dtype == "Float64"
    assert df["cf.score"].tolist()[:2] == [5.0, 7.5]
    assert pd.isna(df["cf.score"].iloc[2])


def test_cats_list_column() -> None:
    subs = [email_sub(cats=["a", "акции"]), email_sub(cats=[]), email_sub(), email_sub(cats=None)]
    df = normalize_profiles([profile("p", subs)])
    assert list(df["cats"].iloc[0]) == ["a", "акции"]
    assert list(df["cats"].iloc[1]) == []
    assert df["cats"].isna().tolist() == [False, False, True, True]


def test_cats_of_other_types_keep_their_text_beside_the_lists() -> None:
    subs = [email_sub(cats=[1, 2]), email_sub(cats="promo"), email_sub(cats=["a", None])]
    df = normalize_profiles([profile("p", subs)])
    assert df["cats"].tolist() == [None, ["promo"], ["a", None]]  # a bare string: one item
    assert df["cats__text"].tolist() == ["[1,2]", pd.NA, pd.NA]  # [1, 2] is not ["1", "2"]
    assert df["cats"].dtype == DTYPES["cats"]


def test_reg_date_is_utc_and_garbage_is_nat() -> None:
    dates = [
        "2023-05-01T12:34:56.789Z",
        "2023-05-01T15:34:56.789+03:00",
        "not a date",
        "2023-13-45T00:00:00.000Z",
        None,
        "2023-05-01T12:34:56.123456Z",
    ]
    subs = [email_sub(reg_info={"date": d}) for d in dates] + [email_sub(reg_info=None)]
    df = normalize_profiles([profile("p", subs)])
    col = df["reg_date"]
    assert str(col.dtype) == "datetime64[ms, UTC]"
    assert col.iloc[0] == pd.Timestamp("2023-05-01 12:34:56.789", tz="UTC")
    assert col.iloc[1] == col.iloc[0]
    # What is no date, or finer than the column's milliseconds, is kept as sent beside it.
    assert col.isna().tolist() == [False, False, True, True, True, True, True]
    assert df["reg_date__text"].tolist() == [
        *[pd.NA] * 2,
        "not a date",
        "2023-13-45T00:00:00.000Z",
        pd.NA,
        "2023-05-01T12:34:56.123456Z",
        pd.NA,
    ]


def test_reg_date_number_is_nat() -> None:
    df = normalize_profiles([profile("p", [email_sub(reg_info={"date": 1700000000})])])
    assert df["reg_date"].isna().all()


def test_numbers_sent_for_text_and_text_for_numbers() -> None:
    subs = [
        sms_sub(phone_data={"phone": 79001234567, "md5": "m"}, priority="2", resource_id=" 7 "),
        sms_sub(priority="x", resource_id=3.0, is_delete="true"),
        sms_sub(priority=2.5, resource_id=True, is_delete=0),
    ]
    df = normalize_profiles([{"id": 123, "subscriptions": subs}])
    assert df["profile_id"].tolist() == ["123"] * 3
    assert df["phone"].tolist()[0] == "79001234567"
    # A value joins a typed column only as itself; anything else is kept as its text.
    assert df["priority"].tolist() == [2, pd.NA, pd.NA]
    assert df["priority__text"].tolist() == [pd.NA, "x", "2.5"]
    assert df["resource_id"].tolist() == [pd.NA, 3, pd.NA]
    assert df["resource_id__text"].tolist() == [" 7 ", pd.NA, "true"]
    assert df["is_delete"].isna().tolist() == [False, False, True]
    assert df["is_delete"].tolist()[:2] == [False, True]
    assert df["is_delete__text"].tolist() == [pd.NA, pd.NA, "0"]


def test_float_phone_keeps_its_digits() -> None:
    df = normalize_profiles([profile("p", [sms_sub(phone_data={"phone": 79001234567.0})])])
    assert df["phone"].iloc[0] == "79001234567"


def test_id_from_underscore_id() -> None:
    df = normalize_profiles([{"_id": "x1", "_fname": "A"}, {"id": "x2"}])
    assert df["profile_id"].tolist() == ["x1", "x2"]
    assert "_id" not in df.columns
    assert "id" not in df.columns


def test_profile_values_kept_as_returned() -> None:
    records = [
        {"id": "1", "phones": ["+7900", "+7901"], "meta": {"a": 1}, "age": 30, "vip": True},
        {"id": "2", "phones": [], "meta": {"a": 2}, "age": None, "rate": 0.5},
    ]
    df = normalize_profiles(records)
    assert df["phones"].tolist() == [["+7900", "+7901"], []]
    assert df["meta"].tolist() == [{"a": 1}, {"a": 2}]
    assert df["phones"].dtype == object
    assert df["age"].dtype == "Int64"
    assert df["vip"].dtype == "boolean"
    assert df["rate"].dtype == "Float64"


def test_profile_field_colliding_with_subscription_column_is_prefixed() -> None:
    df = normalize_profiles([{"id": "1", "email": "p@x.y", "subscriptions": [email_sub()]}])
    assert df["profile.email"].iloc[0] == "p@x.y"
    assert df["email"].iloc[0] == "ann@example.org"


def test_a_profile_field_and_a_subscription_key_of_one_name_never_meet() -> None:
    page1 = [{"id": "1", "note": "profile note"}]
    page2 = [{"id": "2", "note": "again", "subscriptions": [{"channel": "sms", "note": "s"}]}]
    df = from_bytes(page1, page2)
    assert df["note"].tolist() == ["profile note", "again"]
    assert df["subscription.note"].tolist() == [pd.NA, "s"]
    assert "profile.note" not in df.columns


def test_subscriptions_of_another_shape_stay_a_profile_field() -> None:
    df = normalize_profiles([{"id": "1", "subscriptions": "none"}])
    assert df["subscriptions"].tolist() == ["none"]
    assert df["channel"].isna().all()


def test_row_order_is_kept() -> None:
    records = [
        profile(f"{i:024x}", [sms_sub(hash_id=f"{i}-{j}") for j in range(i % 3)]) for i in range(50)
    ]
    df = normalize_profiles(records)
    expected = [
        (f"{i:024x}", f"{i}-{j}" if i % 3 else None)
        for i in range(50)
        for j in range(max(1, i % 3))
    ]
    got = [
        (p, None if pd.isna(h) else h) for p, h in zip(df["profile_id"], df["hash_id"], strict=True)
    ]
    assert got == expected


# --- empty and invalid input -----------------------------------------------------


@pytest.mark.parametrize("empty", [[], pa.array([]), pa.array([], pa.struct([]))])
def test_empty_input_keeps_fixed_columns_and_dtypes(empty: Any) -> None:
    df = normalize_profiles(empty)
    assert list(df.columns) == FIXED
    assert len(df) == 0
    assert isinstance(df.index, pd.RangeIndex)
    for name in FIXED:
        assert df[name].dtype == DTYPES[name], name


def test_frame_from_no_tables() -> None:
    df = frame_from_tables([])
    assert list(df.columns) == FIXED
    assert dict(df.dtypes) == DTYPES


@pytest.mark.parametrize(
    "bad",
    ["abc", b"abc", 5, None, {"id": "1"}, [1, 2], [{"id": "1"}, "x"], pa.array([1, 2])],
)
def test_invalid_input(bad: Any) -> None:
    with pytest.raises(InvalidInput):
        normalize_profiles(bad)


def test_null_profile_in_arrow_input() -> None:
    with pytest.raises(InvalidInput, match="#1"):
        normalize_profiles(pa.array([{"id": "1"}, None]))


def test_split_channels_needs_channel_column() -> None:
    with pytest.raises(InvalidInput):
        split_channels(pd.DataFrame({"a": [1]}))


# --- Arrow input, slices and chunks -----------------------------------------------


def test_sliced_and_chunked_arrow_input() -> None:
    records = [profile(str(i), [sms_sub(hash_id=str(i))] * (i % 3)) for i in range(10)]
    array = records_to_arrow(records)
    pd.testing.assert_frame_equal(
        normalize_profiles(array.slice(3, 5)), normalize_profiles(records[3:8])
    )
    chunked = pa.chunked_array([array.slice(0, 4), array.slice(4)])
    pd.testing.assert_frame_equal(normalize_profiles(chunked), normalize_profiles(records))


def test_nulls_inside_leaves_survive_row_expansion() -> None:
    subs = [
        sms_sub(priority=None, status=None, cats=["x"], is_delete=None),
        sms_sub(cats=None, hash_id=None),
    ]
    records = [
        {"id": "0"},
        {"id": "1", "subscriptions": subs},
        {"id": "2", "subscriptions": []},
        {"id": "3", "subscriptions": subs[::-1]},
    ]
    df = normalize_profiles(records)
    assert df["priority"].isna().tolist() == [True, True, False, True, False, True]
    assert df["status"].isna().tolist() == [True, True, False, True, False, True]
    assert df["hash_id"].isna().tolist() == [True, False, True, True, True, False]
    assert df["is_delete"].isna().tolist() == [True, True, False, True, False, True]
    assert df["cats"].isna().tolist() == [True, False, True, True, True, False]


def test_nested_and_float_leaves_survive_row_expansion() -> None:
    sub = {
        "channel": "x",
        "foo_data": {"deep": {"a": 1}},
        "tags": [{"k": "v"}],
        "score": 1.5,
        "when": "2024-01-01",
    }
    records = [{"id": "0"}, {"id": "1", "subscriptions": [sub, {"channel": "y"}]}, {"id": "2"}]
    for df in (normalize_profiles(records), from_bytes(records)):
        assert df["foo_data.deep"].tolist() == [None, {"a": 1}, None, None]
        assert df["subscription.tags"].tolist() == [None, [{"k": "v"}], None, None]
        assert df["subscription.score"].dtype == "Float64"
        assert df["subscription.score"].isna().tolist() == [True, False, True, True]
        assert df["subscription.when"].tolist()[1] == "2024-01-01"


# --- schema drift between pages ----------------------------------------------------


def test_schema_drift_between_pages() -> None:
    page1 = [
        profile("1", [email_sub(custom_fields={"n": 1, "gone": None})], code=1, empty=None),
        profile("2", [], code=2),
    ]
    page2 = [
        profile(
            "3",
            [email_sub(custom_fields={"n": "x", "gone": 5}, extra_key="e")],
            code="A",
            empty=4,
            late=True,
        )
    ]
    for df in (from_bytes(page1, page2), from_dicts(page1, page2)):
        assert df["profile_id"].tolist() == ["1", "2", "3"]
        assert df["code"].dtype == DTYPES["profile_id"]  # int then str -> text
        assert df["code"].tolist() == ["1", "2", "A"]
        assert df["empty"].dtype == "Int64"  # all null on page 1 does not count
        assert df["empty"].isna().tolist() == [True, True, False]
        assert df["late"].dtype == "boolean"
        assert df["late"].isna().tolist() == [True, True, False]
        assert values(df["cf.n"]) == ["1", None, "x"]
        assert df["cf.gone"].dtype == "Int64"
        assert df["subscription.extra_key"].isna().tolist() == [True, True, False]
        for name in FIXED:
            assert df[name].dtype == DTYPES[name]


def test_fixed_columns_drift_between_pages() -> None:
    page1 = [profile("1", [sms_sub(priority=1)])]
    page2 = [profile("2", [sms_sub(priority="2", phone_data={"phone": 79001234567})])]
    df = from_bytes(page1, page2)
    assert df["priority"].tolist() == [1, 2]
    assert df["phone"].tolist() == ["+79001234567", "79001234567"]


def test_pages_with_objects_of_different_shapes() -> None:
    page1 = [profile("1", x={"a": 1})]
    page2 = [profile("2", x={"b": "2"})]
    df = from_bytes(page1, page2)
    assert df["x"].dtype == object
    assert df["x"].tolist() == [{"a": 1}, {"b": "2"}]


def test_object_beside_a_number_is_text_within_a_page_and_across_pages() -> None:
    # One rule (stoplist_nb._json.kinds.common_kind) for both: a page, and pages merged.
    across = from_bytes([profile("1", x={"a": 1})], [profile("2", x=2)])
    within = from_dicts([profile("1", x={"a": 1}), profile("2", x=2)])
    for df in (across, within):
        assert df["x"].dtype == "string[pyarrow]"
        assert df["x"].tolist() == ['{"a":1}', "2"]


def test_foreign_table_roles_guessed_from_names() -> None:
    page = flatten_profiles(records_to_arrow(SPEC_PAGE))
    guessed = FlatPage.from_table(page.table)
    assert guessed.roles == page.roles
    pd.testing.assert_frame_equal(frame_from_tables([guessed]), frame_from_tables([page]))


def test_roles_travel_beside_the_table_not_in_its_metadata() -> None:
    page = flatten_profiles(records_to_arrow([profile("1", x=1, cf=2)]))
    assert page.table.schema.metadata is None
    assert page.roles[0] == ColumnRole("profile_id", "id", "profile_id")
    assert ColumnRole("x", "profile", "x") in page.roles
    with pytest.raises(AttributeError):
        page.table = page.table  # type: ignore[misc]


def test_profile_field_meets_across_pages_by_its_source_key() -> None:
    # The name of a column depends on its field alone, never on what else a page holds.
    one = flatten_profiles(records_to_arrow([profile("1", [{"channel": "email", "x": 1}], x="a")]))
    two = flatten_profiles(records_to_arrow([profile("2", x="b", **{"cf.x": 3})]))
    assert ColumnRole("x", "profile", "x") in one.roles
    assert ColumnRole("subscription.x", "extra", "subscription.x") in one.roles
    assert ColumnRole("x", "profile", "x") in two.roles
    assert ColumnRole("profile.cf.x", "profile", "cf.x") in two.roles
    df = frame_from_tables([one, two])
    assert df["x"].tolist() == ["a", "b"]
    assert values(df["subscription.x"]) == [1, None]


def test_frame_from_tables_refuses_a_bare_table() -> None:
    table = flatten_profiles(records_to_arrow(SPEC_PAGE)).table
    with pytest.raises(InvalidInput, match=r"FlatPage\.from_table"):
        frame_from_tables([table])  # type: ignore[list-item]
    with pytest.raises(InvalidInput, match="roles must name"):
        FlatPage(table, ())


# --- read_reply ---------------------------------------------------------------------


@pytest.mark.usefixtures("arrow_only")
def test_read_reply_normal_page() -> None:
    reply = read_reply(page_bytes(SPEC_PAGE, next_from_id="abc", total_count=4))
    assert isinstance(reply, Reply)
    assert len(reply.data) == 4
    assert pa.types.is_struct(reply.data.type)
    assert reply.envelope == {
        "error": 0,
        "error_text": "Successful operation",
        "next_from_id": "abc",
        "total_count": 4,
    }


def test_bytes_and_dicts_give_equal_frames() -> None:
    pd.testing.assert_frame_equal(from_bytes(SPEC_PAGE), normalize_profiles(SPEC_PAGE))


def test_read_reply_type_drift_falls_back() -> None:
    records = [profile("1", [sms_sub(priority=2)]), profile("2", [sms_sub(priority="3")])]
    reply = read_reply(page_bytes(records, next_from_id="n"))
    assert len(reply.data) == 2
    assert reply.envelope["next_from_id"] == "n"
    df = frame_from_tables([flatten_profiles(reply.data)])
    assert df["priority"].tolist() == [2, 3]
    pd.testing.assert_frame_equal(df, normalize_profiles(records))


@pytest.mark.usefixtures("arrow_only")
def test_read_reply_keeps_date_like_strings() -> None:
    # pyarrow.json would turn these into timestamps and lose the text
    records = [profile("1", _bdate="1990-05-01", _regdate="2020-01-02 03:04:05")]
    reply = read_reply(page_bytes(records, when="2024-01-01"))
    assert reply.envelope["when"] == "2024-01-01"
    df = frame_from_tables([flatten_profiles(reply.data)])
    assert df["_bdate"].tolist() == ["1990-05-01"]
    assert df["_regdate"].tolist() == ["2020-01-02 03:04:05"]


@pytest.mark.usefixtures("arrow_only")
def test_read_reply_keeps_date_like_strings_at_any_depth() -> None:
    records = [
        profile(
            "1",
            [
                email_sub(custom_fields={"seen": "2024-02-03"}, when=["2020-01-01", None]),
                sms_sub(reg_info={"date": "2023-05-01T12:34:56Z", "ip": "1.1.1.1"}),
            ],
            meta={"at": "2021-01-01 10:00"},
        ),
        profile("2", [sms_sub(custom_fields=None)], meta=None, _bdate="1990-05-01"),
        profile("3", None),
    ]
    reply = read_reply(page_bytes(records, stamp="2024-01-01T00:00:00"))
    assert reply.envelope["stamp"] == "2024-01-01T00:00:00"
    df = frame_from_tables([flatten_profiles(reply.data)])
    pd.testing.assert_frame_equal(df, normalize_profiles(records))
    assert values(df["cf.seen"]) == ["2024-02-03", None, None, None]
    assert df["subscription.when"].tolist()[0] == ["2020-01-01", None]
    assert df["meta"].tolist()[0] == {"at": "2021-01-01 10:00"}
    assert values(df["_bdate"]) == [None, None, "1990-05-01", None]
    assert df["reg_date"].iloc[1] == pd.Timestamp("2023-05-01T12:34:56Z")


def test_read_reply_leading_null_in_list() -> None:
    # pyarrow.json mishandles a list that opens with null before an object
    records = [profile("1", [None, sms_sub()]), profile("2", [sms_sub()])]
    reply = read_reply(page_bytes(records))
    df = frame_from_tables([flatten_profiles(reply.data)])
    assert df["profile_id"].tolist() == ["1", "1", "2"]
    assert df["channel"].isna().tolist() == [True, False, False]


@pytest.mark.parametrize(
    ("body", "rows"),
    [
        (b'{"data": [], "error": 0}', 0),
        (b'{"data": null, "error": 0}', 0),
        (b'{"error": 0, "error_text": "ok"}', 0),
    ],
)
def test_read_reply_without_rows(body: bytes, rows: int) -> None:
    reply = read_reply(body)
    assert reply.data is None or len(reply.data) == rows
    assert reply.envelope["error"] == 0
    if reply.data is not None:
        assert len(frame_from_tables([flatten_profiles(reply.data)])) == 0


def test_read_reply_data_object_goes_to_envelope() -> None:
    reply = read_reply(b'{"data": {"task_id": "t1"}, "error": 0}')
    assert reply.data is None
    assert reply.envelope == {"data": {"task_id": "t1"}, "error": 0}


@pytest.mark.usefixtures("arrow_only")
def test_read_reply_pretty_printed() -> None:
    body = json.dumps({"data": SPEC_PAGE, "error": 0}, indent=2, ensure_ascii=False).encode()
    reply = read_reply(body)
    assert len(reply.data) == 4
    pd.testing.assert_frame_equal(
        frame_from_tables([flatten_profiles(reply.data)]), normalize_profiles(SPEC_PAGE)
    )


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"   ",
        b"null",
        b"\nnull",
        b"[1, 2]",
        b'"text"',
        b"42",
        b"<html>secret token=abc</html>",
        b'{"data": [1',
        b'{"a": 1}\n{"b": 2}',
        b'{"a": 1} trailing',
        b'{"a": "\xff"}',
    ],
)
def test_read_reply_rejects_non_objects(body: bytes) -> None:
    with pytest.raises(
        ValueError, match=r"^the reply is not (a JSON object|valid UTF-8, as JSON must be)$"
    ) as info:
        read_reply(body)
    # the decoder's error holds the body: it must not hang off the exception
    assert info.value.__cause__ is None
    assert info.value.__context__ is None or info.value.__suppress_context__


# --- records_to_arrow ---------------------------------------------------------------


def test_records_to_arrow_plain() -> None:
    array = records_to_arrow([{"a": 1, "b": "x"}, {"a": None}])
    assert array.type == pa.struct([("a", pa.int64()), ("b", pa.string())])


def test_records_to_arrow_nested_conflicts() -> None:
    records = [
        {"a": {"b": 1}, "l": [{"v": 1}], "o": {"k": 1}, "big": 1, "ok": 1.5},
        {"a": {"b": "x"}, "l": [{"v": True}, {"v": None}], "o": "flat", "big": 2**70, "ok": 2},
    ]
    array = records_to_arrow(records)
    values = array.to_pylist()
    # Each leaf of mixed kinds is a JSON leaf: its values come back as they were sent.
    assert [v["a"]["b"] for v in values] == [1, "x"]
    assert [[e["v"] for e in v["l"]] for v in values] == [[1], [True, None]]
    assert [v["o"] for v in values] == [{"k": 1}, "flat"]
    assert [v["big"] for v in values] == [1, 2**70]
    assert [v["ok"] for v in values] == [1.5, 2.0]
    struct = array.type
    leaves = [struct["a"].type["b"], struct["l"].type.value_type["v"], struct["o"], struct["big"]]
    for leaf in leaves:
        assert is_json(leaf.type)
    assert pa.types.is_floating(struct["ok"].type)


def test_records_to_arrow_unconvertible() -> None:
    with pytest.raises(InvalidInput):
        records_to_arrow([{"a": object()}])


# --- split_channels -------------------------------------------------------------------


def test_split_channels() -> None:
    df = normalize_profiles(SPEC_PAGE)
    parts = split_channels(df)
    assert list(parts) == ["email", "sms", "push", "telegram_bot"]
    profile_cols = ["profile_id", "_fname", "_lname", "_city"]
    common = [c for c in df.columns if c in COMMON_COLUMNS]
    assert list(parts["email"].columns) == [
        *profile_cols,
        *common[:-1],
        "email",
        "email_md5",
        "email_domain",
        "email_domain_group",
        "cats",
    ]
    assert list(parts["push"].columns) == [
        *profile_cols,
        *common[:-1],
        "push_provider",
        "push_subscription_id",
        "cf._browser_name",
        "cf._device_type",
        "cats",
    ]
    assert list(parts["telegram_bot"].columns) == [
        *profile_cols,
        *common[:-1],
        "cc_data.id",
        "cats",
    ]
    assert parts["sms"]["phone"].tolist() == ["+79001234567"]
    for frame in parts.values():
        assert isinstance(frame.index, pd.RangeIndex)
        assert frame.index.start == 0
    assert sum(len(f) for f in parts.values()) == int(df["channel"].notna().sum())


def test_split_channels_empty() -> None:
    assert split_channels(normalize_profiles([])) == {}


# --- property -------------------------------------------------------------------------

_text = st.text(max_size=5)
_leaf = st.one_of(st.none(), st.integers(-5, 5), _text, st.booleans())
_sub = st.fixed_dictionaries(
    {"channel": st.sampled_from(["email", "sms", "push", "viber", "x"])},
    optional={
        "priority": st.one_of(st.none(), st.integers(0, 9)),
        "status": st.one_of(st.none(), _text),
        "is_delete": st.one_of(st.none(), st.booleans()),
        "cats": st.one_of(st.none(), st.lists(_text, max_size=2)),
        "email_data": st.one_of(st.none(), st.fixed_dictionaries({"email": _text})),
        "custom_fields": st.dictionaries(st.sampled_from(["a", "_b"]), _leaf, max_size=2),
    },
)
_profile = st.fixed_dictionaries(
    {"id": st.text(min_size=1, max_size=4)},
    optional={
        "subscriptions": st.one_of(st.none(), st.lists(_sub, max_size=4)),
        "_fname": st.one_of(st.none(), _text),
        "n": _leaf,
    },
)


@pytest.mark.slow
@given(st.lists(_profile, max_size=12))
def test_property_rows_follow_subscriptions(records: list[dict[str, Any]]) -> None:
    df = normalize_profiles(records)
    subs = [r.get("subscriptions") or [] for r in records]
    assert len(df) == sum(max(1, len(s)) for s in subs)
    expected_ids = [
        r["id"] for r, s in zip(records, subs, strict=True) for _ in range(max(1, len(s)))
    ]
    assert df["profile_id"].tolist() == expected_ids
    flat = [x for s in subs for x in (s or [None])]
    assert [None if pd.isna(c) else c for c in df["channel"]] == [
        None if x is None else x["channel"] for x in flat
    ]
    assert [None if pd.isna(p) else p for p in df["priority"]] == [
        None if x is None else x.get("priority") for x in flat
    ]
    cats = [None if c is None or c is pd.NA else list(c) for c in df["cats"]]
    assert cats == [None if x is None else x.get("cats") for x in flat]
    for name in FIXED:
        assert df[name].dtype == DTYPES[name]
    body = json.dumps({"data": records, "error": 0}).encode()
    reply = read_reply(body)
    assert reply.data is not None
    pd.testing.assert_frame_equal(frame_from_tables([flatten_profiles(reply.data)]), df)


def test_records_to_arrow_restores_first_seen_key_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # The reordering older pyarrow needs, exercised on any version: nothing public
    # turns it on (the installed pyarrow decides), so the test sets the module's flag.
    import stoplist_nb._json.records as rec

    monkeypatch.setattr(rec, "_SORTS_KEYS", True)
    records = [
        {"b": 1, "a": {"z": 1, "y": [{"q": 1, "p": 2}]}, "e": {}},
        None,
        {"c": 3, "a": {"x": 1, "y": None}},
    ]
    array = records_to_arrow(records)
    assert [array.type.field(i).name for i in range(4)] == ["b", "a", "e", "c"]
    inner = array.type.field(1).type
    assert [inner.field(i).name for i in range(3)] == ["z", "y", "x"]
    assert [f.name for f in inner.field(1).type.value_type] == ["q", "p"]
    assert array.to_pylist()[1] is None
    assert array.to_pylist()[2]["a"] == {"z": None, "y": None, "x": 1}


def test_pages_fitted_ahead_and_threads_give_the_same_frame_and_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What the walk's workers do ahead (fit_fixed), and the threads that convert
    # the columns, change when the work is done, never what comes out.
    records = [
        [profile("1", [email_sub(priority="7", cats="a"), sms_sub(reg_info={"date": "x"})])],
        [profile("2", [sms_sub(priority=2, cats=["b", "c"], is_delete="yes")])],
        [profile("3", None, age=4)],
    ]

    def pages(objects: bool | None) -> list[FlatPage]:
        flat = [flatten_profiles(read_reply(page_bytes(r)).data) for r in records]
        return flat if objects is None else [page.fit_fixed(objects=objects) for page in flat]

    want = frame_from_tables(pages(None))
    assert values(want["is_delete__text"]) == [None, None, "yes", None]  # a twin, too
    assert want["cats"].tolist() == [["a"], None, ["b", "c"], None]
    monkeypatch.setattr("stoplist_nb.profiles.normalize.ROWS_PER_THREAD", 1)
    for objects in (None, False, True):
        for workers in (1, 3):
            got = frame_from_tables(pages(objects), workers=workers)
            pd.testing.assert_frame_equal(got, want)
        got_arrow = frame_from_tables(pages(objects), dtype_backend="pyarrow", workers=3)
        pd.testing.assert_frame_equal(
            got_arrow, frame_from_tables(pages(None), dtype_backend="pyarrow")
        )
        assert table_from_tables(pages(objects)).equals(table_from_tables(pages(None)))
    # Fitted once: the page hands back the same values when asked again.
    page = pages(True)[0]
    assert page.fitted("cats") is page.fitted("cats")
    # The lists made ahead go to one frame only: two frames never share a list.
    first, second = frame_from_tables([page]), frame_from_tables([page])
    assert first["cats"][0] == second["cats"][0] == ["a"]
    first["cats"][0].append("b")
    assert second["cats"][0] == ["a"]


def test_a_table_built_elsewhere_gets_every_fixed_column_all_null() -> None:
    # A page without the fixed columns (FlatPage.from_table): each is there, all null,
    # in its dtype, whether the page was fitted ahead or not.
    table = pa.table({"profile_id": ["a", "b"], "channel": ["email", None], "age": [3, 4]})
    for page in (FlatPage.from_table(table), FlatPage.from_table(table).fit_fixed(objects=True)):
        df = frame_from_tables([page])
        assert values(df["channel"]) == ["email", None]
        assert df["cats"].tolist() == [None, None]
        for name in FIXED:
            assert df[name].dtype == DTYPES[name], name
        assert df["priority"].isna().all()
        assert df["reg_date"].isna().all()
        assert df["age"].tolist() == [3, 4]
