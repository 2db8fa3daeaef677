"""MongoDB queries for ``profiles/list``: checked before sending, naming the bad part; parsed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stoplist_nb._json.frozen import thaw
from stoplist_nb.errors import InvalidQuery
from stoplist_nb.query import values as rules
from stoplist_nb.query.model import And, Condition, Nor, Or, Query


def validate_query(query: Any) -> dict[str, Any]:
    """Check a MongoDB query and return it as it will be sent.

    Returns:
        An equal copy of plain dicts and lists, ready for ``json.dumps``.

    Raises:
        InvalidQuery: Not a dict, deeper than :data:`MAX_DEPTH` or self-containing,
            holding what JSON cannot (NaN, a ``numpy.int64``...) or too many
            values, or not valid MongoDB; the message names the part.

    >>> validate_query({"_city": {"$in": ["Moscow", "Kazan"]}})
    {'_city': {'$in': ['Moscow', 'Kazan']}}
    >>> validate_query({"_city": {"$inn": ["Moscow"]}})
    Traceback (most recent call last):
    ...
    stoplist_nb.errors.InvalidQuery: query['_city']: unknown operator '$inn'
    """
    if not isinstance(query, Mapping):
        raise InvalidQuery(f"query must be a dict, not {type(query).__name__}")
    rules.json_depth(query, "query")  # the walks below recurse: safe only within the depth checked
    _check_filter(query, "query")
    return thaw(query)  # type: ignore[no-any-return]


def _fail(where: str, message: str) -> InvalidQuery:
    return InvalidQuery(f"{where}: {message}")


def _check_filter(query: Mapping[str, Any], where: str) -> None:
    for op, value in query.items():
        here = f"{where}[{op!r}]"
        if not (isinstance(op, str) and op.startswith("$")):
            rules.check_path(op, here)
            _check_condition(value, here)
        elif op == "$not":
            raise _fail(here, "$not applies to a field's condition; negate a whole query with $nor")
        elif op in rules.FIELD_OPERATORS:
            raise _fail(here, f"{op} needs a field: write {{'field': {{{op!r}: ...}}}}")
        elif op not in rules.LOGICAL_OPERATORS:
            raise _fail(here, f"unknown operator {op!r}")
        elif op != "$comment":
            if not isinstance(value, list) or not value:
                raise _fail(here, f"{op} takes a non-empty list of queries")
            for i, part in enumerate(value):
                if not isinstance(part, Mapping):
                    raise _fail(f"{here}[{i}]", f"{op} items must be dicts")
                _check_filter(part, f"{here}[{i}]")


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
        raise _fail(where, rules.OPTIONS_WITHOUT_REGEX)
    for op, arg in value.items():
        rules.check_field_operator(op, where)
        here = f"{where}[{op!r}]"
        rules.check_argument(op, arg, here)
        if op == "$not" and not isinstance(arg, str):  # a string is a regex pattern
            if not _is_operator_dict(arg, here):
                raise _fail(here, "$not takes an operator condition such as {'$in': [...]}")
            _check_condition(arg, here)
        elif op == "$elemMatch":
            if not isinstance(arg, Mapping) or not arg:
                raise _fail(here, "$elemMatch takes a non-empty dict")
            if _is_element_filter(arg, here):
                _check_filter(arg, here)
            else:
                _check_condition(arg, here)


def _is_element_filter(arg: Mapping[str, Any], where: str) -> bool:
    # MongoDB reads $and/$or/$nor in $elemMatch as a filter on the elements' fields.
    return any(k in rules.LOGICAL_OPERATORS for k in arg) or not _is_operator_dict(arg, where)


def parse_query(query: Any) -> Query:
    """Turn a MongoDB query into :class:`Query` objects, after :func:`validate_query`.

    Several operators on one field become an :class:`And`, ``{"$or": [x]}``
    becomes ``x``; ``parse_query(q.to_mongo()) == q`` for every ``q``. What the
    model does not hold (``$comment``, an operator-only ``$elemMatch``, a model
    deeper than :data:`MAX_DEPTH`) is ``InvalidQuery`` too.

    >>> parse_query({"_city": "Moscow", "score": {"$gte": 1, "$lt": 5}})
    (F('_city') == 'Moscow') & (F('score') >= 1) & (F('score') < 5)
    >>> parse_query({"_lname": {"$not": {"$regex": "^iv", "$options": "i"}}})
    ~F('_lname').regex('^iv', flags='i')
    >>> parse_query({"$comment": "x"})
    Traceback (most recent call last):
    ...
    stoplist_nb.errors.InvalidQuery: query['$comment']: $comment cannot be held by a Query
    """
    return _parse_filter(validate_query(query), "query")


_GROUPS: dict[str, type[And | Or | Nor]] = {"$and": And, "$or": Or, "$nor": Nor}


def _parse_filter(query: Mapping[str, Any], where: str) -> Query:
    parts: list[Query] = []
    for key, value in query.items():
        here = f"{where}[{key!r}]"
        if group := _GROUPS.get(key):
            items = [_parse_filter(part, f"{here}[{i}]") for i, part in enumerate(value)]
            parts.append(items[0] if group is Or and len(items) == 1 else group(items))
        elif key.startswith("$"):
            raise _fail(here, f"{key} cannot be held by a Query")
        else:
            parts.append(_parse_field(key, value, here))
    return parts[0] if len(parts) == 1 else And(parts)


def _parse_field(path: str, condition: Any, where: str) -> Query:
    if not _is_operator_dict(condition, where):
        return Condition(path, "$eq", condition)
    parts: list[Query] = []
    for op, arg in condition.items():
        here = f"{where}[{op!r}]"
        if op == "$options":
            continue  # read with its $regex
        if op == "$regex":
            parts.append(Condition(path, op, arg, options=condition.get("$options", "")))
        elif op == "$not":
            # A bare string is the pattern of a $regex.
            negated = arg if isinstance(arg, Mapping) else {"$regex": arg}
            parts.append(~_parse_field(path, negated, here))
        elif op == "$elemMatch":
            if not _is_element_filter(arg, here):
                raise _fail(here, "an $elemMatch of operators cannot be held by a Query")
            parts.append(Condition(path, op, _parse_filter(arg, here)))
        else:
            parts.append(Condition(path, op, arg))
    return parts[0] if len(parts) == 1 else And(parts)


def loads_query(text: str | bytes, where: str = "the query") -> dict[str, Any]:
    """Read a query from JSON text: the one way JSON text becomes a query here.

    Args:
        text: The JSON text of one object (bytes are read as UTF-8).
        where: How messages name the text (``"the query"``, a file name).

    Raises:
        InvalidQuery: The text is not JSON, repeats a key within one object
            (JSON would keep the last silently), nests deeper than
            :data:`MAX_DEPTH` levels, holds an integer too long, is not an
            object, or is not a valid query (:func:`validate_query`).

    >>> loads_query('{"_city": {"$in": ["Kazan"]}}')
    {'_city': {'$in': ['Kazan']}}
    >>> loads_query('{"_city": "Kazan", "_city": "Omsk"}')
    Traceback (most recent call last):
    ...
    stoplist_nb.errors.InvalidQuery: the query has the key '_city' twice in one object
    """

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, item in pairs:
            if key in found:
                raise InvalidQuery(f"{where} has the key {key!r} twice in one object")
            found[key] = item
        return found

    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        value = json.loads(text, object_pairs_hook=unique_keys)
    except InvalidQuery:
        raise
    except json.JSONDecodeError as exc:
        raise InvalidQuery(f"{where} is not valid JSON: {exc}") from None
    except UnicodeDecodeError:
        raise InvalidQuery(f"{where} is not UTF-8 text") from None
    except ValueError:  # an int of more digits than sys.get_int_max_str_digits()
        too_long = "has an integer too long for MongoDB, which holds 64 bits"
        raise InvalidQuery(f"{where} {too_long}") from None
    except RecursionError:  # json.loads recurses, so it gives up near the recursion limit
        raise rules.too_deep(where) from None
    if not isinstance(value, dict):
        like, kind = '{"_city": "Moscow"}', type(value).__name__
        raise InvalidQuery(f"{where} must be a JSON object like {like}, not a {kind}")
    return validate_query(value)
