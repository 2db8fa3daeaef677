"""Scriptable faults: misbehaviour the demo service shows on demand, for tests.

A fault is queued for one API method (or ``"*"`` for any) and fires for the next
``times`` requests of that method; faults of one method fire in the order they were
added.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Literal, get_args

__all__ = ["Fault", "FaultKind", "FaultQueue"]

FaultKind = Literal[
    "status",
    "html",
    "malformed",
    "api_error",
    "raw",
    "slow",
    "trickle",
    "stall",
    "decoy",
    "reset",
    "truncate",
    "ignore_limit",
    "no_cursor",
    "opaque_cursor",
    "cycle",
]
FAULT_KINDS: frozenset[str] = frozenset(get_args(FaultKind))
ANY_METHOD = "*"
#: Kinds that change the answer of ``profiles/list`` and make no sense elsewhere.
_PAGING_KINDS = frozenset({"stall", "decoy", "ignore_limit", "no_cursor", "opaque_cursor", "cycle"})


@dataclass
class Fault:
    """One scripted misbehaviour.

    Attributes:
        method: API method it applies to, e.g. ``"profiles/list"``, ``"download"``
            for ``GET /api/download/...``, or ``"*"``.
        kind: What happens: ``"status"`` (an HTTP error status with the JSON envelope),
            ``"html"`` (an HTML error page), ``"malformed"`` (HTTP 200 with broken JSON),
            ``"api_error"`` (HTTP 200 with a non-zero ``error``), ``"raw"`` (exactly
            ``status`` (default 200), ``headers`` and the body ``text``, as UTF-8, or
            ``body``, as bytes), ``"slow"`` (the normal reply after ``delay`` seconds),
            ``"trickle"`` (the normal reply, one byte every ``delay`` seconds, default
            0.2), ``"stall"`` (``profiles/list`` answers but
            ``next_from_id`` repeats the request's ``from_id``), ``"decoy"``
            (``profiles/list`` answers with ``next_from_id`` before ``data``, and every
            row has a field of that name holding the first row's id), ``"reset"`` (the
            connection is reset without a reply) or ``"truncate"`` (the normal reply's
            headers with its full ``Content-Length``, half its body, then the
            connection closes). Quirks of ``profiles/list`` paging, each on the normal
            reply: ``"ignore_limit"`` (pages of ``size`` profiles, default twice the
            asked ``limit``, whatever ``limit`` says), ``"no_cursor"`` (no
            ``next_from_id`` key at all, whatever the page holds), ``"opaque_cursor"``
            (``next_from_id`` is the last profile's id with ``"~"`` after it: a cursor
            that works as ``from_id`` but is not a profile id) and ``"cycle"``
            (``next_from_id`` is ``cursor``, a ``from_id`` the pull has been at, on a
            page with rows).
        times: Number of requests it fires for; ``None`` for every request.
        after: Requests of the method it lets through untouched before it fires.
        status: HTTP status for ``"status"`` (default 503) and ``"html"`` (default 502).
        retry_after: Value of a ``Retry-After`` header (seconds, or any raw string) for
            ``"status"`` and ``"html"``.
        delay: Seconds ``"slow"`` waits (default 2.0), or ``"trickle"`` waits between
            two bytes (default 0.2).
        code: The envelope's ``error`` for ``"status"`` (default: the status) and
            ``"api_error"`` (default 500).
        text: The envelope's ``error_text``; for ``"html"`` the page's message; for
            ``"malformed"`` and ``"raw"`` the raw body to send instead of truncated JSON.
        body: The raw body of ``"raw"`` as bytes (wins over ``text``).
        headers: Extra reply headers for ``"raw"`` (e.g. ``{"Location": ...}``).
        size: Profiles per page of ``"ignore_limit"`` (default: twice the ``limit`` asked),
            or of ``"no_cursor"``, ``"opaque_cursor"`` and ``"cycle"`` (default: as asked),
            which so ignore ``limit`` too.
        cursor: The ``next_from_id`` a ``"cycle"`` answers with (required for it).
        fired: How many requests it has fired for so far.
    """

    method: str
    kind: FaultKind
    times: int | None = 1
    status: int | None = None
    retry_after: int | str | None = None
    delay: float | None = None
    code: int | None = None
    text: str | None = None
    after: int = 0
    body: bytes | None = None
    headers: dict[str, str] | None = None
    size: int | None = None
    cursor: str | None = None
    fired: int = field(default=0, init=False)
    passed: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; use one of {sorted(FAULT_KINDS)}")
        if not isinstance(self.method, str) or not self.method:
            raise ValueError("method must be an API method name such as 'profiles/list' or '*'")
        if self.kind in _PAGING_KINDS and self.method != "profiles/list":
            raise ValueError(f"a {self.kind!r} fault applies to 'profiles/list' only")
        if self.size is not None and (
            isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1
        ):
            raise ValueError(f"size must be a positive int, got {self.size!r}")
        if self.size is not None and self.kind not in _PAGING_KINDS - {"stall", "decoy"}:
            raise ValueError(f"size applies to paging quirks, not to a {self.kind!r} fault")
        if self.kind == "cycle" and (not isinstance(self.cursor, str) or not self.cursor):
            raise ValueError("a 'cycle' fault needs cursor=, the from_id it goes back to")
        if self.times is not None and (isinstance(self.times, bool) or self.times < 1):
            raise ValueError(f"times must be a positive int or None, got {self.times!r}")
        if self.status is not None and not 100 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP status code, got {self.status!r}")
        if self.delay is not None and self.delay < 0:
            raise ValueError(f"delay must not be negative, got {self.delay!r}")
        if isinstance(self.after, bool) or not isinstance(self.after, int) or self.after < 0:
            raise ValueError(f"after must be a whole number >= 0, got {self.after!r}")

    @property
    def remaining(self) -> int | None:
        """Requests it will still fire for (``None``: unlimited)."""
        return None if self.times is None else self.times - self.fired


class FaultQueue:
    """FIFO queues of faults per method; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Fault]] = {}

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._queues.setdefault(fault.method, deque()).append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._queues.clear()

    def take(self, method: str) -> Fault | None:
        """The fault the next request of ``method`` gets, counted as fired."""
        with self._lock:
            # A fault for the method itself wins over a catch-all one.
            for key in (method, ANY_METHOD):
                queue = self._queues.get(key)
                if queue:
                    fault = queue[0]
                    if fault.passed < fault.after:
                        fault.passed += 1
                        return None
                    fault.fired += 1
                    if fault.remaining == 0:
                        queue.popleft()
                    return fault
        return None
