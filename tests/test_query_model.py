"""The query model: F builds it, to_mongo writes it, parse_query reads it back."""

from __future__ import annotations

import doctest
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import stoplist_nb.query.model
from stoplist_nb.errors import InvalidQuery
from stoplist_nb.query import And, Condition, F, Nor, Or, Query, parse_query, validate_query

TO_MONGO: list[tuple[Query, dict[str, Any]]] = [
    (F("_city") == "Moscow", {"_city": "Moscow"}),
    (F("_city") != "Moscow", {"_city": {"$ne": "Moscow"}}),
    (F("score") < 5, {"score": {"$lt": 5}}),
    (F("score") <= 5, {"score": {"$lte": 5}}),
    (F("score") > 5, {"score": {"$gt": 5}}),
    (F("score") >= 5.5, {"score": {"$gte": 5.5}}),
    (F("_city").isin(["Moscow", "Kazan"]), {"_city": {"$in": ["Moscow", "Kazan"]}}),
    (F("_city").notin(("Moscow",)), {"_city": {"$nin": ["Moscow"]}}),
    (F("vip").exists(), {"vip": {"$exists": True}}),
    (F("vip").exists(False), {"vip": {"$exists": False}}),
    (F("_lname").regex("^iv", flags="mi"), {"_lname": {"$regex": "^iv", "$options": "im"}}),
    (F("email").contains("a.b"), {"email": {"$regex": "a\\.b"}}),
    (F("_lname").contains("ivan", case=False), {"_lname": {"$regex": "ivan", "$options": "i"}}),
    (F("_lname").startswith("Ив"), {"_lname": {"$regex": "^Ив"}}),
    (F("address") == {"city": "M"}, {"address": {"$eq": {"city": "M"}}}),
    (F("tags") == ["a", "b"], {"tags": ["a", "b"]}),
    (F("phones").op("$size", 0), {"phones": {"$size": 0}}),
    (F("subscriptions.channel") == "email", {"subscriptions.channel": "email"}),
    # negation of single conditions
    (~(F("a") == 1), {"a": {"$ne": 1}}),
    (~(F("a") != 1), {"a": 1}),
    (~F("a").isin([1]), {"a": {"$nin": [1]}}),
    (~F("a").notin([1]), {"a": {"$in": [1]}}),
    (~F("a").exists(), {"a": {"$exists": False}}),
    (~(F("a") > 1), {"a": {"$not": {"$gt": 1}}}),
    (~F("a").regex("x", "i"), {"a": {"$not": {"$regex": "x", "$options": "i"}}}),
    # groups
    ((F("a") == 1) & (F("b") > 2), {"a": 1, "b": {"$gt": 2}}),
    (
        (F("a") >= 1) & (F("a") < 5),
        {"$and": [{"a": {"$gte": 1}}, {"a": {"$lt": 5}}]},
    ),
    (
        (F("a") == 1) & ((F("b") == 2) | (F("c") == 3)),
        {"$and": [{"a": 1}, {"$or": [{"b": 2}, {"c": 3}]}]},
    ),
    ((F("a") == 1) | (F("b") == 2) | (F("c") == 3), {"$or": [{"a": 1}, {"b": 2}, {"c": 3}]}),
    (~((F("a") == 1) | (F("b") == 2)), {"$nor": [{"a": 1}, {"b": 2}]}),
    (
        ~((F("a") >= 1) & (F("a") < 5)),
        {"$nor": [{"$and": [{"a": {"$gte": 1}}, {"a": {"$lt": 5}}]}]},
    ),
    (And([]), {}),
    (And([F("a") == 1]), {"$and": [{"a": 1}]}),
    (
        F("subscriptions").elem_match((F("channel") == "email") & (F("status") == 0)),
        {"subscriptions": {"$elemMatch": {"channel": "email", "status": 0}}},
    ),
    (
        ~F("subscriptions").elem_match(F("channel") == "sms"),
        {"subscriptions": {"$not": {"$elemMatch": {"channel": "sms"}}}},
    ),
]


@pytest.mark.parametrize(("query", "expected"), TO_MONGO, ids=range(len(TO_MONGO)))
def test_to_mongo(query: Query, expected: dict[str, Any]) -> None:
    assert query.to_mongo() == expected
    assert validate_query(query.to_mongo()) == expected
    assert parse_query(expected) == query


def test_and_flattens_and_keeps_order() -> None:
    a, b, c = F("a") == 1, F("b") == 2, F("c") == 3
    assert a & b & c == And([a, b, c]) == And([And([a, b]), c])
    assert (a | b) | c == Or([a, Or([b, c])])
    assert (a & b) != (b & a)


def test_values_compare_by_type_and_hash() -> None:
    assert (F("a") == 1) != (F("a") == True)  # noqa: E712 (a condition, not a test)
    assert (F("a") == 1) != (F("a") == 1.0)
    assert len({F("a").isin([1, 2]), F("a").isin((1, 2)), F("a") == {"x": [1]}}) == 2
    assert hash(F("a") == {"x": [1]}) == hash(F("a") == {"x": (1,)})


def test_nodes_are_immutable_and_have_no_truth_value() -> None:
    cond = F("a") == 1
    with pytest.raises(AttributeError):
        cond.path = "b"  # type: ignore[misc]
    with pytest.raises(TypeError, match="combine queries with &"):
        bool(cond)
    with pytest.raises(TypeError, match="combine queries with &"):
        1 < F("a") < 5  # noqa: B015 (chained comparisons would drop one side)
    with pytest.raises(TypeError):
        hash(F("a"))


PARSE: list[tuple[dict[str, Any], Query]] = [
    ({"_city": "Moscow", "vip": True}, (F("_city") == "Moscow") & (F("vip") == True)),  # noqa: E712
    ({"$and": [{"a": 1}, {"b": 2}]}, (F("a") == 1) & (F("b") == 2)),
    ({"$or": [{"a": 1}, {"b": {"$lt": 2}}]}, (F("a") == 1) | (F("b") < 2)),
    ({"$or": [{"a": 1}]}, F("a") == 1),
    ({"$nor": [{"a": 1}]}, Nor([F("a") == 1])),
    ({"$nor": [{"$or": [{"a": 1}, {"b": 2}]}]}, ~((F("a") == 1) | (F("b") == 2))),
    ({"a": {"$not": {"$gt": 1}}}, ~(F("a") > 1)),
    ({"a": {"$not": {"$eq": 1}}}, F("a") != 1),
    ({"a": {"$not": {"$in": [1]}}}, F("a").notin([1])),
    ({"a": {"$not": "^iv"}}, ~F("a").regex("^iv")),
    ({"a": {"$not": {"$gte": 1, "$lt": 5}}}, ~((F("a") >= 1) & (F("a") < 5))),
    ({"a": {"$gte": 1, "$lt": 5}}, (F("a") >= 1) & (F("a") < 5)),
    ({"a": {"$options": "i", "$regex": "x"}}, F("a").regex("x", "i")),
    (
        {"subscriptions.email_data.domain": "gmail.com"},
        F("subscriptions.email_data.domain") == "gmail.com",
    ),
    (
        {"subscriptions": {"$elemMatch": {"channel": "email", "status": {"$in": [0, 4]}}}},
        F("subscriptions").elem_match((F("channel") == "email") & F("status").isin([0, 4])),
    ),
    ({"address": {"city": "M"}}, F("address") == {"city": "M"}),
    ({"x": 1, "$or": [{"a": 1}, {"b": 1}]}, (F("x") == 1) & ((F("a") == 1) | (F("b") == 1))),
    ({"phones": {"$size": 0}}, F("phones").op("$size", 0)),
    ({}, And([])),
]


@pytest.mark.parametrize(("query", "expected"), PARSE, ids=range(len(PARSE)))
def test_parse(query: dict[str, Any], expected: Query) -> None:
    assert parse_query(query) == expected


UNPARSABLE: list[tuple[Any, str]] = [
    ({"$comment": "x", "a": 1}, r"query\['\$comment'\]: \$comment cannot be held"),
    ({"phones": {"$elemMatch": {"$regex": "^7"}}}, r"query\['phones'\]\['\$elemMatch'\]"),
    ({"a": {"$inn": 1}}, r"unknown operator '\$inn'"),
    ([{"a": 1}], "must be a dict"),
    ({"$or": [{"a": {"$in": "x"}}]}, r"query\['\$or'\]\[0\]\['a'\]\['\$in'\]"),
]


@pytest.mark.parametrize(("query", "message"), UNPARSABLE, ids=range(len(UNPARSABLE)))
def test_unparsable_queries_name_the_part(query: Any, message: str) -> None:
    with pytest.raises(InvalidQuery, match=message):
        parse_query(query)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: F("a").isin("abc"), r"\$in takes a list, not str"),
        (lambda: F("a").exists(1), r"\$exists takes True or False"),  # type: ignore[arg-type]
        (lambda: F("a").regex("x", "q"), "letters from 'imxsu'"),
        (lambda: F("a").op("$where", "1"), r"query\['a'\]: unknown operator '\$where'"),
        (lambda: F("$a"), "without '\\$'"),
        (lambda: F("a..b"), "empty parts"),
        (lambda: Or([F("a") == 1]), "two or more"),
        (lambda: Nor([]), "one or more"),
        (lambda: And(["x"]), "And takes queries, not str"),  # type: ignore[list-item]
    ],
)
def test_bad_building_blocks(build: Any, message: str) -> None:
    with pytest.raises(InvalidQuery, match=message):
        build()


REPRS: list[tuple[Query, str]] = [
    (
        (F("_city") == "Moscow") & F("vip").exists(True),
        "(F('_city') == 'Moscow') & F('vip').exists(True)",
    ),
    ((F("a") == 1) | (F("b") > 2) & (F("c") < 3), "(F('a') == 1) | ((F('b') > 2) & (F('c') < 3))"),
    (~((F("a") == 1) | (F("b") == 2)), "~((F('a') == 1) | (F('b') == 2))"),
    (~(F("a") > 1), "~(F('a') > 1)"),
    (Nor([F("a") == 1]), "Nor([F('a') == 1])"),
    (F("a").notin(["x"]), "F('a').notin(['x'])"),
    (F("a").regex("x", "i"), "F('a').regex('x', flags='i')"),
    (And([]), "And([])"),
]


@pytest.mark.parametrize(("query", "text"), REPRS, ids=range(len(REPRS)))
def test_repr_reads_like_the_dsl(query: Query, text: str) -> None:
    assert repr(query) == text
    assert eval(text, {"F": F, "And": And, "Nor": Nor}) == query


SAME_FAULT: list[tuple[Any, dict[str, Any]]] = [
    (lambda: F("a").isin({"x": 1}), {"a": {"$in": {"x": 1}}}),
    (lambda: F("a").notin("x"), {"a": {"$nin": "x"}}),
    (lambda: F("a").op("$all", 3), {"a": {"$all": 3}}),
    (lambda: F("a").exists([1]), {"a": {"$exists": [1]}}),  # type: ignore[arg-type]
    (lambda: F("a").regex(5), {"a": {"$regex": 5}}),  # type: ignore[arg-type]
    (lambda: F("a").regex("x", "q"), {"a": {"$regex": "x", "$options": "q"}}),
    (lambda: Condition("a", "$gt", 1, options="i"), {"a": {"$gt": 1, "$options": "i"}}),
    (lambda: F("a").op("$where", "1"), {"a": {"$where": "1"}}),
    (lambda: F("a").op("$or", [{"b": 1}]), {"a": {"$or": [{"b": 1}]}}),
    (lambda: F("a..b") == 1, {"a..b": 1}),
    (lambda: F(""), {"": 1}),
    (lambda: F("a").isin([{1: "x"}]), {"a": {"$in": [{1: "x"}]}}),
]


@pytest.mark.parametrize(("build", "query"), SAME_FAULT, ids=range(len(SAME_FAULT)))
def test_the_model_and_validate_query_refuse_a_fault_in_the_same_words(
    build: Any, query: dict[str, Any]
) -> None:
    with pytest.raises(InvalidQuery) as refused:
        validate_query(query)
    with pytest.raises(InvalidQuery) as built:
        build()
    assert str(built.value) == str(refused.value)


def test_condition_normalises_negation() -> None:
    assert Condition("a", "$eq", 1, negated=True) == Condition("a", "$ne", 1)
    assert Condition("a", "$exists", True, negated=True) == F("a").exists(False)


def test_model_doctests() -> None:
    result = doctest.testmod(stoplist_nb.query.model, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# --- properties -----------------------------------------------------------------------

PATHS = st.sampled_from(["_city", "_fname", "score", "vip", "subscriptions.channel", "a.b.c"])
SCALARS = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["Москва", "Zürich", "東京", "$x", ""]),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)


@st.composite
def conditions(draw: st.DrawFn) -> Query:
    field = F(draw(PATHS))
    kind = draw(st.integers(min_value=0, max_value=11))
    value = draw(SCALARS)
    text = draw(st.text(max_size=6))
    case = draw(st.booleans())
    built: list[Any] = [
        lambda: field == value,
        lambda: field != value,
        lambda: field < value,
        lambda: field <= value,
        lambda: field > value,
        lambda: field >= value,
        lambda: field.isin(draw(st.lists(SCALARS, max_size=3))),
        lambda: field.notin(draw(st.lists(SCALARS, max_size=3))),
        lambda: field.exists(case),
        lambda: field.regex(text, draw(st.sampled_from(["", "i", "ms", "imxs"]))),
        lambda: field.contains(text, case=case),
        lambda: field.startswith(text, case=case),
    ]
    query: Query = built[kind]()
    return query


def _combine(children: st.SearchStrategy[Query]) -> st.SearchStrategy[Query]:
    return st.one_of(
        children,
        st.tuples(children, children).map(lambda ab: ab[0] & ab[1]),
        st.tuples(children, children).map(lambda ab: ab[0] | ab[1]),
        children.map(lambda q: ~q),
    )


ELEMENTS = _combine(conditions()).map(lambda q: F("subscriptions").elem_match(q))
LEAVES = st.one_of(conditions(), ELEMENTS)
# Nesting depth at most 3: each level combines the one below.
QUERIES = _combine(_combine(_combine(LEAVES)))


@given(QUERIES)
def test_round_trip(query: Query) -> None:
    mongo = query.to_mongo()
    assert validate_query(mongo) == mongo
    assert parse_query(mongo) == query


@given(QUERIES)
def test_double_negation_and_repr(query: Query) -> None:
    assert ~~query == query
    assert hash(~~query) == hash(query)
    assert eval(repr(query), {"F": F, "And": And, "Nor": Nor}) == query


def test_elem_match_may_hold_logical_operators() -> None:
    query = {"subscriptions": {"$elemMatch": {"$or": [{"channel": "sms"}, {"status": 0}]}}}
    assert validate_query(query) == query
    assert parse_query(query) == F("subscriptions").elem_match(
        (F("channel") == "sms") | (F("status") == 0)
    )


CHECKED_OPERATORS = st.sampled_from(["$in", "$nin", "$all", "$exists", "$regex", "$eq", "$gt"])
ARGUMENTS = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.lists(SCALARS, max_size=3).map(tuple),
    st.dictionaries(st.sampled_from(["x", "y"]), SCALARS, max_size=2),
    st.sampled_from([{1, 2}, float("nan"), 2**64]),
)


@given(PATHS, CHECKED_OPERATORS, ARGUMENTS)
def test_a_condition_is_built_exactly_when_validate_query_takes_it(
    path: str, op: str, arg: Any
) -> None:
    query = {path: {op: arg}}
    refusals = []
    for check in (lambda: validate_query(query), lambda: Condition(path, op, arg)):
        try:
            check()
        except InvalidQuery as exc:
            refusals.append(str(exc))
    assert refusals == [] or refusals == [refusals[0]] * 2, refusals
    if not refusals:
        assert parse_query(query) == Condition(path, op, arg)
