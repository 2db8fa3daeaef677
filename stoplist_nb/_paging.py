"""Cursor paging (``from_id`` / ``next_from_id``), with requests sent ahead.

Requests go out one at a time, from the caller's thread, in the order plain
paging would send them. What runs alongside is the parsing of replies, in
worker threads (pyarrow releases the GIL while it parses): as soon as a reply's
bytes arrive, the next request leaves with a cursor read from those bytes by a
plain text search, while the reply is parsed in the background.

That cursor is a guess until the reply is parsed. ``walk`` is plain paging;
``_Ahead`` answers each of its requests, from one sent ahead only when that one
carried exactly the same body (cursor, ``limit``, every param), otherwise by
dropping those sent ahead and sending it again. So looking ahead changes when
pages arrive, never which: at worst it costs ``lookahead`` requests of a
read-only method whose replies are thrown away.

Closing the iterator (or an exception through it) cancels what was sent
ahead and joins the workers before it returns.

A page whose cursor does not move the walk forward is never yielded: the
error raised for it carries the cursor it was asked with as ``resume_from``,
so what was yielded plus a read resumed there is exactly the whole list. The
cursor the walk starts from counts as one it has been at (``seen`` adds those
of an earlier, interrupted walk), so a cursor that goes back to it is caught.

Where the cursor is evidently the last row's id (a page's ``next_from_id``
equals its last row's ``id``, or ``_id``), a row's id serves as a cursor: a
page that overshoots ``max_rows`` (a service that ignores ``limit``) is cut,
and goes on from its last row kept; a page with as many rows as were asked for
(or more) and no cursor goes on from its last row's id, until a page comes
back empty. An opaque cursor is never cut inside a page: the whole page is
kept, even past ``max_rows``.
"""

from __future__ import annotations

import json
import os
import re
from collections import deque
from collections.abc import Callable, Generator, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

import pyarrow as pa

from stoplist_nb import errors
from stoplist_nb._json import Reply

__all__ = ["DEFAULT_LOOKAHEAD", "Page", "parse_threads", "peek_cursor", "row_id", "walk"]

DEFAULT_LOOKAHEAD = 2
"""Requests sent ahead of the page being parsed (0: one request, then its parse)."""

_KEY = b'"next_from_id"'
_WS = rb"[ \t\r\n]*"
_VALUE = re.compile(_KEY + _WS + b":" + _WS + rb'("(?:[^"\\]|\\.)*"|-?[0-9]+)(?=' + _WS + b"[,}])")
_EMPTY_DATA = re.compile(rb'"data"' + _WS + b":" + _WS + rb"(?:\[" + _WS + rb"\]|null)")


def parse_threads(lookahead: int) -> int:
    """Worker threads that parse replies: one per request ahead, at most one per core."""
    return max(1, min(lookahead, os.cpu_count() or 1))


@dataclass(frozen=True)
class Page:
    """One page of a cursor endpoint.

    Attributes:
        data: The page's rows as an Arrow array of structs (empty when no rows).
        from_id: The cursor this page was requested with (``None`` for the first).
        next_from_id: The cursor the service returned for the next page.
        envelope: The reply's other top-level keys (``error``, ``error_text``, ...).
    """

    data: pa.Array
    from_id: str | None
    next_from_id: str | None
    envelope: dict[str, Any]
    content: bytes = field(repr=False)

    def __len__(self) -> int:
        return len(self.data)

    @cached_property
    def records(self) -> list[dict[str, Any]]:
        """The rows exactly as the service sent them, as Python dicts (those kept, if cut)."""
        data = json.loads(self.content).get("data")
        return list(data)[: len(self.data)] if isinstance(data, list) else []


def peek_cursor(content: bytes) -> str | None:
    """The ``next_from_id`` a reply most likely holds, found without parsing it.

    The last occurrence of the key is taken: services write the envelope after
    ``data`` or before it, and in the second case a row would need a field of
    that very name to mislead the search. ``None`` when there is no usable
    value, or when the reply looks empty (no page follows an empty one).

    >>> peek_cursor(b'{"data":[{"id":"a"}],"error":0,"next_from_id":"a"}')
    'a'
    """
    at = content.rfind(_KEY)
    match = _VALUE.match(content, at) if at >= 0 else None
    data_at = content.find(b'"data"')  # the first one: the rows cannot come before it
    if match is None or (data_at >= 0 and _EMPTY_DATA.match(content, data_at)):
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return as_cursor(value)


def as_cursor(value: Any) -> str | None:
    """A ``next_from_id`` value as the cursor to send: ``None`` for null or empty."""
    return None if value is None or value == "" else str(value)


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
    post: Callable[[dict[str, Any]], bytes],
    parse: Callable[[bytes], Reply],
    method: str,
    params: Mapping[str, Any],
    *,
    from_id: str | None,
    max_rows: int | None,
    lookahead: int,
    seen: Iterable[str] = (),
) -> Generator[Page, None, None]:
    """Yield the pages of a cursor endpoint until one comes back without rows.

    ``post`` sends one request body and returns the reply's bytes; ``parse``
    turns them into a :class:`Reply` (raising for an error envelope). Both raise
    :class:`~stoplist_nb.errors.StoplistError`, which leaves here with
    ``resume_from`` set to the cursor of the page that failed. ``seen``: cursors
    an earlier walk of the same list was at; coming back to one is a stall.

    A page's ``next_from_id`` is where the walk goes on after it: the service's
    cursor, or the id of the page's last row kept (see the module's text). A
    page of ``limit`` rows or more without a cursor, whose last row has no id,
    is yielded, then :class:`~stoplist_nb.errors.CursorStalled` is raised with
    ``resume_from`` ``None``: no cursor leads on from it.
    """
    plan = partial(_plan, params, max_rows)
    # Every cursor moved to, the first one included: coming back to one is a stall.
    visited = {cursor for cursor in (from_id, *seen) if cursor}
    fetched = 0
    ahead = _Ahead(post, parse, lookahead=lookahead, plan=plan, seen=visited)
    try:
        while (body := plan(from_id, fetched)) is not None:
            try:
                reply, content = ahead.get(from_id, body, fetched=fetched)
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
            if next_id is None and (limit is None or len(data) < limit):
                fetched += len(data)
                yield Page(data, from_id, None, reply.envelope, content)
                return  # a short page without a cursor can only be the last one
            if next_id is None and last is None:
                fetched += len(data)
                yield Page(data, from_id, None, reply.envelope, content)  # its rows are kept
                lost = errors.CursorStalled(
                    f"{method}: {len(data)} rows (as many as the limit of {limit} asked) came "
                    "without next_from_id, and the last of them has no id to go on from: "
                    "they were kept, but whether more rows follow cannot be told; read with "
                    "a larger limit, or with fields that include _id"
                )
                lost.resume_from = None
                raise lost
            if next_id is None or next_id == last:
                # The cursor is the last row's id (or there is none, and a full page
                # goes on from it): any row's id points after that row.
                next_id = last
                if max_rows is not None and fetched + len(data) > max_rows:
                    cut = row_id(data, max_rows - fetched - 1)
                    if cut is not None:  # a service that ignored limit: keep what was asked
                        data, next_id = data.slice(0, max_rows - fetched), cut
            page = Page(data, from_id, next_id, reply.envelope, content)
            fetched += len(data)
            if next_id is None or next_id == from_id or next_id in visited:
                # Not yielded: its rows come again with the request resumed from here.
                said = (
                    f"next_from_id={raw_next!r}"
                    if as_cursor(raw_next) is not None
                    else f"no next_from_id, and the last one's id {next_id!r}"
                )
                stalled = errors.CursorStalled(
                    f"{method}: {len(data)} rows came with {said}, which does not move "
                    "the cursor forward (it was reached before); the rows of that page "
                    "were not taken"
                )
                stalled.resume_from = from_id or ""
                raise stalled
            yield page
            visited.add(next_id)
            from_id = next_id
    finally:
        ahead.close()


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


@dataclass(frozen=True)
class _Sent:
    """A request sent ahead: what it asked, and its reply being parsed (or its error)."""

    from_id: str | None
    body: dict[str, Any]
    content: bytes
    reply: Future[Reply] | errors.StoplistError
    guess: str | None  # the next cursor, read from ``content`` before the parse


class _Ahead:
    """Replies to the requests of plain paging, with up to ``lookahead`` more sent ahead.

    ``get`` returns the reply to exactly the request it is given: one sent ahead
    is used only if it asked the same thing (cursor and whole body), otherwise
    all those sent ahead are dropped. With ``lookahead=0`` nothing is sent
    ahead and replies are parsed in the caller's thread.
    """

    def __init__(
        self,
        post: Callable[[dict[str, Any]], bytes],
        parse: Callable[[bytes], Reply],
        *,
        lookahead: int,
        plan: Callable[[str | None, int], dict[str, Any] | None],
        seen: set[str],
    ) -> None:
        self._post, self._parse, self._lookahead = post, parse, lookahead
        self._plan, self._seen = plan, seen  # the walk's rules and the cursors it moved to
        self._queue: deque[_Sent] = deque()
        self._pool = None
        if lookahead > 0:
            self._pool = ThreadPoolExecutor(parse_threads(lookahead), "stoplist_nb-parse")

    def get(self, cursor: str | None, body: dict[str, Any], *, fetched: int) -> tuple[Reply, bytes]:
        """The reply to ``body`` (on ``cursor``, ``fetched`` rows in), parsed, and its bytes."""
        if self._pool is None:
            content = self._post(body)
            return self._parse(content), content
        if self._queue and (self._queue[0].from_id, self._queue[0].body) != (cursor, body):
            self._drop()  # a wrong guess: those replies answer other questions
        if not self._queue:
            self._queue.append(self._send(self._pool, cursor, body))
        self._send_ahead(self._pool, fetched)
        head = self._queue.popleft()
        if isinstance(head.reply, errors.StoplistError):
            raise head.reply
        return head.reply.result(), head.content

    def close(self) -> None:
        """Cancel the parses of what was sent ahead and join the workers."""
        self._drop()
        # Joined, not left to finish: a notebook keeps the last exception (and
        # with it the walk's frame) alive, and nothing may run behind the user's back.
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _send_ahead(self, pool: ThreadPoolExecutor, fetched: int) -> None:
        """Top the queue up to ``lookahead`` requests beyond its head, on guessed cursors."""
        # Rows in once every queued page comes back full: what plain paging plans from.
        fetched += sum(int(sent.body.get("limit") or 0) for sent in self._queue)
        while len(self._queue) <= self._lookahead:
            cursor = self._queue[-1].guess
            if cursor is None:
                return  # the end, or no cursor in sight: wait for the parse
            if cursor in self._seen or any(sent.from_id == cursor for sent in self._queue):
                return  # plain paging would stop there, on a stalled cursor
            body = self._plan(cursor, fetched)
            if body is None:
                return
            fetched += int(body.get("limit") or 0)
            self._queue.append(self._send(pool, cursor, body))

    def _send(self, pool: ThreadPoolExecutor, cursor: str | None, body: dict[str, Any]) -> _Sent:
        try:
            content = self._post(body)
        except errors.StoplistError as exc:
            return _Sent(cursor, body, b"", exc, None)  # raised only if its page comes up
        return _Sent(cursor, body, content, pool.submit(self._parse, content), peek_cursor(content))

    def _drop(self) -> None:
        for sent in self._queue:
            if isinstance(sent.reply, Future):
                sent.reply.cancel()
        self._queue.clear()
