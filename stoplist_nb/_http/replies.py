"""What a reply, or its lack, means: the envelope check and the typed errors, token scrubbed."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3

from stoplist_nb import errors
from stoplist_nb._http.addresses import address
from stoplist_nb._redact import exception_chain, redact


def _kind(*kinds: type[BaseException], but: tuple[type[BaseException], ...] = ()) -> _Test:
    return lambda chain: any(isinstance(e, kinds) and not isinstance(e, but) for e in chain)


_Test = Callable[[list[BaseException]], bool]
_NEW = urllib3.exceptions.NewConnectionError
_RESOLVE = (urllib3.exceptions.NameResolutionError, socket.gaierror)
_Row = tuple[_Test, type[errors.TransportError], str, str | None]
_CONNECT, _TIMEOUT = errors.ConnectError, errors.RequestTimeout
_CHECK = "check {var} ({address}), and that this machine may reach it"

# (test of the chain, error, what happened, what to check if no connection opened); first fits.
# The chain, since NewConnectionError is a ConnectTimeoutError, and a read timeout that used
# up the retries is ConnectionError(MaxRetryError(ReadTimeoutError)).
# fmt: off
_TABLE: tuple[_Row, ...] = (
    (_kind(*_RESOLVE), _CONNECT,
     "the host name {host!r} does not resolve (no such name in DNS)",
     "check the host name in {var} ({address})"),
    (_kind(ConnectionRefusedError), _CONNECT,
     "the connection to {address} was refused: nothing listens there",
     "check that the service runs at {address}, the address {var} names"),
    (_kind(urllib3.exceptions.ConnectTimeoutError, requests.exceptions.ConnectTimeout,
           but=(_NEW,)), _TIMEOUT,
     "no connection to {address} within the timeout", _CHECK + " (a firewall, a proxy)"),
    (_kind(_NEW), _CONNECT, "no connection to {address} could be opened", _CHECK),
    (_kind(requests.exceptions.SSLError, ssl.SSLError), _CONNECT,
     "the TLS handshake with {address} failed",
     "check {var}: does {address} speak https, with a certificate this machine trusts?"),
    (_kind(urllib3.exceptions.TimeoutError, TimeoutError, but=(_NEW,)), _TIMEOUT,
     "no reply within the timeout at {url}", None),
    (_kind(ConnectionResetError), _CONNECT, "the connection was reset at {url}", None),
    (_kind(requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError),
     _CONNECT, "the connection failed at {url}", None),
    (lambda chain: True, errors.TransportError, "the request failed at {url}", None),
)
# fmt: on


def _row(exc: BaseException) -> _Row:
    chain = exception_chain(exc)
    return next(row for row in _TABLE if row[0](chain))


def _where(base_url: str) -> dict[str, str]:
    host = urlsplit(base_url).hostname or ""
    return {"address": address(base_url), "host": host, "url": base_url}


def translate(method: str, exc: requests.exceptions.RequestException, base_url: str) -> Exception:
    """Our error for a requests exception (to be raised ``from`` the scrubbed ``exc``)."""
    _, error, words, _ = _row(exc)
    return error(f"{method}: " + words.format(**_where(base_url)))


def what_to_check(exc: BaseException, base_url: str, var: str = "base_url") -> str | None:
    """What to check (naming ``var``) when ``exc`` says no connection opened; else ``None``."""
    cause = exc.__cause__
    if cause is None or not isinstance(exc, errors.TransportError):
        return None
    check = _row(cause)[3]
    return None if check is None else check.format(var=var, **_where(base_url))


def check_envelope(method: str, envelope: Mapping[str, Any], http_status: int = 200) -> None:
    """Raise the matching :class:`~stoplist_nb.errors.APIError` if ``error`` is non-zero.

    A missing ``error`` counts as success: data without it is more useful read than refused.

    >>> check_envelope("profiles/list", {"error": 401, "error_text": "bad token"})
    Traceback (most recent call last):
    stoplist_nb.errors.AuthError: profiles/list: error 401 (bad token)
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
