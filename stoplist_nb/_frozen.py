"""Immutable, hashable copies of JSON-like values, for the query model's nodes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["FrozenDict", "freeze", "thaw", "value_key"]


class FrozenDict(Mapping[str, Any]):
    """A read-only dict, so an embedded document can sit inside a hashable node."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(thaw(self))


def freeze(value: Any) -> Any:
    """Lists become tuples and dicts ``FrozenDict``, all the way down."""
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, Mapping) and not isinstance(value, FrozenDict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    return value


def thaw(value: Any) -> Any:
    """The inverse of :func:`freeze`: tuples back to lists, ``FrozenDict`` to dicts."""
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    if isinstance(value, FrozenDict):
        return {k: thaw(v) for k, v in value.items()}
    return value


def value_key(value: Any) -> Any:
    """A comparison key that tells apart what MongoDB tells apart."""
    # The type goes into the key because 1 == True == 1.0 in Python, not in MongoDB;
    # document keys keep their order because MongoDB compares documents in order.
    if isinstance(value, tuple):
        return ("list", tuple(value_key(v) for v in value))
    if isinstance(value, FrozenDict):
        return ("dict", tuple((k, value_key(v)) for k, v in value.items()))
    return (type(value).__name__, value)
