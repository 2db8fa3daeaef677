"""A query builder widget for ``profiles/list``, for Jupyter.

Needs ipywidgets and anywidget (``pip install "stoplist_nb[widgets]"``);
``import stoplist_nb`` does not import this package.

>>> from stoplist_nb.widgets import QueryBuilder
>>> qb = QueryBuilder(fields={"_city": "string"})
>>> qb.load({"_city": {"$in": ["Kazan", "Moscow"]}})
>>> qb.query
{'_city': {'$in': ['Kazan', 'Moscow']}}
"""

from __future__ import annotations

try:  # every module here needs both: say how to install them before anything else fails
    import anywidget  # noqa: F401
    import ipywidgets  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"stoplist_nb.widgets needs ipywidgets and anywidget ({exc.name} is missing): "
        'pip install "stoplist_nb[widgets]"'
    ) from exc

from stoplist_nb.widgets.builder import QueryBuilder
from stoplist_nb.widgets.operators import OPERATORS

__all__ = ["OPERATORS", "QueryBuilder"]
