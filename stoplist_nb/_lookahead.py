"""Requests of a cursor walk sent ahead on a fetch thread, their replies parsed on workers.

Requests go out one at a time, in the order plain paging would send them, but
never wait for the caller: with ``lookahead > 0`` a fetch thread sends each one
as soon as its cursor is known, read from the previous reply's raw bytes by a
plain text search, and hands the reply to a ``concurrent.futures`` pool of
workers (one per core by default, at most :data:`MAX_WORKERS`) that parse it
(pyarrow releases the GIL while it parses) and, given ``prepare``, flatten its
rows. The caller's thread only takes the results, in order, and checks them.
A reply's parse starts once the next request is on the wire (or at once when
none is to be sent yet): sending takes the GIL for a millisecond or so, and a
parse that starts at the same instant (much of the guards' and the
flattening's work holds the GIL) would hold that request back by up to the
interpreter's switch interval, on every page.
At most ``lookahead + workers`` pages are in flight (received and not yet
taken): one for each worker to parse and ``lookahead`` more, so that every
core has a page when replies come faster than they are parsed, and memory
stays bounded when they come faster than the caller takes them. The fetch
thread waits on a condition, never polls, when that many wait.

That cursor is a guess until the reply is parsed. The walk
(:mod:`stoplist_nb._paging`) is plain paging; :class:`Ahead` answers each of
its requests, from one sent ahead only when that one carried exactly the same
body (cursor, ``limit``, every param), otherwise by dropping those sent ahead
(and the reply on the wire, once it arrives) and having the fetch thread send
it again. So looking ahead changes when pages arrive, never which: at worst it
costs ``lookahead + workers`` requests of a read-only method whose replies are
thrown away.

Closing it stops the fetch thread, cuts the request on the wire short
(``cut``: its socket shut down, no retry), cancels the parses and joins every
thread before it returns: no request is sent after it.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa

from stoplist_nb._checks import check_int
from stoplist_nb._json import Reply
from stoplist_nb._threads import join, leave_signals_to_main

__all__ = [
    "MAX_WORKERS",
    "Ahead",
    "as_cursor",
    "check_threads",
    "default_workers",
    "in_workers",
    "peek_cursor",
]

_KEY = b'"next_from_id"'
_WS = rb"[ \t\r\n]*"
_VALUE = re.compile(_KEY + _WS + b":" + _WS + rb'("(?:[^"\\]|\\.)*"|-?[0-9]+)(?=' + _WS + b"[,}])")
_EMPTY_DATA = re.compile(rb'"data"' + _WS + b":" + _WS + rb"(?:\[" + _WS + rb"\]|null)")

Prepared = Callable[[], Any]
"""What ``prepare`` made of a page's rows: call it for the value (or its exception)."""

Post = Callable[[dict[str, Any], Callable[[], None] | None], bytes]
"""``post(body, sent)``: send one request, call ``sent()`` once it is on the wire."""


# CPython runs signal handlers (Ctrl-C's KeyboardInterrupt, the command line's
# SIGTERM) in the main thread only, and the kernel may hand a process's signal
# to any thread that does not block it (ours do: stoplist_nb._threads; another
# library's may not): one that lands there leaves a caller asleep on a lock
# until the lock is let go, which a held reply may not do for minutes. So the
# caller's waits wake this often (seconds) to let a pending handler run, then
# wait again; they are also woken when a page comes.
_WAKE = 0.25

MAX_WORKERS = 8
"""The most worker threads :func:`default_workers` gives, whatever the cores."""


def check_threads(lookahead: Any, workers: Any) -> None:
    """Refuse a ``lookahead`` below 0 or ``workers`` below 1 (``None``: :func:`default_workers`)."""
    check_int("lookahead", lookahead, minimum=0)
    if workers is not None:
        check_int("workers", workers, minimum=1)


def default_workers() -> int:
    """Worker threads that parse and flatten replies by default: one per core, at most 8.

    >>> 1 <= default_workers() <= MAX_WORKERS
    True
    """
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


# The walk reads a cursor by this same rule: it is here, below both.
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
    guess: str | None  # the next cursor, read from ``content`` before the parse


class Ahead:
    """Replies to the requests of plain paging, with up to ``lookahead`` more sent ahead.

    With ``lookahead > 0`` a fetch thread sends the requests, each as soon as
    its cursor is read from the previous reply's bytes, and hands every reply
    to the workers to be parsed (and prepared); the caller's thread only takes
    the results, in order. ``get`` returns the reply to exactly the request it
    is given: one sent ahead is used only if it asked the same thing (cursor
    and whole body), otherwise every one sent ahead is dropped and the fetch
    thread starts again from the request asked. With ``lookahead=0`` nothing
    is sent ahead and replies are parsed in the caller's thread.
    """

    def __init__(
        self,
        post: Post,
        parse: Callable[[bytes], Reply],
        *,
        lookahead: int,
        plan: Callable[[str | None, int], dict[str, Any] | None],
        seen: set[str],
        workers: int,
        prepare: Callable[[pa.Array, bytes], Any] | None = None,
        cut: Callable[[], None] | None = None,
    ) -> None:
        self._post, self._parse = post, parse
        self._plan, self._seen = plan, seen  # the walk's rules and the cursors it moved to
        self._prepare, self._cut = prepare, cut
        self._queue: deque[_Sent] = deque()
        # Replies received whose parse waits for the next request to be on the wire.
        self._unparsed: list[tuple[Future[tuple[Reply, Prepared | None]], bytes]] = []
        self._in_flight = lookahead + workers  # pages received and not yet taken, at most
        # One lock for the state the two threads share; waits are on it, never a poll.
        self._cond = threading.Condition()
        # The request to send next and the one on the wire, each with its generation,
        # which is bumped when what was sent ahead is dropped.
        self._next: tuple[int, str | None, dict[str, Any], int] | None = None
        self._sending: tuple[int, str | None, dict[str, Any]] | None = None
        self._generation = 0
        self._closed = False
        self._broken: BaseException | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._thread: threading.Thread | None = None
        self._workers: list[threading.Thread] = []  # the pool's, to join them in bounded time
        if lookahead > 0:
            self._pool = ThreadPoolExecutor(workers, "stoplist_nb-parse", self._worker_started)
            self._thread = threading.Thread(target=self._fetch, name="stoplist_nb-fetch")
            self._thread.daemon = True

    def _worker_started(self) -> None:
        leave_signals_to_main()
        self._workers.append(threading.current_thread())

    def get(
        self, cursor: str | None, body: dict[str, Any], *, fetched: int
    ) -> tuple[Reply, bytes, Prepared | None]:
        """The reply to ``body`` (on ``cursor``, ``fetched`` rows in), parsed, its bytes, and
        what ``prepare`` made of its rows (``None`` when it did not run)."""
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

        Each step runs whatever the one before it raised (a second Ctrl-C),
        and each join is bounded (:func:`~stoplist_nb._threads.join`).
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
                for worker in list(self._workers):
                    join(worker)

    def _fetch(self) -> None:
        """The fetch thread: send each request as soon as its cursor is known."""
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
                # Pages in flight are bounded (see the module's text).
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
                    self._queue.append(_Sent(cursor, body, b"", failure, None))
                    self._cond.notify_all()
                    continue  # the caller raises it; nothing follows a failed page
                guess = peek_cursor(content)
                reply: Future[tuple[Reply, Prepared | None]] = Future()
                self._unparsed.append((reply, content))  # see _start_parses
                self._queue.append(_Sent(cursor, body, content, reply, guess))
                self._next = self._ahead(cursor, guess, fetched + int(body.get("limit") or 0))
                self._cond.notify_all()

    def _stopped(self) -> bool:
        """Whether :meth:`close` has run (read afresh: another thread sets it)."""
        return self._closed

    def _start_parses(self) -> None:
        """Hand the replies received to the workers (in the fetch thread, as the next
        request goes on the wire, or before it waits with none to send)."""
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
        """Forget what was sent ahead (the lock held): its replies are thrown away."""
        self._generation += 1
        self._next = None
        self._unparsed.clear()
        for sent in self._queue:
            if isinstance(sent.reply, Future):
                sent.reply.cancel()
        self._queue.clear()


def _work(
    parse: Callable[[bytes], Reply],
    prepare: Callable[[pa.Array, bytes], Any] | None,
    content: bytes,
) -> tuple[Reply, Prepared | None]:
    """A worker's task: parse a reply, then ``prepare`` its rows (its error kept for later)."""
    reply = parse(content)
    if prepare is None or reply.data is None or len(reply.data) == 0:
        return reply, None
    try:
        value = prepare(reply.data, content)
    except Exception as exc:  # raised where the page is taken, as if prepared there
        return reply, partial(_reraise, exc)
    return reply, partial(_identity, value)


def _work_into(
    future: Future[tuple[Reply, Prepared | None]],
    parse: Callable[[bytes], Reply],
    prepare: Callable[[pa.Array, bytes], Any] | None,
    content: bytes,
) -> None:
    """:func:`_work` for a reply the fetch thread received, unless it was dropped since."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(_work(parse, prepare, content))
    except BaseException as exc:  # the caller's thread raises it when it takes the page
        future.set_exception(exc)


def _identity(value: Any) -> Any:
    return value


def _reraise(exc: Exception) -> Any:
    raise exc
