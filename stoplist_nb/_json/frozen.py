"""JSON values that cannot change once checked: what a request checked is what it sends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn


class FrozenDict(dict[str, Any]):
    """A dict that refuses every change; it reads, compares and encodes as a dict.

    >>> FrozenDict({"a": 1})["b"] = 2
    Traceback (most recent call last):
    TypeError: a checked query cannot change: build a new request (dataclasses.replace)
    """

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("a checked query cannot change: build a new request (dataclasses.replace)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, Any]]]:
        # copy, deepcopy and pickle rebuild it whole rather than item by item.
        return (FrozenDict, (dict(self),))


def freeze(value: Any) -> Any:
    """A deep copy of a JSON value that refuses every change."""
    if isinstance(value, Mapping):
        return FrozenDict({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """A fresh, plain deep copy of a JSON value: dicts (of any ``Mapping``) and lists."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return value
