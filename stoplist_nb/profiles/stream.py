"""Profiles page by page, as Arrow tables or DataFrames that share one schema.

:func:`flat_pages` is the one loop over ``profiles/list`` that every reader
uses: paging, the progress bar, and the cursor to resume from when a request
fails. :func:`iter_profile_tables` and :func:`iter_profile_frames` hand out
each page in the columns of :class:`~stoplist_nb.profiles.schema.StreamSchema`
(the rules of a stream: a column is settled once, new columns only join);
:func:`read_profiles_arrow` is ``read_profiles`` without pandas.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
from tqdm.auto import tqdm

from stoplist_nb import errors
from stoplist_nb._paging import DEFAULT_LOOKAHEAD
from stoplist_nb.client import Client
from stoplist_nb.profiles import columns as cols
from stoplist_nb.profiles import request
from stoplist_nb.profiles.normalize import FlatPage, flatten_profiles, table_from_tables
from stoplist_nb.profiles.schema import StreamSchema
from stoplist_nb.query import Query

__all__ = [
    "FlatPages",
    "collect",
    "flat_pages",
    "frame_from_table",
    "iter_profile_frames",
    "iter_profile_tables",
    "read_profiles_arrow",
]

_T = TypeVar("_T")

#: Schema metadata keys of each table :func:`iter_profile_tables` yields.
META_FROM, META_NEXT, META_PROFILES = b"from_id", b"next_from_id", b"profiles"


@dataclass(frozen=True)
class FlatPages:
    """One page of profiles, flattened, and where the read stands after it.

    Attributes:
        page: The page, one row per subscription.
        from_id: The cursor it was asked with (``""`` for the first page).
        next_from_id: The cursor a read resumed after this page starts from.
        profiles: Profiles read so far, this page included.
    """

    page: FlatPage
    from_id: str
    next_from_id: str
    profiles: int


def flat_pages(
    client: Client,
    params: Mapping[str, Any],
    *,
    from_id: str | None,
    max_profiles: int | None,
    progress: bool,
    lookahead: int,
    seen: Iterable[str] = (),
) -> Generator[FlatPages, None, None]:
    """Yield each page of ``profiles/list`` flattened (``params`` as :func:`request.params` built).

    On a failed request the :class:`~stoplist_nb.errors.StoplistError` leaves
    with ``resume_from`` set to the cursor after the last page yielded; no
    request is left running on any way out (Ctrl-C included). ``seen``: the
    cursors of an earlier, interrupted read (see :meth:`Client.pages`).

    Pages are those of :meth:`Client.pages`: one that went past
    ``max_profiles`` was cut there if its cursor is a profile id, else kept
    whole (more than ``max_profiles`` are then read). A full page without a
    cursor whose last profile has no id is yielded, then ``CursorStalled``
    leaves with ``resume_from`` ``None``: nothing leads on from it.
    """
    pages = client.pages(
        request.METHOD, params, from_id=from_id, max_rows=max_profiles, lookahead=lookahead,
        seen=seen,
    )  # fmt: skip
    count = 0
    cursor = from_id or ""
    with (
        closing(pages),
        tqdm(
            total=max_profiles, unit=" profiles", desc=request.METHOD, disable=not progress
        ) as bar,
    ):
        # Errors of the walk carry their resume_from (None: no cursor leads on).
        for page in pages:
            data = page.data
            if bar.total is None and isinstance(page.envelope.get("total_count"), int):
                bar.total = page.envelope["total_count"]
            try:
                flat = flatten_profiles(data, lambda: page.records)  # noqa: B023 (called at once)
            except errors.InvalidInput as exc:  # the service's rows, not the caller's input
                invalid = errors.InvalidReply(f"{request.METHOD}: {exc}")
                invalid.resume_from = cursor
                raise invalid from None
            except errors.StoplistError as exc:
                if exc.resume_from is None:
                    exc.resume_from = cursor
                raise
            count += len(data)
            started, cursor = cursor, page.next_from_id or cursor
            bar.update(len(data))
            yield FlatPages(flat, started, cursor, count)


def iter_profile_tables(
    client: Client,
    db_id: int,
    *,
    query: Mapping[str, Any] | Query | None = None,
    fields: Sequence[str] | None = None,
    limit: int = 1000,
    from_id: str | None = None,
    max_profiles: int | None = None,
    dtypes: Mapping[str, Any] | None = None,
    progress: bool = True,
    lookahead: int = DEFAULT_LOOKAHEAD,
    schema: StreamSchema | None = None,
) -> Generator[pa.Table, None, None]:
    """Yield each page of profiles as an Arrow table, all in one growing schema.

    The columns are those of ``read_profiles`` in Arrow types (see
    :func:`~stoplist_nb.profiles.normalize.table_from_tables`), settled as
    :mod:`~stoplist_nb.profiles.schema` says: a column joins on the first page
    where it has a value and keeps its type; a value that does not fit it goes
    to ``<name>__text``. Each table's schema metadata holds ``from_id``,
    ``next_from_id`` (where a read resumed after it starts) and ``profiles``
    (read so far). Arguments are checked before the first request.

    Args:
        client: The API client.
        db_id: The database id.
        query: A MongoDB filter (a dict or a :mod:`stoplist_nb.query` object).
        fields: Profile fields to return.
        limit: Profiles per request (and so per table, at most).
        from_id: Resume from this cursor.
        max_profiles: Stop after this many profiles (more only where a service
            ignores ``limit`` and its cursor is no profile id: see
            :meth:`~stoplist_nb.client.Client.pages`).
        dtypes: ``{column: dtype}`` (pandas dtypes, their names, or pyarrow
            types): those columns are there from the first table, in that type.
        progress: Show a progress bar counting profiles.
        lookahead: Requests sent while earlier pages are being parsed.
        schema: Go on with this schema (that of an earlier, interrupted read).

    Raises:
        InvalidInput: An argument is wrong (nothing was sent).
        StoplistError: A request failed; ``exc.resume_from`` is the cursor
            after the last table yielded.

    >>> for table in iter_profile_tables(client, 1, limit=500):  # doctest: +SKIP
    ...     print(table.num_rows, table.schema.metadata[b"next_from_id"])
    """
    params = request.params(client, db_id, query, fields, limit, from_id, max_profiles)
    declared = request.check_dtypes(dtypes, None)
    if schema is None:
        schema = StreamSchema({name: request.dtype_kind(d) for name, d in declared.items()})
    elif not isinstance(schema, StreamSchema):
        raise errors.InvalidInput(f"schema must be a StreamSchema, not {type(schema).__name__}")
    return _tables(
        schema,
        declared,
        flat_pages(
            client, params, from_id=from_id, max_profiles=max_profiles, progress=progress,
            lookahead=lookahead,
        ),
    )  # fmt: skip


def _tables(
    schema: StreamSchema, declared: Mapping[str, Any], pages: Generator[FlatPages, None, None]
) -> Generator[pa.Table, None, None]:
    with closing(pages):
        for flat in pages:
            table = cast_columns(schema.conform(flat.page), declared)
            yield table.replace_schema_metadata(
                {
                    META_FROM: flat.from_id,
                    META_NEXT: flat.next_from_id,
                    META_PROFILES: str(flat.profiles),
                }
            )


def iter_profile_frames(
    client: Client,
    db_id: int,
    *,
    query: Mapping[str, Any] | Query | None = None,
    fields: Sequence[str] | None = None,
    limit: int = 1000,
    from_id: str | None = None,
    max_profiles: int | None = None,
    dtype_backend: str | None = None,
    dtypes: Mapping[str, Any] | None = None,
    progress: bool = True,
    lookahead: int = DEFAULT_LOOKAHEAD,
) -> Generator[pd.DataFrame, None, None]:
    """Yield each page of profiles as a DataFrame, all with the same dtypes.

    The frames follow :func:`iter_profile_tables` (a column joins on the
    first page where it has a value, then stays, with one dtype), converted
    as ``read_profiles`` converts under ``dtype_backend``. ``attrs`` hold
    ``from_id``, ``next_from_id`` (where a read resumed after this frame
    starts) and ``profiles`` (read so far). Stopping early: wrap the loop in
    :func:`contextlib.closing`, so that requests sent ahead end at once.

    Args:
        client: The API client.
        db_id: The database id.
        query: A MongoDB filter (a dict or a :mod:`stoplist_nb.query` object).
        fields: Profile fields to return.
        limit: Profiles per request (and so per frame, at most).
        from_id: Resume from this cursor.
        max_profiles: Stop after this many profiles (more only where a service
            ignores ``limit`` and its cursor is no profile id: see
            :meth:`~stoplist_nb.client.Client.pages`).
        dtype_backend: ``None``/``"numpy_nullable"`` or ``"pyarrow"``, as in
            :func:`~stoplist_nb.profiles.read_profiles`.
        dtypes: ``{column: dtype}``: those columns are in every frame, in that dtype.
        progress: Show a progress bar counting profiles.
        lookahead: Requests sent while earlier pages are being parsed.

    Raises:
        InvalidInput: An argument is wrong (nothing was sent).
        StoplistError: A request failed; ``exc.resume_from`` is the cursor
            after the last frame yielded.

    >>> for frame in iter_profile_frames(client, 1, limit=500):  # doctest: +SKIP
    ...     frame.to_csv("profiles.csv", mode="a", header=frame.attrs["from_id"] == "")
    """
    declared = request.check_dtypes(dtypes, dtype_backend)
    schema = StreamSchema({name: request.dtype_kind(d) for name, d in declared.items()})
    tables = iter_profile_tables(
        client, db_id, query=query, fields=fields, limit=limit, from_id=from_id,
        max_profiles=max_profiles, progress=progress, lookahead=lookahead, schema=schema,
    )  # fmt: skip
    return _frames(tables, schema, dtype_backend, declared)


def _frames(
    tables: Generator[pa.Table, None, None],
    schema: StreamSchema,
    backend: str | None,
    declared: Mapping[str, Any],
) -> Generator[pd.DataFrame, None, None]:
    with closing(tables):
        for table in tables:
            meta = table.schema.metadata
            frame = frame_from_table(
                table, {n: schema.kind(n) for n in table.column_names}, backend
            )
            frame = cast_frame(frame, declared)
            frame.attrs.update(
                from_id=meta[META_FROM].decode(),
                next_from_id=meta[META_NEXT].decode(),
                profiles=int(meta[META_PROFILES]),
            )
            yield frame


def read_profiles_arrow(
    client: Client,
    db_id: int,
    *,
    query: Mapping[str, Any] | Query | None = None,
    fields: Sequence[str] | None = None,
    limit: int = 1000,
    from_id: str | None = None,
    max_profiles: int | None = None,
    dtypes: Mapping[str, Any] | None = None,
    progress: bool = True,
    lookahead: int = DEFAULT_LOOKAHEAD,
) -> pa.Table:
    """Read a database's profiles into one Arrow table, one row per subscription.

    The columns and their choice of kind are those of ``read_profiles`` (all
    pages seen: a field whose pages disagree becomes text), in Arrow types:
    see :func:`~stoplist_nb.profiles.normalize.table_from_tables`. Nothing
    goes through pandas: hand the table to Polars (``pl.from_arrow``) or
    DuckDB as it is.

    Args:
        client: The API client.
        db_id: The database id.
        query: A MongoDB filter (a dict or a :mod:`stoplist_nb.query` object).
        fields: Profile fields to return.
        limit: Profiles per request.
        from_id: Resume from this cursor.
        max_profiles: Stop after this many profiles (more only where a service
            ignores ``limit`` and its cursor is no profile id: see
            :meth:`~stoplist_nb.client.Client.pages`).
        dtypes: ``{column: dtype}`` (pyarrow types, or pandas dtypes and
            their names): those columns cast to that type, added if absent.
        progress: Show a progress bar counting profiles.
        lookahead: Requests sent while earlier pages are being parsed.

    Returns:
        The table; its schema metadata holds ``db_id``, ``next_from_id``
        (where a later read resumes) and ``profiles``.

    Raises:
        InvalidInput: An argument is wrong (nothing was sent).
        StoplistError: A request failed; ``exc.partial`` is the table so far
            and ``exc.resume_from`` the cursor to carry on from.

    >>> table = read_profiles_arrow(client, 1, fields=["_fname"])  # doctest: +SKIP
    >>> table.group_by("channel").aggregate([("profile_id", "count")])  # doctest: +SKIP
    """
    params = request.params(client, db_id, query, fields, limit, from_id, max_profiles)
    declared = request.check_dtypes(dtypes, None)

    def table(pages: list[FlatPage], cursor: str, count: int) -> pa.Table:
        meta = {"db_id": str(db_id), "next_from_id": cursor, "profiles": str(count)}
        return cast_columns(table_from_tables(pages), declared).replace_schema_metadata(meta)

    pages = flat_pages(
        client, params, from_id=from_id, max_profiles=max_profiles, progress=progress,
        lookahead=lookahead,
    )  # fmt: skip
    return collect(pages, from_id, table)


def collect(
    pages: Generator[FlatPages, None, None],
    from_id: str | None,
    build: Callable[[list[FlatPage], str, int], _T],
) -> _T:
    """Every page, then ``build(pages, next_from_id, profiles)``.

    Raises:
        StoplistError: A request failed; ``exc.partial`` is what ``build``
            makes of the pages read before it.
    """
    held: list[FlatPage] = []
    cursor, count = from_id or "", 0
    try:
        for flat in pages:
            held.append(flat.page)
            cursor, count = flat.next_from_id, flat.profiles
    except errors.StoplistError as exc:
        exc.partial = build(held, cursor, count)
        raise
    return build(held, cursor, count)


def frame_from_table(
    table: pa.Table, kinds: Mapping[str, str], backend: str | None
) -> pd.DataFrame:
    """A table of :func:`iter_profile_tables` as a DataFrame (``kinds``: each column's kind)."""
    data: dict[str, Any] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = kinds[name]
        if kind == "object" and backend != "pyarrow":
            # The stream holds JSON text: the frame holds what the service sent.
            values = (None if v is None else json.loads(v) for v in column.to_pylist())
            data[name] = np.fromiter(values, dtype=object, count=len(column))
        else:
            data[name] = cols.to_pandas(kind, column.chunks, backend)
    return pd.DataFrame(data, index=pd.RangeIndex(table.num_rows), copy=False)


def cast_frame(frame: pd.DataFrame, dtypes: Mapping[str, Any]) -> pd.DataFrame:
    """``frame`` with ``dtypes`` applied: present columns converted, absent ones added (all NA).

    Raises:
        InvalidInput: The values of a column do not go into its dtype.
    """
    for name, dtype in dtypes.items():
        try:
            if name in frame.columns:
                frame[name] = frame[name].astype(dtype)
            else:
                frame[name] = pd.Series(pd.NA, index=frame.index, dtype=dtype)
        except (TypeError, ValueError, OverflowError, pa.ArrowException) as exc:
            raise errors.InvalidInput(
                f"dtypes: column {name!r} does not go into {dtype}: {exc}"
            ) from exc
    return frame


def cast_columns(table: pa.Table, dtypes: Mapping[str, Any]) -> pa.Table:
    """``table`` with ``dtypes`` (pandas dtypes) applied in Arrow, absent columns added.

    Raises:
        InvalidInput: The values of a column do not go into its type.
    """
    for name, dtype in dtypes.items():
        type_ = _arrow_type(dtype)
        try:
            if name in table.column_names:
                i = table.column_names.index(name)
                table = table.set_column(i, name, table.column(i).cast(type_))
            else:
                table = table.append_column(name, pa.nulls(table.num_rows, type_))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise errors.InvalidInput(
                f"dtypes: column {name!r} does not go into {type_}: {exc}"
            ) from exc
    return table


def _arrow_type(dtype: Any) -> pa.DataType:
    if isinstance(dtype, pd.ArrowDtype):
        return dtype.pyarrow_dtype
    field = pa.Schema.from_pandas(pd.DataFrame({"x": pd.Series([], dtype=dtype)}))[0]
    return pa.large_string() if pa.types.is_string(field.type) else field.type
