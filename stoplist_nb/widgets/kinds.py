"""Field kinds and value checks of :class:`stoplist_nb.widgets.QueryBuilder` rows.

:data:`OPERATORS` lists the operators per kind of field; :func:`kind_of` maps a
field's name and type to its kind. The helpers turn typed-in text into values
and back without changing what a query means.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from stoplist_nb._json.kinds import BOOLEAN, FLOAT, INT, STRING, json_kind

_EQ, _NE = ("==", "$eq"), ("!=", "$ne")
_RANGE = (("<", "$lt"), ("<=", "$lte"), (">", "$gt"), (">=", "$gte"))
_SETS = (("isin", "$in"), ("notin", "$nin"))
_EXISTS = ("exists", "$exists")

#: The operators offered per kind of field, as (label, key) Dropdown options.
OPERATORS: dict[str, tuple[tuple[str, str], ...]] = {
    "string": (
        _EQ, _NE, *_SETS, ("contains", "contains"), ("startswith", "startswith"),
        ("regex", "$regex"), _EXISTS,
    ),
    "int": (_EQ, _NE, *_RANGE, *_SETS, _EXISTS),
    "float": (_EQ, _NE, *_RANGE, *_SETS, _EXISTS),
    "boolean": (_EQ, _NE, _EXISTS),
    "array": (("has element (==)", "$eq"), *_SETS, _EXISTS),
    "date": (_EQ, *_RANGE, _EXISTS),
    "object": (_EXISTS,),
}  # fmt: skip

#: Known date fields; any other string field with "date" in its name is one too.
DATE_FIELDS = frozenset({"_bdate", "_regdate", "subscriptions.reg_info.date"})

REGEX_KEYS = frozenset({"contains", "startswith", "$regex"})
_KINDS = {"int": "int", "float": "float", "boolean": "boolean", "array": "array"}
_KINDS |= {"object": "object", "date": "date", "datetime": "date"}


def kind_of(name: str, type_: str) -> str:
    """Return the key of :data:`OPERATORS` for a field of ``type_`` (``""`` if unknown)."""
    if type_ in ("string", "") and (name in DATE_FIELDS or "date" in name.lower()):
        return "date"
    return _KINDS.get(type_, "string")


def guess_type(value: Any) -> str:
    """The field type a loaded value suggests, for fields the builder does not know.

    A list (``$in``) suggests the kind of its first value. The kinds come from
    :func:`~stoplist_nb._json.kinds.json_kind`, narrowed to what a row edits
    as itself: a number or a boolean; anything else is typed in as text.
    """
    if isinstance(value, list | tuple):
        return next((guess_type(v) for v in value if v is not None), STRING)
    kind = json_kind(value)
    return kind if kind in (INT, FLOAT, BOOLEAN) else STRING


def parse_number(text: str, whole: bool) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"value must be a number, not {text!r}") from None
    if whole:
        raise ValueError(f"value must be a whole number, not {text!r}")
    return tidy_number(number)


def tidy_number(number: float) -> int | float:
    # MongoDB compares numbers by value, so 50 and 50.0 match the same profiles;
    # the int keeps hand-written queries like {"score": {"$gte": 50}} as written.
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def unescape(pattern: str) -> str:
    return re.sub(r"\\(.)", r"\1", pattern, flags=re.DOTALL)


def is_literal(pattern: str) -> bool:
    return re.escape(unescape(pattern)) == pattern


def valid_date(text: str) -> bool:
    return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}([ T][0-9:.+\-Z]*)?", text))


def iso_date(text: str) -> date | None:
    """The date ``text`` spells exactly as ``YYYY-MM-DD``, else ``None`` (e.g. a date-time)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None
