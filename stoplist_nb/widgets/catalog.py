"""The fields a :class:`stoplist_nb.widgets.QueryBuilder` offers, and the values it suggests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from stoplist_nb.errors import InvalidInput
from stoplist_nb.widgets.operators import (
    TEXT_OPERATORS,
    WHOLE_DAY_OPERATORS,
    kind_of,
    operators_by_kind,
)

#: The most values suggested for one field.
MAX_SUGGESTIONS = 50

_CATEGORY_ORDER = {"system": 0, "custom": 1, "subscription": 2}

#: Subscription channels and status words the platform documents: suggested,
#: never enforced (statuses are also accepted as numbers).
CHANNELS = ("email", "sms", "push", "notify", "viber", "whatsapp", "telegram_bot")
STATUSES = (
    "subscribed", "unsubscribed", "complained", "hardbounced", "unconfirmed", "suspended", "invalid"
)  # fmt: skip
KNOWN_VALUES = {"subscriptions.channel": CHANNELS, "subscriptions.status": STATUSES}


@dataclass(frozen=True)
class FieldInfo:
    """One field: its raw ``name``, ``title``, ``type`` and ``category`` (may be empty)."""

    name: str
    title: str = ""
    type: str = ""
    category: str = ""


#: The documented fields of a subscription, offered when the field list names none.
SUBSCRIPTION_FIELDS = tuple(
    FieldInfo(f"subscriptions.{name}", f"Subscription {title}", type_, "subscription")
    for name, title, type_ in (
        ("channel", "channel", "string"), ("status", "status", "string"),
        ("resource_id", "resource id", "int"), ("priority", "priority", "int"),
        ("is_delete", "deleted", "boolean"), ("reg_info.date", "date", "string"),
        ("email_data.email", "e-mail", "string"), ("email_data.domain", "e-mail domain", "string"),
        ("phone_data.phone", "phone", "string"),
    )
)  # fmt: skip

#: Documented values of ``fields`` in ``profiles/list``, offered even when not listed.
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
        words = ("title", "type", "category")
        rows = fields.to_dict("records")
        return [FieldInfo(str(r["name"]), *(_text(r.get(w)) for w in words)) for r in rows]
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
    """The text a field box shows: the title and the raw name.

    >>> label_of(FieldInfo("age", "Age")), label_of(FieldInfo("_city"))
    ('Age (age)', '_city')
    """
    return f"{info.title} ({info.name})" if info.title and info.title != info.name else info.name


def _order(info: FieldInfo) -> tuple[int, str, str]:
    rank = _CATEGORY_ORDER.get(info.category, len(_CATEGORY_ORDER))
    return (rank, (info.title or info.name).casefold(), info.name)


class FieldCatalog:
    """The fields offered by the rules and the fields box, with labels and suggestions.

    Of two ``infos`` with one name the first wins. With ``complete`` (``infos`` is the whole field
    list) a field to return outside it is refused. ``guessed`` names fields whose type was guessed
    from a loaded value: a rule on one is still warned about.

    >>> catalog = FieldCatalog([FieldInfo("_city", "City", "string", "system")])
    >>> catalog.resolve("city"), catalog.resolve("City (_city)"), catalog.resolve(" x ")
    ('_city', '_city', 'x')
    """

    def __init__(
        self,
        infos: Iterable[FieldInfo],
        suggestions: Mapping[str, Sequence[str]] | None = None,
        *,
        complete: bool = False,
        guessed: Iterable[str] = (),
    ) -> None:
        self.infos: dict[str, FieldInfo] = {}
        for info in infos:
            self.infos.setdefault(info.name, info)
        self.complete = complete
        self.guessed = frozenset(guessed)
        #: The fields the fields box takes, by name.
        self.returnable = self.infos | {i.name: i for i in RETURNABLE if i.name not in self.infos}
        self._names: dict[str, str] = {}
        titles: dict[str, set[str]] = {}
        for info in self.returnable.values():
            self._names[label_of(info)] = info.name
            self._names[f"{label_of(info)} · {info.category}"] = info.name
            if info.title:
                titles.setdefault(info.title.strip().casefold(), set()).add(info.name)
        # A title two fields share names neither: the label tells them apart.
        self._titles = {t: next(iter(n)) for t, n in titles.items() if len(n) == 1}
        self._suggestions = {k: tuple(v) for k, v in (suggestions or {}).items()}
        self._subscriptions: FieldCatalog | None = None

    def resolve(self, text: str) -> str:
        """The raw name of what was typed: a name, a label, or a title in any case."""
        text = text.strip()
        if text in self.returnable:
            return text
        return self._names.get(text) or self._titles.get(text.casefold(), text)

    def label(self, name: str) -> str:
        """The label of a known field, else the name."""
        info = self.returnable.get(name)
        return name if info is None else label_of(info)

    def kind(self, name: str) -> str:
        """The kind of ``name`` (``"string"`` for a field the catalog lacks)."""
        info = self.returnable.get(name)
        return kind_of(name, "" if info is None else info.type)

    def suggestions(self, name: str) -> tuple[str, ...]:
        """Values to offer for ``name``: the documented words, then those seen, capped."""
        merged = dict.fromkeys((*KNOWN_VALUES.get(name, ()), *self._suggestions.get(name, ())))
        return tuple(merged)[:MAX_SUGGESTIONS]

    def subscriptions(self) -> FieldCatalog:
        """The fields of one subscription, named relative to it (``"channel"``)."""
        if self._subscriptions is None:
            prefix, cut = "subscriptions.", len("subscriptions.")
            own = [i for i in self.infos.values() if i.name.startswith(prefix)]
            own = own or list(SUBSCRIPTION_FIELDS)
            infos = [FieldInfo(i.name[cut:], i.title, i.type, i.category) for i in own]
            seen = {i.name[cut:]: self.suggestions(i.name) for i in own}
            guessed = {n[cut:] for n in self.guessed if n.startswith(prefix)}
            self._subscriptions = FieldCatalog(infos, seen, complete=self.complete, guessed=guessed)
            self._subscriptions.returnable = {i.name: i for i in infos}
        return self._subscriptions

    def with_types(self, types: Mapping[str, str]) -> FieldCatalog:
        """This catalog and ``types`` (name -> type word) for fields it lacks, as guessed."""
        if not types:
            return self
        added = [FieldInfo(n, type=t) for n, t in types.items() if n not in self.infos]
        infos, guessed = [*self.infos.values(), *added], self.guessed | {i.name for i in added}
        return FieldCatalog(infos, self._suggestions, complete=self.complete, guessed=guessed)

    def entries(self) -> list[dict[str, Any]]:
        """The fields as the front end lists them, by category: name, title, label, kind, ..."""
        return [
            {"name": i.name, "title": i.title, "label": label_of(i), "category": i.category}
            | {"kind": self.kind(i.name), "suggestions": list(self.suggestions(i.name))}
            for i in sorted(self.returnable.values(), key=_order)
        ]

    def to_json(self) -> dict[str, Any]:
        """The builder's ``catalog`` trait: fields, and the front end's only table of operators."""
        return {
            "fields": self.entries(),
            "operators": operators_by_kind(),
            "text_operators": list(TEXT_OPERATORS),
            "whole_day_operators": list(WHOLE_DAY_OPERATORS),
            "subscription_fields": self.subscriptions().entries(),
            "complete": self.complete,
        }


def sample_values(
    profiles: Iterable[Any], names: Iterable[str], *, cap: int = MAX_SUGGESTIONS
) -> dict[str, tuple[str, ...]]:
    """The distinct strings at each dotted path of ``names``, most frequent first.

    Paths go through lists, as a query's do. Long strings (ids, addresses) are left out.

    >>> sample_values([{"s": [{"c": "email"}, {"c": "sms"}]}, {"s": [{"c": "sms"}]}], ["s.c"])
    {'s.c': ('sms', 'email')}
    """

    def spread(values: list[Any]) -> list[Any]:
        return [v for value in values for v in (value if isinstance(value, list) else [value])]

    counts: dict[str, Counter[str]] = {name: Counter() for name in names}
    for profile in profiles:
        for name, counter in counts.items():
            # A loop, not recursion: a reply nested deeply should not reach the stack limit.
            found = [profile]
            for part in name.split("."):
                found = [i[part] for i in spread(found) if isinstance(i, Mapping) and part in i]
            counter.update(
                v for v in spread(found) if isinstance(v, str) and v.strip() and len(v) <= 80
            )
    return {n: tuple(v for v, _ in c.most_common(cap)) for n, c in counts.items() if c}
