"""Scriptable faults: misbehaviour the demo service shows on demand, for tests.

A fault is queued for one API method (or ``"*"`` for any) and fires for the next
``times`` requests of that method, in the order the faults were added.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Literal, get_args

__all__ = ["REPLACING", "Fault", "FaultKind", "FaultQueue"]

# The kinds that take the place of the endpoint's reply, and the quirks of paging.
Replacing = Literal["status", "html", "malformed", "api_error", "raw", "reset"]
_Paging = Literal["stall", "decoy", "ignore_limit", "no_cursor", "opaque_cursor", "cycle"]
FaultKind = Literal[Replacing, "slow", "trickle", "truncate", _Paging]
FAULT_KINDS: frozenset[str] = frozenset(get_args(FaultKind))
REPLACING: frozenset[str] = frozenset(get_args(Replacing))
_PAGING_KINDS: frozenset[str] = frozenset(get_args(_Paging))


@dataclass
class Fault:
    """One scripted misbehaviour; queue it with ``DemoService.add_fault``.

    Attributes:
        method: API method it applies to, e.g. ``"profiles/list"``, ``"download"``
            for ``GET /api/download/...``, or ``"*"`` for any.
        kind: What happens instead of the normal reply: ``"status"`` (an HTTP error
            status with the JSON envelope), ``"html"`` (an nginx error page),
            ``"malformed"`` (HTTP 200 with cut JSON), ``"api_error"`` (HTTP 200 with a
            non-zero ``error``), ``"raw"`` (exactly ``status`` (200), ``headers`` and the
            body ``body``, or ``text`` as UTF-8), ``"reset"`` (the connection is reset
            without a reply). What happens to the normal reply: ``"slow"`` (sent after
            ``delay`` seconds), ``"trickle"`` (sent one byte every ``delay`` seconds),
            ``"truncate"`` (its full ``Content-Length``, half its body, then the
            connection closes). Quirks of ``profiles/list`` paging: ``"stall"``
            (``next_from_id`` repeats the request's ``from_id``), ``"decoy"``
            (``next_from_id`` before ``data``, and every row has a field of that name
            holding the first row's id), ``"ignore_limit"`` (pages of ``size``
            profiles, default twice the asked ``limit``), ``"no_cursor"`` (no
            ``next_from_id`` key at all), ``"opaque_cursor"`` (``next_from_id`` is the
            last id with ``"~"`` after it: it works as ``from_id`` but is no id) and
            ``"cycle"`` (``next_from_id`` is ``cursor`` on a page with rows).
        times: Requests it fires for; ``None`` for every request.
        status: HTTP status of ``"status"`` (default 503) and ``"html"`` (502).
        retry_after: ``Retry-After`` header (seconds, or any raw string) of
            ``"status"`` and ``"html"``.
        delay: Seconds ``"slow"`` waits (default 2.0), or ``"trickle"`` waits between
            two bytes (0.2).
        code: The envelope's ``error`` of ``"status"`` (default: the status) and
            ``"api_error"`` (500).
        text: The envelope's ``error_text``; the message of ``"html"``; the raw body of
            ``"malformed"`` and ``"raw"``.
        after: Requests of the method let through untouched before it fires.
        body: The raw body of ``"raw"`` as bytes (wins over ``text``).
        headers: Extra reply headers of ``"raw"`` (e.g. ``{"Location": ...}``).
        size: Profiles per page of ``"ignore_limit"``, ``"no_cursor"``,
            ``"opaque_cursor"`` and ``"cycle"`` (which then ignore ``limit`` too).
        cursor: The ``next_from_id`` of ``"cycle"`` (required for it): a ``from_id``
            the pull has been at.
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
        self.headers = dict(self.headers) if self.headers else None  # the caller's, copied
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
            for key in (method, "*"):
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
