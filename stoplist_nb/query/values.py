"""Query values checked without recursion, and the operator rules, said once for both edges.

:func:`json_depth` is the gate every value passes before anything recurses
into it (too deep or self-containing is ``InvalidQuery``, not
``RecursionError``); ``validate_query`` and ``Condition`` share the rules here.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from stoplist_nb._json.frozen import FrozenDict
from stoplist_nb.errors import InvalidQuery

#: The deepest nesting a query may have (MongoDB's), each dict and list a level.
MAX_DEPTH = 100

#: The most values a query may hold, counted where they appear (16 MiB of BSON,
#: 2 bytes a value): ``v = [v, v]`` sixty times over is 2**60 values as JSON.
MAX_VALUES = 16 * 1024 * 1024 // 2

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_END = object()


def value_key(value: Any) -> Any:
    """A comparison key that tells apart what MongoDB does (``1``, ``True``; key order)."""
    if isinstance(value, tuple):
        return ("list", tuple(value_key(v) for v in value))
    if isinstance(value, FrozenDict):
        return ("dict", tuple((k, value_key(v)) for k, v in value.items()))
    return (type(value).__name__, value)


def too_deep(where: str, limit: int = MAX_DEPTH) -> InvalidQuery:
    """The error for a query that would nest deeper than ``limit`` levels."""
    return InvalidQuery(
        f"{where}: nests deeper than {limit} levels, the most MongoDB takes"
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


def json_depth(value: Any, where: str, *, limit: int = MAX_DEPTH) -> int:
    """Check that ``value`` is JSON the service takes and return its depth (a scalar is 0).

    ``where`` starts each message (``"query['_city']"``).

    Raises:
        InvalidQuery: Deeper than ``limit``, self-containing, over
            :data:`MAX_VALUES` values, or not JSON; the message names the part.

    >>> json_depth({"a": float("nan")}, "query")
    Traceback (most recent call last):
    ...
    stoplist_nb.errors.InvalidQuery: query['a']: nan is not a JSON number
    """
    items = _children(value)
    if items is None:
        if problem := _scalar_problem(value):
            raise InvalidQuery(f"{where}: {problem}")
        return 0
    if limit < 1:
        raise too_deep(where, limit)
    # One frame per open dict or list: [it, its items, its depth, its values].
    stack: list[list[Any]] = [[value, items, 1, 1]]
    labels: list[Any] = []  # the key or index of each open one past the first
    open_ids = {id(value)}
    # Keeping each finished part alive keeps its id from being reused.
    finished: dict[int, tuple[Any, int, int]] = {}
    total = 1

    def place(*label: Any) -> str:
        parts = [f"[{part!r}]" for part in (*labels, *label)]
        if len(parts) > 12:  # a path a hundred levels long would bury the message
            parts[6:-3] = ["..."]
        return where + "".join(parts)

    while stack:
        frame = stack[-1]
        step: Any = next(frame[1], _END)
        if step is _END:
            stack.pop()
            open_ids.discard(id(frame[0]))
            finished[id(frame[0])] = (frame[0], frame[2], frame[3])
            if stack:
                labels.pop()
                stack[-1][2] = max(stack[-1][2], frame[2] + 1)
                stack[-1][3] += frame[3]
            continue
        label, item = step
        if isinstance(frame[0], Mapping) and (problem := key_problem(label)):
            raise InvalidQuery(f"{place()}: {problem}")
        items = _children(item)
        if items is None:
            if problem := _scalar_problem(item):
                raise InvalidQuery(f"{place(label)}: {problem}")
            frame[3] += 1
            total += 1
        elif id(item) in open_ids:
            raise InvalidQuery(f"{place(label)}: contains itself")
        elif id(item) in finished:
            _, depth, values = finished[id(item)]
            if len(stack) + depth > limit:
                raise too_deep(place(label), limit)
            frame[2] = max(frame[2], depth + 1)
            frame[3] += values
            total += values
        elif len(stack) >= limit:
            raise too_deep(place(label), limit)
        else:
            stack.append([item, items, 1, 1])
            labels.append(label)
            open_ids.add(id(item))
            total += 1
        if total > MAX_VALUES:
            raise InvalidQuery(f"{place()}: holds more than {MAX_VALUES} values, too many to send")
    return int(finished[id(value)][1])


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
