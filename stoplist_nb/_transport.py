"""HTTP for stoplist_nb: session, retries, timeouts, the envelope check.

This is the only module that touches requests and urllib3 errors; it turns
each of them into an exception of :mod:`stoplist_nb.errors` (see ``_FOREIGN``)
and scrubs the API token from the foreign exception before chaining it.

Retries are urllib3's, on an ``HTTPAdapter``, with the policy of
:mod:`stoplist_nb._retrying`; a call that creates something
(``suppresses/export``) goes through a second adapter that only retries
connections that never opened.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from stoplist_nb import errors
from stoplist_nb._redact import Redactor, filter_urllib3_logs
from stoplist_nb._retrying import (
    NON_REPLAYABLE,
    RETRY_STATUSES,
    CappedRetry,
    connect_only,
    default_retry,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "NON_REPLAYABLE",
    "RETRY_STATUSES",
    "CappedRetry",
    "Transport",
    "check_envelope",
    "default_retry",
]

log = logging.getLogger("stoplist_nb")

#: (connect, read) seconds: a notebook cell must never hang forever.
DEFAULT_TIMEOUT: tuple[float, float] = (10.0, 120.0)

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


def check_envelope(method: str, envelope: Mapping[str, Any], http_status: int = 200) -> None:
    """Raise the matching :class:`~stoplist_nb.errors.APIError` if ``error`` is non-zero.

    A missing ``error`` counts as success: the contract promises the key, but a
    reply that carries data without it is more useful read than refused.
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
    text = str(text) if text is not None else ""
    raise errors.api_error_class(code)(code, text, method=method, http_status=http_status)


def _error_from_status(method: str, response: requests.Response) -> errors.APIError:
    """The error for a 4xx/5xx reply, from its JSON envelope if it has one."""
    status = response.status_code
    envelope: Any = None
    with contextlib.suppress(ValueError):
        envelope = json.loads(response.content)
    if isinstance(envelope, dict) and "error" in envelope:
        try:
            check_envelope(method, envelope, status)
        except errors.APIError as exc:
            return exc
    kind = response.headers.get("Content-Type", "").split(";")[0].strip() or "no"
    text = f"{response.reason or 'HTTP error'} ({kind} body, not the API's JSON)"
    return errors.api_error_class(status)(status, text, method=method, http_status=status)


class Transport:
    """A requests session configured for one service and one token."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        timeout: float | tuple[float, float] | None = DEFAULT_TIMEOUT,
        retry: Retry | int | bool = True,
        session: requests.Session | None = None,
        non_replayable: Iterable[str] = NON_REPLAYABLE,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.redact = Redactor(token)
        self._token = token
        if retry is True:
            retry = default_retry()
        elif retry is False:
            retry = Retry(0, read=False, raise_on_status=False)
        elif isinstance(retry, int):
            retry = default_retry().new(total=retry)
        self.retry = retry
        filter_urllib3_logs()
        self.session = session if session is not None else requests.Session()
        self.session.mount(self.base_url + "/", HTTPAdapter(max_retries=retry))
        once = HTTPAdapter(max_retries=connect_only(retry))
        for method in non_replayable:
            self.session.mount(self.method_url(method), once)

    def method_url(self, method: str) -> str:
        return f"{self.base_url}/api/v1.1/{method.strip('/')}"

    def post(self, method: str, params: Mapping[str, Any]) -> bytes:
        """POST ``params`` (with the token) to ``method``; return the body of a 2xx reply.

        The envelope inside the body is left to the caller, which may decode it
        with pyarrow rather than ``json``.
        """
        body = dict(params)
        if self._token is not None:
            body["token"] = self._token
        start = time.perf_counter()
        try:
            response = self.session.post(self.method_url(method), json=body, timeout=self.timeout)
            content = response.content
        except requests.exceptions.RequestException as exc:
            raise self._translate(method, exc) from self.redact.scrub(exc)
        log.debug(
            "POST %s -> HTTP %s, %d bytes in %.3f s",
            method,
            response.status_code,
            len(content),
            time.perf_counter() - start,
        )
        if response.status_code >= 400:
            raise _error_from_status(method, response)
        return content

    def call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """POST and return the checked JSON envelope as a dict."""
        content = self.post(method, params)
        try:
            reply = json.loads(content)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise errors.InvalidReply(
                f"{method}: the reply is not a JSON object ({len(content)} bytes)"
            )
        check_envelope(method, reply)
        return reply

    def _translate(self, method: str, exc: requests.exceptions.RequestException) -> Exception:
        ours = next(
            (cls for foreign, cls in _FOREIGN if isinstance(exc, foreign)), errors.TransportError
        )
        if _timed_out(exc):  # requests reports read timeouts that exhausted retries as
            ours = errors.RequestTimeout  # ConnectionError(MaxRetryError(ReadTimeoutError))
        what = {
            errors.RequestTimeout: "no reply within the timeout",
            errors.ConnectError: "the connection failed",
        }.get(ours, "the request failed")
        return ours(f"{method}: {what} ({type(exc).__name__}) at {self.base_url}")

    def download(
        self,
        path: str,
        out: IO[bytes],
        *,
        on_start: Callable[[int | None], object] = lambda size: None,
        on_chunk: Callable[[int], object] = lambda size: None,
        chunk_size: int = 1 << 20,
    ) -> int:
        """GET ``/api/download/<path>`` into ``out``; return the number of bytes written.

        ``path`` must already be URL-quoted. The token goes both in the query
        (as the contract says) and as a Bearer header (as newer docs prefer);
        the URL carrying it never reaches a message or a log record.

        Raises:
            IncompleteDownload: The body ended before its ``Content-Length``.
        """
        params = {"token": self._token} if self._token else None
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
        written, expected = 0, None
        try:
            with self.session.get(
                f"{self.base_url}/api/download/{path}",
                params=params,
                headers=headers,
                stream=True,
                timeout=self.timeout,
            ) as response:
                if response.status_code >= 400:
                    raise _error_from_status("download", response)
                length = response.headers.get("Content-Length", "")
                encoded = response.headers.get("Content-Encoding", "identity") != "identity"
                expected = int(length) if length.isdigit() and not encoded else None
                on_start(expected)
                try:
                    for chunk in response.iter_content(chunk_size=chunk_size):
                        out.write(chunk)
                        written += len(chunk)
                        on_chunk(len(chunk))
                except requests.exceptions.RequestException as exc:
                    self.redact.scrub(exc)
                    raise errors.IncompleteDownload(
                        f"download: the connection broke after {written} of "
                        f"{expected if expected is not None else 'unknown'} bytes"
                    ) from exc
        except requests.exceptions.RequestException as exc:
            raise self._translate("download", exc) from self.redact.scrub(exc)
        if expected is not None and written != expected:
            raise errors.IncompleteDownload(f"download: {written} of {expected} bytes arrived")
        log.debug("GET download -> %d bytes", written)
        return written

    def close(self) -> None:
        self.session.close()
