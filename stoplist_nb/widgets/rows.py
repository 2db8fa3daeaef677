"""One row of :class:`stoplist_nb.widgets.QueryBuilder`: the :class:`ConditionRow`.

A row turns field / operator / value widgets into one
:class:`~stoplist_nb.query.Condition` and back, choosing the operators and the
value widget from the field's kind. It is apart from
:mod:`stoplist_nb.widgets.groups`, which nests rows in AND / OR groups, because
all the per-field typing (numbers, dates, regexes, what a row can show exactly)
is here and none of it is in the groups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date, datetime
from typing import Any

import ipywidgets as w
from traitlets import TraitError

from stoplist_nb.errors import InvalidQuery
from stoplist_nb.query import Condition, F
from stoplist_nb.widgets.kinds import (
    OPERATORS,
    REGEX_KEYS,
    guess_type,
    is_literal,
    iso_date,
    kind_of,
    parse_number,
    tidy_number,
    unescape,
    valid_date,
)


class ConditionRow(w.HBox):  # type: ignore[misc]
    """One condition: ``field`` (Combobox), ``op`` (Dropdown), ``value``, ``case``, ``remove``.

    ``value`` is replaced when the operator or the field's kind needs another
    widget (Text, IntText, FloatText, Checkbox, DatePicker or TagsInput), so read
    it after setting ``field`` and ``op``.

    A date field compares with a DatePicker, whose ``datetime.date`` becomes the
    string ``YYYY-MM-DD`` (the service stores dates as RFC 3339 strings, so the
    query stays a string comparison). The picker edits dates only: a loaded value
    with a time, e.g. ``2023-07-14T09:26:53.512Z``, stays exact in a Text until
    the field changes.
    """

    def __init__(
        self,
        types: Mapping[str, str],
        on_change: Callable[[], None],
        on_remove: Callable[[ConditionRow], None],
    ) -> None:
        self._types = types
        self._on_change = on_change
        self._guess = ""  # the type a loaded value suggested for an unknown field
        self._date_text = False  # a loaded date-time: a Text instead of the DatePicker
        self._hold = 0
        self._slot: tuple[str, ...] = ()
        self.field = w.Combobox(
            options=sorted(types), placeholder="field", ensure_option=False,
            layout=w.Layout(width="14em"),
        )  # fmt: skip
        self.op = w.Dropdown(options=OPERATORS["string"], layout=w.Layout(width="10em"))
        self.case = w.Checkbox(value=False, description="ignore case", indent=False)
        self.remove = w.Button(icon="trash", tooltip="remove this condition")
        self.value: Any = w.Text()
        super().__init__()
        self.field.observe(self._field_changed, "value")
        self.op.observe(self._op_changed, "value")
        self.case.observe(self._changed, "value")
        self.remove.on_click(lambda _: on_remove(self))
        self._sync()

    @property
    def kind(self) -> str:
        """The key of :data:`OPERATORS` for the chosen field."""
        name = self.field.value.strip()
        return kind_of(name, self._types.get(name) or self._guess)

    def _changed(self, _: Any = None) -> None:
        if not self._hold:
            self._on_change()

    def _field_changed(self, _: Any) -> None:
        self._guess, self._date_text = "", False
        self._sync()
        self._changed()

    def _op_changed(self, _: Any) -> None:
        if not self._hold:
            self._sync()
            self._changed()

    def _sync(self) -> None:
        """Offer the operators of the field's kind and the value widget of the operator."""
        self._hold += 1
        try:
            ops = OPERATORS[self.kind]
            if tuple(self.op.options) != ops:
                keep = self.op.value
                self.op.options = ops
                self.op.value = keep if keep in dict(ops).values() else ops[0][1]
            op, kind = self.op.value, self.kind
            if op == "$exists":
                slot: tuple[str, ...] = ("exists",)
            elif op in ("$in", "$nin"):
                slot = ("tags", kind)
            elif kind == "date" and self._date_text:
                slot = ("date", "text")
            else:
                slot = (kind,)
            if slot != self._slot:
                self._slot = slot
                self.value = self._new_value(slot)
                self.value.observe(self._changed, "value")
            case = (self.case,) if op in REGEX_KEYS else ()
            self.children = (self.field, self.op, self.value, *case, self.remove)
        finally:
            self._hold -= 1

    @staticmethod
    def _new_value(slot: tuple[str, ...]) -> Any:
        if slot[0] == "exists":
            return w.Checkbox(value=True, description="exists", indent=False)
        if slot[0] == "tags":
            return w.TagsInput(value=[], allow_duplicates=False, placeholder="values")
        if slot[0] == "boolean":
            return w.Checkbox(value=True, description="true", indent=False)
        if slot[0] == "int":
            return w.IntText(value=0, layout=w.Layout(width="12em"))
        if slot[0] == "float":
            return w.FloatText(value=0.0, layout=w.Layout(width="12em"))
        if slot == ("date",):
            return w.DatePicker(value=None, layout=w.Layout(width="12em"))
        return w.Text(placeholder="YYYY-MM-DD" if slot[0] == "date" else "value")

    def condition(self) -> Condition:
        """Return the row's condition.

        Raises:
            InvalidQuery: The field is empty or the value does not fit it.
        """
        path, op, kind, value = self.field.value.strip(), self.op.value, self.kind, self.value.value
        if not path:
            raise InvalidQuery("a condition needs a field")
        where = f"{path}:"
        try:
            if op in ("$in", "$nin"):
                value = [self._scalar(kind, tag) for tag in value]
            elif op not in ("$exists", *REGEX_KEYS):
                value = self._scalar(kind, value)
        except ValueError as exc:
            raise InvalidQuery(f"{where} {exc}") from None
        flags = "i" if self.case.value else ""
        if op == "contains":
            return F(path).contains(value, case=not flags)
        if op == "startswith":
            return F(path).startswith(value, case=not flags)
        if op == "$regex":
            return F(path).regex(value, flags)
        return Condition(path, op, value)

    @staticmethod
    def _scalar(kind: str, value: Any) -> Any:
        if kind in ("int", "float"):
            if isinstance(value, str):
                return parse_number(value.strip(), kind == "int")
            return tidy_number(value) if isinstance(value, float) else value
        if kind == "date" and isinstance(value, date):
            return (value.date() if isinstance(value, datetime) else value).isoformat()
        if kind == "date" and value is None:
            raise ValueError("value must be a date: pick one")
        if kind == "date" and not valid_date(value):
            raise ValueError(f"value must be a date like 2024-01-31, not {value!r}")
        return value

    def show(self, cond: Condition) -> None:
        """Fill the row from ``cond``.

        Raises:
            InvalidQuery: The row cannot hold ``cond`` exactly.
        """
        where = f"query[{cond.path!r}]"
        if cond.negated:
            raise InvalidQuery(f"{where}: the builder cannot show $not on a field")
        op, value = cond.op, cond.value
        if op == "$regex":
            if cond.options not in ("", "i"):
                raise InvalidQuery(f"{where}: the builder cannot show $options {cond.options!r}")
            if value.startswith("^") and is_literal(value[1:]):
                op, value = "startswith", unescape(value[1:])
            elif is_literal(value):
                op, value = "contains", unescape(value)
        self._hold += 1
        try:
            self.field.value = cond.path
            if cond.path not in self._types:
                self._guess = guess_type(value)
            self._sync()
            if op not in dict(OPERATORS[self.kind]).values():
                raise InvalidQuery(
                    f"{where}: the builder cannot show {cond.op} on a {self.kind} field"
                )
            self.op.value = op
            day = iso_date(value) if isinstance(value, str) else None
            compares = op not in ("$in", "$nin", "$exists")
            self._date_text = self.kind == "date" and compares and day is None
            self._sync()
            self.case.value = cond.options == "i"
            try:
                if op in ("$in", "$nin"):
                    self.value.value = [str(v) for v in value]
                elif isinstance(self.value, w.DatePicker):
                    self.value.value = day
                else:
                    self.value.value = value
            except TraitError:
                raise InvalidQuery(
                    f"{where}: the builder cannot show the value {value!r}"
                ) from None
        finally:
            self._hold -= 1
        try:
            shown = self.condition()
        except InvalidQuery as exc:
            raise InvalidQuery(f"{where}: the builder cannot show this value ({exc})") from None
        if shown != cond and shown != _tidied(cond):
            raise InvalidQuery(f"{where}: the builder cannot show {cond!r} exactly")


def _tidied(cond: Condition) -> Condition:
    value = cond.value
    if isinstance(value, float):
        value = tidy_number(value)
    elif isinstance(value, tuple):
        value = [tidy_number(v) if isinstance(v, float) else v for v in value]
    return Condition(cond.path, cond.op, value, cond.options, cond.negated)
