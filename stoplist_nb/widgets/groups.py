"""The groups of :class:`stoplist_nb.widgets.QueryBuilder`: the :class:`GroupBox`.

A group combines :class:`~stoplist_nb.widgets.rows.ConditionRow` rows and
sub-groups with AND / OR and an optional NOT, and maps itself to an ``And``,
``Or`` or ``Nor`` and back. It is apart from :mod:`stoplist_nb.widgets.rows`
because it only nests and combines: what a single condition may hold is the
row's business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import ipywidgets as w

from stoplist_nb.errors import InvalidQuery
from stoplist_nb.query import And, Condition, Nor, Or, Query
from stoplist_nb.widgets.kinds import OPERATORS
from stoplist_nb.widgets.rows import ConditionRow


class GroupBox(w.VBox):  # type: ignore[misc]
    """Conditions and sub-groups joined by ``mode`` (AND / OR), negated by ``negate``.

    ``items`` holds the rows and sub-groups in order; ``rows`` and ``groups``
    are the two kinds separately.
    """

    def __init__(
        self,
        types: Mapping[str, str],
        on_change: Callable[[], None],
        on_remove: Callable[[GroupBox], None] | None = None,
    ) -> None:
        self._types = types
        self._on_change = on_change
        self.mode = w.ToggleButtons(options=[("AND", "and"), ("OR", "or")], value="and")
        self.mode.style.button_width = "4em"
        self.negate = w.ToggleButton(value=False, description="NOT", layout=w.Layout(width="5em"))
        self.add_button = w.Button(description="add condition", icon="plus")
        self.add_group_button = w.Button(description="add group", icon="folder")
        self.remove = w.Button(icon="trash", tooltip="remove this group")
        self.body = w.VBox(layout=w.Layout(margin="0 0 0 2em"))
        self.mode.observe(lambda _: on_change(), "value")
        self.negate.observe(lambda _: on_change(), "value")
        self.add_button.on_click(lambda _: self.add_row())
        self.add_group_button.on_click(lambda _: self.add_group())
        head = [self.negate, self.mode, self.add_button, self.add_group_button]
        if on_remove is not None:
            self.remove.on_click(lambda _: on_remove(self))
            head.append(self.remove)
        box = w.Layout(border="1px solid #ccc", padding="4px") if on_remove else w.Layout()
        super().__init__(children=(w.HBox(head), self.body), layout=box)

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

    def add_row(self) -> ConditionRow:
        """Append an empty condition and return it."""
        row = ConditionRow(self._types, self._on_change, self._drop)
        self.body.children = (*self.body.children, row)
        self._on_change()
        return row

    def add_group(self) -> GroupBox:
        """Append an empty sub-group (it adds nothing until it has a condition)."""
        group = GroupBox(self._types, self._on_change, self._drop)
        self.body.children = (*self.body.children, group)
        self._on_change()
        return group

    def _drop(self, item: ConditionRow | GroupBox) -> None:
        self.body.children = tuple(i for i in self.body.children if i is not item)
        self._on_change()

    def clear(self) -> None:
        """Remove every row and sub-group; AND, not negated."""
        self.body.children = ()
        self.mode.value, self.negate.value = "and", False

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
