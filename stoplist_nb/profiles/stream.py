"""Profiles page by page: the one loop over ``profiles/list`` that every reader uses."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa

from stoplist_nb import errors
from stoplist_nb._json.kinds import OBJECT
from stoplist_nb._paging import records_of
from stoplist_nb._stream import Owner, Stream
from stoplist_nb._threads import Bar
from stoplist_nb.client import Page
from stoplist_nb.profiles import columns as cols
from stoplist_nb.profiles import request
from stoplist_nb.profiles.normalize import FlatPage, flatten_profiles
from stoplist_nb.profiles.schema import StreamSchema

if TYPE_CHECKING:
    from stoplist_nb.profiles.reading import ProfilesRequest

_T = TypeVar("_T")
Fit = Literal["arrow", "python"] | None

#: Schema metadata keys of each table :func:`tables` hands out.
META_FROM, META_NEXT, META_PROFILES = b"from_id", b"next_from_id", b"profiles"


@dataclass(frozen=True)
class PageRead:
    """One page flattened; the cursor it was asked with, the one after it, profiles so far."""

    page: FlatPage
    from_id: str
    next_from_id: str
    profiles: int


def flat_pages(
    req: ProfilesRequest, from_id: str | None, seen: Iterable[str] = (), fit: Fit = None
) -> Stream[PageRead]:
    """The pages of ``req`` from ``from_id``, flattened (and ``fit``) in its workers."""
    max_profiles = req.max_profiles
    pages = req.client.pages(
        request.METHOD,
        req.params,
        from_id=from_id,
        max_rows=max_profiles,
        lookahead=req.lookahead,
        seen=seen,
        workers=req.workers,
        prepare=partial(_flatten, fit),
    )

    def make(pages: Stream[Page], owner: Owner) -> Iterator[PageRead]:
        bar = Bar(
            total=max_profiles, unit=" profiles", desc=request.METHOD, disable=not req.progress
        )
        owner.adopt(bar.close)
        cursor, count = from_id or "", 0
        for page in pages:
            data = page.data
            if bar.total is None and isinstance(page.envelope.get("total_count"), int):
                bar.total = page.envelope["total_count"]
            prepared = page.prepared()
            try:
                if prepared is not None:
                    flat = prepared()
                else:
                    flat = flatten_profiles(data, lambda: page.records)  # noqa: B023
            except errors.InvalidInput as exc:  # the service's rows, not the caller's input
                raise errors.InvalidReply(f"{request.METHOD}: {exc}", resume_from=cursor) from None
            except errors.StoplistError as exc:
                if exc.resume_from is None:
                    exc.resume_from = cursor
                raise
            count += len(data)
            started, cursor = cursor, page.next_from_id or cursor
            bar.update(len(data))
            yield PageRead(flat, started, cursor, count)

    return pages.then(make)


def _flatten(fit: Fit, data: pa.Array, content: bytes) -> FlatPage:
    page = flatten_profiles(data, lambda: records_of(content, len(data)))
    return page if fit is None else page.fit_fixed(objects=fit == "python")


def tables(
    schema: StreamSchema, declared: Mapping[str, Any], pages: Stream[PageRead]
) -> Stream[pa.Table]:
    """Each page in the columns of ``schema``, ``declared`` dtypes applied, cursors as metadata."""

    def make(pages: Stream[PageRead], owner: Owner) -> Iterator[pa.Table]:
        for read in pages:
            meta = {META_FROM: read.from_id, META_NEXT: read.next_from_id}
            table = cast_columns(schema.conform(read.page), declared)
            yield table.replace_schema_metadata({**meta, META_PROFILES: str(read.profiles)})

    return pages.then(make)


def collect(
    pages: Stream[PageRead], from_id: str | None, build: Callable[[list[FlatPage], str, int], _T]
) -> _T:
    """Every page, then ``build(pages, next_from_id, profiles)``; on an error, its ``partial``."""
    held: list[FlatPage] = []
    cursor, count = from_id or "", 0
    try:
        for read in pages:
            held.append(read.page)
            cursor, count = read.next_from_id, read.profiles
    except errors.StoplistError as exc:
        exc.partial = build(held, cursor, count)
        raise
    return build(held, cursor, count)


def frame_from_table(
    table: pa.Table, kinds: Mapping[str, str], backend: str | None
) -> pd.DataFrame:
    """A table of :func:`tables` as a frame under ``backend``."""
    data: dict[str, Any] = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = kinds[name]
        if kind == OBJECT and backend != "pyarrow":
            # The stream holds JSON text: the frame holds what the service sent.
            values = (None if v is None else json.loads(v) for v in column.to_pylist())
            data[name] = np.fromiter(values, dtype=object, count=len(column))
        else:
            data[name] = cols.to_pandas(kind, column.chunks, backend)
    return pd.DataFrame(data, index=pd.RangeIndex(table.num_rows), copy=False)


def cast_frame(frame: pd.DataFrame, dtypes: Mapping[str, Any]) -> pd.DataFrame:
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
    for name, dtype in dtypes.items():
        type_ = request.arrow_type(dtype)
        if pa.types.is_string(type_) and not isinstance(dtype, pd.ArrowDtype):
            type_ = pa.large_string()
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
