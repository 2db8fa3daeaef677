"""Arbitrary input to the query layer and the download-path check: typed errors only.

Whatever a caller passes, ``validate_query`` and ``parse_query`` either accept it
or raise ``InvalidQuery``, and ``safe_download_path`` either returns a safe path
or raises ``UnsafePath``: never a ``RecursionError``, ``TypeError``, or a value
``json.dumps`` cannot write.
"""

from __future__ import annotations

import doctest
import json
import math
import re
import sys
import unicodedata
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import stoplist_nb as sn
import stoplist_nb.query.values
from stoplist_nb._http.addresses import safe_download_path
from stoplist_nb.demo import DemoService
from stoplist_nb.errors import InvalidQuery, StoplistError, UnsafePath
from stoplist_nb.query import (
    FIELD_OPERATORS,
    LOGICAL_OPERATORS,
    MAX_DEPTH,
    And,
    Condition,
    F,
    Nor,
    Query,
    parse_query,
    validate_query,
)

DEEP = 5000  # far past both MAX_DEPTH and Python's recursion limit
#: A chain built with & or | one condition at a time costs the square of its length to
#: build: past the recursion limit is enough to show that nothing walks it recursively.
CHAIN = sys.getrecursionlimit() + 500


def depth(value: Any) -> int:
    """MongoDB's nesting depth, written independently of the library (recursive on purpose)."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def nest(inner: Any, levels: int, kind: str) -> Any:
    """``inner`` wrapped ``levels`` times, built without recursion."""
    for _ in range(levels):
        if kind in ("$and", "$nor"):
            inner = {kind: [inner]}
        elif kind == "list":
            inner = [inner]
        elif kind == "doc":
            inner = {"x": inner}
        elif kind == "$elemMatch":
            inner = {"a": {"$elemMatch": inner}}
        else:  # "$not"
            inner = {"$not": inner}
    return inner


# --- strategies -----------------------------------------------------------------------

OPERATORS = sorted(FIELD_OPERATORS | LOGICAL_OPERATORS | {"$where", "$expr", "$"})
FIELDS = st.sampled_from(["_city", "score", "vip", "a.b", "tags", "x"])
KEYS = st.one_of(
    FIELDS,
    st.sampled_from(OPERATORS),
    st.text(max_size=6),
    st.text(max_size=6).map(lambda t: "$" + t),
    st.sampled_from(["", "a..b", ".a", "a.", "a\x00b", "\ud800", "Москва"]),
)
ODD_KEYS = st.one_of(st.integers(), st.none(), st.booleans(), st.tuples(st.integers()), st.floats())
ODD_OBJECTS = st.sampled_from([
    b"x", {1, 2}, frozenset(), Decimal("1.5"), object(), 1 + 2j, np.int64(3), np.bool_(True),
    F("a"), F("a") == 1, range(3), Ellipsis, print,
])  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**63 - 1, -(2**63), 2**63, -(2**63) - 1]),
    st.builds(pow, st.just(-10), st.just(5001)),  # too long even to print
    st.floats(),  # NaN and infinities included
    st.text(max_size=8),
    st.text(st.characters(categories=["Cs", "Lo", "Zs"]), max_size=4),  # lone surrogates too
    ODD_OBJECTS,
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(KEYS, children, max_size=4),
        st.dictionaries(st.one_of(KEYS, ODD_KEYS), children, max_size=3),
    )


JSONISH = st.recursive(SCALARS, _containers, max_leaves=25)

# Query-shaped values, so that many are valid and the parse property is exercised.
PLAIN = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
VALUES = st.recursive(
    PLAIN,
    lambda ch: st.one_of(st.lists(ch, max_size=3), st.dictionaries(FIELDS, ch, max_size=3)),
    max_leaves=6,
)


def _operator_dicts(values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    arg = st.one_of(
        values,
        st.lists(values, max_size=3),
        st.just("^a"),
        st.booleans(),
        st.sampled_from(["i", "imx", "q", ""]),
    )
    return st.dictionaries(st.sampled_from(sorted(FIELD_OPERATORS)), arg, min_size=1, max_size=3)


def _filters(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    condition = st.one_of(
        VALUES,
        _operator_dicts(VALUES),
        st.dictionaries(st.just("$not"), _operator_dicts(VALUES), min_size=1),
        st.dictionaries(st.just("$elemMatch"), children, min_size=1),
    )
    return st.one_of(
        st.dictionaries(FIELDS, condition, max_size=3),
        st.dictionaries(
            st.sampled_from(["$and", "$or", "$nor"]), st.lists(children, max_size=3), max_size=2
        ),
        st.dictionaries(
            st.sampled_from(["_city", "_fname", "$comment"]), st.text(max_size=3), max_size=2
        ),
    )


QUERYISH = st.recursive(st.dictionaries(FIELDS, VALUES, max_size=2), _filters, max_leaves=12)


@st.composite
def near_the_limit(draw: st.DrawFn) -> Any:
    """A valid-looking query nested around MAX_DEPTH, or thousands of levels deep."""
    kind = draw(st.sampled_from(["$and", "$nor", "list", "doc", "$elemMatch", "$not"]))
    levels = draw(st.one_of(st.integers(MAX_DEPTH // 3, MAX_DEPTH + 5), st.just(DEEP)))
    if kind in ("$and", "$nor"):
        return nest(draw(QUERYISH), levels // 2, kind)
    if kind == "$elemMatch":
        return nest(draw(QUERYISH), levels // 3, kind)
    if kind == "$not":
        return {"a": nest({"$in": [1]}, levels, kind)}
    return {"a": {"$in": [nest(draw(VALUES), levels, kind)]}}


ANY_QUERY = st.one_of(
    JSONISH,
    st.dictionaries(st.one_of(KEYS, ODD_KEYS), JSONISH, max_size=4),
    QUERYISH,
    near_the_limit(),
)


# --- validate_query and parse_query ----------------------------------------------------


def _accepted_is_sendable(result: Any) -> None:
    text = json.dumps(result, allow_nan=False)  # what requests does with a json= body
    assert json.loads(text) == result
    assert depth(result) <= MAX_DEPTH


def outcome(call: Any, query: Any) -> tuple[Any, InvalidQuery | None]:
    """``(call(query), None)``, or ``(None, the InvalidQuery raised)``; nothing else is caught."""
    try:
        return call(query), None
    except InvalidQuery as exc:
        return None, exc


@pytest.mark.slow
@given(ANY_QUERY)
def test_validate_query_accepts_or_raises_invalid_query(query: Any) -> None:
    result, refused = outcome(validate_query, query)
    if refused is not None:
        assert str(refused)
        return
    assert isinstance(result, dict)
    _accepted_is_sendable(result)


# What validate_query passes and the model cannot hold, as parse_query documents it.
UNHELD = re.compile(
    r"\$comment cannot be held|an \$elemMatch of operators cannot be held"
    rf"|\$elemMatch takes a non-empty query|nests deeper than {MAX_DEPTH} levels"
)


@pytest.mark.slow
@given(ANY_QUERY)
def test_parse_query_accepts_what_validate_does_and_round_trips(query: Any) -> None:
    valid, invalid = outcome(validate_query, query)
    model, refused = outcome(parse_query, query)
    if invalid is not None:
        assert refused is not None
        return
    if refused is not None:
        assert UNHELD.search(str(refused)), str(refused)
        return
    mongo = model.to_mongo()
    _accepted_is_sendable(mongo)
    assert model._depth == depth(mongo)
    assert validate_query(mongo) == mongo
    assert parse_query(mongo) == model
    assert parse_query(valid) == model
    assert repr(model)
    assert hash(parse_query(mongo)) == hash(model)


@pytest.mark.parametrize("kind", ["$and", "$nor", "list", "doc", "$elemMatch", "$not"])
@pytest.mark.parametrize("call", [validate_query, parse_query])
def test_thousands_of_levels_are_invalid_query_naming_the_limit(call: Any, kind: str) -> None:
    query = {"a": nest({"$in": [1]}, DEEP, kind)} if kind == "$not" else nest({"a": 1}, DEEP, kind)
    with pytest.raises(InvalidQuery, match=f"nests deeper than {MAX_DEPTH} levels") as info:
        call(query if isinstance(query, dict) else {"a": query})
    assert isinstance(info.value, StoplistError)
    assert len(str(info.value)) < 300  # the path is shortened, the reason stays readable
    assert info.value.__context__ is None  # refused before any walk could recurse


@pytest.mark.parametrize(
    ("levels", "ok"), [(MAX_DEPTH - 1, True), (MAX_DEPTH, False), (MAX_DEPTH + 1, False)]
)
def test_the_limit_counts_each_dict_and_list_as_mongodb_does(levels: int, ok: bool) -> None:
    query = {"a": nest(1, levels, "list")}  # the query's own dict is one level more
    assert depth(query) == levels + 1
    if ok:
        assert validate_query(query) == query
        assert parse_query(query) == (F("a") == nest(1, levels, "list"))
    else:
        with pytest.raises(InvalidQuery, match=r"query\['a'\]\[0\]\[0\]"):
            validate_query(query)


def test_parse_query_refuses_near_the_limit_what_would_nest_deeper_as_a_model() -> None:
    # Two operators on one field become an $and of two conditions: 2 levels more.
    query = nest({"a": {"$gte": 1, "$lt": 5}}, (MAX_DEPTH - 2) // 2, "$nor")
    assert depth(query) == MAX_DEPTH
    assert validate_query(query) == query
    with pytest.raises(InvalidQuery, match=f"nests deeper than {MAX_DEPTH} levels"):
        parse_query(query)
    shallower = nest({"a": {"$gte": 1, "$lt": 5}}, (MAX_DEPTH - 4) // 2, "$nor")
    assert depth(parse_query(shallower).to_mongo()) == MAX_DEPTH


def test_a_query_that_contains_itself_is_invalid_query() -> None:
    loop: dict[str, Any] = {"x": 1}
    loop["self"] = loop
    looping_list: list[Any] = [1]
    looping_list.append(looping_list)
    for query in ({"$and": [loop]}, {"a": loop}, {"a": {"$in": looping_list}}):
        with pytest.raises(InvalidQuery, match="contains itself"):
            validate_query(query)
        with pytest.raises(InvalidQuery, match="contains itself"):
            parse_query(query)
    with pytest.raises(InvalidQuery, match="contains itself"):
        _ = F("a") == loop


def test_shared_parts_are_walked_once_and_counted_where_they_appear() -> None:
    doubling: list[Any] = [1]
    for _ in range(60):  # 2**60 values as JSON, 61 lists in memory
        doubling = [doubling, doubling]
    with pytest.raises(InvalidQuery, match="holds more than"):
        validate_query({"a": {"$in": doubling}})
    shared = {"b": [1, 2]}
    assert validate_query({"a": shared, "c": shared}) == {"a": shared, "c": shared}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (math.nan, "nan is not a JSON number"),
        (-math.inf, "-inf is not a JSON number"),
        (2**63, "integers must fit in 64 bits"),
        (-(10**5000), "integers must fit in 64 bits"),
        ({1: "x"}, "keys must be strings, not int"),
        ({"a\x00": 1}, "NUL"),
        ("\udc80", "lone surrogates"),
        ({1, 2}, "set is not a JSON type"),
        (np.int64(5), r"int64 is not a JSON type.*\.item\(\)"),
        (F("b") == 1, "Condition is not a JSON type"),
    ],
    ids=["nan", "inf", "int64", "huge-int", "int-key", "nul-key", "surrogate", "set", "numpy", "Q"],
)
def test_what_json_cannot_carry_is_invalid_query_everywhere(value: Any, message: str) -> None:
    for query in ({"a": value}, {"a": {"$in": [value]}}, {"$or": [{"a": 1}, {"b": [value]}]}):
        with pytest.raises(InvalidQuery, match=message):
            validate_query(query)
        with pytest.raises(InvalidQuery, match=message):
            parse_query(query)
    with pytest.raises(InvalidQuery, match=message):
        _ = F("a") == value


def test_validate_query_returns_plain_json() -> None:
    frozen = F("a").isin([(1, 2), {"b": (3,)}]).value
    query = {"a": {"$in": frozen}, "b": {"$all": (1, 2)}}
    assert validate_query(query) == {"a": {"$in": [[1, 2], {"b": [3]}]}, "b": {"$all": [1, 2]}}
    assert json.dumps(validate_query(query))


def test_read_profiles_refuses_a_deep_query_before_any_request(
    client: sn.Client, demo: DemoService
) -> None:
    for query in (nest({"_city": "Moscow"}, DEEP, "$and"), {"_city": {"$in": [math.nan]}}):
        with pytest.raises(InvalidQuery):
            sn.read_profiles(client, demo.db_id, query=query, progress=False)
        with pytest.raises(InvalidQuery):
            sn.ProfilesRequest(client, demo.db_id, query=query).pages()
    assert demo.requests == []


def test_a_query_at_the_limit_reaches_the_service(client: sn.Client, demo: DemoService) -> None:
    cities = sorted({p["_city"] for p in demo.profiles if p.get("_city")})[:2]
    query = nest({"_city": {"$not": {"$nin": cities}}}, (MAX_DEPTH - 4) // 2, "$and")
    assert depth(query) == MAX_DEPTH
    frame = sn.read_profiles(client, demo.db_id, query=query, progress=False)
    expected = {p["id"] for p in demo.profiles if p.get("_city") in cities}
    assert set(frame["profile_id"]) == expected
    assert [r.method for r in demo.requests] == ["profiles/list"] * len(demo.requests)


# --- the query model built with Python operators --------------------------------------


@pytest.mark.slow
def test_long_chains_of_one_operator_flatten_and_keep_working() -> None:
    query: Query = F("a") == 1
    either: Query = F("a") == 1
    for i in range(CHAIN):
        query = query & (F("b") == i)
        either = either | (F("b") == i)
    for q, op in ((query, "$and"), (either, "$or")):
        mongo = q.to_mongo()
        assert len(mongo[op]) == CHAIN + 1
        assert depth(mongo) == 3
        assert parse_query(mongo) == q
        assert hash(q) == hash(parse_query(mongo))
        assert repr(q).count("F('b') == ") == CHAIN


def test_many_negations_cancel_out() -> None:
    cond: Query = F("a") > 1
    group: Query = (F("a") > 1) & (F("b") < 2)
    for _ in range(DEEP + 1):
        cond, group = ~cond, ~group
    assert cond == ~(F("a") > 1)
    assert group == ~((F("a") > 1) & (F("b") < 2))
    assert (~cond, ~group) == ((F("a") > 1), (F("a") > 1) & (F("b") < 2))


@pytest.mark.parametrize(
    "grow",
    [
        lambda q: ~(q & (F("b") == 2)),
        lambda q: (q & (F("b") == 2)) | (F("c") == 3),
        lambda q: Nor([q]),
        lambda q: F("tags").elem_match(q),
        lambda q: ~F("tags").elem_match(q),
    ],
    ids=["not-and", "and-or", "nor", "elem_match", "not-elem_match"],
)
def test_nesting_by_operators_is_refused_when_built_past_the_limit(grow: Any) -> None:
    query: Query = F("a") == 1
    refused = None
    for _ in range(DEEP):
        deeper, refused = outcome(grow, query)
        if refused is not None:
            break
        query = deeper
    assert refused is not None
    assert f"nests deeper than {MAX_DEPTH} levels" in str(refused)
    # The deepest query that could be built is whole: it prints, compares and reads back.
    mongo = query.to_mongo()
    assert MAX_DEPTH - 4 <= depth(mongo) <= MAX_DEPTH
    assert parse_query(mongo) == query
    assert eval(repr(query), {"F": F, "And": And, "Nor": Nor}) == query


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: F("a") == nest(1, DEEP, "list"), r"query\['a'\]\['\$eq'\].*nests deeper"),
        (lambda: F("a").isin([nest({}, DEEP, "doc")]), "nests deeper"),
        (lambda: F(nest("a", DEEP, "list")), "a field path must be a string, not list"),
        (lambda: Condition("a", nest("$eq", DEEP, "list"), 1), "unsupported operator of type"),
        (lambda: Condition("a", "$regex", "x", options=[1]), "takes a string, not list"),  # type: ignore[arg-type]
        (lambda: F("a") == F("b"), "F is not a JSON type"),
        (lambda: F("a\x00"), r"a field path 'a\\x00': keys cannot contain NUL"),
    ],
)
def test_odd_building_blocks_are_invalid_query(build: Any, message: str) -> None:
    with pytest.raises(InvalidQuery, match=message):
        build()


def test_json_depth_doctests() -> None:
    result = doctest.testmod(stoplist_nb.query.values, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# --- safe_download_path -----------------------------------------------------------------

PATH_TEXT = st.text(
    st.one_of(
        st.sampled_from(list("/.\\:%?#@~ -_aZ0")),
        st.sampled_from(["\x00", "\n", "\u202e", "\u2028", "\u2029", "\u3000", "\uff0e", "\u2025"]),
        st.characters(codec="utf-8"),
    ),
    max_size=40,
)
UNRESERVED_OR_ESCAPE = re.compile(r"(?:[A-Za-z0-9._~/-]|%[0-9A-F]{2})+")
DOWNLOADS = "https://api.example.com/api/download/"


def _check_safe(text: str) -> None:
    try:
        quoted = safe_download_path(text)
    except UnsafePath:
        return
    # The properties of the result itself, read back as the service would.
    assert UNRESERVED_OR_ESCAPE.fullmatch(quoted), quoted
    plain_path = unquote(quoted, errors="strict")
    assert plain_path == text
    assert not plain_path.startswith("/")
    assert "\\" not in plain_path
    assert not any(seg in ("", ".", "..") for seg in plain_path.split("/"))
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in plain_path)
    parts = urlsplit(plain_path)
    assert (parts.scheme, parts.netloc) == ("", "")
    assert urljoin(DOWNLOADS, quoted) == DOWNLOADS + quoted  # no dot segment climbs out


@given(st.one_of(PATH_TEXT, st.text(max_size=40)))
def test_safe_download_path_returns_a_safe_path_or_raises_unsafe_path(text: str) -> None:
    _check_safe(text)


@pytest.mark.parametrize(
    "text",
    ["a/../b", "../x", "./x", "a//b", "/etc/passwd", "a\\b", "http://h/x", "c:x", "a\x00b", ""],
)
def test_safe_download_path_refuses_the_known_escapes(text: str) -> None:
    with pytest.raises(UnsafePath):
        safe_download_path(text)


def test_safe_download_path_refuses_a_lone_surrogate() -> None:
    with pytest.raises(UnsafePath):
        safe_download_path("suppress/\udc80.zip")
