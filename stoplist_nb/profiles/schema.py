"""The columns of profiles read page by page: each settled once, then only added to.

What went out cannot change, so a column joins on the first page where it has
a value, with that page's kind; a later value that does not fit goes, as its
exact text, to ``<name>__text``. A resumed pull goes on with the state's dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from stoplist_nb._json import kinds
from stoplist_nb.errors import InvalidInput
from stoplist_nb.profiles import columns as cols
from stoplist_nb.profiles.normalize import FlatPage
from stoplist_nb.profiles.request import dtype_kind

__all__ = ["TWIN_SUFFIX", "StreamSchema"]

TWIN_SUFFIX = cols.TWIN_SUFFIX

_FIXED_ROLES = ("id", "fixed", "cats")
_KINDS = {*cols.ARROW_TYPES, kinds.OBJECT}


@dataclass(frozen=True)
class _Column:
    role: str
    kind: str


class StreamSchema:
    """The columns of a stream of flattened pages (``declared``: kinds there from the start).

    >>> from stoplist_nb.profiles.normalize import flatten_profiles
    >>> from stoplist_nb._json.records import records_to_arrow
    >>> schema = StreamSchema()
    >>> page = flatten_profiles(records_to_arrow([{"id": "a", "age": 30}]))
    >>> schema.conform(page).column("age").to_pylist()
    [30]
    >>> page = flatten_profiles(records_to_arrow([{"id": "b", "age": "thirty"}]))
    >>> schema.conform(page).select(["age", "age__text"]).to_pylist()
    [{'age': None, 'age__text': 'thirty'}]
    """

    def __init__(self, declared: Mapping[str, str] | None = None) -> None:
        self._columns: dict[str, _Column] = {
            name: _Column(cols.role_of(name), kind) for name, kind in cols.KINDS.items()
        }
        self._sources: dict[tuple[str, str], str] = {}
        self._declared: set[str] = set()
        for name, kind in (declared or {}).items():
            if kind not in _KINDS:
                raise InvalidInput(f"unknown column kind {kind!r} for {name!r}")
            if name in cols.KINDS:
                continue  # a fixed column keeps its kind: a declared dtype only changes its output
            if name.endswith(TWIN_SUFFIX) and kind != kinds.STRING:
                raise InvalidInput(
                    f"dtypes: {name!r} names the text of the values that do not fit "
                    f"{name[: -len(TWIN_SUFFIX)]!r}: it can only be text"
                )
            self._columns[name] = _Column(cols.role_of(name), kind)
            self._declared.add(name)

    @property
    def names(self) -> list[str]:
        """The column names so far, in the order of the flat frame's column roles."""
        order = {role: i for i, role in enumerate(cols.ROLES)}
        return sorted(self._columns, key=lambda name: order[self._columns[name].role])

    @property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the tables :meth:`conform` returns now."""
        return pa.schema([pa.field(n, cols.arrow_type(self._columns[n].kind)) for n in self.names])

    def kind(self, name: str) -> str:
        """The kind of column ``name``."""
        return self._columns[name].kind

    def conform(self, page: FlatPage) -> pa.Table:
        """``page`` with every column so far, in its settled type (new columns join here)."""
        rows = page.table.num_rows
        arrays: dict[str, pa.Array] = {}
        for (column, role, _), chunked in zip(page.roles, page.table.columns, strict=True):
            array = chunked.combine_chunks() if chunked.num_chunks != 1 else chunked.chunk(0)
            if role not in _FIXED_ROLES and not self._joins(role, column, array):
                continue  # null so far: it joins on a page where it has a value
            kind = self._columns[column].kind
            value, rest = cols.fit(kind, array)
            arrays[column] = cols.arrow_chunks(kind, [value])[0].cast(cols.arrow_type(kind))
            if rest is not None:
                twin = column + TWIN_SUFFIX
                self._columns.setdefault(twin, _Column(self._columns[column].role, kinds.STRING))
                arrays[twin] = rest
        return pa.Table.from_arrays(
            [
                arrays[n] if n in arrays else pa.nulls(rows, cols.arrow_type(self.kind(n)))
                for n in self.names
            ],
            schema=self.arrow_schema,
        )

    def _joins(self, role: str, column: str, array: pa.Array) -> bool:
        """Whether ``column`` is in the stream, settling it now if it has its first value."""
        if column in self._columns:
            self._declared.discard(column)
            return True
        if not cols.value_kinds(array):
            return False
        kind, _ = cols.unify([array])  # the kind that holds every value of this page
        self._columns[column] = _Column(role, kind)
        self._sources[(role, column)] = column
        return True

    def to_dict(self) -> dict[str, Any]:
        """The state as plain JSON values (see :meth:`from_dict`)."""
        return {
            "columns": [[n, c.role, c.kind] for n, c in self._columns.items()],
            "sources": [[role, source, name] for (role, source), name in self._sources.items()],
            "declared": sorted(self._declared),
        }

    @classmethod
    def from_dtypes(cls, dtypes: Mapping[str, Any]) -> StreamSchema:
        """A schema with the columns of ``dtypes`` (pandas dtypes) there from the start.

        >>> StreamSchema.from_dtypes({"age": "Int64"}).kind("age")
        'int'
        """
        return cls({name: dtype_kind(dtype) for name, dtype in dtypes.items()})

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> StreamSchema:
        """The schema :meth:`to_dict` described (``InvalidInput`` if it is not one)."""
        schema = cls()
        try:
            schema._columns = {str(n): _Column(str(r), str(k)) for n, r, k in state["columns"]}
            schema._sources = {(str(r), str(s)): str(n) for r, s, n in state["sources"]}
            schema._declared = {str(n) for n in state["declared"]}
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"not a schema description: {exc}") from None
        for name, column in schema._columns.items():
            if column.role not in cols.ROLES or column.kind not in _KINDS:
                raise InvalidInput(f"not a schema description: column {name!r}")
        if not schema._columns.keys() >= cols.KINDS.keys():
            raise InvalidInput("not a schema description: a fixed column is missing")
        return schema
