"""The query model behind :mod:`stoplist_nb.query`: ``F``, its conditions, and their groups.

Nodes are immutable, compare by value and value type (as MongoDB) and nest at
most :data:`~stoplist_nb.query.values.MAX_DEPTH` levels. ``~`` swaps ``$eq``/``$ne``,
``$in``/``$nin``, ``$exists`` True/False (alike on documents without the field); any
other condition gets ``$not``; ``~And(x)`` is ``Nor([x])``, ``~Or`` a ``Nor`` and back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from stoplist_nb._json.frozen import FrozenDict, freeze, thaw
from stoplist_nb.errors import InvalidQuery
from stoplist_nb.query import values as rules

#: Field operators a :class:`Condition` holds (``$options`` and ``$not`` are its attributes).
CONDITION_OPERATORS = rules.FIELD_OPERATORS - {"$options", "$not"}

_OPPOSITE = {"$eq": "$ne", "$ne": "$eq", "$in": "$nin", "$nin": "$in"}
_SYMBOL = {"$eq": "==", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_METHOD = {"$in": "isin", "$nin": "notin", "$exists": "exists", "$elemMatch": "elem_match"}
# A Condition holds any argument of these; validate_query refuses a bad one.
_ARGUMENT_UNCHECKED = frozenset({"$size", "$mod"})


class Query:
    """Base of every query node: combine with ``&``, ``|``, ``~``; send ``to_mongo()``.

    >>> from stoplist_nb.query.model import F
    >>> q = (F("_city") == "Moscow") | ~F("email").exists()
    >>> q.to_mongo()
    {'$or': [{'_city': 'Moscow'}, {'email': {'$exists': False}}]}
    """

    __slots__ = ()
    _depth: int  # how many levels to_mongo() nests
    _key: Callable[[], Any]  # what equality and hashing compare

    def to_mongo(self) -> dict[str, Any]:
        """Return the MongoDB filter, a fresh dict of plain lists and dicts."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Query):
            return NotImplemented
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __and__(self, other: Query) -> Query:
        return And((self, other)) if isinstance(other, Query) else NotImplemented

    def __or__(self, other: Query) -> Query:
        return Or((self, other)) if isinstance(other, Query) else NotImplemented

    def __invert__(self) -> Query:
        raise NotImplementedError

    def __bool__(self) -> bool:
        # `a and b` or `1 < F("x") < 5` would otherwise silently keep one side only.
        raise TypeError("a Query has no truth value: combine queries with &, | and ~")


def _set_depth(node: Query, depth: int, name: str) -> None:
    if depth > rules.MAX_DEPTH:
        raise rules.too_deep(name)
    object.__setattr__(node, "_depth", depth)


@dataclass(frozen=True, eq=False, repr=False, init=False)
class _Group(Query):
    items: tuple[Query, ...]
    _least: ClassVar[int] = 0
    _too_few: ClassVar[str] = ""

    def __init__(self, items: Iterable[Query] = ()) -> None:
        cls = type(self)
        flat: list[Query] = []
        for item in items:
            if not isinstance(item, Query):
                raise InvalidQuery(f"{cls.__name__} takes queries, not {type(item).__name__}")
            flat.extend(item.items if cls is not Nor and isinstance(item, cls) else [item])
        if cls is Nor and len(flat) == 1 and isinstance(flat[0], Or):
            flat = list(flat[0].items)  # the same filter, one level less
        if len(flat) < cls._least:
            raise InvalidQuery(cls._too_few)
        object.__setattr__(self, "items", tuple(flat))
        # {"$op": [item, ...]} adds two levels; a merging And adds none, nor does {}.
        deepest = max((item._depth for item in flat), default=1)
        merged = cls is And and (not flat or _merges(self.items))
        _set_depth(self, deepest if merged else deepest + 2, cls.__name__)

    def _key(self) -> Any:
        return self.items


@dataclass(frozen=True, eq=False, repr=False, init=False)
class And(_Group):
    """All of ``items`` (``And([])``: everything); conditions on other fields merge in one dict.

    >>> from stoplist_nb.query.model import F
    >>> ((F("a") >= 1) & (F("a") < 5)).to_mongo()
    {'$and': [{'a': {'$gte': 1}}, {'a': {'$lt': 5}}]}
    >>> ((F("a") == 1) & F("b").exists()).to_mongo()
    {'a': 1, 'b': {'$exists': True}}
    """

    def to_mongo(self) -> dict[str, Any]:
        if not self.items:
            return {}
        if _merges(self.items):
            merged: dict[str, Any] = {}
            for item in self.items:
                merged.update(item.to_mongo())  # {path: ...}, a different path each
            return merged
        return {"$and": [i.to_mongo() for i in self.items]}

    def __invert__(self) -> Query:
        return Nor((self,))

    def __repr__(self) -> str:
        if len(self.items) < 2:
            return f"And({list(self.items)!r})"
        return " & ".join(_wrap(i, Or) for i in self.items)


@dataclass(frozen=True, eq=False, repr=False, init=False)
class Or(_Group):
    """Any of two or more ``items`` (``$or``); nested ``Or`` are flattened.

    >>> from stoplist_nb.query.model import F
    >>> ((F("_city") == "Moscow") | (F("_city") == "Kazan")).to_mongo()
    {'$or': [{'_city': 'Moscow'}, {'_city': 'Kazan'}]}
    """

    _least, _too_few = 2, "Or takes two or more queries; use the query itself"

    def to_mongo(self) -> dict[str, Any]:
        return {"$or": [i.to_mongo() for i in self.items]}

    def __invert__(self) -> Query:
        return Nor(self.items)

    def __repr__(self) -> str:
        return " | ".join(_wrap(i, And) for i in self.items)


@dataclass(frozen=True, eq=False, repr=False, init=False)
class Nor(_Group):
    """None of ``items`` (``$nor``); what ``~`` makes of a group (``Nor([Or(x)])`` is ``Nor(x)``).

    >>> from stoplist_nb.query.model import F
    >>> q = ~((F("a") >= 1) & (F("a") < 5))
    >>> q.to_mongo()
    {'$nor': [{'$and': [{'a': {'$gte': 1}}, {'a': {'$lt': 5}}]}]}
    >>> ~q
    (F('a') >= 1) & (F('a') < 5)
    """

    _least, _too_few = 1, "Nor takes one or more queries"

    def to_mongo(self) -> dict[str, Any]:
        return {"$nor": [i.to_mongo() for i in self.items]}

    def __invert__(self) -> Query:
        return self.items[0] if len(self.items) == 1 else Or(self.items)

    def __repr__(self) -> str:
        if len(self.items) > 1:
            return f"~({Or(self.items)!r})"
        if isinstance(self.items[0], And):
            return f"~({self.items[0]!r})"
        return f"Nor({list(self.items)!r})"


def _merges(items: tuple[Query, ...]) -> bool:
    paths = [item.path if isinstance(item, Condition) else None for item in items]
    # One item stays under $and, or it would read back as the bare item.
    return len(paths) > 1 and None not in paths and len(set(paths)) == len(paths)


def _wrap(item: Query, group: type[_Group]) -> str:
    # & binds tighter than ==; a group of the other kind gets brackets for the reader.
    comparison = isinstance(item, Condition) and item.op in _SYMBOL and not item.negated
    if comparison or isinstance(item, group):
        return f"({item!r})"
    return repr(item)


def _check_path(path: Any) -> None:
    if not isinstance(path, str):
        # No repr: it could be anything, a list nested too deep to print included.
        raise InvalidQuery(f"a field path must be a string, not {type(path).__name__}")
    if path.startswith("$"):
        raise InvalidQuery(f"a field path must be a non-empty string without '$', not {path!r}")
    if problem := rules.key_problem(path):
        raise InvalidQuery(f"a field path {path!r}: {problem}")
    rules.check_path(path, f"query[{path!r}]")


@dataclass(frozen=True, eq=False, repr=False)
class Condition(Query):
    """One operator on one field, e.g. ``{"_city": {"$in": [...]}}``.

    Attributes:
        path: The field, dotted for nested ones (``"subscriptions.channel"``).
        op: The operator, one of :data:`CONDITION_OPERATORS`.
        value: Its argument; for ``$elemMatch`` a :class:`Query` on the elements.
        options: ``$options`` letters of a ``$regex``.
        negated: Wrapped in ``$not`` (a negated ``$eq`` becomes ``$ne``, and so on).

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
        field = f"query[{self.path!r}]"
        if not isinstance(op, str):
            raise InvalidQuery(f"{field}: unsupported operator of type {type(op).__name__}")
        rules.check_field_operator(op, field)
        if op not in CONDITION_OPERATORS:
            raise InvalidQuery(f"{field}: unsupported operator {op!r}")
        where = f"{field}[{op!r}]"
        if not isinstance(self.options, str):
            raise InvalidQuery(
                f"{where}: $options takes a string, not {type(self.options).__name__}"
            )
        if isinstance(self.value, Query) and op == "$elemMatch":
            depth = self.value._depth  # checked when it was built
        else:
            # Before freeze, value_key, repr and to_mongo recurse into the value.
            depth = rules.json_depth(self.value, where)
        if op not in _ARGUMENT_UNCHECKED:
            rules.check_argument(op, self.value, where)
        value = freeze(self.value)
        if op == "$elemMatch" and not isinstance(value, Query):
            raise InvalidQuery(f"{where}: $elemMatch takes a Query, not {value!r}")
        if op == "$elemMatch" and value == And():
            # It would be written {"$elemMatch": {}}, which validate_query refuses.
            raise InvalidQuery(f"{where}: $elemMatch takes a non-empty query")
        if self.options and op != "$regex":
            raise InvalidQuery(f"{field}: {rules.OPTIONS_WITHOUT_REGEX}")
        rules.check_argument("$options", self.options, f"{field}['$options']")
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
        _set_depth(self, 1 + depth + (0 if bare else 1) + (1 if negated else 0), where)

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
        return {self.path: self.field_value()}

    def _key(self) -> Any:
        return (self.path, self.op, rules.value_key(self.value), self.options, self.negated)

    def __invert__(self) -> Condition:
        return Condition(self.path, self.op, self.value, self.options, not self.negated)

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


def _operator(op: str) -> Callable[[F, Any], Condition]:
    return lambda field, value: field.op(op, value)


class F:
    """A field (dotted for nested ones) whose operators build conditions (so it is not hashable).

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

    __eq__ = _operator("$eq")  # type: ignore[assignment]
    __ne__ = _operator("$ne")  # type: ignore[assignment]
    __lt__, __le__ = _operator("$lt"), _operator("$lte")
    __gt__, __ge__ = _operator("$gt"), _operator("$gte")

    def isin(self, values: Iterable[Any]) -> Condition:
        """Return ``$in``: the field equals one of ``values`` (a list or tuple)."""
        return self.op("$in", values)

    def notin(self, values: Iterable[Any]) -> Condition:
        """Return ``$nin``: the field equals none of ``values``, or is missing."""
        return self.op("$nin", values)

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
        """Return ``$elemMatch``: one array element matches all of ``query``."""
        return self.op("$elemMatch", query)
