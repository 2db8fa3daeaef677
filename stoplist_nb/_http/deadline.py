"""An overall deadline for one HTTP exchange: a watchdog thread shuts its sockets down once due.

requests' timeouts bound each socket operation, not the exchange; the retry
policy asks :func:`current` before each attempt.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.poolmanager import pool_classes_by_scheme

from stoplist_nb._threads import join, leave_signals_to_main

_CURRENT: ContextVar[Deadline | None] = ContextVar("stoplist_nb_deadline", default=None)


class Deadline:
    """The time limit of one exchange (``None``: none), and the connections it has used."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.start = time.monotonic()
        self.expires_at = math.inf if seconds is None else self.start + seconds
        self.fired = False
        self.closed = False
        self._connections: list[Any] = []
        self._lock = threading.Lock()

    def remaining(self) -> float:
        return self.expires_at - time.monotonic()

    @property
    def passed(self) -> bool:
        return self.fired or self.remaining() <= 0

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def extend(self, seconds: float) -> None:
        with self._lock:
            if not self.fired:
                self.expires_at += seconds

    def watch(self, connection: Any) -> bool:
        """Count ``connection`` among those a cut shuts down; return whether it fired already."""
        with self._lock:
            if not self.closed and all(c is not connection for c in self._connections):
                self._connections.append(connection)
            return self.fired

    def cut(self, *, due: bool = False) -> None:
        """End the exchange now (``due``: only if its time has passed): shut down its sockets."""
        with self._lock:
            now = time.monotonic()
            if self.closed or (due and (self.fired or now < self.expires_at)):
                return
            self.fired = True
            self.expires_at = min(self.expires_at, now)  # no retry, no pause
            connections = list(self._connections)
        for connection in connections:
            # A connection back in the pool may already serve another exchange.
            if getattr(connection, "stoplist_deadline", None) is self:
                _shut_down(connection)

    def close(self) -> None:
        """End the exchange: the watchdog forgets it and touches its connections no more."""
        with self._lock:
            self.closed = True
            self._connections.clear()


def _shut_down(connection: Any) -> None:
    sock = getattr(connection, "sock", None)
    # TLS inside a TLS proxy tunnel wraps the socket once more (urllib3's SSLTransport).
    while sock is not None and not isinstance(sock, socket.socket):
        sock = getattr(sock, "socket", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            # SSLSocket.shutdown would also drop its SSL object under the reading thread.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Watchdog:
    """One daemon thread that cuts deadlines as they pass; it ends once idle (or :meth:`settle`)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: set[Deadline] = set()  # the exchanges running now
        self._thread: threading.Thread | None = None
        self._settling = False

    def arm(self, deadline: Deadline) -> None:
        with self._cond:
            self._armed.add(deadline)
            self._settling = False
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="stoplist_nb-deadline", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def disarm(self, deadline: Deadline) -> None:
        with self._cond:
            self._armed.discard(deadline)
            if not self._armed:
                self._cond.notify()

    def settle(self) -> None:
        """End the thread now if no exchange runs, and wait for it (bounded)."""
        with self._cond:
            if self._armed or self._thread is None:
                return
            thread, self._settling = self._thread, True
            self._cond.notify()
        join(thread)

    def _run(self) -> None:
        leave_signals_to_main()
        while True:
            with self._cond:
                due = self._next_due()
                if due is None:
                    self._thread, self._settling = None, False
                    return
            due.cut(due=True)  # not if it was extended meanwhile

    def _next_due(self) -> Deadline | None:  # the lock held
        while True:
            if not self._armed:
                self._cond.wait_for(lambda: self._armed or self._settling, _IDLE_SECONDS)
                if not self._armed:
                    return None
                continue
            waiting = [d for d in self._armed if not (d.fired or d.closed)]
            if not waiting:
                self._cond.wait()
                continue
            due = min(waiting, key=lambda d: d.expires_at)
            if (wait := due.expires_at - time.monotonic()) <= 0:
                return due
            self._cond.wait(wait)


#: How long the watchdog's thread outlives the last exchange (the next one may follow soon).
_IDLE_SECONDS = 1.0

_WATCHDOG = _Watchdog()
if hasattr(os, "register_at_fork"):  # a forked child has no watchdog thread, maybe a held lock
    os.register_at_fork(after_in_child=lambda: _Watchdog.__init__(_WATCHDOG))


class Exchanges:
    """The exchanges one thread runs (under :meth:`tracking`), which another may :meth:`cut`.

    >>> exchanges = Exchanges()
    >>> exchanges.cut()
    >>> with exchanges.tracking(), running(None) as deadline:
    ...     deadline.passed
    True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: Deadline | None = None
        self._cut = False
        self._sent: Callable[[], None] | None = None

    @contextlib.contextmanager
    def tracking(self, sent: Callable[[], None] | None = None) -> Iterator[None]:
        """Track this thread's exchanges; ``sent()`` once one is on the wire, or at the end."""
        token = _EXCHANGES.set(self)
        self._sent = sent
        try:
            yield
        finally:
            _EXCHANGES.reset(token)
            self._on_the_wire()

    def _on_the_wire(self) -> None:
        sent, self._sent = self._sent, None
        if sent is not None:
            sent()

    def cut(self) -> None:
        """End the exchange running now, and every later one as it starts."""
        with self._lock:
            self._cut = True
            current = self._current
        if current is not None:
            current.cut()

    def _started(self, deadline: Deadline | None) -> None:
        with self._lock:
            self._current = deadline
            cut = self._cut
        if cut and deadline is not None:
            deadline.cut()


_EXCHANGES: ContextVar[Exchanges | None] = ContextVar("stoplist_nb_exchanges", default=None)


settle = _WATCHDOG.settle
#: The deadline of the exchange running in this thread, if any.
current = _CURRENT.get


@contextlib.contextmanager
def running(seconds: float | None) -> Iterator[Deadline]:
    """Run an exchange under a deadline of ``seconds`` (``None``: none)."""
    deadline = Deadline(seconds)
    if seconds is not None:
        _WATCHDOG.arm(deadline)
    token = _CURRENT.set(deadline)
    exchanges = _EXCHANGES.get()
    if exchanges is not None:
        exchanges._started(deadline)
    try:
        yield deadline
    finally:
        if exchanges is not None:
            exchanges._started(None)
        _CURRENT.reset(token)
        deadline.close()
        if seconds is not None:
            _WATCHDOG.disarm(deadline)


def _watch(connection: Any) -> None:
    deadline = connection.stoplist_deadline = _CURRENT.get()
    if deadline is not None and deadline.watch(connection):
        _shut_down(connection)


class _Watched:
    """Puts each request's connection under the deadline of the exchange it serves."""

    stoplist_deadline: Deadline | None = None

    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch(self)
        super().request(*args, **kwargs)  # type: ignore[misc]

    def getresponse(self) -> Any:
        _watch(self)  # the socket may have opened since request(): a passed deadline shuts it
        exchanges = _EXCHANGES.get()
        if exchanges is not None:
            exchanges._on_the_wire()
        return super().getresponse()  # type: ignore[misc]


_WATCHED_POOLS = {
    scheme: type(
        f"Watched{pool.__name__}", (pool,), {"ConnectionCls": type("Watched", (_Watched, conn), {})}
    )
    for scheme, pool, conn in (
        ("http", HTTPConnectionPool, HTTPConnection),
        ("https", HTTPSConnectionPool, HTTPSConnection),
    )
}


def watch_pools(manager: Any) -> Any:
    """Make the standard pools ``manager`` creates use connections a deadline can shut down."""
    if getattr(manager, "pool_classes_by_scheme", None) is pool_classes_by_scheme:
        manager.pool_classes_by_scheme = _WATCHED_POOLS
    return manager
