"""A broken or hostile builder document gets its problem named, never a crash.

``qb.document`` comes from the browser, or from whoever assigns it: every
shape it may take (a group that is not an object, an unknown join, a field
that is not text, a pair with three values, nesting past the bound) is
reported in ``summary`` with what is wrong, ``ok`` is false and no query is
offered. Queries handed to ``load`` that it cannot show are refused with a
typed :class:`~stoplist_nb.errors.InvalidQuery` saying why.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import pytest
from test_builder_operators import CATALOG, doc, group, rule

from stoplist_nb.errors import InvalidQuery
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
    assert "Out of date" in preview_html(frame, params, stale=True)
