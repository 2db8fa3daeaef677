"""The retry policy, as urllib3 ``Retry``; ``NON_REPLAYABLE`` methods get :func:`connect_only`."""

from __future__ import annotations

import copy
from types import TracebackType
from typing import Any

from urllib3.exceptions import MaxRetryError, NameResolutionError, ResponseError
from urllib3.util.retry import Retry

from stoplist_nb._http.deadline import current

#: Replies worth another try: rate limit and the gateway/overload family.
RETRY_STATUSES = frozenset({429, 502, 503, 504})

#: API methods that create something, so a replay could create it twice.
NON_REPLAYABLE = frozenset({"suppresses/export"})


class CappedRetry(Retry):
    """urllib3 ``Retry`` that honours ``Retry-After`` up to ``retry_after_cap`` seconds."""

    # Not urllib3's ``retry_after_max`` (2.6.3+ only, an instance attribute).
    retry_after_cap: float = 60.0

    def get_retry_after(self, response: Any) -> float | None:
        seconds = super().get_retry_after(response)
        return None if seconds is None else min(seconds, self.retry_after_cap)


def default_retry() -> Retry:
    """Return the retry policy a :class:`~stoplist_nb.Client` uses by default.

    Five retries, backoff from 0.5 s up to 30 s, on 429/502/503/504
    (``Retry-After`` honoured up to 60 s) and broken connections; the last
    reply is kept, so the service's own error is raised. Whatever the policy,
    ``suppresses/export`` is never sent twice and retrying stops at the deadline.

    Returns:
        A fresh urllib3 ``Retry`` each call: change it with ``.new(...)`` for ``Client(retry=...)``.

    >>> import stoplist_nb as sn
    >>> sn.default_retry().total
    5
    >>> client = sn.Client("https://api.example.com", "secret",
    ...                    retry=sn.default_retry().new(total=10, backoff_max=60))
    """
    # allowed_methods=None: every verb, POST included (these calls are reads).
    return CappedRetry(
        total=5, connect=5, read=2, status=5, other=0, redirect=2, backoff_factor=0.5,
        backoff_max=30.0, status_forcelist=RETRY_STATUSES, allowed_methods=None,
        respect_retry_after_header=True, raise_on_status=False,
    )  # fmt: skip


def connect_only(retry: Retry) -> Retry:
    """The same budget, limited to connections that never carried the request."""
    return retry.new(
        read=0,
        status=0,
        other=0,
        status_forcelist=frozenset(),
        respect_retry_after_header=False,
        allowed_methods=frozenset({"HEAD"}),  # anything but POST; an empty set means "all"
    )


class DeadlineRetry(Retry):
    """A ``Retry`` that stops once the next pause would pass the deadline, or on an unknown host."""

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: TracebackType | None = None,
    ) -> DeadlineRetry:
        if isinstance(error, NameResolutionError):
            raise MaxRetryError(_pool, url or "", error) from error
        new = super().increment(method, url, response, error, _pool, _stacktrace)
        deadline = current()
        pause = None
        if new.respect_retry_after_header and response is not None:
            pause = new.get_retry_after(response)  # what sleep() would wait (urllib3's rule)
        if deadline is not None and (pause or new.get_backoff_time()) >= deadline.remaining():
            reason = error or ResponseError("the deadline leaves no time for another try")
            raise MaxRetryError(_pool, url or "", reason) from reason
        return new


_AWARE: dict[type[Retry], type[Retry]] = {}


def deadline_aware(retry: Retry) -> Retry:
    """The same policy, of a class that also respects the deadline (``.new()`` keeps it)."""
    if isinstance(retry, DeadlineRetry):
        return retry
    cls = type(retry)
    if cls not in _AWARE:
        _AWARE[cls] = type(f"Deadline{cls.__name__}", (DeadlineRetry, cls), {})
    aware = copy.copy(retry)
    aware.__class__ = _AWARE[cls]
    return aware
