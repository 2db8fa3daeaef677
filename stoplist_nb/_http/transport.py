"""The only module that sends requests: requests' errors become ours, chained scrubbed of the token.

Redirects are never left to requests, which would carry the token (a 307/308
POST body too) wherever ``Location`` says: only those within the origin are followed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import IO, Any, NoReturn
from urllib.parse import urljoin

import requests
from requests.adapters import BaseAdapter, HTTPAdapter
from urllib3.util.retry import Retry

from stoplist_nb import errors
from stoplist_nb._http.addresses import same_origin, shown
from stoplist_nb._http.deadline import Deadline, running, watch_pools
from stoplist_nb._http.replies import check_envelope, error_from_status, too_large, translate
from stoplist_nb._http.retry import NON_REPLAYABLE, connect_only, deadline_aware, default_retry
from stoplist_nb._redact import Redactor, filter_logs

log = logging.getLogger("stoplist_nb")
log.addHandler(logging.NullHandler())  # silent unless the application configures logging

#: (connect, read) seconds: a notebook cell must never hang forever.
DEFAULT_TIMEOUT: tuple[float, float] = (10.0, 120.0)

#: Seconds one call may take in all, retries and their pauses included.
DEFAULT_DEADLINE = 300.0

#: Bytes per second: each byte a download receives extends its deadline by ``1 / rate`` s.
DEFAULT_MIN_DOWNLOAD_RATE = 16 * 1024

#: Redirects within the base URL's origin followed for one request.
MAX_REDIRECTS = 3


class _Adapter(HTTPAdapter):
    """``HTTPAdapter`` whose connections a deadline can shut down."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        watch_pools(self.poolmanager)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        return watch_pools(super().proxy_manager_for(proxy, **proxy_kwargs))


class Transport:
    """A requests session for one service and token (arguments: see ``Client``)."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        timeout: float | tuple[float, float] | None,
        deadline: float | None,
        min_download_rate: float | None,
        retry: Retry | int | bool,
        session: requests.Session | None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.deadline = deadline
        self.min_download_rate = min_download_rate
        self.redact = Redactor(token)
        # A connection being opened has no socket the deadline could shut down.
        self._timeout: Any = timeout
        if deadline is not None:
            connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
            self._timeout = (deadline if connect is None else min(connect, deadline), read)
        self._token = token
        if retry is True:
            retry = default_retry()
        elif retry is False:
            retry = Retry(0, read=False, raise_on_status=False)
        elif isinstance(retry, int):
            retry = default_retry().new(total=retry)
        retry = deadline_aware(retry)
        filter_logs()
        self._own_session = session is None
        self.session = session if session is not None else requests.Session()
        # (prefix, our adapter, the one it shadows): close() puts a caller's session back.
        self._mounted: list[tuple[str, BaseAdapter, Any]] = []
        self._mount(self.base_url + "/", _Adapter(max_retries=retry))
        # A method that creates something retries only connections that never opened.
        once = _Adapter(max_retries=connect_only(retry))
        for method in NON_REPLAYABLE:
            self._mount(self.method_url(method), once)

    def _mount(self, prefix: str, adapter: BaseAdapter) -> None:
        self._mounted.append((prefix, adapter, self.session.adapters.get(prefix)))
        self.session.mount(prefix, adapter)

    def method_url(self, method: str) -> str:
        return f"{self.base_url}/api/v1.1/{method.strip('/')}"

    def post(self, method: str, params: Mapping[str, Any]) -> bytes:
        """POST ``params`` (with the token) to ``method``; return a 2xx reply's raw body."""
        body = dict(params) if self._token is None else {**params, "token": self._token}
        with running(self.deadline) as deadline:
            try:
                response = self._send("POST", method, self.method_url(method), json=body)
                content = response.content
                if response.status_code >= 400:
                    raise error_from_status(method, response)
            except Exception as exc:
                self._fail(method, deadline, exc)
            self._log(method, response, len(content), deadline)
        return content

    def call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """POST and return the checked JSON envelope as a dict."""
        content = self.post(method, params)
        try:
            reply = json.loads(content)
        except (ValueError, RecursionError):  # json's own guard against deep nesting
            reply = None
        if not isinstance(reply, dict):
            raise errors.InvalidReply(
                f"{method}: the reply is not a JSON object ({len(content)} bytes)"
            )
        check_envelope(method, reply)
        return reply

    def download(
        self,
        path: str,
        out: IO[bytes],
        *,
        on_start: Callable[[int | None], object] = lambda size: None,
        on_chunk: Callable[[int], object] = lambda size: None,
        chunk_size: int = 1 << 16,
        max_bytes: int | None = None,
    ) -> int:
        """GET ``/api/download/<path>`` (URL-quoted) into ``out``; return the bytes written."""
        # The token goes in the query (the contract) and a Bearer header (newer docs).
        token = self._token
        bearer = {"Authorization": f"Bearer {token}"}
        auth: dict[str, Any] = {"params": {"token": token}, "headers": bearer} if token else {}
        url = f"{self.base_url}/api/download/{path}"
        written, expected, started = 0, None, False
        with running(self.deadline) as deadline:
            try:
                with self._send("GET", "download", url, stream=True, **auth) as response:
                    if response.status_code >= 400:
                        raise error_from_status("download", response)
                    length = response.headers.get("Content-Length", "")
                    encoded = response.headers.get("Content-Encoding", "identity") != "identity"
                    expected = int(length) if length.isdigit() and not encoded else None
                    if max_bytes is not None and expected is not None and expected > max_bytes:
                        raise too_large(expected, max_bytes, announced=True)
                    on_start(expected)
                    started = True
                    for chunk in response.iter_content(chunk_size=chunk_size):
                        if max_bytes is not None and written + len(chunk) > max_bytes:
                            raise too_large(written + len(chunk), max_bytes, announced=False)
                        out.write(chunk)
                        written += len(chunk)
                        on_chunk(len(chunk))
                        if self.min_download_rate:
                            deadline.extend(len(chunk) / self.min_download_rate)
            except Exception as exc:
                broke = isinstance(exc, requests.exceptions.RequestException) and started
                if broke and not deadline.passed:
                    of = expected if expected is not None else "unknown"
                    message = f"download: the connection broke after {written} of {of} bytes"
                    self._raise("download", deadline, errors.IncompleteDownload(message), exc)
                self._fail("download", deadline, exc, received=written)
            if expected is not None and written != expected:
                message = f"download: {written} of {expected} bytes arrived"
                self._raise("download", deadline, errors.IncompleteDownload(message))
            self._log("download", response, written, deadline)
        return written

    def close(self) -> None:
        """Close a session made here; give a caller's session back as it came."""
        if self._own_session:
            self.session.close()
            return
        adapters = self.session.adapters
        for prefix, adapter, before in reversed(self._mounted):
            if adapters.get(prefix) is adapter:
                if before is None:
                    del adapters[prefix]
                else:
                    self.session.mount(prefix, before)
        for adapter in {id(a): a for _, a, _ in self._mounted}.values():
            adapter.close()
        self._mounted.clear()

    def _send(self, verb: str, what: str, url: str, **kwargs: Any) -> requests.Response:
        """Send one request, following redirects within the origin (a POST only on 307/308)."""
        hop = 0
        while True:
            response = self.session.request(
                verb, url, allow_redirects=False, timeout=self._timeout, **kwargs
            )
            status = response.status_code
            if not 300 <= status < 400:
                return response
            response.close()
            location = response.headers.get("Location")
            if location is None:
                raise errors.InvalidReply(f"{what}: an HTTP {status} reply with no Location")
            url = urljoin(response.url or url, location)
            if not same_origin(url, self.base_url):
                raise errors.InvalidReply(
                    f"{what}: the service redirects (HTTP {status}) to another origin, "
                    f"{shown(url)}; not followed, so the token stays with {shown(self.base_url)}. "
                    "If that is the service's address, use it as base_url"
                )
            if verb != "GET" and status not in (307, 308):  # the API serves no GET
                raise errors.InvalidReply(
                    f"{what}: the service redirects (HTTP {status}) to {shown(url)} "
                    "with a GET, which the API does not serve; not followed"
                )
            if hop >= MAX_REDIRECTS:
                raise errors.InvalidReply(f"{what}: more than {MAX_REDIRECTS} redirects")
            hop += 1
            extra = {"api_method": what, "http_status": status}
            message = "%s %s -> HTTP %d, redirect to %s followed"
            log.debug(message, verb, what, status, shown(url), extra=extra)

    def _fail(
        self, what: str, deadline: Deadline, exc: Exception, *, received: int = 0
    ) -> NoReturn:
        if deadline.passed and not isinstance(exc, errors.ArchiveTooLarge):
            if what != "download":
                message = (
                    f"{what}: no complete reply within the deadline of {deadline.seconds:g} s, "
                    "retries included (Client(deadline=...) sets it)"
                )
            else:
                rate = self.min_download_rate
                earned = f", plus 1 s per {rate:g} bytes received" if rate else ""
                message = (
                    "download: not complete within the deadline of "
                    f"{deadline.expires_at - deadline.start:.1f} s ({deadline.seconds:g} s"
                    f"{earned}; {received} bytes arrived). "
                    "Client(deadline=..., min_download_rate=...) sets it"
                )
            self._raise(what, deadline, errors.RequestTimeout(message), exc)
        if isinstance(exc, errors.StoplistError):
            self._raise(what, deadline, exc)
        if isinstance(exc, requests.exceptions.RequestException):
            self._raise(what, deadline, translate(what, exc, self.base_url), exc)
        raise exc

    def _raise(
        self, what: str, deadline: Deadline, error: Exception, cause: Exception | None = None
    ) -> NoReturn:
        status, elapsed = getattr(error, "http_status", None), deadline.elapsed()
        name, verb = type(error).__name__, "GET" if what == "download" else "POST"
        extra = {"api_method": what, "http_status": status, "elapsed": elapsed, "error": name}
        http = f" (HTTP {status})" if status is not None else ""
        log.debug("%s %s failed after %.3f s: %s%s", verb, what, elapsed, name, http, extra=extra)
        if cause is None:
            raise error
        raise error from self.redact.scrub(cause)

    def _log(self, what: str, response: requests.Response, size: int, deadline: Deadline) -> None:
        retries = getattr(response.raw, "retries", None)
        status, elapsed = response.status_code, deadline.elapsed()
        verb = "GET" if what == "download" else "POST"
        extra = {"api_method": what, "http_status": status, "nbytes": size, "elapsed": elapsed}
        extra["attempts"] = attempts = 1 + len(getattr(retries, "history", ()) or ())
        message = "%s %s -> HTTP %d, %d bytes in %.3f s, attempt %d"
        log.debug(message, verb, what, status, size, elapsed, attempts, extra=extra)
