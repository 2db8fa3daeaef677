"""MongoDB queries for ``profiles/list``, as objects and as dicts (pure: no I/O)."""

from stoplist_nb.query.model import And, Condition, F, Nor, Or, Query
from stoplist_nb.query.parse import loads_query, parse_query, validate_query
from stoplist_nb.query.values import FIELD_OPERATORS, LOGICAL_OPERATORS, MAX_DEPTH

__all__ = [
    "FIELD_OPERATORS", "LOGICAL_OPERATORS", "MAX_DEPTH", "And", "Condition", "F", "Nor", "Or",
    "Query", "loads_query", "parse_query", "validate_query"
]  # fmt: skip
