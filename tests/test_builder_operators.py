"""The query builder's document checker: every operator per kind, to MongoDB and back.

Pure: :func:`check` reads a document into a query and :func:`document_of`
reads the query back; no widget is involved. The demo service answers the
tests that need real profiles (whole days, same-subscription groups).
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from typing import Any

import pandas as pd
import pytest
from demo_fixtures import served_and_cleared
from hypothesis import given
from hypothesis import strategies as st

import stoplist_nb as sn
from stoplist_nb.demo import DemoService
from stoplist_nb.errors import InvalidQuery
from stoplist_nb.widgets.catalog import FieldCatalog, field_infos
from stoplist_nb.widgets.check import check, empty_document, rule_filter
from stoplist_nb.widgets.load import document_of, guessed_types
from stoplist_nb.widgets.operators import (
    KIND_OPERATORS,
    OPERATORS,
    TYPE_WORDS,
    WHOLE_DAY_OPERATORS,
    kind_of,
    operators_by_kind,
)

FIELDS = {
    "_city": "string",
    "loyalty_level": "int",
    "score": "float",
    "vip": "boolean",
    "_regdate": "datetime",
    "phones": "array",
    "meta": "object",
}
CATALOG = FieldCatalog(field_infos(FIELDS), complete=True)


def doc(*items: dict[str, Any], join: str = "and", negate: bool = False) -> dict[str, Any]:
    return {
        "rev": 1,
        "root": {
            "id": "g1",
            "type": "group",
            "join": join,
            "not": negate,
            "each": None,
            "items": list(items),
        },
        "fields": [],
        "preview_rows": "10",
    }


_SERIAL = iter(range(2, 10**9))


def rule(
    field: str, op: str, value: Any = None, *, ignore_case: bool = False, whole_day: bool = True
) -> dict[str, Any]:
    made = {
        "id": f"r{next(_SERIAL)}",
        "type": "rule",
        "field": field,
        "operator": op,
        "value": value,
        "ignore_case": ignore_case,
    }
    if not whole_day:
        made["whole_day"] = False
    return made


def group(*items: dict[str, Any], join: str = "and", negate: bool = False, each: Any = None):
    return {
        "id": f"g{next(_SERIAL)}",
        "type": "group",
        "join": join,
        "not": negate,
        "each": each,
        "items": list(items),
    }


def query_of(*items: dict[str, Any], **options: Any) -> dict[str, Any]:
    report = check(doc(*items, **options), CATALOG)
    assert report["ok"], report["summary"]
    return report["query"]


def loads_back(query: dict[str, Any], catalog: FieldCatalog = CATALOG) -> None:
    """``query`` loads into a document whose check writes the same query."""
    again = check(document_of(query, catalog), catalog)
    assert again["ok"], again["summary"]
    assert again["query"] == query
    assert again["query_json"] == json.dumps(query, sort_keys=True, separators=(",", ":"))


# (field, operator, value as typed) -> the query: one case per operator and kind.
CASES: list[tuple[str, str, Any, dict[str, Any]]] = [
    ("_city", "equal", "Kazan", {"_city": "Kazan"}),
    ("_city", "not_equal", "Kazan", {"_city": {"$ne": "Kazan"}}),
    ("_city", "in", ["Kazan", "Paris, TX"], {"_city": {"$in": ["Kazan", "Paris, TX"]}}),
    ("_city", "not_in", ["Kazan"], {"_city": {"$nin": ["Kazan"]}}),
    ("_city", "begins_with", "Ka.", {"_city": {"$regex": "^Ka\\."}}),
    ("_city", "not_begins_with", "Ka", {"_city": {"$not": {"$regex": "^Ka"}}}),
    ("_city", "contains", "a b", {"_city": {"$regex": "a\\ b"}}),
    ("_city", "not_contains", "az", {"_city": {"$not": {"$regex": "az"}}}),
    ("_city", "ends_with", "an", {"_city": {"$regex": "an$"}}),
    ("_city", "not_ends_with", "an", {"_city": {"$not": {"$regex": "an$"}}}),
    ("_city", "matches", "^K.*n$", {"_city": {"$regex": "^K.*n$"}}),
    ("_city", "is_empty", None, {"_city": ""}),
    ("_city", "is_not_empty", None, {"_city": {"$ne": ""}}),
    ("_city", "is_null", None, {"_city": None}),
    ("_city", "is_not_null", None, {"_city": {"$ne": None}}),
    ("_city", "exists", None, {"_city": {"$exists": True}}),
    ("_city", "not_exists", None, {"_city": {"$exists": False}}),
    ("loyalty_level", "equal", "3", {"loyalty_level": 3}),
    ("loyalty_level", "not_equal", "3", {"loyalty_level": {"$ne": 3}}),
    ("loyalty_level", "in", ["1", "2"], {"loyalty_level": {"$in": [1, 2]}}),
    ("loyalty_level", "not_in", ["1"], {"loyalty_level": {"$nin": [1]}}),
    ("loyalty_level", "less", "3", {"loyalty_level": {"$lt": 3}}),
    ("loyalty_level", "less_or_equal", "3", {"loyalty_level": {"$lte": 3}}),
    ("loyalty_level", "greater", "3", {"loyalty_level": {"$gt": 3}}),
    ("loyalty_level", "greater_or_equal", "3", {"loyalty_level": {"$gte": 3}}),
    ("loyalty_level", "between", ["1", "4"], {"loyalty_level": {"$gte": 1, "$lte": 4}}),
    (
        "loyalty_level",
        "not_between",
        ["1", "4"],
        {"$nor": [{"loyalty_level": {"$gte": 1, "$lte": 4}}]},
    ),
    ("loyalty_level", "is_null", None, {"loyalty_level": None}),
    ("loyalty_level", "is_not_null", None, {"loyalty_level": {"$ne": None}}),
    ("loyalty_level", "exists", None, {"loyalty_level": {"$exists": True}}),
    ("loyalty_level", "not_exists", None, {"loyalty_level": {"$exists": False}}),
    ("score", "equal", "2.5", {"score": 2.5}),
    ("score", "greater", "-1e-05", {"score": {"$gt": -1e-05}}),
    ("score", "between", ["0.5", "9"], {"score": {"$gte": 0.5, "$lte": 9}}),
    ("vip", "equal", "true", {"vip": True}),
    ("vip", "not_equal", "false", {"vip": {"$ne": False}}),
    ("vip", "is_null", None, {"vip": None}),
    ("vip", "not_exists", None, {"vip": {"$exists": False}}),
    ("_regdate", "equal", "2024-03-01", {"_regdate": {"$gte": "2024-03-01", "$lt": "2024-03-02"}}),
    (
        "_regdate",
        "not_equal",
        "2024-02-29",
        {"$nor": [{"_regdate": {"$gte": "2024-02-29", "$lt": "2024-03-01"}}]},
    ),
    ("_regdate", "less", "2024-03-01", {"_regdate": {"$lt": "2024-03-01"}}),
    ("_regdate", "less_or_equal", "2024-12-31", {"_regdate": {"$lt": "2025-01-01"}}),
    ("_regdate", "greater", "2024-03-01", {"_regdate": {"$gte": "2024-03-02"}}),
    ("_regdate", "greater_or_equal", "2024-03-01", {"_regdate": {"$gte": "2024-03-01"}}),
    (
        "_regdate",
        "between",
        ["2024-03-01", "2024-03-31"],
        {"_regdate": {"$gte": "2024-03-01", "$lt": "2024-04-01"}},
    ),
    (
        "_regdate",
        "not_between",
        ["2024-03-01", "2024-03-31"],
        {"$nor": [{"_regdate": {"$gte": "2024-03-01", "$lt": "2024-04-01"}}]},
    ),
    (
        "_regdate",
        "equal",
        "2024-03-01T10:00:00Z",
        {"_regdate": "2024-03-01T10:00:00Z"},
    ),
    (
        "_regdate",
        "greater",
        "2024-03-01T10:00",
        {"_regdate": {"$gt": "2024-03-01T10:00"}},
    ),
    ("_regdate", "is_not_null", None, {"_regdate": {"$ne": None}}),
    ("phones", "equal", "+7900", {"phones": "+7900"}),
    ("phones", "in", ["+7900", "+7901"], {"phones": {"$in": ["+7900", "+7901"]}}),
    ("phones", "not_in", ["+7900"], {"phones": {"$nin": ["+7900"]}}),
    ("phones", "is_null", None, {"phones": None}),
    ("phones", "exists", None, {"phones": {"$exists": True}}),
    ("phones", "not_exists", None, {"phones": {"$exists": False}}),
    ("_regdate", "is_null", None, {"_regdate": None}),
    ("_regdate", "exists", None, {"_regdate": {"$exists": True}}),
    ("_regdate", "not_exists", None, {"_regdate": {"$exists": False}}),
    ("meta", "exists", None, {"meta": {"$exists": True}}),
    ("meta", "not_exists", None, {"meta": {"$exists": False}}),
    ("meta", "is_null", None, {"meta": None}),
    ("meta", "is_not_null", None, {"meta": {"$ne": None}}),
]


@pytest.mark.parametrize(("field", "op", "value", "query"), CASES)
def test_each_operator_writes_its_query_and_loads_back(
    field: str, op: str, value: Any, query: dict[str, Any]
) -> None:
    assert query_of(rule(field, op, value)) == query
    loads_back(query)
    loaded = document_of(query, CATALOG)["root"]["items"][0]
    shown = (loaded["operator"], loaded["value"])
    assert shown == SAME_QUERY.get((op, json.dumps(value)), (op, value))
    assert loaded["field"] == field


# Two rules that write one query load as the one that reads like it.
SAME_QUERY = {
    ("less_or_equal", '"2024-12-31"'): ("less", "2025-01-01"),
    ("greater", '"2024-03-01"'): ("greater_or_equal", "2024-03-02"),
}


def test_every_operator_of_every_kind_has_a_case() -> None:
    covered = {(CATALOG.kind(field), op) for field, op, _, _ in CASES}
    wanted = {
        (kind, op)
        for kind, ops in KIND_OPERATORS.items()
        for op in ops
        if kind in ("string", "int", "date", "array", "object")
    }
    assert wanted <= covered


def test_operator_table_follows_the_spec() -> None:
    assert KIND_OPERATORS["boolean"] == (
        "equal", "not_equal", "is_null", "is_not_null", "exists", "not_exists"
    )  # fmt: skip
    assert "less" not in KIND_OPERATORS["string"]
    assert "between" not in KIND_OPERATORS["string"]
    assert "matches" in KIND_OPERATORS["string"]
    assert set(KIND_OPERATORS["array"]) == {
        "equal",
        "in",
        "not_in",
        "is_null",
        "exists",
        "not_exists",
    }
    table = operators_by_kind()
    assert table["array"][0] == ["equal", "has element", 1]
    assert ["between", "between", 2] in table["int"]
    assert ["in", "in", "list"] in table["string"]
    assert ["not_exists", "does not exist", 0] in table["object"]
    assert OPERATORS["matches"] == ("matches regex", 1)


def test_ignore_case_adds_options_to_text_operators_only() -> None:
    assert query_of(rule("_city", "begins_with", "ka", ignore_case=True)) == {
        "_city": {"$regex": "^ka", "$options": "i"}
    }
    assert query_of(rule("_city", "not_contains", "x", ignore_case=True)) == {
        "_city": {"$not": {"$regex": "x", "$options": "i"}}
    }
    assert query_of(rule("_city", "equal", "ka", ignore_case=True)) == {"_city": "ka"}
    loaded = document_of({"_city": {"$regex": "^ka", "$options": "i"}}, CATALOG)
    assert loaded["root"]["items"][0]["ignore_case"] is True


@pytest.mark.parametrize(
    ("word", "kind"),
    [
        ("BOOL", "boolean"),
        ("Boolean", "boolean"),
        ("bool", "boolean"),
        ("Integer", "int"),
        ("long", "int"),
        ("double", "float"),
        ("Number", "float"),
        ("decimal", "float"),
        ("text", "string"),
        ("enum", "string"),
        ("ip", "string"),
        ("DateTime", "date"),
        ("timestamp", "date"),
        ("tags", "array"),
        ("list", "array"),
        ("map", "object"),
        ("dict", "object"),
        ("geo_point", "string"),
        ("", "string"),
    ],
)
def test_type_words_of_a_field_list_in_any_case(word: str, kind: str) -> None:
    assert kind_of("x", word) == kind
    assert TYPE_WORDS.get(word.lower(), "string") == kind


def test_a_string_field_named_as_a_date_is_a_date() -> None:
    assert kind_of("_bdate", "string") == kind_of("last_update_date", "text") == "date"
    assert kind_of("vip_date", "boolean") == "boolean"


def test_boolean_values_are_true_or_false_in_any_case() -> None:
    catalog = FieldCatalog(field_infos({"vip": "Bool"}))
    assert check(doc(rule("vip", "equal", "TRUE")), catalog)["query"] == {"vip": True}
    report = check(doc(rule("vip", "equal", "yes")), catalog)
    assert report["summary"] == ["Row 1: vip: value must be true or false, not 'yes'"]


def test_titles_and_labels_resolve_to_the_name() -> None:
    catalog = FieldCatalog(
        field_infos(
            pd.DataFrame(
                {
                    "name": ["_city", "loyalty_level"],
                    "title": ["City", "Loyalty level"],
                    "type": ["string", "int"],
                    "category": ["system", "custom"],
                }
            )
        )
    )
    for typed in ("City", "city", " CITY ", "City (_city)", "_city"):
        report = check(doc(rule(typed, "equal", "Kazan")), catalog)
        assert report["query"] == {"_city": "Kazan"}, typed
        (item,) = report["items"].values()
        assert (item["field"], item["kind"], item["warnings"]) == ("_city", "string", [])
    report = check(doc(rule("loyalty LEVEL", "greater", "2")), catalog)
    assert report["query"] == {"loyalty_level": {"$gt": 2}}
    assert document_of({"loyalty_level": 3}, catalog)["root"]["items"][0]["field"] == (
        "Loyalty level (loyalty_level)"
    )


def test_an_unknown_field_is_a_warning_and_the_query_is_still_sent() -> None:
    report = check(doc(rule("cyty", "equal", "Kazan")), CATALOG)
    assert report["ok"]
    assert report["query"] == {"cyty": "Kazan"}
    (item,) = report["items"].values()
    assert item["errors"] == []
    assert item["warnings"] == [
        {"part": "field", "message": "unknown field 'cyty': it is not in the field list"}
    ]
    assert item["kind"] == "string"


def test_an_invalid_regex_is_an_error_on_its_row() -> None:
    report = check(doc(rule("_city", "equal", "x"), rule("_city", "matches", "a(b")), CATALOG)
    assert not report["ok"]
    assert report["query"] is None
    assert report["params"] is None
    assert report["summary"] == [
        "Row 2: _city: not a valid regular expression: missing ), unterminated subpattern"
        " at position 1"
    ]
    errors = [i["errors"] for i in report["items"].values() if i["errors"]]
    assert errors == [[{"part": "value", "message": report["summary"][0][len("Row 2: ") :]}]]


@pytest.mark.parametrize(
    ("field", "op", "value", "said"),
    [
        ("loyalty_level", "equal", "2.5", "value must be a whole number, not '2.5'"),
        ("loyalty_level", "in", ["1", "2.5"], "'2.5': value must be a whole number"),
        ("loyalty_level", "between", ["1", ""], "between needs two values"),
        ("score", "equal", "nan", "value must be a finite number"),
        ("score", "equal", "abc", "value must be a number, not 'abc'"),
        ("_regdate", "equal", "2023-02-30", "value must be a date like 2024-01-31"),
        ("_regdate", "equal", "01.02.2024", "value must be a date"),
        ("_city", "equal", "  ", "value is empty"),
        ("_city", "in", [], "no values yet"),
        ("loyalty_level", "equal", "9223372036854775808", "64"),
    ],
)
def test_values_that_do_not_fit_are_errors_naming_the_row(
    field: str, op: str, value: Any, said: str
) -> None:
    report = check(doc(rule("_city", "exists"), rule(field, op, value)), CATALOG)
    assert not report["ok"]
    (line,) = report["summary"]
    assert line.startswith(f"Row 2: {field}: ")
    assert said in line
    assert report["json"] == "{}"  # nothing valid was shown before


def test_an_operator_the_kind_lacks_is_an_error() -> None:
    report = check(doc(rule("vip", "less", "true")), CATALOG)
    assert report["summary"] == ["Row 1: vip: 'less' does not apply to a boolean field"]
    (item,) = report["items"].values()
    assert item["errors"][0]["part"] == "operator"
    assert item["kind"] == "boolean"


def test_while_not_ok_json_shows_the_last_valid_query() -> None:
    report = check(doc(rule("loyalty_level", "equal", "x")), CATALOG, last_valid={"a": 1})
    assert report["json"] == '{\n  "a": 1\n}'
    assert report["query"] is None
    assert report["query_json"] is None


def test_an_empty_rule_is_ignored_and_a_fresh_document_is_the_empty_query() -> None:
    fresh = empty_document()
    assert fresh["root"]["items"] == [
        {
            "id": "r2",
            "type": "rule",
            "field": "",
            "operator": "equal",
            "value": "",
            "ignore_case": False,
        }
    ]
    report = check(fresh, CATALOG)
    assert report["ok"]
    assert report["query"] == {}
    assert report["params"] == {"query": {}}
    assert report["items"]["r2"]["number"] == 1
    assert report["items"]["r2"]["errors"] == []
    assert set(report) == {
        "rev", "ok", "query", "query_json", "json", "params", "items", "fields",
        "preview_rows", "summary", "import_error",
    }  # fmt: skip
    report = check(doc(rule("", "equal", ""), rule("_city", "equal", "x")), CATALOG)
    assert report["query"] == {"_city": "x"}
    assert report["items"][next(iter(report["items"]))]["number"] == 1
    # a value without a field is an error
    report = check(doc(rule("", "equal", "Kazan")), CATALOG)
    assert report["summary"] == ["Row 1: pick a field for this value"]


def test_groups_join_not_and_nesting() -> None:
    a, b = rule("_city", "equal", "Kazan"), rule("loyalty_level", "greater", "2")
    assert query_of(a, b) == {"_city": "Kazan", "loyalty_level": {"$gt": 2}}
    assert query_of(a, b, join="or") == {"$or": [{"_city": "Kazan"}, {"loyalty_level": {"$gt": 2}}]}
    assert query_of(a, b, join="or", negate=True) == {
        "$nor": [{"_city": "Kazan"}, {"loyalty_level": {"$gt": 2}}]
    }
    assert query_of(a, b, negate=True) == {
        "$nor": [{"_city": "Kazan", "loyalty_level": {"$gt": 2}}]
    }
    same_field = query_of(rule("_city", "equal", "a"), rule("_city", "not_equal", "b"))
    assert same_field == {"$and": [{"_city": "a"}, {"_city": {"$ne": "b"}}]}
    nested = query_of(a, group(b, rule("vip", "equal", "true"), join="or", negate=True))
    assert nested == {
        "$and": [{"_city": "Kazan"}, {"$nor": [{"loyalty_level": {"$gt": 2}}, {"vip": True}]}]
    }
    empty_group = query_of(a, group(rule("", "equal", "")))
    assert empty_group == {"_city": "Kazan"}
    for query in (same_field, nested, {"$nor": [{"_city": "Kazan", "loyalty_level": {"$gt": 2}}]}):
        loads_back(query)


def test_a_same_subscription_group_is_elem_match_and_loads_back() -> None:
    inner = group(
        rule("channel", "equal", "email"),
        rule("Subscription status", "equal", "subscribed"),
        rule("reg_info.date", "equal", "2024-01-05"),
        each="subscriptions",
    )
    query = query_of(rule("_city", "equal", "Kazan"), inner)
    assert query == {
        "_city": "Kazan",
        "subscriptions": {
            "$elemMatch": {
                "channel": "email",
                "status": "subscribed",
                "reg_info.date": {"$gte": "2024-01-05", "$lt": "2024-01-06"},
            }
        },
    }
    loads_back(query)
    loaded = document_of(query, CATALOG)["root"]["items"][1]
    assert loaded["type"] == "group"
    assert loaded["each"] == "subscriptions"
    assert [r["field"] for r in loaded["items"]] == [
        "Subscription channel (channel)",
        "Subscription status (status)",
        "Subscription date (reg_info.date)",
    ]
    negated = query_of(group(rule("channel", "equal", "sms"), each="subscriptions", negate=True))
    assert negated == {"$nor": [{"subscriptions": {"$elemMatch": {"channel": "sms"}}}]}
    loads_back(negated)
    either = query_of(
        group(
            rule("channel", "equal", "sms"),
            rule("priority", "greater", "1"),
            each="subscriptions",
            join="or",
        )
    )
    assert either == {
        "subscriptions": {"$elemMatch": {"$or": [{"channel": "sms"}, {"priority": {"$gt": 1}}]}}
    }
    loads_back(either)


def test_a_same_subscription_group_cannot_nest_in_another() -> None:
    report = check(
        doc(
            group(
                group(rule("channel", "equal", "sms"), each="subscriptions"), each="subscriptions"
            )
        ),
        CATALOG,
    )
    assert not report["ok"]
    assert report["summary"] == ["Group: a same-subscription group cannot sit in another one"]


def test_return_fields_resolve_and_their_problems() -> None:
    document = doc(rule("_city", "exists"))
    document["fields"] = ["city", "LOYALTY LEVEL", "_city", "nope", "subscriptions"]
    catalog = FieldCatalog(
        field_infos(
            pd.DataFrame({"name": ["_city", "loyalty_level"], "title": ["City", "Loyalty level"]})
        ),
        complete=True,
    )
    report = check(document, catalog)
    assert report["fields"]["resolved"] == ["_city", "loyalty_level", "subscriptions"]
    assert report["fields"]["problems"] == [
        {"index": 2, "message": "'_city' is listed twice"},
        {"index": 3, "message": "unknown field 'nope'"},
    ]
    assert not report["ok"]
    assert "Return field 4: unknown field 'nope'" in report["summary"]


@pytest.mark.parametrize(
    ("typed", "value", "error"),
    [
        ("10", 10, None),
        (" 1000 ", 1000, None),
        ("1", 1, None),
        (
            "2.5",
            None,
            "rows to preview: value must be a whole number, not '2.5' (it is not rounded)",
        ),
        ("0", None, "rows to preview must be from 1 to 1000, not 0"),
        ("1001", None, "rows to preview must be from 1 to 1000, not 1001"),
        ("", None, "rows to preview: value is empty: type a whole number"),
    ],
)
def test_preview_rows_is_a_whole_number_from_1_to_1000(
    typed: str, value: int | None, error: str | None
) -> None:
    document = doc(rule("_city", "exists"))
    document["preview_rows"] = typed
    report = check(document, CATALOG)
    assert report["preview_rows"] == {"value": value, "error": error}
    assert report["ok"]  # the query itself is fine
    assert (error is not None) == bool(report["summary"])


def test_loading_json_text_and_null() -> None:
    assert check(document_of('{"_city": {"$in": ["Kazan"]}}', CATALOG), CATALOG)["query"] == {
        "_city": {"$in": ["Kazan"]}
    }
    loaded = document_of({"_city": None}, CATALOG)
    assert loaded["root"]["items"][0]["operator"] == "is_null"
    assert loaded["root"]["items"][0]["value"] is None
    with pytest.raises(InvalidQuery, match="the text is not valid JSON"):
        document_of('{"_city": ', CATALOG)
    with pytest.raises(InvalidQuery, match=r"the text must be a JSON object like .*, not a list"):
        document_of("[1]", CATALOG)


def test_loading_an_empty_query_gives_one_empty_rule() -> None:
    loaded = document_of({}, CATALOG)
    assert [i["type"] for i in loaded["root"]["items"]] == ["rule"]
    assert check(loaded, CATALOG)["query"] == {}


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"phones": {"$size": 2}}, "$size"),
        ({"phones": {"$elemMatch": {"$gt": "1"}}}, "$elemMatch"),
        ({"_city": {"$regex": "a", "$options": "m"}}, "cannot show"),
        ({"_city": {"$not": {"$in": ["a"]}}}, "cannot show"),
        ({"loyalty_level": "3"}, "cannot show"),
        ({"_city": {"a": 1}}, "cannot show"),
        ({"$comment": "x"}, "$comment"),
        ({"_city": {"$inn": [1]}}, "unknown operator"),
        ({"vip": 1}, "cannot show"),
    ],
)
def test_load_refuses_what_it_cannot_show_exactly(query: dict[str, Any], said: str) -> None:
    with pytest.raises(InvalidQuery, match=f".*{said.replace('$', '[$]')}"):
        document_of(query, CATALOG)


@pytest.mark.parametrize("op", KIND_OPERATORS["date"])
def test_the_whole_day_operators_are_those_a_bare_day_changes(op: str) -> None:
    # The front end offers the whole day tick on WHOLE_DAY_OPERATORS: on exactly
    # the operators whose filter of a bare day the tick changes.
    arity = OPERATORS[op][1]
    value = None if arity == 0 else ["2024-05-01", "2024-05-31"] if arity == 2 else "2024-05-01"
    whole = rule_filter("_regdate", op, value, kind="date", whole_day=True)
    as_text = rule_filter("_regdate", op, value, kind="date", whole_day=False)
    assert (whole != as_text) == (op in WHOLE_DAY_OPERATORS)


@pytest.mark.parametrize(
    ("query", "op"),
    [
        ({"_bdate": "1985-02-22"}, "equal"),
        ({"_bdate": {"$ne": "1985-02-22"}}, "not_equal"),
        ({"_regdate": {"$gt": "2024-05-31"}}, "greater"),
        ({"_regdate": {"$lte": "2024-05-31"}}, "less_or_equal"),
        ({"_regdate": {"$gte": "2024-05-01", "$lte": "2024-05-31"}}, "between"),
    ],
)
def test_a_bare_day_written_as_text_loads_with_whole_day_off(
    query: dict[str, Any], op: str
) -> None:
    loaded = document_of(query, CATALOG)
    (shown,) = loaded["root"]["items"]
    assert (shown["operator"], shown["whole_day"]) == (op, False)
    assert check(loaded, CATALOG)["query"] == query
    # Ticked again, the same rule means whole days.
    shown["whole_day"] = True
    assert check(loaded, CATALOG)["query"] != query


def test_a_whole_day_range_loads_with_whole_day_on() -> None:
    query = {"$nor": [{"_regdate": {"$gte": "2024-05-31", "$lt": "2024-06-01"}}]}
    (shown,) = document_of(query, CATALOG)["root"]["items"]
    assert shown["operator"] == "not_equal"
    assert "whole_day" not in shown


def test_hand_written_queries_load_as_the_same_filter() -> None:
    # Other words for the same filter: MongoDB matches the same profiles.
    for query, written in [
        ({"$and": [{"_city": "a"}, {"vip": True}]}, {"_city": "a", "vip": True}),
        ({"_city": {"$eq": "a"}}, {"_city": "a"}),
        (
            {"loyalty_level": {"$gt": 1, "$lt": 5}},
            {"$and": [{"loyalty_level": {"$gt": 1}}, {"loyalty_level": {"$lt": 5}}]},
        ),
        ({"$or": [{"_city": "a"}]}, {"_city": "a"}),
    ]:
        assert check(document_of(query, CATALOG), CATALOG)["query"] == written


def test_unknown_fields_get_a_type_from_their_values() -> None:
    query = {"tier": {"$gte": 2}, "ok": True, "subscriptions": {"$elemMatch": {"prio": 1.5}}}
    guessed = guessed_types(query, CATALOG)
    assert guessed == {"tier": "int", "ok": "boolean", "subscriptions.prio": "float"}
    catalog = CATALOG.with_types(guessed)
    loads_back(query, catalog)
    report = check(document_of(query, catalog), catalog)
    warned = [w["message"] for i in report["items"].values() for w in i["warnings"]]
    assert warned == [
        "unknown field 'tier': it is not in the field list",
        "unknown field 'ok': it is not in the field list",
        "unknown field 'prio': it is not in the subscription fields",
    ]


def test_check_never_raises_on_a_malformed_document() -> None:
    for bad in (None, [], {"root": 3}, {"root": {"items": [5, {"type": "rule", "value": [[1]]}]}}):
        report = check(bad, CATALOG)
        assert report["ok"] is False or report["query"] == {}


# --- the round trip of random documents --------------------------------------------------

_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=8
).filter(lambda t: bool(t.strip()))
_DAY = st.dates(date(2000, 1, 1), date(2030, 12, 31)).map(date.isoformat)
_STAMP = st.datetimes(datetime(2000, 1, 1), datetime(2030, 1, 1)).map(
    lambda d: d.replace(microsecond=0).isoformat() + "Z"
)
_VALUES = {
    "string": _TEXT,
    "int": st.integers(-(2**63), 2**63 - 1).map(str),
    "float": st.floats(allow_nan=False, allow_infinity=False).map(repr),
    "boolean": st.sampled_from(["true", "false"]),
    "date": _DAY | _STAMP,
    "array": _TEXT,
}
_PATTERNS = st.sampled_from(["^a.*b$", "x|y", "[0-9]+", "(?i)ka", "a{2,}"])
_SUBSCRIPTION = {
    "channel": "string",
    "priority": "int",
    "reg_info.date": "date",
    "is_delete": "boolean",
}


@st.composite
def _rules(draw: st.DrawFn, within: bool) -> dict[str, Any]:
    fields = _SUBSCRIPTION if within else {n: CATALOG.kind(n) for n in FIELDS}
    field = draw(st.sampled_from(sorted(fields)))
    kind = fields[field]
    op = draw(st.sampled_from(KIND_OPERATORS[kind]))
    arity = OPERATORS[op][1]
    values = _PATTERNS if op == "matches" else _VALUES.get(kind, _TEXT)
    if arity == 0:
        value = None
    elif arity == 1:
        value = draw(values)
    elif arity == 2:
        value = [draw(values), draw(values)]
    else:
        value = draw(st.lists(values, min_size=1, max_size=3))
    label = draw(
        st.sampled_from(
            [field, CATALOG.subscriptions().label(field) if within else CATALOG.label(field)]
        )
    )
    return rule(label, op, value, ignore_case=draw(st.booleans()), whole_day=draw(st.booleans()))


def _groups(within: bool, depth: int) -> st.SearchStrategy[dict[str, Any]]:
    children: st.SearchStrategy[dict[str, Any]] = _rules(within)
    if depth > 0:
        children = children | _groups(within, depth - 1)
        if not within:
            children = children | st.builds(
                lambda g: {**g, "each": "subscriptions"}, _groups(True, depth - 1)
            )
    return st.builds(
        lambda items, join, negate: group(*items, join=join, negate=negate),
        st.lists(children, min_size=0, max_size=3),
        st.sampled_from(["and", "or"]),
        st.booleans(),
    )


@given(_groups(False, 2))
def test_random_documents_load_back_to_the_same_query(root: dict[str, Any]) -> None:
    document = {"rev": 1, "root": root, "fields": [], "preview_rows": "10"}
    report = check(document, CATALOG)
    assert report["ok"], report["summary"]
    query = report["query"]
    again = check(document_of(query, CATALOG), CATALOG)
    assert again["ok"], again["summary"]
    assert again["query"] == query
    assert again["query_json"] == report["query_json"]


# --- against the demo service ----------------------------------------------------------------

day_svc, day_demo = served_and_cleared("day_svc", profiles=150, seed=11)


def _subscription_days(service: DemoService) -> dict[str, list[str]]:
    """Day -> ids of the profiles with a subscription registered that day."""
    days: dict[str, set[str]] = {}
    for profile in service.profiles:
        for sub in profile.get("subscriptions", []):
            stamp = sub.get("reg_info", {}).get("date")
            if isinstance(stamp, str):
                days.setdefault(stamp[:10], set()).add(profile["id"])
    return {d: sorted(ids) for d, ids in days.items()}


def _ids(client: sn.Client, service: DemoService, query: dict[str, Any]) -> set[str]:
    frame = sn.read_profiles(client, service.db_id, query=query, progress=False)
    return set(frame["profile_id"]) if len(frame) else set()


def test_whole_days_against_the_demo(day_demo: DemoService) -> None:
    days = _subscription_days(day_demo)
    day, ids = next((d, ids) for d, ids in sorted(days.items()) if len(ids) >= 3)
    catalog = FieldCatalog(field_infos(sn.database_fields(day_demo.client(), day_demo.db_id)))
    field = "subscriptions.reg_info.date"
    everyone = {p["id"] for p in day_demo.profiles}
    with day_demo.client() as client:

        def found(op: str, value: Any) -> set[str]:
            report = check(doc(rule(field, op, value)), catalog)
            assert report["ok"], report["summary"]
            return _ids(client, day_demo, report["query"])

        assert found("equal", day) == set(ids)
        assert len(found("equal", day)) >= 3
        # a profile has several subscriptions, so "not that day" is every profile
        # with no subscription of that day
        assert found("not_equal", day) == everyone - set(ids)
        on_or_before = {i for d, i2 in days.items() if d <= day for i in i2}
        after = {i for d, i2 in days.items() if d > day for i in i2}
        assert found("less_or_equal", day) == on_or_before
        assert found("greater", day) == after
        assert found("between", [day, day]) == set(ids)
        nxt = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
        within_two = {i for d, i2 in days.items() if day <= d <= nxt for i in i2}
        assert found("between", [day, nxt]) == within_two


def test_same_subscription_group_finds_what_elem_match_does(day_demo: DemoService) -> None:
    catalog = FieldCatalog(field_infos(sn.database_fields(day_demo.client(), day_demo.db_id)))
    grouped = check(
        doc(
            group(
                rule("channel", "equal", "email"),
                rule("status", "equal", "subscribed"),
                each="subscriptions",
            )
        ),
        catalog,
    )
    assert grouped["query"] == {
        "subscriptions": {"$elemMatch": {"channel": "email", "status": "subscribed"}}
    }
    loose = check(
        doc(
            rule("subscriptions.channel", "equal", "email"),
            rule("subscriptions.status", "equal", "subscribed"),
        ),
        catalog,
    )
    by_hand = {"subscriptions": {"$elemMatch": {"channel": "email", "status": "subscribed"}}}
    with day_demo.client() as client:
        same = _ids(client, day_demo, grouped["query"])
        assert same == _ids(client, day_demo, by_hand)
        expected = {
            p["id"]
            for p in day_demo.profiles
            if any(
                s.get("channel") == "email" and s.get("status") == "subscribed"
                for s in p.get("subscriptions", [])
            )
        }
        assert same == expected
        assert same
        # rules outside the group may match in different subscriptions: more profiles
        assert same <= _ids(client, day_demo, loose["query"])


def test_dates_are_compared_as_text_in_the_query() -> None:
    # RFC 3339 strings sort by time as text when written alike; the query holds strings.
    assert query_of(rule("_regdate", "greater_or_equal", "2024-01-31T09:30")) == {
        "_regdate": {"$gte": "2024-01-31T09:30"}
    }
    assert datetime(2024, 1, 31, tzinfo=timezone.utc).isoformat() > "2024-01-31"
