"""validate_query: MongoDB mistakes are named before anything is sent."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from stoplist_nb import InvalidQuery, validate_query

GOOD: list[dict[str, Any]] = [
    {},
    {"_city": "Moscow"},
    {"_city": {"$in": ["Moscow", "Kazan"]}, "_fname": {"$exists": True}},
    {"$or": [{"_city": "Moscow"}, {"$and": [{"_fname": "Anna"}, {"_lname": {"$ne": "X"}}]}]},
    {"$nor": [{"vip": True}]},
    {"_lname": {"$regex": "^iv", "$options": "i"}},
    {"_lname": {"$not": {"$regex": "^iv"}}},
    {"_lname": {"$not": "^iv"}},
    {"subscriptions": {"$elemMatch": {"channel": "email", "status": "subscribed"}}},
    {"phones": {"$elemMatch": {"$regex": "^\\+7"}}},
    {"subscriptions.email_data.domain": {"$in": ["gmail.com"]}, "score": {"$gte": 1, "$lt": 5}},
    {"phones": {"$size": 0}},
    {"address": {"city": "Moscow"}},  # equality with an embedded document
    {"loyalty_level": {"$mod": [2, 0]}, "$comment": "even levels"},
]


@pytest.mark.parametrize("query", GOOD, ids=range(len(GOOD)))
def test_good_queries_pass_unchanged(query: dict[str, Any]) -> None:
    assert validate_query(query) == query


BAD: list[tuple[Any, str]] = [
    ([{"_city": "x"}], "query must be a dict, not list"),
    ("{}", "query must be a dict, not str"),
    ({"_city": {"$inn": ["x"]}}, r"query\['_city'\]: unknown operator '\$inn'"),
    ({"$foo": []}, r"unknown operator '\$foo'"),
    ({"$not": {"_city": "x"}}, "negate a whole query with \\$nor"),
    ({"$in": ["x"]}, "needs a field"),
    ({"$or": []}, "non-empty list"),
    ({"$or": {"_city": "x"}}, "non-empty list"),
    ({"$or": ["x"]}, r"query\['\$or'\]\[0\]: \$or items must be dicts"),
    ({"$and": [{"_city": {"$or": [1]}}]}, r"query\['\$and'\]\[0\]\['_city'\]\['\$or'\]"),
    ({"_city": {"$in": "Moscow"}}, r"\$in takes a list, not str"),
    ({"_city": {"$nin": 5}}, r"\$nin takes a list"),
    ({"_city": {"$exists": 1}}, r"\$exists takes True or False"),
    ({"_city": {"$regex": 5}}, r"\$regex takes a pattern string"),
    ({"_city": {"$options": "i"}}, r"\$options goes with \$regex"),
    ({"_city": {"$regex": "x", "$options": "q"}}, r"letters from 'imxsu'"),
    ({"_city": {"$eq": "x", "name": 1}}, "mixes operators and field names"),
    ({"phones": {"$size": -1}}, r"\$size takes a non-negative int"),
    ({"phones": {"$size": True}}, r"\$size takes a non-negative int"),
    ({"x": {"$mod": [2]}}, r"\$mod takes \[divisor, remainder\]"),
    ({"x": {"$not": 3}}, r"\$not takes an operator condition"),
    ({"x": {"$elemMatch": []}}, r"\$elemMatch takes a non-empty dict"),
    ({"x": {"$elemMatch": {"$bogus": 1}}}, r"unknown operator '\$bogus'"),
    ({"a..b": 1}, "empty parts"),
    ({"": 1}, "non-empty strings"),
    # what JSON or MongoDB cannot carry, wherever it is
    (
        functools.reduce(lambda q, _: {"$and": [q]}, range(5000), {"a": 1}),
        r"query\['\$and'\]\[0\].*: nests deeper than 100 levels",
    ),
    ({"a": {"$in": [float("nan")]}}, r"query\['a'\]\['\$in'\]\[0\]: nan is not a JSON number"),
    ({"a": {"b": {1: "x"}}}, r"query\['a'\]\['b'\]: keys must be strings, not int"),
    ({"a": 2**64}, "integers must fit in 64 bits"),
    ({"a": {"$in": {"x"}}}, r"query\['a'\]\['\$in'\]: set is not a JSON type"),
]


@pytest.mark.parametrize(("query", "message"), BAD, ids=range(len(BAD)))
def test_bad_queries_name_the_bad_part(query: Any, message: str) -> None:
    with pytest.raises(InvalidQuery, match=message) as info:
        validate_query(query)
    assert isinstance(info.value, ValueError)
