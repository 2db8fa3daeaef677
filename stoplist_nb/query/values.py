"""Query values and the operator rules, said once for ``validate_query`` and ``Condition``.

Every value passes :func:`json_depth` before anything recurses into it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

from stoplist_nb._json.frozen import FrozenDict
from stoplist_nb.errors import InvalidQuery

#: The deepest nesting a query may have (MongoDB's), each dict and list a level.
MAX_DEPTH = 100

#: The most values a query may hold, counted where they appear (16 MiB of BSON,
#: 2 bytes a value): ``v = [v, v]`` sixty times over is 2**60 values as JSON.
MAX_VALUES = 16 * 1024 * 1024 // 2

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def value_key(value: Any) -> Any:
    """A comparison key that tells apart what MongoDB does (``1``, ``True``; key order)."""
    if isinstance(value, tuple):
        return ("list", tuple(value_key(v) for v in value))
    if isinstance(value, FrozenDict):
        return ("dict", tuple((k, value_key(v)) for k, v in value.items()))
    return (type(value).__name__, value)


def too_deep(where: str) -> InvalidQuery:
    """The error for a query that would nest deeper than :data:`MAX_DEPTH` levels."""
    return InvalidQuery(
        f"{where}: nests deeper than {MAX_DEPTH} levels, the most MongoDB takes"
        " (each dict and each list is a level)"
    )


def key_problem(key: Any) -> str | None:
    """What makes ``key`` unusable as a field name in a query, or None."""
    if not isinstance(key, str):
        return f"keys must be strings, not {type(key).__name__}"
    if "\0" in key:
        return "keys cannot contain NUL characters"
    return _text_problem(key)


def _text_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "text must be valid Unicode, without lone surrogates"
    return None


def _scalar_problem(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        # No repr: one of more than 4300 digits cannot even be printed.
        if _INT64_MIN <= value <= _INT64_MAX:
            return None
        return "integers must fit in 64 bits, the largest MongoDB holds"
    if isinstance(value, float):
        # json.dumps would write NaN or Infinity, which are not JSON.
        return None if math.isfinite(value) else f"{value!r} is not a JSON number"
    if isinstance(value, str):
        return _text_problem(value)
    name = type(value).__name__
    hint = "; numpy's .item() and .tolist() give them" if type(value).__module__ == "numpy" else ""
    return f"{name} is not a JSON type: use str, int, float, bool, None, list or dict{hint}"


def _children(value: Any) -> Iterator[tuple[Any, Any]] | None:
    if isinstance(value, Mapping):
        return iter(value.items())
    if isinstance(value, list | tuple):
        return enumerate(value)
    return None


def json_depth(value: Any, where: str) -> int:
    """The depth of ``value`` (a scalar: 0), once it is JSON the service takes.

    ``InvalidQuery`` (after ``where``, naming the part): deeper than :data:`MAX_DEPTH`,
    self-containing, over :data:`MAX_VALUES` values (a part met twice counts twice), or not JSON.

    >>> json_depth({"a": float("nan")}, "query")
    Traceback (most recent call last):
    ...
    stoplist_nb.errors.InvalidQuery: query['a']: nan is not a JSON number
    """
    open_ids: set[int] = set()
    # Keeping each finished part alive keeps its id from being reused.
    finished: dict[int, tuple[Any, int, int]] = {}
    total = 0

    def place(labels: tuple[Any, ...]) -> str:
        parts = [f"[{part!r}]" for part in labels]
        if len(parts) > 12:  # a path a hundred levels long would bury the message
            parts[6:-3] = ["..."]
        return where + "".join(parts)

    def fail(labels: tuple[Any, ...], problem: str) -> NoReturn:
        raise InvalidQuery(f"{place(labels)}: {problem}")

    def walk(node: Any, items: Iterator[tuple[Any, Any]], labels: tuple[Any, ...]) -> int:
        # the depth of node, a dict or list, counting its values into total
        nonlocal total
        total += 1
        if total > MAX_VALUES:
            fail(labels, f"holds more than {MAX_VALUES} values, too many to send")
        open_ids.add(id(node))
        depth, start = 1, total
        for label, item in items:
            if isinstance(node, Mapping) and (problem := key_problem(label)):
                fail(labels, problem)
            here, children = (*labels, label), _children(item)
            if children is None:
                if problem := _scalar_problem(item):
                    fail(here, problem)
                total += 1
            elif id(item) in open_ids:
                fail(here, "contains itself")
            elif id(item) in finished:
                _, below, values = finished[id(item)]
                if len(here) + below > MAX_DEPTH:
                    raise too_deep(place(here))
                depth = max(depth, below + 1)
                total += values
            elif len(here) >= MAX_DEPTH:
                raise too_deep(place(here))
            else:
                depth = max(depth, walk(item, children, here) + 1)
            if total > MAX_VALUES:
                fail(labels, f"holds more than {MAX_VALUES} values, too many to send")
        open_ids.discard(id(node))
        finished[id(node)] = (node, depth, total - start + 1)
        return depth

    items = _children(value)
    if items is None:
        if problem := _scalar_problem(value):
            fail((), problem)
        return 0
    return walk(value, items, ())


#: Operators that combine whole conditions, allowed where a query is.
LOGICAL_OPERATORS = frozenset({"$and", "$or", "$nor", "$comment"})

#: Operators allowed inside a field's condition.
FIELD_OPERATORS = frozenset({
    "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$all", "$exists",
    "$regex", "$options", "$not", "$elemMatch", "$size", "$type", "$mod",
})  # fmt: skip

OPTIONS_WITHOUT_REGEX = "$options goes with $regex"

_REGEX_OPTIONS = frozenset("imxsu")


def check_field_operator(op: str, where: str) -> None:
    """Refuse ``op`` unless it is one of :data:`FIELD_OPERATORS`."""
    if op in LOGICAL_OPERATORS:
        raise InvalidQuery(
            f"{where}[{op!r}]: {op} combines whole queries and cannot stand inside a field"
        )
    if op not in FIELD_OPERATORS:
        raise InvalidQuery(f"{where}: unknown operator {op!r}")


def check_argument(op: str, arg: Any, where: str) -> None:
    """Refuse an argument that ``op`` does not take (after :func:`json_depth`).

    >>> check_argument("$in", "Moscow", "query['_city']['$in']")
    Traceback (most recent call last):
    ...
    stoplist_nb.errors.InvalidQuery: query['_city']['$in']: $in takes a list, not str
    """
    name = type(arg).__name__
    if op in ("$in", "$nin", "$all") and not isinstance(arg, list | tuple):
        problem = f"{op} takes a list, not {name}"
    elif op == "$exists" and not isinstance(arg, bool):
        problem = f"{op} takes True or False, not {arg!r}"
    elif op == "$regex" and not isinstance(arg, str):
        problem = f"{op} takes a pattern string, not {name}"
    elif op == "$options" and not (isinstance(arg, str) and not set(arg) - _REGEX_OPTIONS):
        problem = f"{op} takes letters from 'imxsu', not {arg!r}"
    elif op == "$size" and (isinstance(arg, bool) or not isinstance(arg, int) or arg < 0):
        problem = f"{op} takes a non-negative int, not {arg!r}"
    elif op == "$mod" and not (isinstance(arg, list | tuple) and len(arg) == 2):
        problem = f"{op} takes [divisor, remainder]"
    else:
        return
    raise InvalidQuery(f"{where}: {problem}")


def check_path(path: Any, where: str) -> None:
    """Refuse a field path that is not a non-empty string, has an empty part or a ``$`` part."""
    if not isinstance(path, str) or not path:
        raise InvalidQuery(f"{where}: keys must be non-empty strings")
    parts = path.split(".")
    if any(not part for part in parts):
        raise InvalidQuery(f"{where}: a field path cannot have empty parts")
    if any(part.startswith("$") for part in parts[1:]):  # MongoDB refuses such a path
        raise InvalidQuery(f"{where}: a part of a field path cannot start with '$'")
