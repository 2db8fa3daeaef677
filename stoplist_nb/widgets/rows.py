"""One row of :class:`stoplist_nb.widgets.QueryBuilder`: the :class:`ConditionRow`.

A row turns field / operator / value widgets into one
:class:`~stoplist_nb.query.Condition` and back, choosing the operators and the
value widget from the field's kind. It is apart from
:mod:`stoplist_nb.widgets.groups`, which nests rows in AND / OR groups, because
all the per-field typing (numbers, dates, regexes, what a row can show exactly)
is here and none of it is in the groups.

The condition itself is checked by the query model
(:class:`~stoplist_nb.query.Condition`, with the rules of
:mod:`stoplist_nb.query.values`); the row only reads its widgets, and says
which part (``"field"`` or ``"value"``) a refusal is about, so that the
builder can hold back the errors of parts the user has not touched yet.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as w
from traitlets import TraitError

from stoplist_nb.errors import InvalidQuery
from stoplist_nb.query import Condition, F
from stoplist_nb.widgets.catalog import FieldCatalog
from stoplist_nb.widgets.kinds import (
    OPERATORS,
    REGEX_KEYS,
    guess_type,
    is_literal,
    iso_date,
    kind_of,
    number_text,
    parse_scalar,
    tidy_number,
    unescape,
)
from stoplist_nb.widgets.tags import TagEntry

__all__ = ["OPERATORS", "ConditionRow", "kind_of"]

# Column widths, shared with the groups' headings so that the columns line up.
JOIN_WIDTH, FIELD_WIDTH, OP_WIDTH, VALUE_WIDTH = "2.6em", "22em", "9em", "21em"
REMOVE_WIDTH = "2.4em"
ERROR_BORDER, NO_BORDER = "3px solid #d32f2f", "3px solid transparent"
# The columns keep their widths when a row's error text needs room: it wraps instead.
FIXED = "0 0 auto"


def join_label(mode: str) -> str:
    """The small AND / OR shown before every item of a group but the first."""
    return f'<span style="font-size:11px;font-weight:600;color:#555">{mode.upper()}</span>'


class ConditionRow(w.HBox):  # type: ignore[misc]
    """One condition: ``field`` (Combobox), ``op`` (Dropdown), ``value``, ``case``, ``remove``.

    ``field`` offers the fields by label (``"City (_city) · system"``) and
    takes a label or any raw name; :attr:`path` is the raw name. ``value`` is
    replaced when the operator or the field's kind needs another widget, so
    read it after setting ``field`` and ``op``: a ``Combobox`` of suggestions
    for text, a ``Text`` for numbers (so that a refused entry is named, never
    silently dropped or rounded), a ``Checkbox``, a ``DatePicker``, or a
    :class:`~stoplist_nb.widgets.tags.TagEntry` for ``isin`` / ``notin``.

    A date field compares with a DatePicker, whose ``datetime.date`` becomes the
    string ``YYYY-MM-DD`` (the service stores dates as RFC 3339 strings, so the
    query stays a string comparison). The picker edits dates only: a loaded value
    with a time, e.g. ``2023-07-14T09:26:53.512Z``, stays exact in a Text until
    the field changes.

    ``join`` shows AND / OR before the row (set by its group), ``message``
    the row's error, and ``touched`` the parts the user changed.
    """

    def __init__(
        self,
        catalog: FieldCatalog,
        on_change: Callable[[], None],
        on_remove: Callable[[ConditionRow], None],
    ) -> None:
        self._catalog = catalog
        self._on_change = on_change
        self._guess = ""  # the type a loaded value suggested for an unknown field
        self._date_text = False  # a loaded date-time: a Text instead of the DatePicker
        self._hold = 0
        self._slot: tuple[str, ...] = ()
        # Each keystroke in the field box reaches the kernel, so retyping a field
        # passes through other names and kinds ("s" ... "scor" on the way to
        # "score"): the operator last chosen and a value box per slot are kept,
        # for the field's final kind to take back.
        self._chosen_op: str | None = None
        self._boxes: dict[tuple[str, ...], Any] = {}
        self._typed: set[tuple[str, ...]] = set()  # slots whose box the user changed
        #: The parts the user changed: "field", "op", "value".
        self.touched: set[str] = set()
        self.join = w.HTML(layout=w.Layout(width=JOIN_WIDTH, flex=FIXED)).add_class("sn-join")
        self.field = w.Combobox(
            options=catalog.options,
            placeholder="field: type to search",
            ensure_option=False,
            layout=w.Layout(width=FIELD_WIDTH, flex=FIXED),
        ).add_class("sn-field")
        self.op = w.Dropdown(
            options=OPERATORS["string"], layout=w.Layout(width=OP_WIDTH, flex=FIXED)
        ).add_class("sn-operator")
        self.case = w.Checkbox(
            value=False, description="ignore case", indent=False, layout=w.Layout(width="7.5em")
        ).add_class("sn-case")
        self.remove = w.Button(
            icon="times",
            tooltip="remove this condition",
            layout=w.Layout(width=REMOVE_WIDTH, padding="0", flex=FIXED),
        ).add_class("sn-remove")
        self.slot = w.HBox(layout=w.Layout(width=VALUE_WIDTH, flex=FIXED)).add_class(
            "sn-value-slot"
        )
        self.message = w.HTML(layout=w.Layout(margin="0 0 0 6px")).add_class("sn-row-message")
        self.value: Any = None
        super().__init__(layout=w.Layout(border_left=NO_BORDER, align_items="flex-start"))
        self.add_class("sn-row")
        self.field.observe(self._field_changed, "value")
        self.op.observe(self._op_changed, "value")
        self.case.observe(self._changed, "value")
        self.remove.on_click(lambda _: on_remove(self))
        self._sync()

    @property
    def path(self) -> str:
        """The raw name of the chosen field (``field`` may show its label)."""
        return self._catalog.resolve(self.field.value)

    @property
    def kind(self) -> str:
        """The key of :data:`OPERATORS` for the chosen field."""
        name = self.path
        return kind_of(name, self._catalog.types.get(name) or self._guess)

    def _changed(self, _: Any = None) -> None:
        if not self._hold:
            self.touched.add("value")
            self._typed.add(self._slot)
            self._on_change()

    def _field_changed(self, _: Any) -> None:
        if self._hold:
            return
        self.touched.add("field")
        self._guess, self._date_text = "", False
        self._sync()
        self._on_change()

    def _op_changed(self, _: Any) -> None:
        if not self._hold:
            self.touched.add("op")
            self._chosen_op = self.op.value
            self._sync()
            self._on_change()

    def _sync(self) -> None:
        """Offer the operators of the field's kind and the value widget of the operator.

        The operator chosen last comes back whenever the kind offers it, and a
        slot's value box (with what was typed in it) whenever the slot does:
        only what the new kind cannot hold is reset.
        """
        self._hold += 1
        try:
            ops = OPERATORS[self.kind]
            if tuple(self.op.options) != ops:
                keep, offered = self.op.value, dict(ops).values()
                self.op.options = ops
                self.op.value = next(
                    (op for op in (self._chosen_op, keep) if op in offered), ops[0][1]
                )
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
                if slot not in self._boxes:
                    made = self._new_value(slot)
                    watched = made.tags if isinstance(made, TagEntry) else made
                    watched.observe(self._changed, "value")
                    self._boxes[slot] = made
                self.value = self._boxes[slot]
                if slot in self._typed:
                    self.touched.add("value")
                else:
                    self.touched.discard("value")  # a fresh box: nothing typed in it yet
            suggestions = self._catalog.suggestions(self.path) if kind == "string" else ()
            box = self.value.entry if isinstance(self.value, TagEntry) else self.value
            if isinstance(box, w.Combobox) and tuple(box.options) != suggestions:
                box.options = suggestions
            case = (self.case,) if op in REGEX_KEYS else ()
            self.slot.children = (self.value, *case)
            self.children = (self.join, self.field, self.op, self.slot, self.remove, self.message)
        finally:
            self._hold -= 1

    def _new_value(self, slot: tuple[str, ...]) -> Any:
        fill = w.Layout(width="auto", flex="1 1 auto")
        if slot[0] == "exists":
            made = w.Checkbox(value=True, description="exists", indent=False)
            return made.add_class("sn-value").add_class("sn-value-bool")
        if slot[0] == "tags":
            kind = slot[1]
            made = TagEntry(
                check=lambda tag: self._tag_problem(kind, tag), placeholder="a value, Enter"
            )
            return made.add_class("sn-value").add_class("sn-value-tags")
        if slot[0] == "boolean":
            made = w.Checkbox(value=True, description="true", indent=False)
            return made.add_class("sn-value").add_class("sn-value-bool")
        if slot[0] in ("int", "float"):
            hint = "a whole number" if slot[0] == "int" else "a number"
            made = w.Text(placeholder=hint, layout=fill)
            return made.add_class("sn-value").add_class("sn-value-number")
        if slot == ("date",):
            made = w.DatePicker(value=None, layout=fill)
            return made.add_class("sn-value").add_class("sn-value-date")
        if slot[0] == "date":
            made = w.Text(placeholder="YYYY-MM-DD or YYYY-MM-DDTHH:MM", layout=fill)
            return made.add_class("sn-value").add_class("sn-value-date")
        made = w.Combobox(options=(), ensure_option=False, placeholder="value", layout=fill)
        return made.add_class("sn-value").add_class("sn-value-text")

    @staticmethod
    def _tag_problem(kind: str, tag: str) -> str | None:
        try:
            parse_scalar(kind, tag)
        except ValueError as exc:
            return str(exc)
        return None

    def problem(self) -> tuple[str, str] | None:
        """What keeps the row from being a condition: ``(part, message)``, or ``None``.

        ``part`` is ``"field"`` or ``"value"``; the message is the query
        model's own when it refuses the condition.
        """
        try:
            self.condition()
        except _RowError as exc:
            return exc.part, str(exc)
        return None

    def condition(self) -> Condition:
        """Return the row's condition.

        Raises:
            InvalidQuery: The field is empty or the value does not fit it.
        """
        path, op, kind, value = self.path, self.op.value, self.kind, self.value.value
        if not path:
            raise _RowError("field", "a condition needs a field")
        try:
            field = F(path)
        except InvalidQuery as exc:
            raise _RowError("field", str(exc)) from None
        try:
            if op in ("$in", "$nin"):
                if not value:
                    raise ValueError("no values yet: type one and press Enter")
                value = [parse_scalar(kind, tag) for tag in value]
            elif op not in ("$exists", *REGEX_KEYS):
                value = parse_scalar(kind, value)
            elif op != "$exists":
                value = parse_scalar("string", value)
        except ValueError as exc:
            raise _RowError("value", f"{path}: {exc}") from None
        flags = "i" if self.case.value else ""
        try:
            if op == "contains":
                return field.contains(value, case=not flags)
            if op == "startswith":
                return field.startswith(value, case=not flags)
            if op == "$regex":
                return field.regex(value, flags)
            return Condition(path, op, value)
        except InvalidQuery as exc:  # the query model's checks, e.g. an int beyond 64 bits
            raise _RowError("value", str(exc)) from None

    def show_problem(self, message: str | None) -> None:
        """Mark the row as wrong, with ``message`` beside it, or as fine (``None``)."""
        if message is None:
            self.remove_class("sn-row-error")
            self.layout.border_left = NO_BORDER
            self.message.value = ""
            return
        self.add_class("sn-row-error")
        self.layout.border_left = ERROR_BORDER
        text = html.escape(message)
        self.message.value = (
            f'<span style="color:#b00020;font-size:12px" title="{text}">&#9888; {text}</span>'
        )

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
            self.field.value = self._catalog.label(cond.path)
            if cond.path not in self._catalog.types:
                self._guess = guess_type(value)
            self._sync()
            if op not in dict(OPERATORS[self.kind]).values():
                raise InvalidQuery(
                    f"{where}: the builder cannot show {cond.op} on a {self.kind} field"
                )
            self.op.value = self._chosen_op = op
            day = iso_date(value) if isinstance(value, str) else None
            compares = op not in ("$in", "$nin", "$exists")
            self._date_text = self.kind == "date" and compares and day is None
            self._sync()
            self.case.value = cond.options == "i"
            number = self.kind in ("int", "float")
            try:
                if op in ("$in", "$nin"):
                    self.value.value = [number_text(v) if number else str(v) for v in value]
                elif isinstance(self.value, w.DatePicker):
                    self.value.value = day
                elif number and op != "$exists":
                    self.value.value = number_text(value)
                else:
                    self.value.value = value
            except (TraitError, ValueError):
                raise InvalidQuery(
                    f"{where}: the builder cannot show the value {value!r}"
                ) from None
        finally:
            self._hold -= 1
        self.touched.update(("field", "op", "value"))
        self._typed.add(self._slot)
        try:
            shown = self.condition()
        except InvalidQuery as exc:
            raise InvalidQuery(f"{where}: the builder cannot show this value ({exc})") from None
        if shown != cond and shown != _tidied(cond):
            raise InvalidQuery(f"{where}: the builder cannot show {cond!r} exactly")


class _RowError(InvalidQuery):
    """A row's refusal, with the part it is about."""

    def __init__(self, part: str, message: str) -> None:
        super().__init__(message)
        self.part = part


def _tidied(cond: Condition) -> Condition:
    value = cond.value
    if isinstance(value, float):
        value = tidy_number(value)
    elif isinstance(value, tuple):
        value = [tidy_number(v) if isinstance(v, float) else v for v in value]
    return Condition(cond.path, cond.op, value, cond.options, cond.negated)
