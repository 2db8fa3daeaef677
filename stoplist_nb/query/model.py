"""The query model behind :mod:`stoplist_nb.query`: ``F`` and the conditions it builds.

Every node is immutable and compares by value, so queries can be used as
dict keys and compared in tests. Values are frozen on the way in (lists become
tuples, dicts a read-only mapping) and thawed again by ``to_mongo``. Equality
looks at value types as well, because MongoDB does: ``1`` and ``True`` are
different filters.

Negation rules (``~``):

* ``$eq``/``$ne``, ``$in``/``$nin`` and ``$exists`` True/False turn into each
  other. These pairs agree on documents without the field, so nothing changes.
* any other single condition (ranges, ``$regex``, ``$elemMatch``, ...) becomes
  ``{path: {"$not": {...}}}``. ``$lte`` is not the opposite of ``$gt``: it
  would drop documents without the field, which ``$not`` keeps.
* ``~And(...)`` becomes ``{"$nor": [{...}]}``; ``~Or(a, b)`` becomes
  ``{"$nor": [a, b]}`` (the same thing); ``~Nor(a, b)`` is ``Or(a, b)`` and
  ``~Nor(x)`` is ``x``. So ``~~q == q`` for anything ``F`` builds.

The base ``Query`` and the groups ``And``, ``Or`` and ``Nor`` are in
:mod:`stoplist_nb._querygroups` and are re-exported here, so this module is the
whole model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from stoplist_nb._frozen import FrozenDict, freeze, json_depth, key_problem, thaw, value_key
from stoplist_nb._querygroups import And, Nor, Or, Query, set_depth
from stoplist_nb.errors import InvalidQuery

__all__ = ["CONDITION_OPERATORS", "And", "Condition", "F", "Nor", "Or", "Query"]

#: Field operators a :class:`Condition` can hold.
CONDITION_OPERATORS = frozenset({
    "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$regex",
    "$elemMatch", "$all", "$size", "$type", "$mod",
})  # fmt: skip

_OPPOSITE = {"$eq": "$ne", "$ne": "$eq", "$in": "$nin", "$nin": "$in"}
_SYMBOL = {"$eq": "==", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_METHOD = {"$in": "isin", "$nin": "notin", "$exists": "exists", "$elemMatch": "elem_match"}
_REGEX_OPTIONS = frozenset("imxsu")


def _check_path(path: Any) -> None:
    if not isinstance(path, str):
        # No repr: it could be anything, a list nested too deep to print included.
        raise InvalidQuery(f"a field path must be a string, not {type(path).__name__}")
    if not path or path.startswith("$"):
        raise InvalidQuery(f"a field path must be a non-empty string without '$', not {path!r}")
    if problem := key_problem(path):
        raise InvalidQuery(f"a field path {path!r}: {problem}")
    if any(not part for part in path.split(".")):
        raise InvalidQuery(f"query[{path!r}]: a field path cannot have empty parts")


@dataclass(frozen=True, eq=False, repr=False)
class Condition(Query):
    """One operator on one field, e.g. ``{"_city": {"$in": [...]}}``.

    Attributes:
        path: The field, dotted for nested ones (``"subscriptions.channel"``).
        op: The operator, one of :data:`CONDITION_OPERATORS`.
        value: Its argument; for ``$elemMatch`` a :class:`Query` on the elements.
        options: ``$options`` letters of a ``$regex``.
        negated: Wrapped in ``$not``. Set only where no opposite operator exists:
            the constructor turns a negated ``$eq`` into ``$ne`` and so on.

    >>> Condition("_city", "$eq", "Moscow", negated=True)
    F('_city') != 'Moscow'
    """

    path: str
    op: str
    value: Any
    options: str = ""
    negated: bool = False

    def __post_init__(self) -> None:
        _check_path(self.path)
        op, negated = self.op, self.negated
        if not isinstance(op, str) or op not in CONDITION_OPERATORS:
            shown = repr(op) if isinstance(op, str) else f"of type {type(op).__name__}"
            raise InvalidQuery(f"query[{self.path!r}]: unsupported operator {shown}")
        where = f"query[{self.path!r}][{op!r}]"
        if not isinstance(self.options, str):
            raise InvalidQuery(
                f"{where}: $options takes a string, not {type(self.options).__name__}"
            )
        if isinstance(self.value, Query) and op == "$elemMatch":
            depth = self.value._depth  # checked when it was built
        else:
            # Before freeze, value_key, repr and to_mongo recurse into the value.
            depth = json_depth(self.value, where)
        value = freeze(self.value)
        if op in {"$in", "$nin", "$all"} and not isinstance(value, tuple):
            raise InvalidQuery(f"{where}: {op} takes a list, not {type(value).__name__}")
        if op == "$exists" and not isinstance(value, bool):
            raise InvalidQuery(f"{where}: $exists takes True or False, not {value!r}")
        if op == "$regex" and not isinstance(value, str):
            raise InvalidQuery(f"{where}: $regex takes a pattern string, not {value!r}")
        if op == "$elemMatch" and not isinstance(value, Query):
            raise InvalidQuery(f"{where}: $elemMatch takes a Query, not {value!r}")
        if op == "$elemMatch" and value == And():
            # It would be written {"$elemMatch": {}}, which validate_query refuses.
            raise InvalidQuery(f"{where}: $elemMatch takes a non-empty query")
        if self.options and (op != "$regex" or set(self.options) - _REGEX_OPTIONS):
            raise InvalidQuery(f"{where}: $options takes letters from 'imxsu' with $regex")
        if negated and op in _OPPOSITE:
            op, negated = _OPPOSITE[op], False
        elif negated and op == "$exists":
            value, negated = not value, False
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "negated", negated)
        object.__setattr__(self, "options", "".join(sorted(set(self.options))))
        # {path: value} for a plain $eq, {path: {op: value}}, {path: {"$not": {op: value}}}.
        bare = op == "$eq" and not isinstance(value, FrozenDict)
        set_depth(self, 1 + depth + (0 if bare else 1) + (1 if negated else 0), where)

    def _operand(self) -> dict[str, Any]:
        arg = self.value.to_mongo() if isinstance(self.value, Query) else thaw(self.value)
        body = {self.op: arg}
        if self.options:
            body["$options"] = self.options
        return body

    def field_value(self) -> Any:
        """Return what goes under ``path`` in the filter.

        >>> (F("a") == 1).field_value(), (F("a") > 1).field_value()
        (1, {'$gt': 1})
        """
        if self.negated:
            return {"$not": self._operand()}
        if self.op == "$eq" and not isinstance(self.value, FrozenDict):
            return thaw(self.value)
        return self._operand()  # a document after $eq would read as operators otherwise

    def to_mongo(self) -> dict[str, Any]:
        """Return ``{path: ...}``; see :meth:`field_value`."""
        return {self.path: self.field_value()}

    def _key(self) -> Any:
        return (self.path, self.op, value_key(self.value), self.options, self.negated)

    def __invert__(self) -> Condition:
        return Condition(self.path, self.op, self.value, self.options, not self.negated)

    def _field_path(self) -> str:
        return self.path

    def _is_comparison(self) -> bool:
        return self.op in _SYMBOL and not self.negated

    def __repr__(self) -> str:
        field, op = f"F({self.path!r})", self.op
        shown = self.value if isinstance(self.value, Query) else thaw(self.value)
        if op in _SYMBOL:
            text = f"{field} {_SYMBOL[op]} {shown!r}"
        elif op in _METHOD:
            text = f"{field}.{_METHOD[op]}({shown!r})"
        elif op == "$regex":
            flags = f", flags={self.options!r}" if self.options else ""
            text = f"{field}.regex({shown!r}{flags})"
        else:
            text = f"{field}.op({op!r}, {shown!r})"
        if not self.negated:
            return text
        return f"~({text})" if op in _SYMBOL else f"~{text}"


class F:
    """A field, for building conditions: ``F("_city") == "Moscow"``.

    ``F`` defines ``==`` to build a condition, so it is not hashable and
    cannot be compared to anything else; the conditions it builds can.

    Args:
        path: The field, dotted for nested ones (``"subscriptions.channel"``).

    >>> F("_city") == "Moscow"
    F('_city') == 'Moscow'
    >>> F("_lname").contains("ivan", case=False).to_mongo()
    {'_lname': {'$regex': 'ivan', '$options': 'i'}}
    >>> F("score").isin([1, 2]) & ~F("_fname").startswith("A.")
    F('score').isin([1, 2]) & ~F('_fname').regex('^A\\\\.')
    """

    __slots__ = ("path",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, path: str) -> None:
        _check_path(path)
        self.path = path

    def __repr__(self) -> str:
        return f"F({self.path!r})"

    def op(self, op: str, value: Any) -> Condition:
        """Return the condition ``{path: {op: value}}``, e.g. ``F("phones").op("$size", 0)``."""
        return Condition(self.path, op, value)

    def __eq__(self, value: object) -> Condition:  # type: ignore[override]
        return self.op("$eq", value)

    def __ne__(self, value: object) -> Condition:  # type: ignore[override]
        return self.op("$ne", value)

    def __lt__(self, value: Any) -> Condition:
        return self.op("$lt", value)

    def __le__(self, value: Any) -> Condition:
        return self.op("$lte", value)

    def __gt__(self, value: Any) -> Condition:
        return self.op("$gt", value)

    def __ge__(self, value: Any) -> Condition:
        return self.op("$gte", value)

    def isin(self, values: Iterable[Any]) -> Condition:
        """Return ``$in``: the field equals one of ``values`` (a list or tuple)."""
        return self.op("$in", list(values) if isinstance(values, list | tuple) else values)

    def notin(self, values: Iterable[Any]) -> Condition:
        """Return ``$nin``: the field equals none of ``values``, or is missing."""
        return self.op("$nin", list(values) if isinstance(values, list | tuple) else values)

    def exists(self, flag: bool = True) -> Condition:
        """Return ``$exists``: the field is present (``True``) or missing (``False``)."""
        return self.op("$exists", flag)

    def regex(self, pattern: str, flags: str = "") -> Condition:
        """Return ``$regex`` with ``flags`` (letters from ``"imxsu"``) as ``$options``."""
        return Condition(self.path, "$regex", pattern, options=flags)

    def contains(self, text: str, *, case: bool = True) -> Condition:
        """Return a ``$regex`` matching ``text`` literally anywhere in the field."""
        return self.regex(re.escape(text), "" if case else "i")

    def startswith(self, text: str, *, case: bool = True) -> Condition:
        """Return a ``$regex`` matching fields that begin with ``text`` literally."""
        return self.regex("^" + re.escape(text), "" if case else "i")

    def elem_match(self, query: Query) -> Condition:
        """Return ``$elemMatch``: one array element matches all of ``query``.

        >>> F("subscriptions").elem_match((F("channel") == "email") & (F("status") == 0))
        F('subscriptions').elem_match((F('channel') == 'email') & (F('status') == 0))
        """
        return self.op("$elemMatch", query)
