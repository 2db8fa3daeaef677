"""A broken or hostile builder document gets its problem named, never a crash.

``qb.document`` comes from the browser, or from whoever assigns it: every
shape it may take (a group that is not an object, an unknown join, a field
that is not text, a pair with three values, nesting past the bound) is
reported in ``summary`` with what is wrong, ``ok`` is false and no query is
offered. Queries handed to ``load`` that it cannot show are refused with a
typed :class:`~stoplist_nb.errors.InvalidQuery` saying why.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_builder_operators import CATALOG, doc, group, rule

from stoplist_nb.errors import InvalidQuery
from stoplist_nb.query import validate_query
from stoplist_nb.widgets.check import check
from stoplist_nb.widgets.load import document_of, guessed_types
from stoplist_nb.widgets.operators import guess_type, parse_value
from stoplist_nb.widgets.preview import preview_html


def _refused(document: Any) -> list[str]:
    report = check(document, CATALOG)
    assert report["ok"] is False, report["query"]
    assert report["query"] is None
    return report["summary"]


@pytest.mark.parametrize(
    ("document", "said"),
    [
        (["not", "a", "document"], "the document must be an object, not list"),
        ({"root": 7}, "a group must be an object, not int"),
        (doc(group(rule("_city", "equal", "a"), each="phones")), "on 'subscriptions' only"),
        (
            doc(
                group(
                    group(rule("channel", "equal", "a"), each="subscriptions"), each="subscriptions"
                )
            ),
            "cannot sit in another one",
        ),
        (doc(rule("_city", "equal", "a"), join="xor"), "join must be 'and' or 'or', not 'xor'"),
        ({"root": {"id": "g1", "type": "group", "items": "abc"}}, "its items must be a list"),
        (doc(rule(["_city"], "equal", "a")), "the field must be text"),  # type: ignore[arg-type]
        (doc(rule("_city", "similar", "a")), "unknown operator 'similar'"),
        (doc(rule("", "equal", "Kazan")), "pick a field for this value"),
        (doc(rule("a..b", "equal", "x")), "a..b"),
        (doc(rule("loyalty_level", "between", ["1", "2", "3"])), "between takes two values"),
        (doc(rule("loyalty_level", "between", ["1", ""])), "between needs two values: type both"),
        (doc(rule("_city", "in", [])), "no values yet"),
        (doc(rule("loyalty_level", "in", ["1", "x"])), "'x': value must be a number"),
        (doc(rule("_city", "matches", "(ov.")), "not a valid regular expression"),
    ],
)
def test_a_broken_document_names_its_problem(document: Any, said: str) -> None:
    assert any(said in line for line in _refused(document)), _refused(document)


def test_groups_nested_past_the_bound_are_refused() -> None:
    node = group(rule("_city", "equal", "a"))
    for _ in range(25):
        node = group(node)
    assert any("groups nest too deep" in line for line in _refused(doc(node)))


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        ("0", "from 1 to 1000, not 0"),
        ("1001", "from 1 to 1000, not 1001"),
        ("abc", "value must be a number, not 'abc'"),
        ("2.5", "whole number"),
        ("", "value is empty"),
    ],
)
def test_rows_to_preview_are_checked_like_a_whole_number_field(rows: str, said: str) -> None:
    document = doc(rule("_city", "equal", "a"))
    document["preview_rows"] = rows
    report = check(document, CATALOG)
    assert report["preview_rows"]["value"] is None
    assert said in report["preview_rows"]["error"]
    assert any(line.lower().startswith("rows to preview") for line in report["summary"])


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        (["_city", ""], "a field to return is empty"),
        (["_city", 3], "a field to return is empty"),
        (["_city", "_city"], "'_city' is listed twice"),
        (["a..b"], "a..b"),
        (["no_such_field"], "unknown field 'no_such_field'"),
    ],
)
def test_fields_to_return_are_checked_each(fields: list[Any], said: str) -> None:
    document = doc(rule("_city", "equal", "a"))
    document["fields"] = fields
    report = check(document, CATALOG)
    messages = [p["message"] for p in report["fields"]["problems"]]
    assert any(said in m for m in messages), messages
    assert any(line.startswith("Return field") for line in report["summary"])


@pytest.mark.parametrize(
    ("query", "said"),
    [
        (
            {"subscriptions": {"$elemMatch": {"$gt": 1}}},
            "an $elemMatch of operators cannot be held",
        ),
        ({"subscriptions": {"$elemMatch": 3}}, "$elemMatch takes a non-empty dict"),
        (
            {"subscriptions": {"$elemMatch": {"channel": "email"}, "$size": 2}},
            "cannot show $size beside $elemMatch",
        ),
        (
            {"subscriptions": {"$elemMatch": {"subscriptions": {"$elemMatch": {"a": 1}}}}},
            "$elemMatch within $elemMatch",
        ),
        ({"$and": [3]}, "$and items must be dicts"),
        ({"_city": {"$in": [{"a": 1}]}}, "cannot show"),
        ({"_city": {"$in": [["a"]]}}, "cannot show"),
        ({"loyalty_level": {"$gt": [1]}}, "cannot show"),
        ({"_city": {"$not": {"$regex": "(a"}}}, ""),
    ],
)
def test_load_says_why_it_cannot_show_a_query(query: dict[str, Any], said: str) -> None:
    with pytest.raises(InvalidQuery, match=None if not said else f".*{said.replace('$', '[$]')}"):
        document_of(query, CATALOG)


def test_a_negated_same_subscription_group_loads_inside_one() -> None:
    query = {"subscriptions": {"$elemMatch": {"$nor": [{"channel": "email", "status": "active"}]}}}
    loaded = document_of(query, CATALOG)
    (outer,) = loaded["root"]["items"]
    assert outer["each"] == "subscriptions"
    assert outer["items"][0]["not"] is True
    assert check(loaded, CATALOG)["query"] == query


def test_field_types_are_guessed_from_every_kind_of_condition() -> None:
    query = {
        "$or": [{"nick": {"$regex": "^a"}}, {"alias": {"$not": {"$regex": "b"}}}],
        "flag": {"$exists": True},
        "rank": {"$exists": True, "$gt": 3},
        "subscriptions": {"$elemMatch": {"prio": 1}},
    }
    assert guessed_types(query, CATALOG) == {
        "nick": "string",
        "alias": "string",
        "flag": "string",
        "rank": "int",
        "subscriptions.prio": "int",
    }


@pytest.mark.parametrize(
    ("kind", "text", "said"),
    [
        ("float", "inf", "value must be a finite number, not 'inf'"),
        ("float", "nan", "value must be a finite number, not 'nan'"),
        ("boolean", " ", "value is empty: pick true or false"),
        ("boolean", "yes", "value must be true or false, not 'yes'"),
        ("date", "", "value is empty: type a date like 2024-01-31"),
        ("date", "31.05.2024", "value must be a date like 2024-01-31"),
        ("string", "  ", "value is empty"),
    ],
)
def test_a_typed_value_that_is_not_one_says_why(kind: str, text: str, said: str) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        parse_value(kind, text)


def test_values_that_are_not_text_read_as_their_text() -> None:
    # The browser sends text; a document assigned from Python may hold anything.
    assert check(doc(rule("vip", "equal", True)), CATALOG)["query"] == {"vip": True}
    assert check(doc(rule("loyalty_level", "equal", 3)), CATALOG)["query"] == {"loyalty_level": 3}
    report = check(doc(rule("loyalty_level", "equal", None)), CATALOG)
    assert report["ok"] is False
    # A rule with neither field nor any value is a fresh one: it asks nothing.
    assert check(doc(rule("", "between", ["", " "])), CATALOG)["query"] == {}
    assert guess_type([None, "a"]) == "string"


def test_a_subscription_field_typed_with_its_full_path_is_the_same_field() -> None:
    inner = group(rule("subscriptions.channel", "equal", "email"), each="subscriptions")
    report = check(doc(inner), CATALOG)
    assert report["query"] == {"subscriptions": {"$elemMatch": {"channel": "email"}}}


def test_the_preview_shows_the_queried_paths_of_nested_groups_and_profile_fields() -> None:
    frame = pd.DataFrame(
        {"id": ["p1"], "channel": ["email"], "status": ["active"], "profile.channel": ["x"]}
    )
    params = {"query": {"$or": [{"_city": "a"}, {"$and": [{"channel": "email"}, {"b": 1}]}]}}
    text = preview_html(frame, params)
    assert "1 rows" in text
    assert "profiles)" not in text  # no profile_id column: no count of profiles
    assert "p1" in text


# -- wrong types, each on its own item; JSON text through the one guard ------------------


def _item_errors(report: dict[str, Any], id_: str) -> list[str]:
    return [e["message"] for e in report["items"].get(id_, {}).get("errors", [])]


@pytest.mark.parametrize(
    ("field", "wrong", "said"),
    [
        ("operator", ["in"], "the operator must be text, not list"),
        ("operator", {"$in": 1}, "the operator must be text, not dict"),
        ("value", {"a": 1}, "a value must be text or a list of texts, not dict"),
        ("value", [["Kazan"]], "a value must be text or a list of texts, not list"),
        ("value", [{"a": 1}], "a value must be text or a list of texts, not list"),
        ("ignore_case", "yes", "ignore_case must be true or false, not 'yes'"),
        ("whole_day", 0, "whole_day must be true or false, not 0"),
    ],
)
def test_a_rule_part_of_the_wrong_type_is_reported_on_that_rule(
    field: str, wrong: Any, said: str
) -> None:
    good, bad = rule("_city", "equal", "Kazan"), rule("_city", "in", ["Omsk"])
    bad[field] = wrong
    report = check(doc(good, bad), CATALOG)
    assert report["ok"] is False
    assert _item_errors(report, bad["id"]) == [said]
    assert _item_errors(report, good["id"]) == []
    assert any(line.startswith("Row 2: ") and said in line for line in report["summary"])


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        ("false", "not must be true or false, not 'false'"),
        (1, "not must be true or false, not 1"),
        ([True], "not must be true or false, not list"),
    ],
)
def test_a_group_not_that_is_not_a_boolean_is_refused_not_read_as_true(
    wrong: Any, said: str
) -> None:
    inner = group(rule("_city", "equal", "Kazan"))
    inner["not"] = wrong
    report = check(doc(inner), CATALOG)
    assert report["ok"] is False, report["query"]  # never negated by a truthy string
    assert _item_errors(report, inner["id"]) == [said]


@pytest.mark.parametrize(
    ("join", "each"), [(["and"], None), ({"or": 1}, None), ("and", ["subscriptions"])]
)
def test_an_unhashable_join_or_each_is_named_not_raised(join: Any, each: Any) -> None:
    inner = group(rule("_city", "equal", "Kazan"), each=each)
    inner["join"] = join
    report = check(doc(inner), CATALOG)
    assert report["ok"] is False
    assert _item_errors(report, inner["id"])


@pytest.mark.parametrize("fields", ["_city", {"_city": 1}, 7, None])
def test_fields_to_return_that_are_not_a_list_are_refused_not_all_fields(fields: Any) -> None:
    document = doc(rule("_city", "equal", "a"))
    document["fields"] = fields
    report = check(document, CATALOG)
    assert report["ok"] is False
    assert report["params"] is None  # never "return every field"
    [problem] = report["fields"]["problems"]
    assert problem["index"] is None
    assert problem["message"].startswith("the fields to return must be a list of names, not ")
    assert any(line.startswith("Return fields: ") for line in report["summary"])


def test_two_items_with_one_id_are_refused() -> None:
    inner = group(rule("_city", "equal", "a"))
    inner["id"] = "g1"  # the root's id too
    assert "Query: two items have the id 'g1'" in _refused(doc(inner))


def test_the_first_and_last_days_a_date_holds_check_and_load_without_overflow() -> None:
    report = check(doc(rule("_regdate", "less_or_equal", "9999-12-31")), CATALOG)
    assert report["query"] == {"_regdate": {"$lte": "9999-12-31"}}  # no day after it
    assert (
        document_of({"_regdate": {"$lt": "0001-01-01"}}, CATALOG)["root"]["items"][0]["operator"]
        == "less"
    )


def test_a_document_nested_thousands_deep_is_refused_without_recursing() -> None:
    node = group(rule("_city", "equal", "a"))
    for _ in range(5000):
        node = group(node)
    assert any("groups nest too deep" in line for line in _refused(doc(node)))


DEEP_TEXT = '{"$and": [' * 5000 + '{"_city": "a"}' + "]}" * 5000


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (DEEP_TEXT, "the text: nests deeper than 100 levels"),
        ('{"_city": "Kazan", "_city": "Omsk"}', "the text has the key '_city' twice in one object"),
        ('{"$or": [{"a": {"$in": [1], "$in": [2]}}]}', "the key '$in' twice"),
        ('{"a.$b": 1}', "a part of a field path cannot start with '$'"),
        ("1" * 5000, "integer too long"),
        ("[1]", "must be a JSON object"),
        ("{bad", "the text is not valid JSON"),
        ('{"_city": {"$in": [' + ",".join(['"x"'] * 10_001) + "]}}", "at most 10,000 values"),
    ],
)
def test_json_text_that_cannot_load_says_why(text: str, said: str) -> None:
    with pytest.raises(InvalidQuery, match=re.escape(said)):
        document_of(text, CATALOG)


def test_a_list_of_ten_thousand_values_loads_and_comes_back() -> None:
    query = {"_city": {"$in": [f"c{i}" for i in range(10_000)]}}
    assert check(document_of(query, CATALOG), CATALOG)["query"] == query


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
_PART = st.sampled_from(
    [
        "id",
        "type",
        "join",
        "not",
        "each",
        "items",
        "field",
        "operator",
        "value",
        "ignore_case",
        "whole_day",
    ]
)


def _node(depth: int) -> st.SearchStrategy[Any]:
    """A rule or group whose every part may be of any JSON type."""
    items = st.lists(_node(depth - 1), max_size=3) if depth else st.just([])
    base = st.fixed_dictionaries(
        {"id": st.text(max_size=3), "type": st.sampled_from(["rule", "group"])},
        optional={
            "items": items | _JSON,
            "field": st.sampled_from(["_city", "vip", "loyalty_level"]) | _JSON,
        },
    )
    return st.tuples(base, st.dictionaries(_PART, _JSON, max_size=3), st.booleans()).map(
        lambda t: {**t[0], **t[1]} if t[2] else t[0]
    )


@given(root=_node(3), fields=_JSON, rows=_JSON, whole=st.dictionaries(st.text(max_size=6), _JSON))
@settings(max_examples=300, deadline=None)
def test_check_never_raises_and_every_report_has_one_shape(
    root: Any, fields: Any, rows: Any, whole: dict[str, Any]
) -> None:
    for document in ({"root": root, "fields": fields, "preview_rows": rows}, whole, root):
        report = check(document, CATALOG)
        assert isinstance(report["ok"], bool)
        assert (report["query"] is None) is (not report["ok"])
        if report["ok"]:
            validate_query(report["query"])


@given(value=_JSON)
@settings(max_examples=300, deadline=None)
def test_load_of_any_json_text_raises_only_invalid_query(value: Any) -> None:
    text = json.dumps(value)
    for query in (text, value):
        try:
            document = document_of(query, CATALOG)
        except InvalidQuery:
            continue
        assert check(document, CATALOG)["ok"] is True
