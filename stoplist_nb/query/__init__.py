"""MongoDB queries for ``profiles/list``, as objects and as dicts (pure: no I/O).

:mod:`~stoplist_nb.query.model` builds queries as immutable objects (``F``,
conditions, ``And``/``Or``/``Nor``); :mod:`~stoplist_nb.query.parse` checks a
MongoDB filter before it is sent and reads one back into the model;
:mod:`~stoplist_nb.query.values` checks and freezes the JSON values both hold.
"""

from stoplist_nb.query.model import And, Condition, F, Nor, Or, Query
from stoplist_nb.query.parse import FIELD_OPERATORS, LOGICAL_OPERATORS, parse_query, validate_query
from stoplist_nb.query.values import MAX_DEPTH

__all__ = [
    "FIELD_OPERATORS",
    "LOGICAL_OPERATORS",
    "MAX_DEPTH",
    "And",
    "Condition",
    "F",
    "Nor",
    "Or",
    "Query",
    "parse_query",
    "validate_query",
]
