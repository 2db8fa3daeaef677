"""What a rule of the query builder says: kinds of field, operators, and typed values.

The front end reads its tables of operators from here (no widget library here).
"""

from __future__ import annotations

import contextlib
import re
from datetime import date, timedelta
from typing import Any

from stoplist_nb._json.kinds import BOOLEAN, FLOAT, INT, STRING, json_kind

#: Every operator of a rule: name -> (label, arity: 0, 1, 2 or ``"list"``, one or more).
OPERATORS: dict[str, tuple[str, int | str]] = {
    "equal": ("equal", 1), "not_equal": ("not equal", 1),
    "in": ("in", "list"), "not_in": ("not in", "list"),
    "less": ("less", 1), "less_or_equal": ("less or equal", 1),
    "greater": ("greater", 1), "greater_or_equal": ("greater or equal", 1),
    "between": ("between", 2), "not_between": ("not between", 2),
    "begins_with": ("begins with", 1), "not_begins_with": ("not begins with", 1),
    "contains": ("contains", 1), "not_contains": ("not contains", 1),
    "ends_with": ("ends with", 1), "not_ends_with": ("not ends with", 1),
    "matches": ("matches regex", 1),
    "is_empty": ("is empty", 0), "is_not_empty": ("is not empty", 0),
    "is_null": ("is null", 0), "is_not_null": ("is not null", 0),
    "exists": ("exists", 0), "not_exists": ("does not exist", 0),
}  # fmt: skip
_RANGE = ("less", "less_or_equal", "greater", "greater_or_equal", "between", "not_between")
_NULLS = ("is_null", "is_not_null", "exists", "not_exists")
#: The operators that match text with a regular expression.
TEXT_OPERATORS = tuple(op for op in OPERATORS if op.endswith(("with", "contains", "matches")))
#: The operators for which a bare day on a date field stands for the whole day.
WHOLE_DAY_OPERATORS = ("equal", "not_equal", "less_or_equal", "greater", "between", "not_between")
#: The operators each kind of field offers, in the order offered.
KIND_OPERATORS: dict[str, tuple[str, ...]] = {
    "string": tuple(op for op in OPERATORS if op not in _RANGE),
    "int": ("equal", "not_equal", "in", "not_in", *_RANGE, *_NULLS),
    "float": ("equal", "not_equal", "in", "not_in", *_RANGE, *_NULLS),
    "boolean": ("equal", "not_equal", *_NULLS),
    "date": ("equal", "not_equal", *_RANGE, *_NULLS),
    "array": ("equal", "in", "not_in", "is_null", "exists", "not_exists"),
    "object": ("exists", "not_exists", "is_null", "is_not_null"),
}
#: Labels that differ by kind: an array's ``equal`` asks for one element.
_KIND_LABELS = {("array", "equal"): "has element"}
#: The type words of a field list (any case) and the kind each one is.
TYPE_WORDS: dict[str, str] = {
    **dict.fromkeys(("int", "integer", "long"), "int"),
    **dict.fromkeys(("float", "double", "number", "decimal"), "float"),
    **dict.fromkeys(("bool", "boolean"), "boolean"),
    **dict.fromkeys(("string", "str", "text", "enum", "ip"), "string"),
    **dict.fromkeys(("date", "datetime", "timestamp"), "date"),
    **dict.fromkeys(("array", "list", "tags"), "array"),
    **dict.fromkeys(("object", "dict", "map"), "object"),
}


def kind_of(name: str, type_word: str | None) -> str:
    """The kind of a field (a key of :data:`KIND_OPERATORS`) from its name and type word.

    >>> kind_of("vip", "Bool"), kind_of("_bdate", "string"), kind_of("x", "uuid")
    ('boolean', 'date', 'string')
    """
    kind = TYPE_WORDS.get((type_word or "").strip().lower(), "string")
    # Dates are held as strings: _bdate, _regdate, subscriptions.reg_info.date, ...
    return "date" if kind == "string" and "date" in name.lower() else kind


def operators_by_kind() -> dict[str, list[list[Any]]]:
    """``{kind: [[operator, label, arity], ...]}``, the table the front end offers.

    >>> operators_by_kind()["boolean"][0]
    ['equal', 'equal', 1]
    """
    return {
        kind: [[op, _KIND_LABELS.get((kind, op), OPERATORS[op][0]), OPERATORS[op][1]] for op in ops]
        for kind, ops in KIND_OPERATORS.items()
    }


def guess_type(value: Any) -> str:
    """The type a loaded value (a list: its first) suggests for a field the catalog lacks.

    >>> guess_type(3), guess_type([None, 2.5]), guess_type({"a": 1})
    ('int', 'float', 'string')
    """
    if isinstance(value, list | tuple):
        return next((guess_type(v) for v in value if v is not None), STRING)
    kind = json_kind(value)
    return kind if kind in (INT, FLOAT, BOOLEAN) else STRING


_DATE_TIME = re.compile(
    r"(\d{4}-\d{2}-\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):?(\d{2}))?)?"
)


def iso_day(text: Any, days: int = 0) -> str | None:
    """The day ``text`` spells exactly as ``YYYY-MM-DD``, moved ``days`` on, or ``None``."""
    if isinstance(text, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        with contextlib.suppress(ValueError, OverflowError):  # no such day, or past year 9999
            return (date.fromisoformat(text) + timedelta(days=days)).isoformat()
    return None


def valid_date(text: str) -> bool:
    """Whether ``text`` is an ISO date, ``YYYY-MM-DD``, optionally with a time on the clock.

    >>> valid_date("2023-07-14T09:26:53.512Z"), valid_date("2023-02-30"), valid_date("14.07.2023")
    (True, False, False)
    """
    match = _DATE_TIME.fullmatch(text)
    if match is None or iso_day(match[1]) is None:
        return False
    hour, minute, second, off_hour, off_minute = (int(g or 0) for g in match.groups()[1:])
    return hour < 24 and minute < 60 and second < 60 and off_hour < 24 and off_minute < 60


def parse_number(text: str, *, whole: bool) -> int | float:
    """A number typed as ``text`` (whole when asked), or ``ValueError`` saying why."""
    if not text:
        raise ValueError("value is empty: type a whole number" if whole else "value is empty")
    with contextlib.suppress(ValueError):
        return int(text)
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"value must be a number, not {text!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"value must be a finite number, not {text!r}")
    if whole:
        if not number.is_integer():
            raise ValueError(f"value must be a whole number, not {text!r} (it is not rounded)")
        return int(number)
    return number


def parse_value(kind: str, text: str) -> Any:
    """One typed value of a field of ``kind`` as the query holds it, or ``ValueError`` saying why.

    Booleans are ``true`` or ``false`` in any case; dates are kept as typed.

    >>> parse_value("int", "3"), parse_value("float", "2.5"), parse_value("boolean", "True")
    (3, 2.5, True)
    """
    stripped = text.strip()
    if kind in ("int", "float"):
        return parse_number(stripped, whole=kind == "int")
    if kind == "boolean":
        if stripped.lower() in ("true", "false"):
            return stripped.lower() == "true"
        if not stripped:
            raise ValueError("value is empty: pick true or false")
        raise ValueError(f"value must be true or false, not {text!r}")
    if kind == "date":
        if not stripped:
            raise ValueError("value is empty: type a date like 2024-01-31")
        if not valid_date(stripped):
            raise ValueError(
                f"value must be a date like 2024-01-31 or 2024-01-31T09:30, not {text!r}"
            )
        return stripped
    if not stripped:
        raise ValueError("value is empty")
    return text
