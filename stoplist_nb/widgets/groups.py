"""The groups of :class:`stoplist_nb.widgets.QueryBuilder`: the :class:`GroupBox`.

A group combines :class:`~stoplist_nb.widgets.rows.ConditionRow` rows and
sub-groups with AND / OR and an optional NOT, and maps itself to an ``And``,
``Or`` or ``Nor`` and back. It is apart from :mod:`stoplist_nb.widgets.rows`
because it only nests and combines: what a single condition may hold is the
row's business.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as w

from stoplist_nb.errors import InvalidQuery
from stoplist_nb.query import And, Condition, Nor, Or, Query
from stoplist_nb.widgets.catalog import FieldCatalog
from stoplist_nb.widgets.kinds import OPERATORS
from stoplist_nb.widgets.rows import (
    FIELD_WIDTH,
    JOIN_WIDTH,
    OP_WIDTH,
    REMOVE_WIDTH,
    VALUE_WIDTH,
    ConditionRow,
    join_label,
)

#: A problem found in a group: the row (or group) it is on, its part and message.
Problem = tuple["ConditionRow | GroupBox", str, str]


def _heading(text: str, width: str) -> w.HTML:
    return w.HTML(
        f'<span style="font-size:11px;font-weight:600;color:#555">{text}</span>',
        layout=w.Layout(width=width),
    )


class GroupBox(w.VBox):  # type: ignore[misc]
    """Conditions and sub-groups joined by ``mode`` (AND / OR), negated by ``negate``.

    ``items`` holds the rows and sub-groups in order; ``rows`` and ``groups``
    are the two kinds separately. Before every item but the first, its
    ``join`` label repeats the group's AND / OR; ``headings`` name the row
    columns (Field / Operator / Value) while the group has a row.
    """

    def __init__(
        self,
        catalog: FieldCatalog,
        on_change: Callable[[], None],
        on_remove: Callable[[GroupBox], None] | None = None,
    ) -> None:
        self._catalog = catalog
        self._on_change = on_change
        self.join = w.HTML(layout=w.Layout(width=JOIN_WIDTH)).add_class("sn-join")
        self.mode = w.ToggleButtons(
            options=[("AND", "and"), ("OR", "or")],
            value="and",
            tooltips=["every row must match", "any row may match"],
        ).add_class("sn-join-mode")
        self.mode.style.button_width = "4.4em"
        self.negate = w.ToggleButton(
            value=False,
            description="NOT",
            icon="ban",
            tooltip="NOT: match the profiles this whole group does not match",
            layout=w.Layout(width="6em", margin="0 0 0 1.5em"),
        ).add_class("sn-not")
        self.add_button = w.Button(description="add condition", icon="plus").add_class("sn-add-row")
        self.add_group_button = w.Button(description="add group", icon="folder").add_class(
            "sn-add-group"
        )
        self.remove = w.Button(
            icon="times",
            tooltip="remove this group",
            layout=w.Layout(width=REMOVE_WIDTH, padding="0"),
        ).add_class("sn-group-remove")
        self.headings = w.HBox(
            (
                w.HTML(layout=w.Layout(width=JOIN_WIDTH)),
                _heading("Field", FIELD_WIDTH),
                _heading("Operator", OP_WIDTH),
                _heading("Value", VALUE_WIDTH),
            ),
            layout=w.Layout(display="none", margin="0 0 0 3px"),
        ).add_class("sn-headings")
        self.body = w.VBox()
        self.mode.observe(self._mode_changed, "value")
        self.negate.observe(self._negate_changed, "value")
        self.add_button.on_click(lambda _: self.add_row())
        self.add_group_button.on_click(lambda _: self.add_group())
        joined = w.HTML(
            '<span style="font-size:12px;color:#555">rows joined by</span>',
            layout=w.Layout(margin="0 4px 0 0"),
        )
        head = [joined, self.mode, self.negate, self.add_button, self.add_group_button]
        if on_remove is not None:
            self.remove.on_click(lambda _: on_remove(self))
            head = [self.join, *head, self.remove]
        box = (
            w.Layout(border="1px solid #ccc", padding="4px", margin="2px 0")
            if on_remove
            else w.Layout()
        )
        super().__init__(
            children=(w.HBox(head).add_class("sn-group-head"), self.headings, self.body),
            layout=box,
        )
        self.add_class("sn-group").add_class("sn-subgroup" if on_remove else "sn-root-group")

    @property
    def items(self) -> list[ConditionRow | GroupBox]:
        """Rows and sub-groups, in order."""
        return list(self.body.children)

    @property
    def rows(self) -> list[ConditionRow]:
        """The condition rows directly in this group."""
        return [i for i in self.body.children if isinstance(i, ConditionRow)]

    @property
    def groups(self) -> list[GroupBox]:
        """The sub-groups directly in this group."""
        return [i for i in self.body.children if isinstance(i, GroupBox)]

    def all_rows(self) -> list[ConditionRow]:
        """Every row of the group and its sub-groups, in the order shown."""
        out: list[ConditionRow] = []
        for item in self.items:
            out.extend([item] if isinstance(item, ConditionRow) else item.all_rows())
        return out

    def _mode_changed(self, _: object) -> None:
        self._relabel()
        self._on_change()

    def _negate_changed(self, change: dict[str, object]) -> None:
        self.negate.button_style = "danger" if change["new"] else ""
        self._on_change()

    def _relabel(self) -> None:
        """AND / OR before every item but the first; headings while there is a row."""
        label = join_label(self.mode.value)
        for i, item in enumerate(self.items):
            text = "" if i == 0 else label
            if item.join.value != text:
                item.join.value = text
        self.headings.layout.display = "" if self.rows else "none"

    def _set_items(self, items: tuple[ConditionRow | GroupBox, ...]) -> None:
        self.body.children = items
        self._relabel()

    def add_row(self) -> ConditionRow:
        """Append an empty condition and return it."""
        row = ConditionRow(self._catalog, self._on_change, self._drop)
        self._set_items((*self.body.children, row))
        self._on_change()
        return row

    def add_group(self) -> GroupBox:
        """Append an empty sub-group (it adds nothing until it has a condition)."""
        group = GroupBox(self._catalog, self._on_change, self._drop)
        self._set_items((*self.body.children, group))
        self._on_change()
        return group

    def _drop(self, item: ConditionRow | GroupBox) -> None:
        self._set_items(tuple(i for i in self.body.children if i is not item))
        self._on_change()

    def clear(self) -> None:
        """Remove every row and sub-group; AND, not negated."""
        self._set_items(())
        self.mode.value, self.negate.value = "and", False

    def problems(self) -> list[Problem]:
        """Every row that is not a condition yet, with its part and message, in order."""
        found: list[Problem] = []
        for item in self.items:
            if isinstance(item, ConditionRow):
                problem = item.problem()
                if problem is not None:
                    found.append((item, *problem))
            else:
                found.extend(item.problems())
        return found

    def model(self) -> Query | None:
        """The group's query, or ``None`` when it holds no condition.

        Raises:
            InvalidQuery: A row is incomplete or its value does not fit the field.
        """
        parts = [p for p in (self._model_of(i) for i in self.items) if p is not None]
        if not parts:
            return None
        query = (
            parts[0] if len(parts) == 1 else And(parts) if self.mode.value == "and" else Or(parts)
        )
        return Nor([query]) if self.negate.value else query

    @staticmethod
    def _model_of(item: ConditionRow | GroupBox) -> Query | None:
        return item.condition() if isinstance(item, ConditionRow) else item.model()

    def show(self, query: Query) -> None:
        """Fill the group from ``query``.

        Raises:
            InvalidQuery: A part cannot be shown, e.g. ``$elemMatch`` or ``$size``.
        """
        self.clear()
        items: tuple[Query, ...] = (query,)
        if isinstance(query, Nor):
            self.negate.value = True
            if len(query.items) > 1:
                self.mode.value, items = "or", query.items
            else:
                one = query.items[0]
                items = one.items if isinstance(one, And) else (one,)
        elif isinstance(query, And | Or):
            self.mode.value = "or" if isinstance(query, Or) else "and"
            items = query.items
        for item in items:
            if isinstance(item, Condition):
                if item.op not in dict(OPERATORS["string"] + OPERATORS["int"]).values():
                    where = f"query[{item.path!r}]"
                    raise InvalidQuery(f"{where}: the builder cannot show {item.op}")
                self.add_row().show(item)
            else:
                self.add_group().show(item)
