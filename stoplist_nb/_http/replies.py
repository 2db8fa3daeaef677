"""What a reply, or the lack of one, means: the envelope check and the typed errors.

Apart from :mod:`stoplist_nb._http.transport`, which sends and receives; here the
service's ``error``/``error_text`` envelope, an HTTP error status and requests'
exceptions become exceptions of :mod:`stoplist_nb.errors`. Every text of the
service is scrubbed of the token (:func:`~stoplist_nb._redact.redact`) before
it goes into one.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

import requests
import urllib3

from stoplist_nb import errors
from stoplist_nb._redact import redact

__all__ = ["check_envelope", "error_from_status", "too_large", "translate"]

# Which foreign error becomes which of ours, most specific first.
_FOREIGN: tuple[tuple[type[BaseException], type[errors.TransportError]], ...] = (
    (requests.exceptions.ConnectTimeout, errors.RequestTimeout),
    (requests.exceptions.ReadTimeout, errors.RequestTimeout),
    (requests.exceptions.ConnectionError, errors.ConnectError),
    (requests.exceptions.ChunkedEncodingError, errors.ConnectError),
    (requests.exceptions.RequestException, errors.TransportError),
)


def _timed_out(exc: BaseException) -> bool:
    """Whether a timeout lies anywhere under ``exc`` (args, reason, cause)."""
    todo: list[Any] = [exc]
    seen: set[int] = set()
    while todo:
        item = todo.pop()
        if id(item) in seen or not isinstance(item, BaseException):
            continue
        seen.add(id(item))
        # urllib3 derives NewConnectionError (refused, unreachable) from its TimeoutError
        if isinstance(item, urllib3.exceptions.TimeoutError | TimeoutError) and not isinstance(
            item, urllib3.exceptions.NewConnectionError
        ):
            return True
        todo.extend([*item.args, getattr(item, "reason", None), item.__cause__])
    return False


def translate(method: str, exc: requests.exceptions.RequestException, base_url: str) -> Exception:
    """Our error for a requests exception (to be raised ``from`` the scrubbed ``exc``)."""
    ours = next(
        (cls for foreign, cls in _FOREIGN if isinstance(exc, foreign)), errors.TransportError
    )
    if _timed_out(exc):  # requests reports read timeouts that exhausted retries as
        ours = errors.RequestTimeout  # ConnectionError(MaxRetryError(ReadTimeoutError))
    what = {
        errors.RequestTimeout: "no reply within the timeout",
        errors.ConnectError: "the connection failed",
    }.get(ours, "the request failed")
    return ours(f"{method}: {what} ({type(exc).__name__}) at {base_url}")


def check_envelope(method: str, envelope: Mapping[str, Any], http_status: int = 200) -> None:
    """Raise the matching :class:`~stoplist_nb.errors.APIError` if ``error`` is non-zero.

    A missing ``error`` counts as success: the contract promises the key, but a
    reply that carries data without it is more useful read than refused. The
    service's ``error_text`` is scrubbed of the token (it may echo the request).
    """
    raw = envelope.get("error", 0)
    try:
        code = int(raw) if raw is not None else 0
    except (TypeError, ValueError):
        raise errors.InvalidReply(f"{method}: 'error' is not a number") from None
    if code == 0 and http_status < 400:
        return
    code = code or http_status
    text = envelope.get("error_text")
    text = redact(str(text)) if text is not None else ""
    raise errors.api_error_class(code)(code, text, method=method, http_status=http_status)


def error_from_status(method: str, response: requests.Response) -> errors.APIError:
    """The error for a 4xx/5xx reply, from its JSON envelope if it has one."""
    status = response.status_code
    envelope: Any = None
    with contextlib.suppress(ValueError, RecursionError):
        envelope = json.loads(response.content)
    if isinstance(envelope, dict) and ("error" in envelope or "error_text" in envelope):
        try:
            check_envelope(method, envelope, status)
        except errors.APIError as exc:
            return exc
    kind = response.headers.get("Content-Type", "").split(";")[0].strip()[:60] or "no"
    reason = (response.reason or "HTTP error")[:200]
    text = redact(f"{reason} ({kind} body, not the API's JSON)")
    return errors.api_error_class(status)(status, text, method=method, http_status=status)


def too_large(size: int, limit: int, *, announced: bool) -> errors.ArchiveTooLarge:
    """The error for a download past ``max_bytes``, saying how to let it through."""
    how = "the service announces" if announced else "more than"
    return errors.ArchiveTooLarge(
        f"download: {how} {size} bytes, over max_bytes={limit}; to accept it, pass a "
        "larger max_bytes (max_size to read_suppression_list), or None for no limit"
    )
