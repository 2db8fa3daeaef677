"""The base :class:`Query` and the groups that combine queries: ``And``, ``Or``, ``Nor``.

Apart from :mod:`stoplist_nb._querymodel` because combining never looks inside a
condition: a group sees its items only as queries, and learns what it needs of a
condition (its field, to merge an ``And`` into one dict, and whether it prints as
a comparison) through two hooks on :class:`Query`. So ``&``, ``|`` and ``~`` and
the ``$and``/``$or``/``$nor`` they become are here, below the conditions;
``F``, :class:`~stoplist_nb._querymodel.Condition` and the negation rules are in
:mod:`stoplist_nb._querymodel`, which re-exports everything here.

Every node knows how deep its ``to_mongo()`` nests, from its items' depths, and
refuses to be built deeper than :data:`~stoplist_nb._frozen.MAX_DEPTH`: MongoDB
would refuse the filter anyway, and within that bound the recursive ``to_mongo``,
``repr``, ``==`` and ``hash`` cannot exhaust the stack. ``&`` and ``|`` of one
kind flatten, so long chains of them stay shallow; what nests is alternating
them, or ``~`` of a group inside another group.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from stoplist_nb._frozen import MAX_DEPTH, too_deep
from stoplist_nb.errors import InvalidQuery


class Query:
    """Base of every query node: combine with ``&``, ``|``, ``~``; send ``to_mongo()``.

    >>> from stoplist_nb._querymodel import F
    >>> q = (F("_city") == "Moscow") | ~F("email").exists()
    >>> q.to_mongo()
    {'$or': [{'_city': 'Moscow'}, {'email': {'$exists': False}}]}
    """

    __slots__ = ()
    #: How many levels ``to_mongo()`` nests; each node sets it when built.
    _depth: int

    def to_mongo(self) -> dict[str, Any]:
        """Return the MongoDB filter, a fresh dict of plain lists and dicts."""
        raise NotImplementedError

    def _key(self) -> Any:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Query):
            return NotImplemented
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __and__(self, other: Query) -> Query:
        if not isinstance(other, Query):
            return NotImplemented
        return And((self, other))

    def __or__(self, other: Query) -> Query:
        if not isinstance(other, Query):
            return NotImplemented
        return Or((self, other))

    def __invert__(self) -> Query:
        raise NotImplementedError

    # The two hooks a Condition overrides, so that groups need not import it.
    def _field_path(self) -> str | None:
        """The field of a condition, for And to merge under one dict; None for a group."""
        return None

    def _is_comparison(self) -> bool:
        """Whether the repr is ``F(...) <op> value``, which needs brackets in a group."""
        return False

    def __bool__(self) -> bool:
        # `a and b` or `1 < F("x") < 5` would otherwise silently keep one side only.
        raise TypeError("a Query has no truth value: combine queries with &, | and ~")


def set_depth(node: Query, depth: int, name: str) -> None:
    """Record how deep ``node.to_mongo()`` nests, or refuse to build ``node``."""
    if depth > MAX_DEPTH:
        raise too_deep(name)
    object.__setattr__(node, "_depth", depth)


def _items(items: Iterable[Query], name: str, flatten: type[_Group] | None) -> tuple[Query, ...]:
    out: list[Query] = []
    for item in items:
        if not isinstance(item, Query):
            raise InvalidQuery(f"{name} takes queries, not {type(item).__name__}")
        out.extend(item.items if flatten and isinstance(item, flatten) else [item])
    return tuple(out)


@dataclass(frozen=True, eq=False, repr=False, init=False)
class _Group(Query):
    items: tuple[Query, ...]

    def _key(self) -> Any:
        return self.items


@dataclass(frozen=True, eq=False, repr=False, init=False)
class And(_Group):
    """All of ``items``; nested ``And`` are flattened, ``And([])`` matches everything.

    Conditions on different fields merge into one dict (MongoDB's implicit AND);
    anything else, two conditions on one field included, goes under ``$and``.

    >>> from stoplist_nb._querymodel import F
    >>> q = (F("a") >= 1) & (F("a") < 5) & (F("b") == "x")
    >>> q
    (F('a') >= 1) & (F('a') < 5) & (F('b') == 'x')
    >>> q.to_mongo()
    {'$and': [{'a': {'$gte': 1}}, {'a': {'$lt': 5}}, {'b': 'x'}]}
    >>> ((F("a") == 1) & F("b").exists()).to_mongo()
    {'a': 1, 'b': {'$exists': True}}
    """

    def __init__(self, items: Iterable[Query] = ()) -> None:
        flat = _items(items, "And", And)
        object.__setattr__(self, "items", flat)
        if not flat:
            depth = 1
        elif _merges(flat):  # one dict, not the two levels of {"$and": [...]}
            depth = max(item._depth for item in flat)
        else:
            depth = _group_depth(flat)
        set_depth(self, depth, "And")

    def to_mongo(self) -> dict[str, Any]:
        """Return the merged dict, ``{"$and": [...]}``, or ``{}`` when empty."""
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

    >>> from stoplist_nb._querymodel import F
    >>> ((F("_city") == "Moscow") | (F("_city") == "Kazan")).to_mongo()
    {'$or': [{'_city': 'Moscow'}, {'_city': 'Kazan'}]}
    """

    def __init__(self, items: Iterable[Query]) -> None:
        flat = _items(items, "Or", Or)
        if len(flat) < 2:
            raise InvalidQuery("Or takes two or more queries; use the query itself")
        object.__setattr__(self, "items", flat)
        set_depth(self, _group_depth(flat), "Or")

    def to_mongo(self) -> dict[str, Any]:
        """Return ``{"$or": [...]}``."""
        return {"$or": [i.to_mongo() for i in self.items]}

    def __invert__(self) -> Query:
        return Nor(self.items)

    def __repr__(self) -> str:
        return " | ".join(_wrap(i, And) for i in self.items)


@dataclass(frozen=True, eq=False, repr=False, init=False)
class Nor(_Group):
    """None of ``items`` (``$nor``); what ``~`` makes of a group.

    ``Nor([Or(items)])`` is stored as ``Nor(items)``, which means the same.

    >>> from stoplist_nb._querymodel import F
    >>> q = ~((F("a") >= 1) & (F("a") < 5))
    >>> q.to_mongo()
    {'$nor': [{'$and': [{'a': {'$gte': 1}}, {'a': {'$lt': 5}}]}]}
    >>> ~q
    (F('a') >= 1) & (F('a') < 5)
    """

    def __init__(self, items: Iterable[Query]) -> None:
        flat = _items(items, "Nor", None)
        if len(flat) == 1 and isinstance(flat[0], Or):
            flat = flat[0].items
        if not flat:
            raise InvalidQuery("Nor takes one or more queries")
        object.__setattr__(self, "items", flat)
        set_depth(self, _group_depth(flat), "Nor")

    def to_mongo(self) -> dict[str, Any]:
        """Return ``{"$nor": [...]}``."""
        return {"$nor": [i.to_mongo() for i in self.items]}

    def __invert__(self) -> Query:
        return self.items[0] if len(self.items) == 1 else Or(self.items)

    def __repr__(self) -> str:
        if len(self.items) > 1:
            return f"~({Or(self.items)!r})"
        if isinstance(self.items[0], And):
            return f"~({self.items[0]!r})"
        return f"Nor({list(self.items)!r})"


def _group_depth(items: tuple[Query, ...]) -> int:
    # {"$op": [item, ...]}: a dict and a list around the deepest item.
    return 2 + max(item._depth for item in items)


def _merges(items: tuple[Query, ...]) -> bool:
    """Whether the items can be one dict of fields (MongoDB's implicit AND)."""
    paths = [item._field_path() for item in items]
    # One item stays under $and, or it would read back as the bare item.
    return len(paths) > 1 and None not in paths and len(set(paths)) == len(paths)


def _wrap(item: Query, group: type[_Group]) -> str:
    # & binds tighter than ==, so comparisons need brackets; a group of the
    # other kind gets them for the reader.
    if item._is_comparison() or isinstance(item, group):
        return f"({item!r})"
    return repr(item)
