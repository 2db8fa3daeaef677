"""The fields a :class:`stoplist_nb.widgets.QueryBuilder` offers, and the values it suggests.

A :class:`FieldCatalog` turns what ``database_fields`` returns (name, title,
type, category) into the labels the field boxes show, e.g.
``"City (_city) · system"``, grouped by category, and maps a picked label back
to the raw name. It also holds the suggested values of string fields: the
documented words (channels, subscription statuses) and the distinct values of
a sample page, which are offered but never enforced.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from stoplist_nb.errors import InvalidInput
from stoplist_nb.widgets.kinds import KNOWN_VALUES, kind_of

#: The most values suggested for one field.
MAX_SUGGESTIONS = 50

_CATEGORY_ORDER = {"system": 0, "custom": 1, "subscription": 2}


@dataclass(frozen=True)
class FieldInfo:
    """One field: its raw ``name``, ``title``, ``type`` and ``category`` (may be empty)."""

    name: str
    title: str = ""
    type: str = ""
    category: str = ""


#: Documented values of ``fields`` in ``profiles/list``, offered in the
#: fields box even when the field list lacks them (an inferred one does).
RETURNABLE = (
    FieldInfo("_id", "Profile id", "string", "system"),
    FieldInfo("subscriptions", "Subscriptions", "array", "system"),
)


def field_infos(fields: Any) -> list[FieldInfo]:
    """The fields of a ``database_fields`` frame, a list of names or a dict of name -> type.

    >>> field_infos({"vip": "boolean"})
    [FieldInfo(name='vip', title='', type='boolean', category='')]
    """
    if isinstance(fields, pd.DataFrame):
        rows = fields.to_dict("records")
        return [
            FieldInfo(
                str(row["name"]),
                _text(row.get("title")),
                _text(row.get("type")),
                _text(row.get("category")),
            )
            for row in rows
        ]
    if isinstance(fields, Mapping):
        return [FieldInfo(str(n), type=str(t or "")) for n, t in fields.items()]
    if isinstance(fields, Sequence) and not isinstance(fields, str):
        return [FieldInfo(str(n)) for n in fields]
    raise InvalidInput(
        f"fields must be a DataFrame like database_fields returns, a list of names or a "
        f"dict of name -> type, not {type(fields).__name__}"
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def label_of(info: FieldInfo) -> str:
    """The text a field box shows: title, raw name and category.

    >>> label_of(FieldInfo("age", "Age", "int", "custom"))
    'Age (age) · custom'
    >>> label_of(FieldInfo("_city"))
    '_city'
    """
    text = f"{info.title} ({info.name})" if info.title and info.title != info.name else info.name
    return f"{text} · {info.category}" if info.category else text


def _order(info: FieldInfo) -> tuple[int, str, str]:
    rank = _CATEGORY_ORDER.get(info.category, len(_CATEGORY_ORDER))
    return (rank, (info.title or info.name).casefold(), info.name)


class FieldCatalog:
    """The fields offered by the rows and the fields box, with labels and suggestions.

    Args:
        infos: The fields, in any order; the first of two with one name wins.
        suggestions: Suggested values per field name (from a sample page); the
            documented channels and statuses come first for their fields.
    """

    def __init__(
        self, infos: Iterable[FieldInfo], suggestions: Mapping[str, Sequence[str]] | None = None
    ) -> None:
        self.infos: dict[str, FieldInfo] = {}
        for info in infos:
            self.infos.setdefault(info.name, info)
        self.types = {name: info.type for name, info in self.infos.items()}
        ordered = sorted(self.infos.values(), key=_order)
        #: Labels for the rows' field box, grouped by category.
        self.options = tuple(label_of(i) for i in ordered)
        returnable = dict(self.infos)
        for info in RETURNABLE:
            returnable.setdefault(info.name, info)
        ordered_returnable = sorted(returnable.values(), key=_order)
        #: Names the fields box takes, and their labels.
        self.returnable = tuple(i.name for i in ordered_returnable)
        self.return_options = tuple(label_of(i) for i in ordered_returnable)
        self._names = {label_of(i): i.name for i in returnable.values()}
        self._suggestions = {k: tuple(v) for k, v in (suggestions or {}).items()}

    def resolve(self, text: str) -> str:
        """The raw name of a picked label, or the typed text itself (stripped)."""
        text = text.strip()
        return self._names.get(text, text)

    def label(self, name: str) -> str:
        """The label of a known field, else the name."""
        info = self.infos.get(name)
        return name if info is None else label_of(info)

    def suggestions(self, name: str) -> tuple[str, ...]:
        """Values to offer for ``name``: the documented words, then those seen, capped."""
        seen = self._suggestions.get(name, ())
        known = KNOWN_VALUES.get(name, ())
        merged = dict.fromkeys((*known, *seen))
        return tuple(merged)[:MAX_SUGGESTIONS]

    def string_fields(self) -> list[str]:
        """Names of the fields a row compares as text (not dates), for sampling values."""
        return [n for n, t in self.types.items() if kind_of(n, t) == "string"]


def sample_values(
    profiles: Iterable[Any], names: Iterable[str], *, cap: int = MAX_SUGGESTIONS
) -> dict[str, tuple[str, ...]]:
    """The distinct strings at each dotted path of ``names``, most frequent first.

    Paths go through lists, as a query's do (``subscriptions.channel`` reaches
    the channel of every subscription). Long strings are left out: they are
    ids and addresses, not values to pick.

    >>> sample_values([{"s": [{"c": "email"}, {"c": "sms"}]}, {"s": [{"c": "sms"}]}], ["s.c"])
    {'s.c': ('sms', 'email')}
    """
    counts: dict[str, Counter[str]] = {name: Counter() for name in names}
    for profile in profiles:
        for name, counter in counts.items():
            counter.update(
                v
                for v in _values_at(profile, name.split("."))
                if isinstance(v, str) and v.strip() and len(v) <= 80
            )
    return {n: tuple(v for v, _ in c.most_common(cap)) for n, c in counts.items() if c}


def _values_at(node: Any, parts: list[str]) -> list[Any]:
    # A loop, not recursion: a reply nested deeply should not reach the stack limit.
    found = [node]
    for part in parts:
        step: list[Any] = []
        for item in found:
            items = item if isinstance(item, list) else [item]
            step.extend(i[part] for i in items if isinstance(i, Mapping) and part in i)
        found = step
    out: list[Any] = []
    for value in found:
        out.extend(value if isinstance(value, list) else [value])
    return out
