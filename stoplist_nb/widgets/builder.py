"""The :class:`QueryBuilder`: the outer group of rows, the fields to return, the JSON, Preview.

It puts together the parts of its sibling modules (rows and groups, the field
catalog, the tag boxes, the Preview's HTML), reads the field list and a sample
page of profiles for suggested values through :mod:`stoplist_nb.profiles`, and
sends every error of a callback to its output. Imported through
:mod:`stoplist_nb.widgets`, which checks that ipywidgets is installed.
"""

from __future__ import annotations

import html
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from typing import Any

import ipywidgets as w
import pandas as pd
from traitlets import TraitError

from stoplist_nb.client import Client
from stoplist_nb.errors import InvalidInput, InvalidQuery
from stoplist_nb.profiles import iter_profile_pages, read_profiles
from stoplist_nb.profiles.fields import database_fields
from stoplist_nb.query import And, Query, parse_query
from stoplist_nb.widgets.catalog import FieldCatalog, FieldInfo, field_infos, sample_values
from stoplist_nb.widgets.groups import GroupBox, Problem
from stoplist_nb.widgets.preview import preview_output
from stoplist_nb.widgets.tags import TagEntry

__all__ = ["QueryBuilder"]

#: What the Preview button passes to a runner and gets back.
Runner = Callable[[dict[str, Any]], pd.DataFrame]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_RED = "#b00020"


def _warn_at_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn at the first frame outside this package: the user's cell, not our source."""
    level, frame = 1, sys._getframe(0)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    warnings.warn(message, category, stacklevel=level)


def _sample_page(client: Client, db_id: Any, size: int) -> list[dict[str, Any]]:
    """The profiles of the first page of at most ``size``, as sent, to suggest values from.

    One request through the profiles reader, nothing sent ahead of it. Whatever
    goes wrong (``db_id`` refused by the reader's checks, the service, the
    reply) is raised, for the builder to show in its output.
    """
    pages = iter_profile_pages(client, db_id, limit=size, max_profiles=size, lookahead=0)
    with closing(pages):
        page = next(pages, None)
    return [] if page is None else page.records


class QueryBuilder(w.VBox):  # type: ignore[misc]
    """Build a ``profiles/list`` query with rows of field / operator / value.

    Rows sit in groups joined by AND or OR (a group can be negated with NOT).
    A row whose field or value is wrong gets a red left border and its error
    beside it; every error is also listed under the rows, and Preview is off
    (its tooltip and the note beside it say why) until they are fixed. A new
    row's error waits until the row is edited or Preview is pressed. While the
    rows are not a valid query, :attr:`query` keeps the last valid one and the
    JSON shows it greyed, titled "last valid query". After a change, an old
    Preview result is marked out of date and an old Preview error cleared.

    Fields are offered by title with the raw name and category, e.g.
    ``"City (_city) · system"``; text fields suggest values (the documented
    channels and subscription statuses, and the values of a sample page).
    Tags in the fields box and in ``isin`` values are added with Enter or the
    Add button; a refused one says why.

    Args:
        client: The API client, for the field list, the suggestions and the
            default Preview.
        db_id: The database id.
        fields: The fields offered, to skip ``database_fields``: its frame,
            a list of names or a dict of name -> type (``int``, ``float``,
            ``string``, ``boolean``, ``array``, ``object``).
        runner: Called with :attr:`params` by Preview and returns a frame;
            by default the first page of :func:`~stoplist_nb.read_profiles`.
        suggestions: Values to suggest per field name, instead of reading a
            sample page.
        sample: How many profiles the sample page for suggestions holds (0: none).

    Attributes:
        root_group: The outer group; its ``rows``, ``groups`` and buttons.
        add_button: Adds a condition to the outer group.
        add_group_button: Adds a sub-group to the outer group.
        fields_box: The fields to return: a
            :class:`~stoplist_nb.widgets.tags.TagEntry` (type or pick a field,
            then Enter or Add).
        fields_input: Its tags (``TagsInput``).
        limit_input: Profiles per request (``BoundedIntText``, at least 1).
        message: Every error of the rows, listed; empty while there is none.
        json_view: The query as one line of JSON (or indented with
            ``json_pretty``); greyed and titled "last valid query" while the rows
            are not a valid query.
        json_toggle: Shows or hides the JSON.
        json_pretty: Indents the JSON.
        clear_button: Back to one empty condition (nothing asked).
        preview_button: Runs the query; disabled while there are errors.
        preview_note: Why Preview is disabled.
        output: Where Preview's table (with its row count) and every error go.
        result: The frame of the last successful Preview, or ``None``.

    >>> qb = QueryBuilder(fields={"_city": "string", "vip": "boolean"})
    >>> row = qb.root_group.add_row()
    >>> row.field.value, row.op.value = "_city", "$in"
    >>> row.value.value = ["Kazan", "Moscow"]
    >>> qb.query
    {'_city': {'$in': ['Kazan', 'Moscow']}}
    >>> QueryBuilder(client, db_id=1)  # doctest: +SKIP
    """

    def __init__(
        self,
        client: Client | None = None,
        db_id: int | None = None,
        *,
        fields: Any = None,
        runner: Runner | None = None,
        suggestions: Mapping[str, Sequence[str]] | None = None,
        sample: int = 100,
    ) -> None:
        self._client, self._db_id, self._runner = client, db_id, runner
        self._model: Query = And()
        self._problems: list[Problem] = []
        self._error: str | None = None
        self._reveal = False  # Preview was pressed: show the errors of untouched parts too
        self._hold = 0
        self._running = False
        self._last: tuple[str, dict[str, Any], pd.DataFrame | None] | None = None
        self._stale = False
        self._shown = 0  # errors on display
        self.result: pd.DataFrame | None = None
        self.output = w.Output(layout=w.Layout(max_width="100%")).add_class("sn-output")
        catalog = self._catalog(fields, suggestions, sample)
        self.root_group = GroupBox(catalog, self._refresh)
        self.add_button = self.root_group.add_button
        self.add_group_button = self.root_group.add_group_button
        self.fields_box = TagEntry(
            check=lambda name: (
                None
                if name in catalog.returnable
                else (f"unknown field {name!r}: pick one from the list")
            ),
            resolve=catalog.resolve,
            options=catalog.return_options,
            allowed=catalog.returnable,
            placeholder="a field to return, Enter",
            empty="all fields",
        ).add_class("sn-fields")
        self.fields_box.layout.width = "28em"
        self.fields_input = self.fields_box.tags
        self.limit_input = w.BoundedIntText(
            value=1000, min=1, max=2**31 - 1, description="limit", layout=w.Layout(width="12em")
        ).add_class("sn-limit")
        self.message = w.HTML().add_class("sn-errors")
        self.json_toggle = w.ToggleButton(
            value=True,
            description="JSON",
            icon="code",
            tooltip="show or hide the query as JSON",
            layout=w.Layout(width="6em"),
        ).add_class("sn-json-toggle")
        self.json_pretty = w.Checkbox(value=False, description="pretty", indent=False)
        self.json_pretty.add_class("sn-json-pretty")
        self.json_view = w.HTML(layout=w.Layout(max_width="100%")).add_class("sn-json")
        self.preview_button = w.Button(
            description="Preview", icon="play", button_style="primary"
        ).add_class("sn-preview")
        self.clear_button = w.Button(
            description="Clear", icon="eraser", tooltip="start again from one empty condition"
        ).add_class("sn-clear")
        self.preview_note = w.HTML().add_class("sn-preview-note")
        self.preview_button.on_click(self._preview)
        self.clear_button.on_click(lambda _: self.clear())
        self.fields_input.observe(self._refresh, "value")
        self.limit_input.observe(self._refresh, "value")
        self.json_toggle.observe(self._show_json, "value")
        self.json_pretty.observe(self._show_json, "value")
        fields_label = w.HTML(
            '<span style="font-size:12px;font-weight:600;color:#555">Return fields</span>',
            layout=w.Layout(width="8em"),
        ).add_class("sn-fields-label")
        super().__init__(
            children=(
                self.root_group,
                w.HBox((fields_label, self.fields_box, self.limit_input)),
                self.message,
                w.HBox((self.json_toggle, self.json_pretty)),
                self.json_view,
                w.HBox((self.preview_button, self.clear_button, self.preview_note)),
                self.output,
            )
        )
        self.add_class("sn-query-builder")
        self._refresh()

    def _catalog(
        self, fields: Any, suggestions: Mapping[str, Sequence[str]] | None, sample: int
    ) -> FieldCatalog:
        """The fields offered and their suggestions; problems go to the output."""
        infos: list[FieldInfo] = []
        readable = True
        if fields is not None:
            infos = field_infos(fields)
        elif self._client is not None and self._db_id is not None:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    infos = field_infos(database_fields(self._client, self._db_id))
            except Exception as exc:  # the builder still works with typed-in names
                readable = False
                self._show_error("could not read the field list", exc)
            else:
                for warning in caught:  # e.g. "inferred from a sample": said at the user's cell
                    _warn_at_caller(str(warning.message), warning.category)
        if suggestions is None and readable and sample > 0 and self._client is not None:
            catalog = FieldCatalog(infos)
            try:
                profiles = _sample_page(self._client, self._db_id, sample)
                suggestions = sample_values(profiles, catalog.string_fields())
            except Exception as exc:  # suggestions are a help, not a condition to work
                self._show_error("could not read a sample page for value suggestions", exc)
        return FieldCatalog(infos, suggestions)

    @property
    def query(self) -> dict[str, Any]:
        """The MongoDB filter, ``{}`` when there is no condition (the last valid one)."""
        return self._model.to_mongo()

    @property
    def model(self) -> Query:
        """:attr:`query` as :class:`~stoplist_nb.query.Query` objects (``And()`` when empty)."""
        return self._model

    @property
    def error(self) -> str | None:
        """Every error of the rows joined by ``"; "``, ``None`` while they make a valid query.

        It includes the errors not shown yet (of a new row nobody edited).
        """
        return self._error

    @property
    def errors(self) -> list[str]:
        """Every error of the rows, one per row, shown or not yet."""
        return [message for _, _, message in self._problems]

    @property
    def fields(self) -> list[str]:
        """The fields to return; empty means all."""
        return list(self.fields_input.value)

    @property
    def limit(self) -> int:
        """Profiles per request."""
        return int(self.limit_input.value)

    @property
    def params(self) -> dict[str, Any]:
        """``query``, ``fields`` (when any) and ``limit``, to pass to ``read_profiles``.

        >>> qb = QueryBuilder(fields=["_city"])
        >>> qb.params
        {'query': {}, 'limit': 1000}
        """
        params: dict[str, Any] = {"query": self.query}
        if self.fields:
            params["fields"] = self.fields
        params["limit"] = self.limit
        return params

    def clear(self) -> None:
        """Start again from one empty condition: no groups, AND, no NOT.

        The fields to return and the limit stay. Nothing is asked: the query
        is one call to :meth:`load` away.
        """
        with self._holding():
            self.root_group.clear()
            self.root_group.add_row()
        self._model, self._reveal = And(), False
        self._refresh()

    def load(self, query: Mapping[str, Any], fields: Sequence[str] | None = None) -> None:
        """Show an existing query (and fields) in the builder.

        Conditions and nested ``$and`` / ``$or`` / ``$nor`` groups can be shown.
        A query the builder made itself comes back unchanged; for others
        :attr:`query` is an equivalent one (``{"a": {"$gte": 1, "$lt": 5}}``
        comes back as an ``$and`` of two conditions).

        Args:
            query: A MongoDB filter that :func:`~stoplist_nb.parse_query` accepts.
            fields: The fields to return; left as they are when ``None``.

        Raises:
            InvalidQuery: The query is not valid, or has a part the builder
                cannot show (``$elemMatch``, ``$size``, ``$not`` on a field, a
                value that does not fit the field's widget); the builder is
                left as it was.
            InvalidInput: ``fields`` names a field the builder does not know.
        """
        model = parse_query(query)
        before = self._model.to_mongo()
        with self._holding():
            try:
                if model != And():
                    self.root_group.show(model)
                else:
                    self.root_group.clear()
            except InvalidQuery:
                self.root_group.clear()
                if before:
                    self.root_group.show(parse_query(before))
                raise
            if fields is not None:
                try:
                    self.fields_input.value = list(fields)
                except TraitError:
                    unknown = sorted(set(fields) - set(self.fields_input.allowed_tags))
                    raise InvalidInput(f"unknown fields {unknown}") from None
        self._reveal = False
        self._refresh()

    @contextmanager
    def _holding(self) -> Iterator[None]:
        self._hold += 1
        try:
            yield
        finally:
            self._hold -= 1

    def _refresh(self, _: Any = None) -> None:
        """Rebuild the query after any change; an observer, so it never raises."""
        if self._hold:
            return
        try:
            problems = self.root_group.problems()
            if not problems:
                model = self.root_group.model()
                self._model = And() if model is None else model
        except Exception as exc:  # e.g. groups nested deeper than MongoDB takes
            problems = [(self.root_group, "group", f"{type(exc).__name__}: {exc}")]
        self._problems = problems
        self._error = "; ".join(message for _, _, message in problems) or None
        if not problems:
            self._reveal = False
        rows = self.root_group.all_rows()
        shown: dict[int, str] = {}
        listed = []
        for item, part, message in problems:
            if not (self._reveal or part == "group" or part in getattr(item, "touched", ())):
                continue
            shown[id(item)] = message
            where = f"Row {rows.index(item) + 1}" if item in rows else "Query"
            listed.append(f"<li>{html.escape(where)}: {html.escape(message)}</li>")
        for row in rows:
            row.show_problem(shown.get(id(row)))
        self.message.value = (
            f'<div style="color:{_RED};font-size:13px"><b>{len(listed)} '
            f"{'error' if len(listed) == 1 else 'errors'} to fix:</b>"
            f'<ul style="margin:2px 0 4px 0">{"".join(listed)}</ul></div>'
            if listed
            else ""
        )
        self._update_preview_button(len(listed))
        self._show_json()
        self._mark_preview()

    def _update_preview_button(self, shown: int | None = None) -> None:
        if shown is None:
            shown = self._shown
        self._shown = shown
        if self._running:
            self.preview_button.disabled = True
            self.preview_button.tooltip = "running"
            return
        self.preview_button.disabled = bool(shown)
        if shown:
            what = "the error" if shown == 1 else f"the {shown} errors"
            reason = f"Preview is off: fix {what} listed above first"
            self.preview_button.tooltip = reason
            self.preview_note.value = f'<span style="color:{_RED}">{html.escape(reason)}</span>'
        else:
            self.preview_button.tooltip = "run the query and show the first rows"
            self.preview_note.value = ""

    def _show_json(self, _: Any = None) -> None:
        self.json_view.layout.display = "" if self.json_toggle.value else "none"
        indent = 2 if self.json_pretty.value else None
        separators = None if indent else (",", ":")
        text = html.escape(
            json.dumps(
                self.query, indent=indent, separators=separators, ensure_ascii=False, default=str
            ),
            quote=False,
        )
        style = "margin:0;white-space:pre-wrap;word-break:break-all;font-size:12px"
        if self._problems:
            why = (
                "not sendable: the rows above have errors"
                if self._shown
                else "a row above is not complete yet"
            )
            self.json_view.add_class("sn-json-stale")
            self.json_view.value = (
                f'<div style="font-size:11px;color:#777">last valid query, {why}</div>'
                f'<pre title="last valid query" style="{style};color:#999">{text}</pre>'
            )
        else:
            self.json_view.remove_class("sn-json-stale")
            self.json_view.value = (
                f'<pre title="the query as it will be sent" style="{style}">{text}</pre>'
            )

    def _mark_preview(self) -> None:
        """An old Preview error goes; an old result is marked out of date."""
        if self._last is None:
            return
        outcome, params, frame = self._last
        current = not self._problems and self.params == params
        if outcome == "failed":
            if not current:
                self._last = None
                self.output.outputs = ()
        elif frame is not None and self._stale == current:
            self._stale = not current
            self._show_result(frame, params, stale=self._stale)

    def _run(self, params: dict[str, Any]) -> pd.DataFrame:
        if self._runner is not None:
            return self._runner(params)
        if self._client is None or self._db_id is None:
            raise InvalidInput("Preview needs a client and db_id, or a runner")
        return read_profiles(
            self._client, self._db_id, **params, max_profiles=params["limit"], progress=False
        )

    def _preview(self, _: Any = None) -> None:
        if self._running:
            return
        if self._problems:
            self._reveal = True
            self._refresh()
            self._last, self.output.outputs = None, ()
            self._show_error("fix the query first", InvalidQuery(self._error or ""), plain=True)
            return
        self._running = True
        self._update_preview_button()
        self.output.outputs = ()
        params = self.params
        try:
            frame = self._run(params)
            self.result = frame
            self._last, self._stale = ("ok", params, frame), False
            self._show_result(frame, params, stale=False)
        except Exception as exc:  # shown to the user rather than lost in a callback
            self._last = ("failed", params, None)
            self._show_error("Preview failed", exc)
        finally:
            self._running = False
            self._update_preview_button()

    def _show_result(self, frame: pd.DataFrame, params: dict[str, Any], *, stale: bool) -> None:
        self.output.outputs = (preview_output(frame, params, stale=stale),)

    def _show_error(self, what: str, exc: BaseException, *, plain: bool = False) -> None:
        text = f"{what}: {exc}\n" if plain else f"{what}: {type(exc).__name__}: {exc}\n"
        self.output.outputs = (
            *self.output.outputs,
            {"output_type": "stream", "name": "stderr", "text": text},
        )
