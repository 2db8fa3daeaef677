"""QueryBuilder driven through its child widgets, as a browser would, without one.

While a row is invalid the builder keeps the last valid query: ``.query``
does not change, ``.error`` says what is wrong, and once the row was edited
(or Preview pressed) the row, ``.message`` and the Preview button show it.
A browser's edits arrive as comm messages; :func:`typed` sends one the same
way, so the Enter path of the tag boxes is the one JupyterLab takes.
"""

from __future__ import annotations

import doctest
import html
import json
import re
import subprocess
import sys
from collections import Counter
from contextlib import closing
from datetime import date
from typing import Any

import ipywidgets as w
import pandas as pd
import pytest

import stoplist_nb as sn
from stoplist_nb.demo import DemoService
from stoplist_nb.widgets import QueryBuilder
from stoplist_nb.widgets import builder as builder_module
from stoplist_nb.widgets.kinds import CHANNELS, STATUSES
from stoplist_nb.widgets.rows import OPERATORS, ConditionRow
from stoplist_nb.widgets.tags import TagEntry

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


def json_text(qb: QueryBuilder) -> str:
    found = re.search(r"<pre[^>]*>(.*)</pre>", qb.json_view.value, re.DOTALL)
    assert found is not None, qb.json_view.value
    return html.unescape(found[1])


def shown_json(qb: QueryBuilder) -> Any:
    return json.loads(json_text(qb))


def typed(widget: w.Widget, value: Any) -> None:
    """Send ``value`` as the browser does: a comm update (for a Text, on Enter or blur)."""
    state = {"method": "update", "state": {"value": value}, "buffer_paths": []}
    widget._handle_msg({"content": {"data": state}, "buffers": []})


def classes(widget: w.Widget) -> set[str]:
    return set(widget._dom_classes)


def shown_errors(qb: QueryBuilder) -> list[str]:
    return [html.unescape(m) for m in re.findall(r"<li>(.*?)</li>", qb.message.value)]


def output_text(qb: QueryBuilder) -> str:
    parts = []
    for out in qb.output.outputs:
        parts.append(out.get("text") or out["data"]["text/plain"])
    return "".join(parts)


def table_rows(page: str) -> list[list[str]]:
    """The cells of each body row of the table in ``page``."""
    body = re.search(r"<tbody>(.*)</tbody>", page, re.DOTALL)
    assert body is not None, page
    rows = re.findall(r"<tr>(.*?)</tr>", body[1], re.DOTALL)
    return [[html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", r, re.DOTALL)] for r in rows]


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
    ("loyalty_level", "$eq", "3", 3),
    ("loyalty_level", "$ne", "3", {"$ne": 3}),
    ("loyalty_level", "$lt", "3", {"$lt": 3}),
    ("loyalty_level", "$lte", "3", {"$lte": 3}),
    ("loyalty_level", "$gt", "3", {"$gt": 3}),
    ("loyalty_level", "$gte", "3", {"$gte": 3}),
    ("loyalty_level", "$in", ["1", "2"], {"$in": [1, 2]}),
    ("loyalty_level", "$nin", ["0"], {"$nin": [0]}),
    ("loyalty_level", "$exists", True, {"$exists": True}),
    ("score", "$gte", "2.5", {"$gte": 2.5}),
    ("score", "$lt", "50.0", {"$lt": 50}),
    ("score", "$lt", " -1e3 ", {"$lt": -1000}),
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
    assert "sn-json-stale" not in classes(qb.json_view)


def test_value_widgets_follow_field_and_operator() -> None:
    row = new_row(builder())
    kinds, hooks = [], []
    for field, op in [
        ("_city", "$eq"), ("_city", "$in"), ("loyalty_level", "$eq"), ("score", "$gt"),
        ("vip", "$eq"), ("vip", "$exists"), ("_bdate", "$lt"),
    ]:  # fmt: skip
        fill(row, field, op)
        kinds.append(type(row.value))
        hooks.append(sorted(c for c in classes(row.value) if c.startswith("sn-value-")))
    # Numbers are typed into a Text: an IntText or FloatText would drop letters and
    # fractions in the browser without a word.
    assert kinds == [
        w.Combobox, TagEntry, w.Text, w.Text, w.Checkbox, w.Checkbox, w.DatePicker,
    ]  # fmt: skip
    assert [h[0] for h in hooks] == [
        "sn-value-text", "sn-value-tags", "sn-value-number", "sn-value-number",
        "sn-value-bool", "sn-value-bool", "sn-value-date",
    ]  # fmt: skip


def test_retyping_a_field_keeps_the_operator_and_value_its_kind_can_hold() -> None:
    qb = builder()
    row = fill(new_row(qb), "score", "$gt")
    typed(row.value, "5")
    for text in ("s", "sc", "sco", "scor", "score"):  # a keystroke each, as the browser sends
        typed(row.field, text)
    assert (row.op.value, row.value.value) == ("$gt", "5")
    assert qb.query == {"score": {"$gt": 5}}
    for text in ("l", "loyalty_level"):  # another kind that has ">": a new, empty box
        typed(row.field, text)
    assert (row.op.value, row.value.value) == ("$gt", "")
    assert shown_errors(qb) == []  # nothing typed in the new box yet
    typed(row.field, "vip")  # a boolean has no ">"
    assert row.op.value == "$eq"
    assert qb.query == {"vip": True}
    typed(row.field, "score")  # the operator chosen last, and the number typed for it
    assert (row.op.value, row.value.value) == ("$gt", "5")
    assert qb.query == {"score": {"$gt": 5}}


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
    assert qb.message.value == ""  # not shown before the picker was touched
    qb.preview_button.click()  # ... or Preview was pressed
    assert "value must be a date" in html.unescape(qb.message.value)
    assert qb.query == {"vip": True}
    row.value.value = date(2000, 2, 29)
    assert qb.error is None
    assert qb.query == {"vip": True, "_bdate": {"$lt": "2000-02-29"}}


def test_ignore_case_only_for_regex_operators() -> None:
    qb = builder()
    row = fill(new_row(qb), "_city", "contains", "mos")
    assert row.case in row.slot.children
    row.case.value = True
    assert qb.query == {"_city": {"$regex": "mos", "$options": "i"}}
    row.op.value = "$eq"
    assert row.case not in row.slot.children


def test_and_of_rows_and_a_negated_or_group() -> None:
    qb = builder()
    fill(new_row(qb), "loyalty_level", "$gte", "3")
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
    fill(group.add_row(), "score", "$gt", "1.5")
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
    assert set(qb.fields_input.allowed_tags) == {*FIELDS, "_id", "subscriptions"}
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
    by_type = QueryBuilder(fields=frame)
    fill(new_row(by_type), "n", "$gt", "2")
    assert by_type.query == {"n": {"$gt": 2}}
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
    row.field.value = ""  # cleared by the user: now it is said
    assert shown_errors(qb) == ["Row 1: a condition needs a field"]


def test_empty_isin_is_an_error_and_blank_tags_are_refused() -> None:
    qb = builder()
    row = fill(new_row(qb), "_city", "$in", ["Omsk"])
    row.value.value = []  # the last tag removed
    assert qb.error == "_city: no values yet: type one and press Enter"
    assert qb.query == {"_city": {"$in": ["Omsk"]}}  # the last valid one, marked as such
    assert "sn-json-stale" in classes(qb.json_view)
    # TagsInput refuses blank tags with a TraitError at the assignment, not later.
    with pytest.raises(Exception, match="blank"):
        row.value.value = [""]
    typed(row.value.entry, "   ")  # Enter on blanks adds nothing and says nothing
    assert row.value.value == []
    assert row.value.note.value == ""


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
    {"score": {"$in": [1.0, 2.5]}},
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
    fill(group.add_row(), "score", "$gte", "7.25")
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


@pytest.mark.parametrize(
    "stamp", ["2023-07-14T09:26:53.512Z", "2023-07-14 09:26", "2023-07-14T09:26:53+03:00"]
)
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
    assert "value must be a date like 2024-01-31 or 2024-01-31T09:30, not '1990'" in qb.error
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
    assert [type(r.value) for r in qb.root_group.rows] == [w.Text, w.Checkbox]
    assert "sn-value-number" in classes(qb.root_group.rows[0].value)


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
        ({"_bdate": {"$lt": "2023-02-30"}}, "must be a date"),
        ({"loyalty_level": 2.5}, "must be a whole number"),
        ({"loyalty_level": True}, "cannot show the value True"),
        ({"_city": ""}, "value is empty"),
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
    page = out["data"]["text/html"]
    assert "<table" in page
    # JupyterLab shows the HTML, so the count must be there too.
    assert re.search(r'class="sn-preview-count".*30 rows \(30 profiles\); the first 20', page)
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
    # the field list, then one sample page for the suggested values
    assert [r.method for r in demo.requests] == ["databases/fields_get", "profiles/list"]
    assert demo.requests[1].params["limit"] == 100
    profiles = demo.profiles
    cities = sorted({p["_city"] for p in profiles if p.get("_city")})[:2]

    city = fill(new_row(qb), "_city", "$in", cities)
    assert type(city.value) is TagEntry
    assert ids(qb) == {p["id"] for p in profiles if p.get("_city") in cities}

    city.remove.click()
    vip = fill(new_row(qb), "vip", "$eq", True)
    assert type(vip.value) is w.Checkbox  # the type came from the service
    want_vip = {p["id"] for p in profiles if p.get("vip") is True}
    assert ids(qb) == want_vip
    assert want_vip

    loyal = fill(new_row(qb), "loyalty_level", "$gte", "3")
    assert type(loyal.value) is w.Text
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


@pytest.mark.slow
def test_missing_ipywidgets_says_how_to_install() -> None:
    code = "import sys; sys.modules['ipywidgets'] = None; import stoplist_nb.widgets"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    assert "pip install 'stoplist_nb[widgets]'" in result.stderr


@pytest.mark.slow
def test_importing_the_package_does_not_import_ipywidgets() -> None:
    code = "import sys, stoplist_nb; sys.exit('ipywidgets' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], check=False)
    assert result.returncode == 0


# -- errors on their rows, Preview held back, the JSON marked -------------------------


def test_a_fraction_in_a_whole_number_field_is_refused_on_its_row() -> None:
    calls: list[dict[str, Any]] = []
    qb = builder(runner=lambda p: calls.append(p) or pd.DataFrame({"profile_id": ["a"]}))
    fill(new_row(qb), "vip", "$eq", True)
    row = fill(new_row(qb), "loyalty_level", "$gte", "2")
    assert qb.query == {"vip": True, "loyalty_level": {"$gte": 2}}

    row.value.value = "2.5"
    assert "sn-row-error" in classes(row)
    assert row.layout.border_left.endswith("#d32f2f")
    assert "value must be a whole number, not &#x27;2.5&#x27;" in row.message.value
    assert shown_errors(qb) == [
        "Row 2: loyalty_level: value must be a whole number, not '2.5' (it is not rounded)"
    ]
    assert qb.preview_button.disabled
    assert "fix the error listed above" in qb.preview_button.tooltip
    assert "Preview is off" in qb.preview_note.value
    assert qb.query == {"vip": True, "loyalty_level": {"$gte": 2}}  # never 2 for 2.5
    assert "sn-json-stale" in classes(qb.json_view)
    assert 'title="last valid query"' in qb.json_view.value
    assert "not sendable" in qb.json_view.value
    qb.preview_button.click()  # a click that still arrives runs nothing
    assert calls == []

    row.value.value = "3"
    assert "sn-row-error" not in classes(row)
    assert row.layout.border_left.endswith("transparent")
    assert row.message.value == ""
    assert qb.message.value == ""
    assert not qb.preview_button.disabled
    assert qb.preview_note.value == ""
    assert "sn-json-stale" not in classes(qb.json_view)
    assert shown_json(qb) == {"vip": True, "loyalty_level": {"$gte": 3}}
    qb.preview_button.click()
    assert calls == [{"query": {"vip": True, "loyalty_level": {"$gte": 3}}, "limit": 1000}]


@pytest.mark.parametrize(
    ("field", "op", "text", "message"),
    [
        ("score", "$gt", "12abc", "score: value must be a number, not '12abc'"),
        ("loyalty_level", "$eq", "three", "loyalty_level: value must be a number, not 'three'"),
        ("loyalty_level", "$eq", "", "loyalty_level: value is empty: type a whole number"),
        ("score", "$eq", "  ", "score: value is empty"),
        ("score", "$eq", "nan", "query['score']['$eq']: nan is not a JSON number"),
        ("loyalty_level", "$eq", "9" * 20, "integers must fit in 64 bits"),
        ("_city", "$eq", "", "_city: value is empty"),
        ("_city", "contains", "", "_city: value is empty"),
        ("phones", "$eq", "", "phones: value is empty"),
        ("subscriptions.reg_info.date", "$gte", "31.01.2024", "value must be a date like"),
    ],
)
def test_values_are_checked_for_what_they_mean(
    field: str, op: str, text: str, message: str
) -> None:
    qb = builder()
    if field.endswith("date"):  # a date-time field shows a Text after loading one
        qb.load({field: {op: "2024-01-31T09:30"}})
        row = qb.root_group.rows[0]
        row.value.value = text
    else:
        row = fill(new_row(qb), field, op, "x" if text == "" else text)
        row.value.value = text  # typed, then deleted: an empty box is an error too
    assert qb.error is not None
    assert message in qb.error
    assert message in html.unescape(row.message.value)
    assert qb.preview_button.disabled


def test_every_error_is_listed_and_points_at_its_row() -> None:
    qb = builder()
    fill(new_row(qb), "score", "$gt", "x")
    fill(new_row(qb), "vip", "$eq", True)
    group = qb.root_group.add_group()
    inner = fill(group.add_row(), "loyalty_level", "$in", ["1.5"])
    assert shown_errors(qb) == [
        "Row 1: score: value must be a number, not 'x'",
        "Row 3: loyalty_level: value must be a whole number, not '1.5' (it is not rounded)",
    ]
    assert "2 errors to fix" in qb.message.value
    assert [("sn-row-error" in classes(r)) for r in qb.root_group.all_rows()] == [
        True, False, True,
    ]  # fmt: skip
    assert qb.errors == [e.split(": ", 1)[1] for e in shown_errors(qb)]
    inner.remove.click()
    assert shown_errors(qb) == ["Row 1: score: value must be a number, not 'x'"]
    assert "1 error to fix" in qb.message.value


def test_a_new_row_shows_no_error_until_touched_or_previewed() -> None:
    calls: list[dict[str, Any]] = []
    qb = builder(runner=lambda p: calls.append(p) or pd.DataFrame())
    fill(new_row(qb), "vip", "$eq", True)
    row = new_row(qb)
    assert qb.error == "a condition needs a field"
    assert "sn-row-error" not in classes(row)
    assert qb.message.value == ""
    assert not qb.preview_button.disabled
    assert qb.query == {"vip": True}
    row.field.value = "loyalty_level"  # a field, its number box still untouched
    assert qb.error == "loyalty_level: value is empty: type a whole number"
    assert qb.message.value == ""

    qb.preview_button.click()
    assert calls == []
    assert "sn-row-error" in classes(row)
    assert shown_errors(qb) == ["Row 2: loyalty_level: value is empty: type a whole number"]
    assert qb.preview_button.disabled
    assert "fix the query first: loyalty_level: value is empty" in output_text(qb)

    row.value.value = "4"
    assert qb.error is None
    new_row(qb)  # once the query was valid again, a new row waits again
    assert qb.message.value == ""
    assert not qb.preview_button.disabled


def test_a_change_marks_an_old_result_out_of_date_and_clears_an_old_error() -> None:
    fail = [False]

    def runner(params: dict[str, Any]) -> pd.DataFrame:
        if fail[0]:
            raise RuntimeError("service down")
        return pd.DataFrame({"profile_id": ["a", "b"], "vip": [True, True]})

    qb = builder(runner=runner)
    row = fill(new_row(qb), "vip", "$eq", True)
    qb.preview_button.click()
    (out,) = qb.output.outputs
    assert "Out of date" not in out["data"]["text/html"]

    row.value.value = False
    (out,) = qb.output.outputs
    assert 'class="sn-preview-stale"' in out["data"]["text/html"]
    assert "Out of date" in out["data"]["text/plain"]
    assert "2 rows" in out["data"]["text/html"]  # still there, dimmed
    row.value.value = True  # back to the query that ran: the result is current again
    assert "Out of date" not in qb.output.outputs[0]["data"]["text/html"]
    fill(new_row(qb), "score", "$gt", "x")  # an invalid query is out of date too
    assert "Out of date" in qb.output.outputs[0]["data"]["text/html"]

    qb.root_group.rows[1].remove.click()
    fail[0] = True
    qb.preview_button.click()
    assert "Preview failed: RuntimeError: service down" in output_text(qb)
    qb.limit_input.value = 5
    assert qb.output.outputs == ()


def test_clear_goes_back_to_one_empty_row_without_asking() -> None:
    qb = builder()
    fill(new_row(qb), "vip", "$eq", True)
    group = qb.root_group.add_group()
    fill(group.add_row(), "score", "$gt", "x")
    qb.root_group.negate.value = True
    qb.root_group.mode.value = "or"
    qb.fields_input.value = ["_city"]
    assert "sn-clear" in classes(qb.clear_button)
    qb.clear_button.click()
    assert len(qb.root_group.rows) == 1
    assert qb.root_group.groups == []
    assert qb.root_group.rows[0].field.value == ""
    assert (qb.root_group.negate.value, qb.root_group.mode.value) == (False, "and")
    assert qb.query == {}
    assert qb.message.value == ""  # the empty row waits for the user
    assert not qb.preview_button.disabled
    assert qb.fields == ["_city"]  # what to return is not part of the query


# -- tags by Enter, refused with a reason -------------------------------------------


def test_enter_adds_a_field_to_return_and_a_refusal_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    qb = builder()
    box = qb.fields_box
    assert box.entry.continuous_update is False  # the value arrives on Enter (or blur)
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(box.entry, "_send", lambda msg, buffers=None: sent.append(msg))
    typed(box.entry, "_city")
    assert qb.fields == ["_city"]
    assert box.entry.value == ""
    # the box is emptied in the browser too, ready for the next field
    assert [m["state"]["value"] for m in sent if m["method"] == "update"] == [""]
    typed(box.entry, "_city")
    assert qb.fields == ["_city"]
    assert "&#x27;_city&#x27; is already in the list" in box.note.value
    typed(box.entry, "nope")
    assert qb.fields == ["_city"]
    assert "unknown field &#x27;nope&#x27;: pick one from the list" in box.note.value
    assert box.entry.value == "nope"  # left to be corrected
    typed(box.entry, "vip")
    assert qb.fields == ["_city", "vip"]
    assert box.note.value == ""
    assert qb.params["fields"] == ["_city", "vip"]


def test_the_add_button_adds_the_typed_tag() -> None:
    qb = builder()
    row = fill(new_row(qb), "loyalty_level", "$in")
    entry = row.value
    assert {"sn-tag-input"} <= classes(entry.entry)
    assert {"sn-tag-add"} <= classes(entry.add_button)
    entry.entry.value = "2"  # as if typed, Add clicked before Enter
    entry.add_button.click()
    entry.entry.value = "2.5"
    entry.add_button.click()
    assert row.value.value == ["2"]
    assert "value must be a whole number, not &#x27;2.5&#x27;" in entry.note.value
    entry.entry.value = "3"
    entry.add_button.click()
    entry.add_button.click()  # the box is empty: nothing more, no complaint
    assert entry.note.value == ""
    assert qb.query == {"loyalty_level": {"$in": [2, 3]}}


def test_enter_adds_an_isin_value_of_the_field_type() -> None:
    qb = builder()
    row = fill(new_row(qb), "score", "$nin")
    typed(row.value.entry, "1.5")
    typed(row.value.entry, "ten")
    assert row.value.value == ["1.5"]
    assert "value must be a number, not &#x27;ten&#x27;" in row.value.note.value
    assert qb.query == {"score": {"$nin": [1.5]}}


def test_an_empty_tag_list_is_hidden_behind_a_quiet_text() -> None:
    qb = builder()
    box = qb.fields_box
    assert (box.tags.layout.display, box.empty.layout.display) == ("none", "")
    assert "all fields" in box.empty.value
    typed(box.entry, "_city")
    assert (box.tags.layout.display, box.empty.layout.display) == ("", "none")
    typed(box.tags, [])  # the tag's x in the browser
    assert (box.tags.layout.display, box.empty.layout.display) == ("none", "")
    values = fill(new_row(qb), "_city", "$in").value
    assert (values.tags.layout.display, values.empty.layout.display) == ("none", "none")
    typed(values.entry, "Kazan")
    assert values.tags.layout.display == ""


# -- fields: titles, categories, _id and subscriptions ------------------------------


def test_fields_shown_by_title_and_category_and_picked_by_label(
    client: sn.Client, demo: DemoService
) -> None:
    qb = QueryBuilder(client, demo.db_id, sample=0)
    row = new_row(qb)
    labels = list(row.field.options)
    assert "City (_city) · system" in labels
    assert "Loyalty level (loyalty_level) · custom" in labels
    assert "Subscription channel (subscriptions.channel) · subscription" in labels
    categories = [label.rsplit(" · ", 1)[1] for label in labels]
    assert categories == sorted(categories, key=["system", "custom", "subscription"].index)
    row.field.value = "Loyalty level (loyalty_level) · custom"
    assert row.path == "loyalty_level"
    assert row.kind == "int"
    row.value.value = "2"
    assert qb.query == {"loyalty_level": 2}
    row.field.value = "vip"  # a raw name is taken as well
    assert row.kind == "boolean"
    qb.load({"_city": "Kazan"})
    assert qb.root_group.rows[0].field.value == "City (_city) · system"
    typed(qb.fields_box.entry, "City (_city) · system")
    assert qb.fields == ["_city"]
    assert "Profile id (_id) · system" in qb.fields_box.entry.options


def test_id_and_subscriptions_are_offered_with_an_inferred_field_list(
    client: sn.Client, demo: DemoService
) -> None:
    demo.add_fault("databases/fields_get", "api_error", code=404, text="unknown method")
    with pytest.warns(UserWarning, match="inferred from") as caught:
        qb = QueryBuilder(client, demo.db_id, sample=0)
    # the warning points at the line that made the builder, not at the package
    assert [r.filename for r in caught] == [__file__]
    assert {"_id", "subscriptions"} <= set(qb.fields_input.allowed_tags)
    typed(qb.fields_box.entry, "_id")
    typed(qb.fields_box.entry, "subscriptions")
    assert qb.fields == ["_id", "subscriptions"]
    assert qb.fields_box.note.value == ""
    qb.preview_button.click()
    assert qb.result is not None, output_text(qb)
    assert {"profile_id", "channel"} <= set(qb.result.columns)


# -- suggestions: documented words and a sample page --------------------------------


def test_channels_statuses_and_sampled_values_are_suggested_not_enforced(
    client: sn.Client, demo: DemoService
) -> None:
    qb = QueryBuilder(client, demo.db_id, sample=40)
    row = fill(new_row(qb), "subscriptions.channel", "$eq")
    assert row.value.options[: len(CHANNELS)] == CHANNELS
    row.field.value = "subscriptions.status"
    assert row.value.options[: len(STATUSES)] == STATUSES
    row.op.value = "$in"  # the tag box suggests the same words
    assert row.value.entry.options[: len(STATUSES)] == STATUSES

    row.field.value = "_city"
    row.op.value = "$eq"
    first40 = demo.profiles[:40]
    seen = {p["_city"] for p in first40 if p.get("_city")}
    assert set(row.value.options) == seen
    assert 0 < len(row.value.options) <= 50
    row.value.value = "Atlantis"  # not among them: still a value
    assert qb.query == {"_city": "Atlantis"}
    assert row.value.ensure_option is False


# -- layout ------------------------------------------------------------------------


def test_headings_join_labels_not_and_remove_icons() -> None:
    qb = builder()
    root = qb.root_group
    assert root.headings.layout.display == "none"
    a, b = new_row(qb), new_row(qb)
    group = root.add_group()
    c = group.add_row()
    assert root.headings.layout.display == ""
    assert "Field" in root.headings.children[1].value
    assert root.items[0].join.value == ""
    assert all(">AND<" in i.join.value for i in root.items[1:])
    root.mode.value = "or"
    assert [">OR<" in i.join.value for i in root.items] == [False, True, True]
    assert c.join.value == ""  # first of its own group
    assert {r.remove.layout.width for r in (a, b, c)} == {"2.4em"}
    assert {r.remove.icon for r in (a, b, c)} == {"times"}
    assert isinstance(root.negate, w.ToggleButton)
    assert root.negate.description == "NOT"
    assert root.negate not in root.mode.options
    assert [label for label, _ in root.mode.options] == ["AND", "OR"]
    root.negate.value = True
    assert root.negate.button_style == "danger"
    hooks = {
        "sn-row": a, "sn-field": a.field, "sn-operator": a.op, "sn-value": a.value,
        "sn-remove": a.remove, "sn-join": a.join, "sn-not": root.negate,
        "sn-join-mode": root.mode, "sn-json": qb.json_view, "sn-json-toggle": qb.json_toggle,
        "sn-clear": qb.clear_button, "sn-preview": qb.preview_button, "sn-errors": qb.message,
        "sn-preview-note": qb.preview_note, "sn-group-remove": group.remove,
        "sn-tag-input": qb.fields_box.entry, "sn-tag-add": qb.fields_box.add_button,
        "sn-tag-error": qb.fields_box.note, "sn-add-row": qb.add_button,
        "sn-add-group": qb.add_group_button, "sn-query-builder": qb,
    }  # fmt: skip
    assert [name for name, widget in hooks.items() if name not in classes(widget)] == []


def test_json_is_one_compact_line_pretty_on_demand_and_collapsible() -> None:
    qb = builder()
    fill(new_row(qb), "_city", "$in", ["Kazan", "Omsk"])
    fill(new_row(qb), "vip", "$eq", True)
    assert json_text(qb) == '{"_city":{"$in":["Kazan","Omsk"]},"vip":true}'
    qb.json_pretty.value = True
    assert json_text(qb) == json.dumps(qb.query, indent=2)
    assert qb.json_view.layout.display == ""
    qb.json_toggle.value = False
    assert qb.json_view.layout.display == "none"
    qb.json_toggle.value = True
    assert qb.json_view.layout.display == ""


# -- Preview against the demo: count in the HTML, table within the width -----------


def test_preview_counts_in_html_and_shows_the_chosen_fields_only(
    client: sn.Client, demo: DemoService
) -> None:
    qb = QueryBuilder(client, demo.db_id)
    fill(new_row(qb), "vip", "$eq", True)
    qb.limit_input.value = 10
    qb.preview_button.click()
    assert qb.result is not None, output_text(qb)
    page = qb.output.outputs[0]["data"]["text/html"]
    profiles = qb.result["profile_id"].nunique()
    assert f"{len(qb.result)} rows ({profiles} profiles)" in page
    assert 'style="max-width:100%;overflow-x:auto;white-space:nowrap"' in page
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    # what tells a subscription's row apart, then the query's field and the first others
    assert heads[:5] == ["profile_id", "channel", "status", "contact", "vip"]
    assert len(heads) == 5 + 5 < len(qb.result.columns)
    assert f"the first columns (10 of {len(qb.result.columns)})" in page

    typed(qb.fields_box.entry, "_city")
    typed(qb.fields_box.entry, "email")
    qb.preview_button.click()
    page = qb.output.outputs[0]["data"]["text/html"]
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    # no subscriptions asked for: no (empty) channel column
    assert heads == ["profile_id", "_city", "profile.email"]
    assert "columns of the chosen fields (3 of" in page
    typed(qb.fields_box.entry, "subscriptions")
    qb.preview_button.click()
    page = qb.output.outputs[0]["data"]["text/html"]
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    assert heads == ["profile_id", "channel", "status", "contact", "_city", "profile.email"]


def test_preview_shows_missing_values_as_empty_cells() -> None:
    frame = pd.DataFrame(
        {
            "profile_id": pd.array(["a", "b"], dtype="string[pyarrow]"),
            "_city": pd.array(["Kazan", None], dtype="string[pyarrow]"),
            "reg": pd.to_datetime(["2024-01-31", None], utc=True),
            "n": pd.array([1, None], dtype="Int64"),
            "ok": pd.array([True, None], dtype="boolean"),
            "f": [1.5, float("nan")],
            "tags": [["x"], None],
        }
    )
    qb = builder(runner=lambda params: frame)
    qb.preview_button.click()
    (out,) = qb.output.outputs
    page, plain = out["data"]["text/html"], out["data"]["text/plain"]
    for missing in ("&lt;NA&gt;", "<NA>", "NaT", "nan", "None"):
        assert missing not in page, missing
        assert missing not in plain, missing
    cells = table_rows(page)
    assert cells[0] == ["a", "Kazan", "2024-01-31 00:00:00+00:00", "1", "True", "1.5", "[x]"]
    assert cells[1] == ["b", "", "", "", "", "", ""]


def test_preview_rows_start_with_what_tells_their_subscriptions_apart() -> None:
    token = "t" * 150  # a push subscription's id
    frame = pd.DataFrame(
        {
            "profile_id": ["p1", "p1", "p1", "p2"],
            "_fname": ["Ann", "Ann", "Ann", "Bob"],
            "channel": ["email", "sms", "push", None],
            "status": ["subscribed", "unsubscribed", "subscribed", None],
            "email": ["ann@example.org", None, None, None],
            "phone": [None, "+79001234567", None, None],
            "push_subscription_id": [None, None, token, None],
        }
    )
    qb = builder(runner=lambda params: frame)
    qb.preview_button.click()
    page = qb.output.outputs[0]["data"]["text/html"]
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    assert heads == ["profile_id", "channel", "status", "contact", "_fname"]
    contacts = [row[3] for row in table_rows(page)]
    assert contacts == ["ann@example.org", "+79001234567", "t" * 31 + "\u2026", ""]
    no_subscriptions = frame.assign(channel=None, status=None, email=None, phone=None)
    no_subscriptions["push_subscription_id"] = None
    qb = builder(runner=lambda params: no_subscriptions)
    qb.fields_input.value = ["_city"]
    qb.preview_button.click()
    heads = re.findall(r"<th[^>]*>([^<]*)</th>", qb.output.outputs[0]["data"]["text/html"])
    assert heads == ["profile_id"]  # empty subscription columns are left out; no _city here


def test_the_query_models_own_refusals_land_on_their_row() -> None:
    qb = builder()
    fill(new_row(qb), "vip", "$eq", True)
    row = fill(new_row(qb), "a..b", "$eq", "x")  # a path MongoDB cannot take
    assert shown_errors(qb) == ["Row 2: query['a..b']: a field path cannot have empty parts"]
    assert "sn-row-error" in classes(row)
    assert qb.query == {"vip": True}


@pytest.mark.slow
def test_groups_nested_deeper_than_mongodb_takes_are_an_error_not_a_crash() -> None:
    qb = builder()
    group = qb.root_group
    for level in range(60):  # AND in OR in AND ...: two levels each, {"$or": [...]}
        group.mode.value = "or" if level % 2 else "and"
        fill(group.add_row(), "vip", "$eq", True)
        fill(group.add_row(), "vip", "$exists", True)
        group = group.add_group()
    fill(group.add_row(), "vip", "$eq", True)
    assert qb.error is not None
    assert "nests deeper than 100 levels" in qb.error
    assert "Query: InvalidQuery" in shown_errors(qb)[0]
    assert qb.preview_button.disabled


def test_preview_pressed_again_while_it_runs_runs_once() -> None:
    calls: list[dict[str, Any]] = []

    def runner(params: dict[str, Any]) -> pd.DataFrame:
        calls.append(params)
        qb.preview_button.click()  # a second click arriving meanwhile
        return pd.DataFrame({"profile_id": ["a"]})

    qb = builder(runner=runner)
    qb.preview_button.click()
    assert len(calls) == 1
    assert qb.result is not None


def test_suggestions_are_optional_when_the_sample_page_fails(
    client: sn.Client, demo: DemoService
) -> None:
    demo.add_fault("profiles/list", "api_error", code=3, text="busy")
    qb = QueryBuilder(client, demo.db_id)
    assert "could not read a sample page for value suggestions: APIError" in output_text(qb)
    row = fill(new_row(qb), "subscriptions.channel", "$eq", "email")
    assert row.value.options == CHANNELS  # the documented words are still offered
    assert qb.query == {"subscriptions.channel": "email"}
    fixed = QueryBuilder(client, demo.db_id, suggestions={"_city": ["Omsk"]})
    assert fill(new_row(fixed), "_city", "$eq").value.options == ("Omsk",)


def test_the_sample_page_is_read_through_the_profiles_reader(
    client: sn.Client, demo: DemoService
) -> None:
    # More than the 120 profiles there are: still one request, the first page only.
    qb = QueryBuilder(client, demo.db_id, sample=500)
    assert [r.method for r in demo.requests] == ["databases/fields_get", "profiles/list"]
    sent = demo.requests[1].params
    demo.requests.clear()
    pages = sn.iter_profile_pages(client, demo.db_id, limit=500, max_profiles=500, lookahead=0)
    with closing(pages):
        first = next(pages)
    assert sent == demo.requests[0].params == {"db_id": demo.db_id, "format": "json", "limit": 500}
    assert output_text(qb) == ""
    # The values of the page's records, as sent: every city, most frequent first.
    cities = Counter(p["_city"] for p in first.records if p.get("_city"))
    row = fill(new_row(qb), "_city", "$eq")
    assert row.value.options == tuple(c for c, _ in cities.most_common(50))
    assert len(first.records) == len(demo.profiles)


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ({"kind": "api_error", "code": 3, "text": "busy"}, "APIError: "),
        ({"kind": "status", "status": 403}, "AuthError: "),
        ({"kind": "malformed"}, "InvalidReply: profiles/list: "),
        ({"kind": "raw", "text": '{"error": 0, "data": {"id": "a"}}'}, "'data' is an object"),
    ],
)
def test_a_sample_page_the_reader_refuses_is_reported_in_the_output(
    client: sn.Client, demo: DemoService, fault: dict[str, Any], said: str
) -> None:
    demo.add_fault("profiles/list", **fault)
    qb = QueryBuilder(client, demo.db_id)
    text = output_text(qb)
    assert text.startswith("could not read a sample page for value suggestions: "), text
    assert said in text
    assert text.count("\n") == 1  # one line: the sample page's, nothing else
    assert [r.method for r in demo.requests] == ["databases/fields_get", "profiles/list"]
    assert fill(new_row(qb), "_city", "$eq", "Omsk").value.options == ()
    assert qb.query == {"_city": "Omsk"}


def test_a_sample_page_without_db_id_is_refused_before_anything_is_sent(
    client: sn.Client, demo: DemoService
) -> None:
    qb = QueryBuilder(client)  # no field list to read; the reader checks db_id
    assert output_text(qb) == (
        "could not read a sample page for value suggestions: "
        "InvalidInput: db_id must be an int, not None\n"
    )
    assert demo.requests == []
    assert fill(new_row(qb), "_city", "$eq", "Omsk").value.options == ()


def test_doctests_of_the_builder_module() -> None:
    result = doctest.testmod(builder_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_the_package_only_re_exports_the_builder() -> None:
    import stoplist_nb.widgets as package

    assert package.QueryBuilder is QueryBuilder is builder_module.QueryBuilder
    assert QueryBuilder.__module__ == "stoplist_nb.widgets.builder"
    assert package.OPERATORS is OPERATORS
