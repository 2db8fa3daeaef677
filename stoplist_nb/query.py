"""MongoDB queries for ``profiles/list``: validation before anything is sent.

Pure: no I/O. The service evaluates ``query`` as a MongoDB filter; a mistake
there costs a round trip and comes back as a terse 400, so the common ones
(unknown operators, operators in the wrong place, wrong value types) are
caught here with the exact place named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stoplist_nb.errors import InvalidQuery

__all__ = ["FIELD_OPERATORS", "LOGICAL_OPERATORS", "validate_query"]

#: Operators that combine whole conditions, allowed where a query is.
LOGICAL_OPERATORS = frozenset({"$and", "$or", "$nor", "$comment"})

#: Operators allowed inside a field's condition.
FIELD_OPERATORS = frozenset({
    "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$all", "$exists",
    "$regex", "$options", "$not", "$elemMatch", "$size", "$type", "$mod",
})  # fmt: skip

_REGEX_OPTIONS = frozenset("imxsu")


def validate_query(query: Any) -> dict[str, Any]:
    """Check a MongoDB query and return it unchanged.

    Args:
        query: The filter, e.g. ``{"$or": [{"_city": "Moscow"}, {"_city": "Kazan"}]}``.

    Raises:
        InvalidQuery: The query is not a dict, or a part of it is not valid
            MongoDB; the message names the part.

    >>> validate_query({"_city": {"$in": ["Moscow", "Kazan"]}})
    {'_city': {'$in': ['Moscow', 'Kazan']}}
    >>> validate_query({"_city": {"$inn": ["Moscow"]}})
    Traceback (most recent call last):
    ...
    stoplist_nb.errors.InvalidQuery: query['_city']: unknown operator '$inn'
    """
    if not isinstance(query, Mapping):
        raise InvalidQuery(f"query must be a dict, not {type(query).__name__}")
    _check_filter(query, "query")
    return dict(query)


def _fail(where: str, message: str) -> InvalidQuery:
    return InvalidQuery(f"{where}: {message}")


def _check_filter(query: Mapping[str, Any], where: str) -> None:
    for key, value in query.items():
        here = f"{where}[{key!r}]"
        if not isinstance(key, str) or not key:
            raise _fail(here, "keys must be non-empty strings")
        if key.startswith("$"):
            _check_logical(key, value, here)
        else:
            _check_path(key, here)
            _check_condition(value, here)


def _check_logical(op: str, value: Any, where: str) -> None:
    if op == "$comment":
        return
    if op == "$not":
        raise _fail(where, "$not applies to a field's condition; negate a whole query with $nor")
    if op in FIELD_OPERATORS:
        raise _fail(where, f"{op} needs a field: write {{'field': {{{op!r}: ...}}}}")
    if op not in LOGICAL_OPERATORS:
        raise _fail(where, f"unknown operator {op!r}")
    if not isinstance(value, list) or not value:
        raise _fail(where, f"{op} takes a non-empty list of queries")
    for i, part in enumerate(value):
        if not isinstance(part, Mapping):
            raise _fail(f"{where}[{i}]", f"{op} items must be dicts")
        _check_filter(part, f"{where}[{i}]")


def _check_path(path: str, where: str) -> None:
    if any(not part for part in path.split(".")):
        raise _fail(where, "a field path cannot have empty parts")


def _is_operator_dict(value: Any, where: str) -> bool:
    if not isinstance(value, Mapping) or not value:
        return False
    dollars = [isinstance(k, str) and k.startswith("$") for k in value]
    if any(dollars) and not all(dollars):
        raise _fail(where, "mixes operators and field names in one condition")
    return all(dollars)


def _check_condition(value: Any, where: str) -> None:
    if not _is_operator_dict(value, where):
        return  # a literal: equality with a value or an embedded document
    if "$options" in value and "$regex" not in value:
        raise _fail(where, "$options goes with $regex")
    for op, arg in value.items():
        _check_operator(op, arg, f"{where}[{op!r}]")


def _check_operator(op: str, arg: Any, where: str) -> None:
    if op in LOGICAL_OPERATORS:
        raise _fail(where, f"{op} combines whole queries and cannot stand inside a field")
    if op not in FIELD_OPERATORS:
        raise _fail(where.rsplit("[", 1)[0], f"unknown operator {op!r}")
    if op in {"$in", "$nin", "$all"} and not isinstance(arg, list | tuple):
        raise _fail(where, f"{op} takes a list, not {type(arg).__name__}")
    if op == "$exists" and not isinstance(arg, bool):
        raise _fail(where, f"$exists takes True or False, not {arg!r}")
    if op == "$regex" and not isinstance(arg, str):
        raise _fail(where, f"$regex takes a pattern string, not {type(arg).__name__}")
    if op == "$options" and (not isinstance(arg, str) or set(arg) - _REGEX_OPTIONS):
        raise _fail(where, f"$options takes letters from 'imxsu', not {arg!r}")
    if op == "$size" and (isinstance(arg, bool) or not isinstance(arg, int) or arg < 0):
        raise _fail(where, f"$size takes a non-negative int, not {arg!r}")
    if op == "$mod" and not (isinstance(arg, list | tuple) and len(arg) == 2):
        raise _fail(where, "$mod takes [divisor, remainder]")
    if op == "$not":
        if isinstance(arg, str):
            return  # a regex pattern
        if not _is_operator_dict(arg, where):
            raise _fail(where, "$not takes an operator condition such as {'$in': [...]}")
        _check_condition(arg, where)
    elif op == "$elemMatch":
        if not isinstance(arg, Mapping) or not arg:
            raise _fail(where, "$elemMatch takes a non-empty dict")
        if _is_operator_dict(arg, where):
            _check_condition(arg, where)
        else:
            _check_filter(arg, where)
