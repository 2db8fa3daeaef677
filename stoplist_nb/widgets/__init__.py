"""A query builder widget for ``profiles/list``, for Jupyter.

Needs ipywidgets (``pip install 'stoplist_nb[widgets]'``); ``import stoplist_nb``
does not import this package. A condition is a row
(:mod:`~stoplist_nb.widgets.rows`), rows nest in groups
(:mod:`~stoplist_nb.widgets.groups`), and what a field's kind allows is in
:mod:`~stoplist_nb.widgets.kinds`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

try:
    import ipywidgets as w
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "stoplist_nb.widgets needs ipywidgets: pip install 'stoplist_nb[widgets]'"
    ) from exc
import pandas as pd
from traitlets import TraitError

from stoplist_nb.client import Client
from stoplist_nb.errors import InvalidInput, InvalidQuery
from stoplist_nb.profiles import read_profiles
from stoplist_nb.profiles.fields import database_fields
from stoplist_nb.query import And, Query, parse_query
from stoplist_nb.widgets.groups import GroupBox
from stoplist_nb.widgets.kinds import OPERATORS

__all__ = ["OPERATORS", "QueryBuilder"]

#: What the Preview button passes to a runner and gets back.
Runner = Callable[[dict[str, Any]], pd.DataFrame]

_PREVIEW_ROWS = 20


def _field_types(fields: Any) -> dict[str, str]:
    """Name -> type from a ``database_fields`` frame, a list of names or a dict."""
    if isinstance(fields, pd.DataFrame):
        types = fields["type"] if "type" in fields else [""] * len(fields)
        pairs = zip(fields["name"], types, strict=True)
        return {str(n): t if isinstance(t, str) else "" for n, t in pairs}
    if isinstance(fields, Mapping):
        return {str(n): str(t or "") for n, t in fields.items()}
    if isinstance(fields, Sequence) and not isinstance(fields, str):
        return {str(n): "" for n in fields}
    raise InvalidInput(
        f"fields must be a DataFrame like database_fields returns, a list of names or a "
        f"dict of name -> type, not {type(fields).__name__}"
    )


class QueryBuilder(w.VBox):  # type: ignore[misc]
    """Build a ``profiles/list`` query with rows of field / operator / value.

    Rows sit in groups joined by AND or OR (a group can be negated with NOT);
    a JSON preview and a validation line follow every change. While a row is
    incomplete or a value does not fit its field, the validation line says so
    and :attr:`query` keeps the last valid query. Preview runs the query and
    shows the first rows.

    Args:
        client: The API client, for the field list and the default Preview.
        db_id: The database id.
        fields: The fields offered, to skip ``database_fields``: its frame,
            a list of names or a dict of name -> type (``int``, ``float``,
            ``string``, ``boolean``, ``array``, ``object``).
        runner: Called with :attr:`params` by Preview and returns a frame;
            by default the first page of :func:`~stoplist_nb.read_profiles`.

    Attributes:
        root_group: The outer group; its ``rows``, ``groups`` and buttons.
        add_button: Adds a condition to the outer group.
        add_group_button: Adds a sub-group to the outer group.
        fields_input: The fields to return (``TagsInput``).
        limit_input: Profiles per request (``BoundedIntText``, at least 1).
        json_view: The read-only JSON of :attr:`query`.
        message: The validation line, empty while the query is valid.
        preview_button: Runs the query.
        output: Where Preview's frame and every error go.
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
    ) -> None:
        self._client, self._db_id, self._runner = client, db_id, runner
        self._model: Query = And()
        self._error: str | None = None
        self._hold = 0
        self.result: pd.DataFrame | None = None
        self.output = w.Output()
        self._types: dict[str, str] = {}
        if fields is not None:
            self._types.update(_field_types(fields))
        elif client is not None and db_id is not None:
            try:
                self._types.update(_field_types(database_fields(client, db_id)))
            except Exception as exc:  # the builder still works with typed-in names
                self._show_error("could not read the field list", exc)
        self.root_group = GroupBox(self._types, self._refresh)
        self.add_button = self.root_group.add_button
        self.add_group_button = self.root_group.add_group_button
        self.fields_input = w.TagsInput(
            value=[], allowed_tags=sorted(self._types), allow_duplicates=False,
            placeholder="fields to return (all when empty)",
        )  # fmt: skip
        self.limit_input = w.BoundedIntText(
            value=1000, min=1, max=2**31 - 1, description="limit", layout=w.Layout(width="14em")
        )
        self.json_view = w.HTML()
        self.message = w.HTML()
        self.preview_button = w.Button(description="Preview", icon="play", button_style="primary")
        self.preview_button.on_click(self._preview)
        self.fields_input.observe(self._refresh, "value")
        self.limit_input.observe(self._refresh, "value")
        super().__init__(
            children=(
                self.root_group,
                w.HBox((self.fields_input, self.limit_input)),
                self.message,
                self.json_view,
                self.preview_button,
                self.output,
            )
        )
        self._refresh()

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
        """The validation message, ``None`` while the rows make a valid query."""
        return self._error

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
                    unknown = sorted(set(fields) - set(self._types))
                    raise InvalidInput(f"unknown fields {unknown}") from None
        self._refresh()

    @contextmanager
    def _holding(self) -> Any:
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
            model = self.root_group.model()
            self._model = And() if model is None else model
            self._error = None
        except InvalidQuery as exc:
            self._error = str(exc)
        except Exception as exc:  # an observer's exception would vanish into the log
            self._error = f"{type(exc).__name__}: {exc}"
        text = json.dumps(self.query, indent=2, ensure_ascii=False, default=str)
        self.json_view.value = f"<pre>{html.escape(text, quote=False)}</pre>"
        self.message.value = (
            ""
            if self._error is None
            else f'<span style="color:#b00020">{html.escape(self._error)}</span>'
        )

    def _run(self, params: dict[str, Any]) -> pd.DataFrame:
        if self._runner is not None:
            return self._runner(params)
        if self._client is None or self._db_id is None:
            raise InvalidInput("Preview needs a client and db_id, or a runner")
        return read_profiles(
            self._client, self._db_id, **params, max_profiles=params["limit"], progress=False
        )

    def _preview(self, _: Any = None) -> None:
        self.preview_button.disabled = True
        self.output.outputs = ()
        try:
            if self._error is not None:
                raise InvalidQuery(f"fix the query first: {self._error}")
            frame = self._run(self.params)
            self.result = frame
            head = frame.head(_PREVIEW_ROWS)
            summary = f"{len(frame)} rows; the first {len(head)}:\n"
            self.output.outputs = (
                {
                    "output_type": "display_data",
                    "data": {"text/plain": summary + head.to_string(), "text/html": head.to_html()},
                    "metadata": {},
                },
            )
        except Exception as exc:  # shown to the user rather than lost in a callback
            self._show_error("Preview failed", exc)
        finally:
            self.preview_button.disabled = False

    def _show_error(self, what: str, exc: BaseException) -> None:
        text = f"{what}: {type(exc).__name__}: {exc}\n"
        self.output.outputs = (
            *self.output.outputs,
            {"output_type": "stream", "name": "stderr", "text": text},
        )
