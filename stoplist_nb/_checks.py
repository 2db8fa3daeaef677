"""A caller's plain arguments: each check returns the value or raises ``InvalidInput`` naming it."""

from __future__ import annotations

from typing import Any

from stoplist_nb.errors import InvalidInput


def check_int(name: str, value: Any, *, minimum: int | None = None) -> int:
    """``value`` if it is an int of at least ``minimum``.

    >>> check_int("limit", 0, minimum=1)
    Traceback (most recent call last):
    ...
    stoplist_nb.errors.InvalidInput: limit must be an int of at least 1, not 0
    """
    low = minimum is not None and isinstance(value, int) and value < minimum
    if isinstance(value, bool) or not isinstance(value, int) or low:
        floor = f" of at least {minimum}" if minimum is not None else ""
        raise InvalidInput(f"{name} must be an int{floor}, not {value!r}")
    return value


def check_flag(name: str, value: Any) -> bool:
    """``value`` if it is ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be True or False, not {value!r}")
    return value


def check_number(
    name: str, value: Any, *, unit: str = "", zero: bool = False, none: bool = False
) -> Any:
    """``value`` if a number above 0 (``zero``: at least 0; ``none``: or None; ``unit``: of what).

    >>> check_number("deadline", -1, none=True)
    Traceback (most recent call last):
    ...
    stoplist_nb.errors.InvalidInput: deadline must be a positive number or None, not -1
    """
    if value is None and none:
        return value
    not_number = isinstance(value, bool) or not isinstance(value, int | float)
    if not_number or not (value >= 0 if zero else value > 0):  # NaN fails both
        of = f" of {unit}" if unit else ""
        what = f"a number{of} of at least 0" if zero else f"a positive number{of}"
        raise InvalidInput(f"{name} must be {what}{' or None' if none else ''}, not {value!r}")
    return value
