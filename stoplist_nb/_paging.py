"""Cursor paging (``from_id`` / ``next_from_id``): the walk and its rules.

A page whose cursor does not move forward (to one this walk or ``seen`` was
at) is never yielded, and the error's ``resume_from`` is the cursor it was
asked with: yielded plus resumed is the whole list. Where ``next_from_id`` is
the last row's ``id`` or ``_id``, a row's id serves as a cursor: a page past
``max_rows`` is cut, and a full page without a cursor goes on from its last
row's id (``CursorStalled`` after yielding it, when that row has none). An
opaque cursor is never cut inside a page.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

import pyarrow as pa

from stoplist_nb import errors
from stoplist_nb._json.reader import Reply
from stoplist_nb._lookahead import Ahead, Post, Prepared, as_cursor
from stoplist_nb._stream import Owner, Stream

DEFAULT_LOOKAHEAD = 2
"""Requests sent ahead of the page being parsed (0: one request, then its parse)."""


@dataclass(frozen=True)
class Page:
    """One page of a cursor endpoint.

    Attributes:
        data: The page's rows as an Arrow array of structs.
        from_id: The cursor this page was requested with (``None`` for the first).
        next_from_id: The cursor the walk goes on from.
        envelope: The reply's other top-level keys (``error``, ``error_text``, ...).
    """

    data: pa.Array
    from_id: str | None
    next_from_id: str | None
    envelope: dict[str, Any]
    content: bytes = field(repr=False)
    _prepared: Prepared | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.data)

    def prepared(self) -> Prepared | None:
        """What the walk's ``prepare`` made of these rows in a worker (``None``: it did not run)."""
        return self._prepared

    @cached_property
    def records(self) -> list[dict[str, Any]]:
        """The rows exactly as the service sent them, as Python dicts (those kept, if cut)."""
        return records_of(self.content, len(self.data))


def records_of(content: bytes, rows: int) -> list[dict[str, Any]]:
    """The first ``rows`` rows of a reply exactly as sent, as Python dicts.

    >>> records_of(b'{"data":[{"id":"a"},{"id":"b"}],"next_from_id":"b"}', 1)
    [{'id': 'a'}]
    """
    data = json.loads(content).get("data")
    return list(data)[:rows] if isinstance(data, list) else []


def row_id(data: pa.Array, index: int) -> str | None:
    """Row ``index``'s ``id`` (else ``_id``) as a cursor; ``None`` when it has none."""
    if not pa.types.is_struct(data.type):
        return None
    row = data[index]
    for name in ("id", "_id"):
        if data.type.get_field_index(name) >= 0:
            value = row[name].as_py()
            if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
                return as_cursor(value)
    return None


def walk(
    post: Post,
    parse: Callable[[bytes], Reply],
    method: str,
    params: Mapping[str, Any],
    *,
    from_id: str | None,
    max_rows: int | None,
    lookahead: int,
    seen: Iterable[str] = (),
    workers: int | None = None,
    prepare: Callable[[pa.Array, bytes], Any] | None = None,
    cut: Callable[[], None] | None = None,
    owner: Owner | None = None,
) -> Stream[Page]:
    """The pages of a cursor endpoint, until one comes back without rows, as a stream.

    ``post`` (:data:`~stoplist_nb._lookahead.Post`) sends, ``parse`` reads a
    reply (their errors get ``resume_from``); ``cut`` ends the request on the
    wire at close; ``owner``: the stream's. The rest as in :meth:`~stoplist_nb.Client.pages`.
    """

    def pages(owner: Owner) -> Iterator[Page]:
        nonlocal from_id
        plan = partial(_plan, params, max_rows)
        # Every cursor moved to, the first one included: coming back to one is a stall.
        visited = {cursor for cursor in (from_id, *seen) if cursor}
        fetched = 0
        ahead = Ahead(post, parse, plan, visited, lookahead, workers, prepare, cut)
        owner.adopt(ahead.close)
        while (body := plan(from_id, fetched)) is not None:
            try:
                reply, content, prepared = ahead.get(from_id, body, fetched=fetched)
            except errors.StoplistError as exc:
                exc.resume_from = from_id or ""
                raise
            data = reply.data if reply.data is not None else pa.array([], pa.null())
            if len(data) == 0:
                return
            raw_next = reply.envelope.get("next_from_id")
            next_id = as_cursor(raw_next)
            limit = body.get("limit")
            last = row_id(data, len(data) - 1)
            if next_id is None and (limit is None or len(data) < limit or last is None):
                fetched += len(data)
                yield Page(data, from_id, None, reply.envelope, content, prepared)
                if limit is None or len(data) < limit:
                    return  # a short page without a cursor can only be the last one
                raise errors.CursorStalled(
                    f"{method}: {len(data)} rows (as many as the limit of {limit} asked) came "
                    "without next_from_id, and the last of them has no id to go on from: "
                    "they were kept, but whether more rows follow cannot be told; read with "
                    "a larger limit, or with fields that include _id"
                )
            if next_id is None or next_id == last:
                # The cursor is (or stands in for) the last row's id: any row's id is one.
                next_id = last
                if max_rows is not None and fetched + len(data) > max_rows:
                    at = row_id(data, max_rows - fetched - 1)
                    if at is not None:  # a service that ignored limit: keep what was asked
                        data, next_id, prepared = data.slice(0, max_rows - fetched), at, None
            page = Page(data, from_id, next_id, reply.envelope, content, prepared)
            fetched += len(data)
            if next_id is None or next_id == from_id or next_id in visited:
                # Not yielded: its rows come again with the request resumed from here.
                said = (
                    f"next_from_id={raw_next!r}"
                    if as_cursor(raw_next) is not None
                    else f"no next_from_id, and the last one's id {next_id!r}"
                )
                raise errors.CursorStalled(
                    f"{method}: {len(data)} rows came with {said}, which does not move "
                    "the cursor forward (it was reached before); the rows of that page "
                    "were not taken",
                    resume_from=from_id or "",
                )
            yield page
            visited.add(next_id)
            from_id = next_id

    return Stream(pages, owner)


def _plan(
    params: Mapping[str, Any], max_rows: int | None, cursor: str | None, fetched: int
) -> dict[str, Any] | None:
    """The body of the request for ``cursor``, ``fetched`` rows in; ``None`` when done."""
    if max_rows is not None and fetched >= max_rows:
        return None
    body = dict(params)
    if cursor:
        body["from_id"] = cursor
    limit = params.get("limit")
    if max_rows is not None and (limit is None or max_rows - fetched < limit):
        body["limit"] = max_rows - fetched
    return body
