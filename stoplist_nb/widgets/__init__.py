"""A query builder widget for ``profiles/list``, for Jupyter.

Needs ipywidgets (``pip install 'stoplist_nb[widgets]'``); ``import stoplist_nb``
does not import this package. The widget is
:class:`~stoplist_nb.widgets.builder.QueryBuilder`
(:mod:`~stoplist_nb.widgets.builder`). A condition is a row
(:mod:`~stoplist_nb.widgets.rows`), rows nest in groups
(:mod:`~stoplist_nb.widgets.groups`), what a field's kind allows is in
:mod:`~stoplist_nb.widgets.kinds`, the field labels and suggested values in
:mod:`~stoplist_nb.widgets.catalog`, and the tag boxes that Enter fills in
JupyterLab in :mod:`~stoplist_nb.widgets.tags`; what a Preview shows is
:mod:`~stoplist_nb.widgets.preview`. Only stock ipywidgets
controls are used, so it runs wherever ipywidgets does.

Every widget carries a CSS class for styling and for browser tests; the
list is under "Styling hooks" in the query builder guide. The main ones:
``sn-row`` (``sn-row-error`` while it has an error), ``sn-field``,
``sn-operator``, ``sn-value``, ``sn-remove``, ``sn-join``, ``sn-not``,
``sn-tag-input`` / ``sn-tag-add`` / ``sn-tag-error``, ``sn-errors``,
``sn-json`` (``sn-json-stale`` while the rows are not a valid query),
``sn-json-toggle``, ``sn-clear``, ``sn-preview``, ``sn-preview-note`` and, in
the Preview's HTML, ``sn-preview-count`` and ``sn-preview-table``.

>>> from stoplist_nb.widgets import QueryBuilder
>>> qb = QueryBuilder(fields={"_city": "string"})
>>> qb.load({"_city": {"$in": ["Kazan", "Moscow"]}})
>>> qb.query
{'_city': {'$in': ['Kazan', 'Moscow']}}
"""

from __future__ import annotations

try:
    import ipywidgets  # noqa: F401  # every module here needs it: say how to install it first
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "stoplist_nb.widgets needs ipywidgets: pip install 'stoplist_nb[widgets]'"
    ) from exc

from stoplist_nb.widgets.builder import QueryBuilder
from stoplist_nb.widgets.kinds import OPERATORS

__all__ = ["OPERATORS", "QueryBuilder"]
