"""Requests of a cursor walk sent ahead on a fetch thread, their replies parsed on workers.

The fetch thread sends each request once its cursor is read from the previous
reply's bytes, and hands that reply to the workers once the next request is on
the wire (a parse holding the GIL would hold the send back); at most
``lookahead + workers`` pages are in flight. A request is answered from one sent
ahead only if that had the same body: looking ahead changes when pages arrive,
never which. Closing cuts the request on the wire and joins every thread.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from stoplist_nb._checks import check_int
from stoplist_nb._json.reader import Reply
from stoplist_nb._threads import join, leave_signals_to_main

_KEY = b'"next_from_id"'
_WS = rb"[ \t\r\n]*"
_VALUE = re.compile(_KEY + _WS + b":" + _WS + rb'("(?:[^"\\]|\\.)*"|-?[0-9]+)(?=' + _WS + b"[,}])")
_EMPTY_DATA = re.compile(rb'"data"' + _WS + b":" + _WS + rb"(?:\[" + _WS + rb"\]|null)")

#: What ``prepare`` made of a page's rows: call it for the value (or its exception).
Prepared = Callable[[], Any]
#: ``post(body, sent)``: send one request, call ``sent()`` once it is on the wire.
Post = Callable[[dict[str, Any], Callable[[], None] | None], bytes]


# A signal handed to another library's thread leaves the main thread asleep on a lock.
_WAKE = 0.25
MAX_WORKERS = 8
_WALKS = itertools.count()


def check_threads(lookahead: Any, workers: Any) -> None:
    """Refuse a ``lookahead`` below 0 or ``workers`` below 1 (``None``: :func:`default_workers`)."""
    check_int("lookahead", lookahead, minimum=0)
    if workers is not None:
        check_int("workers", workers, minimum=1)


def default_workers() -> int:
    """Worker threads that parse and flatten replies by default: one per core, at most 8."""
    return max(1, min(os.cpu_count() or 1, MAX_WORKERS))


def in_workers(fn: Callable[[Any], Any], items: Iterable[Any], workers: int) -> list[Any]:
    """``[fn(item) for item in items]``, run on ``workers`` threads (in order; 1: this thread).

    >>> in_workers(len, ["a", "bc"], 2)
    [1, 2]
    """
    if workers <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(workers, "stoplist_nb-frame", leave_signals_to_main) as pool:
        return list(pool.map(fn, items))


def peek_cursor(content: bytes) -> str | None:
    """The ``next_from_id`` a reply most likely holds (its last one), or ``None``, unparsed.

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


@dataclass(frozen=True)
class _Sent:
    """A request sent ahead: what it asked, and its reply being parsed (or its error)."""

    from_id: str | None
    body: dict[str, Any]
    content: bytes
    reply: Future[tuple[Reply, Prepared | None]] | Exception


class Ahead:
    """Replies to exactly the requests of plain paging, up to ``lookahead`` more sent ahead."""

    def __init__(
        self,
        post: Post,
        parse: Callable[[bytes], Reply],
        plan: Callable[[str | None, int], dict[str, Any] | None],
        seen: set[str],
        lookahead: int,
        workers: int | None,
        prepare: Callable[[pa.Array, bytes], Any] | None,
        cut: Callable[[], None] | None,
    ) -> None:
        workers = workers or default_workers()
        self._post, self._parse = post, parse
        self._plan, self._seen = plan, seen  # the walk's rules and the cursors it moved to
        self._prepare, self._cut = prepare, cut
        self._queue: deque[_Sent] = deque()
        # Replies received whose parse waits for the next request to be on the wire.
        self._unparsed: list[tuple[Future[tuple[Reply, Prepared | None]], bytes]] = []
        self._in_flight = lookahead + workers  # pages received and not yet taken, at most
        # One lock for the state the two threads share; waits are on it, never a poll.
        self._cond = threading.Condition()
        # Next request and the one on the wire, with the generation a drop bumps.
        self._next: tuple[int, str | None, dict[str, Any], int] | None = None
        self._sending: tuple[int, str | None, dict[str, Any]] | None = None
        self._generation = 0
        self._closed = False
        self._broken: BaseException | None = None
        # close() joins this walk's workers by name: those only just started too.
        self._workers = f"stoplist_nb-parse-{next(_WALKS)}"
        ahead = lookahead > 0
        self._pool = (
            ThreadPoolExecutor(workers, self._workers, leave_signals_to_main) if ahead else None
        )
        self._thread = (
            threading.Thread(target=self._fetch, name="stoplist_nb-fetch", daemon=True)
            if ahead
            else None
        )

    def get(
        self, cursor: str | None, body: dict[str, Any], *, fetched: int
    ) -> tuple[Reply, bytes, Prepared | None]:
        """The parsed reply to ``body`` (``fetched`` rows in), its bytes, its prepared rows."""
        if self._pool is None:
            content = self._post(body, None)
            return self._parse(content), content, None
        with self._cond:
            if self._closed:
                raise RuntimeError("the paging walk is closed")
            if self._thread is not None and self._thread.ident is None:
                self._thread.start()  # at the first page: a walk never read starts nothing
            if self._queue and (self._queue[0].from_id, self._queue[0].body) != (cursor, body):
                self._drop()  # a wrong guess: those replies answer other questions
            coming = (self._generation, cursor, body)
            if not self._queue and coming not in (self._sending, self._next and self._next[:3]):
                self._generation += 1  # what is on the wire answers nothing asked
                self._next = (self._generation, cursor, body, fetched)
                self._cond.notify_all()
            while not self._queue and self._broken is None:
                self._cond.wait(_WAKE)
            if not self._queue:
                raise RuntimeError("the fetch thread of the paging walk failed") from self._broken
            head = self._queue[0]
        try:
            if isinstance(head.reply, Exception):
                raise head.reply
            # Taken off the queue once parsed: the page being parsed counts as in flight.
            while not head.reply.done():
                wait([head.reply], _WAKE)
            reply, prepared = head.reply.result()
        finally:
            with self._cond:
                if self._queue and self._queue[0] is head:
                    self._queue.popleft()
                    self._cond.notify_all()  # room for one more page in flight
        return reply, head.content, prepared

    def close(self) -> None:
        """Stop the fetch thread (cutting the request on the wire), cancel parses, join all.

        Each step runs whatever the one before raised (a second Ctrl-C); joins are bounded.
        """
        with self._cond:
            self._closed = True
            self._drop()
            self._cond.notify_all()
        try:
            if self._cut is not None and self._thread is not None:
                self._cut()  # nothing may be sent, or waited for, after this
        finally:
            try:
                if self._pool is not None:
                    self._pool.shutdown(wait=False, cancel_futures=True)
            finally:
                join(self._thread)
                for worker in threading.enumerate():
                    if worker.name.startswith(f"{self._workers}_"):
                        join(worker)

    def _fetch(self) -> None:
        leave_signals_to_main()
        try:
            self._send_all()
        except BaseException as exc:  # a bug: the caller must not wait forever
            with self._cond:
                self._broken = exc
                self._cond.notify_all()
        finally:
            self._start_parses()  # nor for a reply received before it

    def _send_all(self) -> None:
        assert self._pool is not None
        while True:
            with self._cond:
                while not self._closed and (
                    self._next is None or len(self._queue) >= self._in_flight
                ):
                    self._start_parses()  # nothing is sent now: no parse waits for it
                    self._cond.wait()
                if self._closed or self._next is None:
                    return
                generation, cursor, body, fetched = self._next
                self._next, self._sending = None, (generation, cursor, body)
            failure: Exception | None = None
            content = b""
            try:
                content = self._post(body, self._start_parses)
            except Exception as exc:  # raised in the caller's thread, if its page comes up
                failure = exc
            with self._cond:
                self._sending = None
                if self._stopped():  # closed while the request was on the wire
                    return
                if generation != self._generation:
                    self._cond.notify_all()
                    continue  # dropped while on the wire: its reply answers nothing asked
                if failure is not None:
                    self._queue.append(_Sent(cursor, body, b"", failure))
                    self._cond.notify_all()
                    continue  # the caller raises it; nothing follows a failed page
                reply: Future[tuple[Reply, Prepared | None]] = Future()
                self._unparsed.append((reply, content))  # see _start_parses
                self._queue.append(_Sent(cursor, body, content, reply))
                fetched += int(body.get("limit") or 0)
                self._next = self._ahead(cursor, peek_cursor(content), fetched)
                self._cond.notify_all()

    def _stopped(self) -> bool:
        return self._closed  # read afresh (not narrowed): another thread sets it

    def _start_parses(self) -> None:  # the next request is on the wire
        assert self._pool is not None
        with self._cond:  # held while submitting: close() shuts the pool down after it
            unparsed, self._unparsed = self._unparsed, []
            for reply, content in [] if self._closed else unparsed:
                self._pool.submit(_work_into, reply, self._parse, self._prepare, content)

    def _ahead(
        self, cursor: str | None, guess: str | None, fetched: int
    ) -> tuple[int, str | None, dict[str, Any], int] | None:
        """The request plain paging would send after ``cursor``, if ``guess`` is its cursor."""
        if guess is None or guess == cursor:
            return None  # the end, or no cursor in sight: the caller asks, once parsed
        if guess in self._seen or any(sent.from_id == guess for sent in self._queue):
            return None  # plain paging would stop there, on a stalled cursor
        body = self._plan(guess, fetched)
        return None if body is None else (self._generation, guess, body, fetched)

    def _drop(self) -> None:
        self._generation += 1
        self._next = None
        self._unparsed.clear()
        for sent in self._queue:
            if isinstance(sent.reply, Future):
                sent.reply.cancel()
        self._queue.clear()


def _work_into(
    future: Future[tuple[Reply, Prepared | None]],
    parse: Callable[[bytes], Reply],
    prepare: Callable[[pa.Array, bytes], Any] | None,
    content: bytes,
) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        reply, prepared = parse(content), None
        if prepare is not None and reply.data is not None and len(reply.data) > 0:
            made: Future[Any] = Future()  # raised where the page is taken, as if prepared there
            try:
                made.set_result(prepare(reply.data, content))
            except Exception as exc:
                made.set_exception(exc)
            prepared = made.result
        future.set_result((reply, prepared))
    except BaseException as exc:  # the caller's thread raises it when it takes the page
        future.set_exception(exc)
