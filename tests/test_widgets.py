"""QueryBuilder driven through its child widgets, as a browser would, without one.

While a row is invalid the builder keeps the last valid query: ``.query``
does not change and ``.error`` / ``.message`` say what is wrong.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
from datetime import date
from typing import Any

import ipywidgets as w
import pandas as pd
import pytest

import stoplist_nb as sn
from stoplist_nb.demo import DemoService
from stoplist_nb.widgets import QueryBuilder
from stoplist_nb.widgets.rows import OPERATORS, ConditionRow

FIELDS = {
    "_city": "string",
    "loyalty_level": "int",
    "score": "float",
    "vip": "boolean",
    "phones": "array",
    "_bdate": "string",
    "meta": "object",
}


def builder(**kwargs: Any) -> QueryBuilder:
    return QueryBuilder(fields=FIELDS, **kwargs)


def fill(row: ConditionRow, field: str, op: str, value: Any = None) -> ConditionRow:
    row.field.value = field
    row.op.value = op
    if value is not None:
        row.value.value = value
    return row


def new_row(qb: QueryBuilder) -> ConditionRow:
    qb.add_button.click()
    return qb.root_group.rows[-1]


def shown_json(qb: QueryBuilder) -> Any:
    text = qb.json_view.value.removeprefix("<pre>").removesuffix("</pre>")
    return json.loads(html.unescape(text))


def output_text(qb: QueryBuilder) -> str:
    parts = []
    for out in qb.output.outputs:
        parts.append(out.get("text") or out["data"]["text/plain"])
    return "".join(parts)


def test_operators_per_field_type() -> None:
    qb = builder()
    row = new_row(qb)
    labels = {}
    for field in FIELDS:
        row.field.value = field
        labels[field] = [label for label, _ in row.op.options]
    assert labels["_city"] == [
        "==", "!=", "isin", "notin", "contains", "startswith", "regex", "exists",
    ]  # fmt: skip
    assert labels["loyalty_level"] == ["==", "!=", "<", "<=", ">", ">=", "isin", "notin", "exists"]
    assert labels["score"] == labels["loyalty_level"]
    assert labels["vip"] == ["==", "!=", "exists"]
    assert labels["phones"] == ["has element (==)", "isin", "notin", "exists"]
    assert labels["_bdate"] == ["==", "<", "<=", ">", ">=", "exists"]
    assert labels["meta"] == ["exists"]
    assert set(OPERATORS) == {"string", "int", "float", "boolean", "array", "date", "object"}


CASES = [
    ("_city", "$eq", "Kazan", "Kazan"),
    ("_city", "$ne", "Kazan", {"$ne": "Kazan"}),
    ("_city", "$in", ["Kazan", "Omsk"], {"$in": ["Kazan", "Omsk"]}),
    ("_city", "$nin", ["Kazan"], {"$nin": ["Kazan"]}),
    ("_city", "contains", "a.b", {"$regex": r"a\.b"}),
    ("_city", "startswith", "Mo", {"$regex": "^Mo"}),
    ("_city", "$regex", "^K.*n$", {"$regex": "^K.*n$"}),
    ("_city", "$exists", False, {"$exists": False}),
    ("loyalty_level", "$eq", 3, 3),
    ("loyalty_level", "$ne", 3, {"$ne": 3}),
    ("loyalty_level", "$lt", 3, {"$lt": 3}),
    ("loyalty_level", "$lte", 3, {"$lte": 3}),
    ("loyalty_level", "$gt", 3, {"$gt": 3}),
    ("loyalty_level", "$gte", 3, {"$gte": 3}),
    ("loyalty_level", "$in", ["1", "2"], {"$in": [1, 2]}),
    ("loyalty_level", "$nin", ["0"], {"$nin": [0]}),
    ("loyalty_level", "$exists", True, {"$exists": True}),
    ("score", "$gte", 2.5, {"$gte": 2.5}),
    ("score", "$lt", 50.0, {"$lt": 50}),
    ("score", "$in", ["1", "2.5"], {"$in": [1, 2.5]}),
    ("vip", "$eq", True, True),
    ("vip", "$eq", False, False),
    ("vip", "$ne", True, {"$ne": True}),
    ("vip", "$exists", True, {"$exists": True}),
    ("phones", "$eq", "+79001234567", "+79001234567"),
    ("phones", "$in", ["1", "2"], {"$in": ["1", "2"]}),
    ("phones", "$nin", ["1"], {"$nin": ["1"]}),
    ("phones", "$exists", False, {"$exists": False}),
    ("_bdate", "$eq", date(1990, 1, 31), "1990-01-31"),
    ("_bdate", "$lt", date(1990, 1, 1), {"$lt": "1990-01-01"}),
    ("_bdate", "$lte", date(1990, 1, 1), {"$lte": "1990-01-01"}),
    ("_bdate", "$gt", date(1990, 1, 1), {"$gt": "1990-01-01"}),
    ("_bdate", "$gte", date(1990, 5, 1), {"$gte": "1990-05-01"}),
    ("_bdate", "$exists", True, {"$exists": True}),
    ("meta", "$exists", True, {"$exists": True}),
]


@pytest.mark.parametrize(("field", "op", "value", "expected"), CASES)
def test_each_operator_gives_its_mongo_condition(
    field: str, op: str, value: Any, expected: Any
) -> None:
    qb = builder()
    fill(new_row(qb), field, op, value)
    assert qb.error is None
    assert qb.query == {field: expected}
    assert shown_json(qb) == qb.query
    assert qb.message.value == ""


def test_value_widgets_follow_field_and_operator() -> None:
    row = new_row(builder())
    kinds = []
    for field, op in [
        ("_city", "$eq"), ("_city", "$in"), ("loyalty_level", "$eq"), ("score", "$gt"),
        ("vip", "$eq"), ("vip", "$exists"), ("_bdate", "$lt"),
    ]:  # fmt: skip
        fill(row, field, op)
        kinds.append(type(row.value))
    assert kinds == [
        w.Text, w.TagsInput, w.IntText, w.FloatText, w.Checkbox, w.Checkbox, w.DatePicker,
    ]  # fmt: skip


def test_date_field_takes_a_date_picker_except_for_sets_and_exists() -> None:
    qb = builder()
    row = fill(new_row(qb), "_bdate", "$gte")
    assert isinstance(row.value, w.DatePicker)
    row.value.value = date(1990, 5, 1)
    assert qb.query == {"_bdate": {"$gte": "1990-05-01"}}
    fill(row, "_bdate", "$exists")
    assert isinstance(row.value, w.Checkbox)
    fill(new_row(qb), "subscriptions.reg_info.date", "$lt")
    assert isinstance(qb.root_group.rows[-1].value, w.DatePicker)


def test_empty_date_picker_is_an_incomplete_row() -> None:
    qb = builder()
    fill(new_row(qb), "vip", "$eq", True)
    row = fill(new_row(qb), "_bdate", "$lt")
    assert row.value.value is None
    assert qb.error is not None
    assert "_bdate: value must be a date" in qb.error
    assert "value must be a date" in html.unescape(qb.message.value)
    assert qb.query == {"vip": True}
    row.value.value = date(2000, 2, 29)
    assert qb.error is None
    assert qb.query == {"vip": True, "_bdate": {"$lt": "2000-02-29"}}


def test_ignore_case_only_for_regex_operators() -> None:
    qb = builder()
    row = fill(new_row(qb), "_city", "contains", "mos")
    assert row.case in row.children
    row.case.value = True
    assert qb.query == {"_city": {"$regex": "mos", "$options": "i"}}
    row.op.value = "$eq"
    assert row.case not in row.children


def test_and_of_rows_and_a_negated_or_group() -> None:
    qb = builder()
    fill(new_row(qb), "loyalty_level", "$gte", 3)
    qb.add_group_button.click()
    group = qb.root_group.groups[0]
    assert qb.query == {"loyalty_level": {"$gte": 3}}  # an empty group adds nothing
    group.mode.value = "or"
    group.add_button.click()
    fill(group.rows[0], "vip", "$eq", True)
    group.add_button.click()
    fill(group.rows[1], "_city", "$in", ["Kazan"])
    assert qb.query == {
        "$and": [
            {"loyalty_level": {"$gte": 3}},
            {"$or": [{"vip": True}, {"_city": {"$in": ["Kazan"]}}]},
        ]
    }
    group.negate.value = True
    assert qb.query == {
        "$and": [
            {"loyalty_level": {"$gte": 3}},
            {"$nor": [{"vip": True}, {"_city": {"$in": ["Kazan"]}}]},
        ]
    }
    qb.root_group.mode.value = "or"
    assert qb.query["$or"][0] == {"loyalty_level": {"$gte": 3}}
    assert qb.model == sn.parse_query(qb.query)
    assert shown_json(qb) == qb.query


def test_not_on_an_and_group_and_on_one_condition() -> None:
    qb = builder()
    fill(new_row(qb), "vip", "$eq", True)
    fill(new_row(qb), "_city", "$eq", "Omsk")
    qb.root_group.negate.value = True
    assert qb.query == {"$nor": [{"vip": True, "_city": "Omsk"}]}
    qb.root_group.rows[1].remove.click()
    assert qb.query == {"$nor": [{"vip": True}]}


def test_remove_row_and_group() -> None:
    qb = builder()
    first = fill(new_row(qb), "vip", "$eq", True)
    fill(new_row(qb), "_city", "$eq", "Omsk")
    first.remove.click()
    assert qb.query == {"_city": "Omsk"}
    assert len(qb.root_group.rows) == 1
    group = qb.root_group.add_group()
    fill(group.add_row(), "score", "$gt", 1.5)
    assert qb.query == {"_city": "Omsk", "score": {"$gt": 1.5}}
    group.remove.click()
    assert qb.root_group.groups == []
    assert qb.query == {"_city": "Omsk"}
    qb.root_group.rows[0].remove.click()
    assert qb.query == {}
    assert qb.model == sn.And()


def test_fields_limit_and_params() -> None:
    qb = builder()
    assert qb.params == {"query": {}, "limit": 1000}
    assert qb.fields_input.allowed_tags == sorted(FIELDS)
    assert qb.fields_input.allow_duplicates is False
    qb.fields_input.value = ["_city", "vip"]
    qb.limit_input.value = 50
    fill(new_row(qb), "vip", "$eq", True)
    assert qb.fields == ["_city", "vip"]
    assert qb.limit == 50
    assert qb.params == {"query": {"vip": True}, "fields": ["_city", "vip"], "limit": 50}
    qb.limit_input.value = 0
    assert qb.limit == 1


def test_field_list_as_names_or_frame() -> None:
    names = QueryBuilder(fields=["_city", "loyalty_level"])
    row = fill(new_row(names), "loyalty_level", "$eq", "x")  # no types: text
    assert names.query == {"loyalty_level": "x"}
    assert row.field.options == ("_city", "loyalty_level")
    frame = pd.DataFrame({"name": ["n"], "type": ["int"]})
    typed = QueryBuilder(fields=frame)
    fill(new_row(typed), "n", "$gt", 2)
    assert typed.query == {"n": {"$gt": 2}}
    with pytest.raises(sn.InvalidInput, match="fields must be"):
        QueryBuilder(fields=3)


def test_free_text_field_is_a_string() -> None:
    qb = builder()
    fill(new_row(qb), "custom.path", "startswith", "x")
    assert qb.query == {"custom.path": {"$regex": "^x"}}


@pytest.mark.parametrize(
    ("field", "op", "value", "message"),
    [
        ("score", "$in", ["1", "x"], "score: value must be a number, not 'x'"),
        ("loyalty_level", "$in", ["2.5"], "value must be a whole number"),
    ],
)
def test_invalid_value_keeps_the_last_valid_query(
    field: str, op: str, value: Any, message: str
) -> None:
    qb = builder()
    fill(new_row(qb), "vip", "$eq", True)
    row = fill(new_row(qb), field, op)
    before = qb.query
    row.value.value = value
    assert qb.error is not None
    assert message in qb.error
    assert message in html.unescape(qb.message.value)
    assert qb.query == before
    assert shown_json(qb) == before


def test_empty_field_is_reported_and_fixing_it_clears_the_message() -> None:
    qb = builder()
    row = new_row(qb)
    assert qb.error == "a condition needs a field"
    assert qb.query == {}
    fill(row, "vip", "$eq", True)
    assert qb.error is None
    assert qb.message.value == ""


def test_blank_tag_is_refused_by_the_widget_itself() -> None:
    qb = builder()
    row = fill(new_row(qb), "_city", "$in", [])
    assert qb.query == {"_city": {"$in": []}}
    # TagsInput refuses blank tags with a TraitError at the assignment, not later.
    with pytest.raises(Exception, match="blank"):
        row.value.value = [""]
    assert qb.query == {"_city": {"$in": []}}


ROUND_TRIPS = [
    {},
    {"_city": "Moscow"},
    {"_city": {"$in": ["Kazan", "Moscow"]}, "vip": True},
    {"loyalty_level": {"$gte": 3}, "score": {"$lt": 50}},
    {"$and": [{"loyalty_level": {"$gte": 1}}, {"loyalty_level": {"$lt": 5}}]},
    {"$or": [{"vip": True}, {"_city": {"$regex": "^Mo", "$options": "i"}}]},
    {"$nor": [{"vip": True}, {"_city": {"$regex": r"a\.b"}}]},
    {"$nor": [{"vip": True, "phones": {"$exists": False}}]},
    {"$nor": [{"vip": True}]},
    {
        "$and": [
            {"score": {"$gt": 2.5}},
            {"$or": [{"phones": "1"}, {"$nor": [{"meta": {"$exists": True}}]}]},
        ]
    },
    {"_bdate": {"$lt": "1990-01-01"}, "_city": {"$regex": "^K.*n$"}},
    {"unknown": {"$in": [1, 2]}, "other": False, "third": {"$nin": ["a"]}},
]  # fmt: skip


@pytest.mark.parametrize("query", ROUND_TRIPS)
def test_load_gives_back_the_same_query(query: dict[str, Any]) -> None:
    qb = builder()
    fill(new_row(qb), "vip", "$eq", False)  # replaced by load
    qb.load(query)
    assert qb.error is None
    assert qb.query == query
    assert shown_json(qb) == query


def test_load_of_what_the_builder_made() -> None:
    qb = builder()
    fill(new_row(qb), "loyalty_level", "$in", ["1", "2"])
    group = qb.root_group.add_group()
    group.mode.value, group.negate.value = "or", True
    fill(group.add_row(), "_city", "contains", "x")
    fill(group.add_row(), "score", "$gte", 7.25)
    inner = group.add_group()
    fill(inner.add_row(), "vip", "$ne", True)
    fill(inner.add_row(), "_bdate", "$exists", False)
    made = qb.query
    other = builder()
    other.load(made, fields=["_city"])
    assert other.query == made
    assert other.fields == ["_city"]
    assert other.root_group.groups[0].negate.value is True
    assert other.root_group.groups[0].mode.value == "or"


def test_load_of_a_date_shows_it_in_the_date_picker() -> None:
    qb = builder()
    query = {"_bdate": {"$gte": "1990-05-01"}}
    qb.load(query)
    row = qb.root_group.rows[0]
    assert isinstance(row.value, w.DatePicker)
    assert row.value.value == date(1990, 5, 1)
    assert qb.query == query
    other = builder()
    other.load(qb.query)
    assert other.query == query


@pytest.mark.parametrize("stamp", ["2023-07-14T09:26:53.512Z", "2023-07-14 09:26", "2023-02-30"])
def test_load_of_a_date_time_keeps_the_exact_string_in_a_text(stamp: str) -> None:
    qb = builder()
    query = {"subscriptions.reg_info.date": {"$lt": stamp}}
    qb.load(query)
    row = qb.root_group.rows[0]
    assert isinstance(row.value, w.Text)
    assert row.value.value == stamp
    assert qb.error is None
    assert qb.query == query
    row.op.value = "$gte"  # another comparison keeps the text
    assert row.value.value == stamp
    assert qb.query == {"subscriptions.reg_info.date": {"$gte": stamp}}
    row.value.value = "1990"
    assert qb.error is not None
    assert "value must be a date like 2024-01-31, not '1990'" in qb.error
    assert qb.query == {"subscriptions.reg_info.date": {"$gte": stamp}}
    row.field.value = "_bdate"  # another field: the picker again
    assert isinstance(row.value, w.DatePicker)


def test_load_shows_the_structure() -> None:
    qb = builder()
    qb.load({"$nor": [{"vip": True}, {"_city": "Omsk"}]})
    assert qb.root_group.negate.value is True
    assert qb.root_group.mode.value == "or"
    assert [r.field.value for r in qb.root_group.rows] == ["vip", "_city"]
    assert isinstance(qb.root_group.rows[0].value, w.Checkbox)


def test_load_guesses_types_of_unknown_fields() -> None:
    qb = QueryBuilder()
    qb.load({"level": {"$gte": 3}, "flag": True})
    assert [type(r.value) for r in qb.root_group.rows] == [w.IntText, w.Checkbox]


def test_load_of_an_int_into_a_float_field_and_back() -> None:
    qb = builder()
    qb.load({"score": {"$gte": 50.0}})
    assert qb.query == {"score": {"$gte": 50}}  # the same filter to MongoDB


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"phones": {"$size": 2}}, "cannot show \\$size"),
        ({"subscriptions": {"$elemMatch": {"channel": "email"}}}, "cannot show \\$elemMatch"),
        ({"_city": {"$not": {"$regex": "^a"}}}, "cannot show \\$not"),
        ({"score": {"$not": {"$gt": 1}}}, "cannot show \\$not"),
        ({"_city": {"$regex": "a", "$options": "m"}}, "cannot show \\$options"),
        ({"vip": 1}, "cannot show F\\('vip'\\) == 1"),
        ({"_city": {"$gt": "M"}}, "cannot show \\$gt on a string field"),
        ({"_city": None}, "query\\['_city'\\]: the builder cannot show"),
        ({"_city": {"$in": [""]}}, "cannot show the value"),
        ({"_bdate": "yesterday"}, "must be a date"),
        ({"$comment": "x"}, "cannot be held"),
        ({"_city": {"$inn": []}}, "unknown operator"),
    ],
)
def test_load_of_an_unsupported_query_raises_and_changes_nothing(
    query: dict[str, Any], message: str
) -> None:
    qb = builder()
    fill(new_row(qb), "vip", "$eq", True)
    with pytest.raises(sn.InvalidQuery, match=message):
        qb.load(query)
    assert qb.query == {"vip": True}
    assert qb.error is None
    assert [r.field.value for r in qb.root_group.rows] == ["vip"]


def test_load_of_unknown_return_fields() -> None:
    with pytest.raises(sn.InvalidInput, match="unknown fields \\['nope'\\]"):
        builder().load({}, fields=["nope"])


def test_preview_shows_the_runner_frame() -> None:
    seen: list[dict[str, Any]] = []

    def runner(params: dict[str, Any]) -> pd.DataFrame:
        seen.append(params)
        assert qb.preview_button.disabled
        return pd.DataFrame({"profile_id": [f"p{i}" for i in range(30)]})

    qb = builder(runner=runner)
    fill(new_row(qb), "vip", "$eq", True)
    qb.fields_input.value = ["vip"]
    qb.preview_button.click()
    assert seen == [{"query": {"vip": True}, "fields": ["vip"], "limit": 1000}]
    assert not qb.preview_button.disabled
    (out,) = qb.output.outputs
    assert out["output_type"] == "display_data"
    assert out["data"]["text/plain"].startswith("30 rows; the first 20:")
    assert "p19" in out["data"]["text/plain"]
    assert "p20" not in out["data"]["text/plain"]
    assert "<table" in out["data"]["text/html"]
    assert qb.result is not None
    assert len(qb.result) == 30


def test_preview_shows_the_runner_error_and_enables_the_button() -> None:
    def runner(params: dict[str, Any]) -> pd.DataFrame:
        raise RuntimeError("service down")

    qb = builder(runner=runner)
    qb.preview_button.click()
    assert not qb.preview_button.disabled
    assert "Preview failed: RuntimeError: service down" in output_text(qb)
    assert qb.output.outputs[0]["name"] == "stderr"
    assert qb.result is None
    qb.preview_button.click()  # a second run replaces the output
    assert len(qb.output.outputs) == 1


def test_preview_refuses_an_invalid_query() -> None:
    calls = []
    qb = builder(runner=lambda p: calls.append(p) or pd.DataFrame())
    fill(new_row(qb), "score", "$in", ["x"])
    qb.preview_button.click()
    assert calls == []
    assert "fix the query first: score: value must be a number" in output_text(qb)


def test_preview_without_client_or_runner() -> None:
    qb = builder()
    qb.preview_button.click()
    assert "Preview needs a client and db_id, or a runner" in output_text(qb)
    assert not qb.preview_button.disabled


def ids(qb: QueryBuilder) -> set[str]:
    qb.preview_button.click()
    assert qb.result is not None, output_text(qb)
    return set(qb.result["profile_id"])


def test_default_runner_against_the_demo(client: sn.Client, demo: DemoService) -> None:
    qb = QueryBuilder(client, demo.db_id)
    assert {"loyalty_level", "vip", "_city", "subscriptions.channel"} <= set(
        qb.fields_input.allowed_tags
    )
    assert [r.method for r in demo.requests] == ["databases/fields_get"]
    profiles = demo.profiles
    cities = sorted({p["_city"] for p in profiles if p.get("_city")})[:2]

    city = fill(new_row(qb), "_city", "$in", cities)
    assert type(city.value) is w.TagsInput
    assert ids(qb) == {p["id"] for p in profiles if p.get("_city") in cities}

    city.remove.click()
    vip = fill(new_row(qb), "vip", "$eq", True)
    assert type(vip.value) is w.Checkbox  # the type came from the service
    want_vip = {p["id"] for p in profiles if p.get("vip") is True}
    assert ids(qb) == want_vip
    assert want_vip

    loyal = fill(new_row(qb), "loyalty_level", "$gte", 3)
    assert type(loyal.value) is w.IntText
    assert ids(qb) == {p["id"] for p in profiles if p["vip"] is True and p["loyalty_level"] >= 3}

    qb.root_group.mode.value = "or"
    qb.limit_input.value = 7  # the first page only
    got = ids(qb)
    assert len(got) == 7
    assert got <= {p["id"] for p in profiles if p["vip"] is True or p["loyalty_level"] >= 3}
    assert demo.requests[-1].params["limit"] == 7


def test_field_list_error_goes_to_the_output(demo: DemoService) -> None:
    bad = sn.Client(demo.base_url, "wrong", retry=False)
    qb = QueryBuilder(bad, demo.db_id)
    assert "could not read the field list: AuthError" in output_text(qb)
    fill(new_row(qb), "loyalty_level", "$eq", "3")  # unknown type: text
    assert qb.query == {"loyalty_level": "3"}


def test_missing_ipywidgets_says_how_to_install() -> None:
    code = "import sys; sys.modules['ipywidgets'] = None; import stoplist_nb.widgets"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    assert "pip install 'stoplist_nb[widgets]'" in result.stderr


def test_importing_the_package_does_not_import_ipywidgets() -> None:
    code = "import sys, stoplist_nb; sys.exit('ipywidgets' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], check=False)
    assert result.returncode == 0
