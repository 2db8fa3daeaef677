"""The :class:`QueryBuilder`: an anywidget whose browser side edits a document, checked here.

The browser owns everything typed, so no reply of the kernel rewrites a box
being typed in; each change of the ``document`` trait is checked into ``report``.
"""

from __future__ import annotations

import copy
import os
import pathlib
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import anywidget
import pandas as pd
import traitlets

from stoplist_nb._redact import redact
from stoplist_nb.client import Client
from stoplist_nb.errors import InvalidInput, InvalidQuery, StoplistError
from stoplist_nb.profiles import ProfilesRequest, read_profiles
from stoplist_nb.profiles.fields import database_fields
from stoplist_nb.query import Query, parse_query
from stoplist_nb.widgets.catalog import FieldCatalog, field_infos, sample_values
from stoplist_nb.widgets.check import DEFAULT_PREVIEW_ROWS, canonical_json, check, empty_document
from stoplist_nb.widgets.load import load_document
from stoplist_nb.widgets.preview import preview_html

__all__ = ["QueryBuilder"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STATIC = pathlib.Path(__file__).parent / "static"


def _warn_at_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn at the first frame outside this package: the user's cell, not our source."""
    level, frame = 1, sys._getframe(0)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    warnings.warn(message, category, stacklevel=level)


class QueryBuilder(anywidget.AnyWidget):
    """Build a ``profiles/list`` query from rules in AND / OR groups, in the browser.

    Rules pick a field, an operator in words and a value; groups join them by AND or OR,
    may be negated (NOT), and may ask for all their rules to hold in one subscription.
    The browser edits :attr:`document`; its check is :attr:`report`.

    Args:
        client: The API client, for the field list, the suggestions and Preview.
        db_id: The database id.
        fields: The fields offered, to skip ``database_fields``: its frame,
            a list of names or a dict of name -> type word (``int``, ``date``, ...).
        runner: Called with :attr:`params` by Preview, returns a frame;
            default: :func:`~stoplist_nb.read_profiles` of :attr:`preview_rows` profiles.
        suggestions: Values to suggest per field name, instead of a sample page.
        sample: How many profiles the sample page for suggestions holds (0: none).

    Attributes:
        result: The frame of the last successful Preview, or ``None``.

    >>> qb = QueryBuilder(fields={"_city": "string", "vip": "boolean"})
    >>> qb.load({"_city": {"$in": ["Kazan", "Moscow"]}, "vip": True})
    >>> qb.query
    {'_city': {'$in': ['Kazan', 'Moscow']}, 'vip': True}
    >>> QueryBuilder(client, db_id=1)  # doctest: +SKIP
    """

    _esm = _STATIC / "builder.js"
    _css = _STATIC / "builder.css"

    #: The fields, the operators per kind and the subscription fields (to the browser).
    catalog = traitlets.Dict().tag(sync=True)
    #: The document the browser edits (this side sets it only on load and clear).
    document = traitlets.Dict().tag(sync=True)
    #: The check of :attr:`document` (to the browser).
    report = traitlets.Dict().tag(sync=True)
    #: The Preview: ``state``, ``html``, ``message`` and ``query_json`` (to the browser).
    preview_state = traitlets.Dict().tag(sync=True)
    #: Problems met while reading the field list or the sample page.
    notices = traitlets.List(traitlets.Unicode()).tag(sync=True)

    def __init__(
        self,
        client: Client | None = None,
        db_id: int | None = None,
        *,
        fields: Any = None,
        runner: Callable[[dict[str, Any]], pd.DataFrame] | None = None,
        suggestions: Mapping[str, Sequence[str]] | None = None,
        sample: int = 100,
    ) -> None:
        self._client, self._db_id, self._runner = client, db_id, runner
        self._valid: dict[str, Any] = {}
        self._good: tuple[str, dict[str, Any]] | None = None  # the last Preview's html, params
        self._running = False
        self._known: tuple[dict[str, Any], dict[str, Any]] | None = None
        self.result: pd.DataFrame | None = None
        notices: list[str] = []
        infos = [] if fields is None else field_infos(fields)
        readable, complete = True, fields is not None
        if fields is None and client is not None and db_id is not None:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    infos = field_infos(database_fields(client, db_id))
            except Exception as exc:  # the builder still works with typed-in names
                readable = False
                notices.append(self._scrub(f"could not read the field list: {_said(exc)}"))
            else:
                complete = not caught
                for warning in caught:  # e.g. "inferred from a sample": said at the user's cell
                    _warn_at_caller(str(warning.message), warning.category)
        if suggestions is None and readable and sample > 0 and client is not None:
            try:  # one request, nothing sent ahead of it
                # A db_id of None is refused by the request, and told in the notices.
                request = ProfilesRequest(
                    client, cast(int, db_id), limit=sample, max_profiles=sample, lookahead=0
                )
                with request.pages() as pages:
                    page = next(pages, None)
                known = FieldCatalog(infos)  # values are sampled of text fields, not dates
                strings = [n for n in known.infos if known.kind(n) == "string"]
                suggestions = sample_values([] if page is None else page.records, strings)
            except Exception as exc:  # suggestions are a help, not a condition to work
                text = f"could not read a sample page for value suggestions: {_said(exc)}"
                notices.append(self._scrub(text))
        self._fields = FieldCatalog(infos, suggestions, complete=complete)
        super().__init__()
        self.notices = notices
        self.catalog = self._fields.to_json()
        self._show("none")
        self.observe(self._checked, "document")
        self.document = empty_document()
        self.on_msg(self._on_message)

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        """The synced state, ``preview_state`` named ``preview`` as the browser knows it."""
        state: dict[str, Any] = super().get_state(key=key, drop_defaults=drop_defaults)
        return {"preview" if k == "preview_state" else k: v for k, v in state.items()}

    def _scrub(self, text: str) -> str:
        """``text`` without the client's token, in any form a service could echo."""
        transport = getattr(self._client, "_transport", None)
        scrub = getattr(transport, "redact", None)
        return scrub(text) if callable(scrub) else redact(text)

    def _checked(self, change: Any = None) -> None:
        known, self._known = self._known, None
        if known is not None and known[0] is self.document:
            report = known[1]  # checked already, by load()
        else:
            report = check(self.document, self._fields, last_valid=self._valid)
        if report["ok"]:
            self._valid = report["query"]
        self.report = report

    def _raise_if_wrong(self) -> dict[str, Any]:
        report = self.report
        if not report.get("ok"):
            raise InvalidQuery("; ".join(report.get("summary") or ["the query is not valid"]))
        return report

    @property
    def query(self) -> dict[str, Any]:
        """The MongoDB filter, ``{}`` without conditions (``InvalidQuery``: "Row 2: ...")."""
        return copy.deepcopy(self._raise_if_wrong()["query"])

    @property
    def model(self) -> Query:
        """:attr:`query` as :class:`~stoplist_nb.query.Query` objects (``And()`` when empty)."""
        return parse_query(self.query)

    @property
    def params(self) -> dict[str, Any]:
        """``query`` and ``fields`` (when any), to pass to ``read_profiles``.

        >>> QueryBuilder(fields=["_city"]).params
        {'query': {}}
        """
        return copy.deepcopy(self._raise_if_wrong()["params"])

    @property
    def fields(self) -> list[str]:
        """The fields to return (their raw names); empty means all."""
        return list(self.report["fields"]["resolved"])

    @property
    def preview_rows(self) -> int:
        """How many profiles Preview reads (1 to 1000; else ``InvalidInput``)."""
        rows = self.report["preview_rows"]
        if rows["error"] is not None:
            raise InvalidInput(rows["error"])
        return int(rows["value"])

    @property
    def errors(self) -> list[str]:
        """Every error, ``"Row N: ..."``; empty while the document is a valid query."""
        return list(self.report["summary"])

    @property
    def warnings(self) -> list[str]:
        """Every warning of the rules, ``"Row N: ..."`` (unknown fields, ...)."""
        found: list[str] = []
        for item in self.report["items"].values():
            where = f"Row {item['number']}" if item.get("number") else "Group"
            found.extend(f"{where}: {w['message']}" for w in item["warnings"])
        return found

    @property
    def error(self) -> str | None:
        """Every error joined by ``"; "``, ``None`` while there is none."""
        return "; ".join(self.errors) or None

    def load(self, query: Mapping[str, Any] | str, fields: Sequence[str] | None = None) -> None:
        """Show a query (a dict or JSON text) and the fields to return (kept when ``None``).

        Raises ``InvalidQuery`` as :func:`~stoplist_nb.widgets.load.document_of`
        does, ``InvalidInput`` for fields that are not a list of known names;
        either leaves the builder as it was.
        """
        if fields is not None and (
            isinstance(fields, str) or not all(isinstance(f, str) for f in fields)
        ):
            raise InvalidInput("fields must be a list of field names")
        current = self.document or empty_document()
        chosen = _kept_fields(current) if fields is None else list(fields)
        rows = current.get("preview_rows", str(DEFAULT_PREVIEW_ROWS))
        self._replace(*load_document(query, self._fields, fields=chosen, preview_rows=rows))

    def clear(self) -> None:
        """Back to one empty rule; the fields to return and the rows to preview stay."""
        document, current = empty_document(), self.document or {}
        document["fields"] = _kept_fields(current)
        document["preview_rows"] = current.get("preview_rows", document["preview_rows"])
        self._replace(document, self._fields)

    def _replace(
        self, document: dict[str, Any], catalog: FieldCatalog, report: dict[str, Any] | None = None
    ) -> None:
        rev = self.document.get("rev") if self.document else 0
        document["rev"] = (rev if isinstance(rev, int) else 0) + 1
        if report is not None:
            self._known = (document, {**report, "rev": document["rev"]})
        if catalog is not self._fields:
            self._fields = catalog
            self.catalog = catalog.to_json()
        self.document = document

    def _on_message(self, _: Any, content: Any, buffers: Any = None) -> None:
        kind = content.get("kind") if isinstance(content, Mapping) else None
        if kind == "preview":
            self.preview()
        elif kind == "import":
            text = content.get("text")
            try:
                if not isinstance(text, str):
                    raise InvalidQuery(f"the text to load must be text, not {type(text).__name__}")
                self.load(text)
            except (InvalidQuery, InvalidInput) as exc:
                self.report = {**self.report, "import_error": self._scrub(str(exc))}

    def preview(self) -> None:
        """Run the query and show its first :attr:`preview_rows` profiles, as the button does.

        An error is shown (the last good result stays, marked out of date), never raised.
        """
        if self._running:
            return
        report = self.report
        if not report.get("ok") or report["preview_rows"]["error"] is not None:
            self._show("error", "fix the query first: " + "; ".join(report.get("summary") or []))
            return
        params, rows = report["params"], report["preview_rows"]["value"]
        self._running = True
        reading = f"reading the first {rows} profiles\N{HORIZONTAL ELLIPSIS}"
        self.preview_state = {**self.preview_state, "state": "running", "message": reading}
        try:
            frame = self._run(copy.deepcopy(params), rows)
            if "profile_id" in frame.columns:  # a row per subscription: the first profiles'
                first = pd.unique(frame["profile_id"])[:rows]
                frame = frame[frame["profile_id"].isin(first)]
            else:
                frame = frame.head(rows)
            html = preview_html(frame, params)
        except Exception as exc:  # shown to the user rather than lost in a callback
            self._show("error", f"Preview failed: {_said(exc)}")
        else:
            self.result, self._good = frame, (html, params)
            self._show("done")
        finally:
            self._running = False

    def _show(self, state: str, message: str = "") -> None:
        """``message`` beside the last Preview that worked (the browser tells if it is stale)."""
        html, params = self._good or ("", None)
        self.preview_state = {
            "state": state, "html": html, "message": self._scrub(message),
            "query_json": None if params is None else canonical_json(params["query"]),
            "fields": None if params is None else list(params.get("fields", [])),
        }  # fmt: skip

    def _run(self, params: dict[str, Any], rows: int) -> pd.DataFrame:
        if self._runner is not None:
            return self._runner(params)
        if self._client is None or self._db_id is None:
            raise InvalidInput("Preview needs a client and db_id, or a runner")
        return read_profiles(
            self._client, self._db_id, **params, limit=rows, max_profiles=rows, progress=False
        )


def _kept_fields(document: Mapping[str, Any]) -> list[str]:
    fields: Any = document.get("fields")
    ok = isinstance(fields, list) and all(isinstance(f, str) for f in fields)
    return list(fields) if ok else []


def _said(exc: BaseException) -> str:
    """``exc`` for a person at the builder: its text and hint, without the resume advice."""
    hint = f" ({exc.hint})" if isinstance(exc, StoplistError) and exc.hint else ""
    text = Exception.__str__(exc) if isinstance(exc, StoplistError) else str(exc)
    return f"{type(exc).__name__}: {text}{hint}"
