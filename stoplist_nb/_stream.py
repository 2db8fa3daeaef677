"""A stream of pages: an iterator and a context manager that cleans up after itself.

What its pages need (threads, a progress bar) is adopted by its
:class:`Owner` and ended on every path: exhausted, an exception (Ctrl-C too)
in :meth:`Stream.__next__`, ``close()``, ``with``, or dropped half-read.
Closing is bounded in time; a second Ctrl-C during it waits until it ends.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from stoplist_nb._threads import STOPPING

T = TypeVar("T")
U = TypeVar("U")


class Owner:
    """What a stream started, each with the call that ends it."""

    def __init__(self) -> None:
        self._closers: list[Callable[[], object]] = []

    def adopt(self, close: Callable[[], object]) -> None:
        """Have :meth:`close` call ``close`` (the last adopted is ended first)."""
        self._closers.append(close)

    def close(self) -> None:
        """End everything adopted, each once, even when one of them raises."""
        with _signals_held(), contextlib.ExitStack() as stack:
            # ExitStack runs them last first, each even when one before raises.
            for close in self._closers:
                stack.callback(close)
            self._closers.clear()


class Stream(Generic[T]):
    """An iterator that owns what its items need, and ends it on every way out.

    ``source(owner)`` makes the iterator of items (a generator, run only once the
    first item is asked for); what it starts, it hands to ``owner.adopt``.

    >>> with Stream(lambda owner: iter([1, 2, 3])) as numbers:
    ...     next(numbers)
    1
    """

    def __init__(self, source: Callable[[Owner], Iterator[T]], owner: Owner | None = None) -> None:
        self._owner = Owner() if owner is None else owner
        self._source = source(self._owner)
        self._closed = False
        # The backstop, for a stream dropped half-read; it holds the owner, never the stream.
        self._finalizer = weakref.finalize(self, self._owner.close)

    def __iter__(self) -> Stream[T]:
        return self

    def __next__(self) -> T:
        if self._closed:
            raise StopIteration
        try:
            return next(self._source)
        except BaseException:
            self.close()  # before the exception reaches the caller, who may keep it
            raise

    def then(self, make: Callable[[Stream[T], Owner], Iterator[U]]) -> Stream[U]:
        """A stream of ``make(self, owner)``, owning what this one owns (closing it closes both)."""
        return Stream(lambda owner: make(self, owner), self._owner)

    def close(self) -> None:
        """End the stream: stop and join every thread it started; nothing is sent after it."""
        self._closed = True
        try:
            self._owner.close()
        finally:
            if hasattr(self._source, "close"):  # a generator's
                with contextlib.suppress(ValueError):  # raised by the one running now
                    self._source.close()

    def __enter__(self) -> Stream[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """In the main thread, hold the stopping signals Python handles until the block ends."""
    held: list[int] = []
    handlers: dict[int, Any] = {}
    try:
        for signum in STOPPING if threading.current_thread() is threading.main_thread() else ():
            handler = signal.getsignal(signum)
            if callable(handler):
                handlers[signum] = handler
                signal.signal(signum, lambda number, frame: held.append(number))
        yield
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(held):
            handlers[number](number, None)
