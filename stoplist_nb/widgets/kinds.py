"""Field kinds and value checks of :class:`stoplist_nb.widgets.QueryBuilder` rows.

:data:`OPERATORS` lists the operators per kind of field; :func:`kind_of` maps a
field's name and type to its kind. The functions below turn typed-in text into values
and back without changing what a query means.
"""

from __future__ import annotations

import re
from datetime import date, datetime
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

#: Subscription channels and status words the platform documents, offered as
#: suggestions (a value outside them is still allowed: a client must not break
#: on one it does not know, and statuses are also accepted as numbers).
CHANNELS = ("email", "sms", "push", "notify", "viber", "whatsapp", "telegram_bot")
STATUSES = (
    "subscribed",
    "unsubscribed",
    "complained",
    "hardbounced",
    "unconfirmed",
    "suspended",
    "invalid",
)
KNOWN_VALUES: dict[str, tuple[str, ...]] = {
    "subscriptions.channel": CHANNELS,
    "subscriptions.status": STATUSES,
}

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
    """The number ``text`` spells, refused with the reason rather than changed.

    A whole-number field refuses ``2.5`` instead of sending ``2``, and text
    that is no number at all is named in the message, never dropped.

    >>> parse_number("2.0", whole=True), parse_number("2.5", whole=False)
    (2, 2.5)
    >>> parse_number("2.5", whole=True)
    Traceback (most recent call last):
    ...
    ValueError: value must be a whole number, not '2.5' (it is not rounded)
    """
    if not text:
        raise ValueError("value is empty: type a whole number" if whole else "value is empty")
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"value must be a number, not {text!r}") from None
    if whole and not number.is_integer():
        raise ValueError(f"value must be a whole number, not {text!r} (it is not rounded)")
    return int(number) if whole else tidy_number(number)


def tidy_number(number: float) -> int | float:
    # MongoDB compares numbers by value, so 50 and 50.0 match the same profiles;
    # the int keeps hand-written queries like {"score": {"$gte": 50}} as written.
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def unescape(pattern: str) -> str:
    return re.sub(r"\\(.)", r"\1", pattern, flags=re.DOTALL)


def is_literal(pattern: str) -> bool:
    return re.escape(unescape(pattern)) == pattern


_DATE_TIME = re.compile(
    r"(\d{4}-\d{2}-\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):?(\d{2}))?)?"
)


def valid_date(text: str) -> bool:
    """Whether ``text`` is an ISO date, ``YYYY-MM-DD``, optionally with a time.

    The time is ``HH:MM``, seconds and fractions optional, then ``Z`` or an
    offset; the date must exist (no 30 February) and the time be on the clock.

    >>> valid_date("2024-02-29"), valid_date("2023-07-14T09:26:53.512Z")
    (True, True)
    >>> valid_date("2023-02-30"), valid_date("14.07.2023"), valid_date("2024-01-31T25:00")
    (False, False, False)
    """
    match = _DATE_TIME.fullmatch(text)
    if match is None or iso_date(match[1]) is None:
        return False
    hour, minute, second, off_hour, off_minute = (int(g or 0) for g in match.groups()[1:])
    return hour < 24 and minute < 60 and second < 60 and off_hour < 24 and off_minute < 60


def parse_scalar(kind: str, value: Any) -> Any:
    """One value of a field of ``kind`` as the query holds it, or ``ValueError`` saying why.

    Numbers typed as text become numbers (:func:`parse_number`), a picked
    ``datetime.date`` becomes ``YYYY-MM-DD``, a typed date must be ISO
    (:func:`valid_date`), and an empty value is refused for every kind.

    >>> parse_scalar("int", "3"), parse_scalar("date", date(2024, 1, 31))
    (3, '2024-01-31')
    >>> parse_scalar("string", "")
    Traceback (most recent call last):
    ...
    ValueError: value is empty
    """
    if kind in ("int", "float"):
        if isinstance(value, str):
            return parse_number(value.strip(), kind == "int")
        return tidy_number(value) if isinstance(value, float) else value
    if kind == "date":
        if isinstance(value, date):
            return (value.date() if isinstance(value, datetime) else value).isoformat()
        if value is None:
            raise ValueError("value must be a date: pick one")
        if not valid_date(value):
            raise ValueError(
                f"value must be a date like 2024-01-31 or 2024-01-31T09:30, not {value!r}"
            )
        return value
    if isinstance(value, str) and not value.strip():
        raise ValueError("value is empty")
    return value


def number_text(value: Any) -> str:
    """The text a number box shows for ``value``; ``ValueError`` for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"not a number: {value!r}")
    return repr(value)


def iso_date(text: str) -> date | None:
    """The date ``text`` spells exactly as ``YYYY-MM-DD``, else ``None`` (e.g. a date-time)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None
