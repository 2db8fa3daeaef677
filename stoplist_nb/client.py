"""The API client: one call, the cursor paging of raw pages (Arrow rows), a download."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any
from urllib.parse import unquote

import requests
from urllib3.util.retry import Retry

from stoplist_nb import errors
from stoplist_nb._atomic import Output
from stoplist_nb._checks import check_int, check_number
from stoplist_nb._http.addresses import address_fault, safe_download_path, secret_in_address
from stoplist_nb._http.deadline import Exchanges, settle
from stoplist_nb._http.replies import check_envelope
from stoplist_nb._http.transport import (
    DEFAULT_DEADLINE,
    DEFAULT_MIN_DOWNLOAD_RATE,
    DEFAULT_TIMEOUT,
    Transport,
)
from stoplist_nb._json.reader import Reply, read_reply
from stoplist_nb._lookahead import check_threads
from stoplist_nb._paging import DEFAULT_LOOKAHEAD, Page, walk
from stoplist_nb._redact import redact
from stoplist_nb._stream import Owner, Stream
from stoplist_nb._threads import Bar

__all__ = ["Client", "Page"]


class Client:
    """A connection to one Altcraft Platform API v1.1 service.

    Args:
        base_url: The service address (``"https://api.example.com"``): no user
            name, password or query, the token goes in ``token``.
        token: The API token, sent in each call's body and never shown.
        timeout: Seconds each socket operation may wait: ``(connect, read)`` or one.
        deadline: Seconds one call may take in all, retries, pauses and
            redirects included (``RequestTimeout`` past it); ``None``: none.
        min_download_rate: A download earns one second past ``deadline`` per
            this many bytes received (default 16 KiB); ``None``: none.
        retry: A urllib3 ``Retry``, a number of retries, ``True`` for
            :func:`~stoplist_nb.default_retry` or ``False``.
        session: A ``requests.Session`` (proxies, certificates). It stays
            yours: :meth:`close` unmounts the client's adapters, leaving it open.

    >>> client = Client("https://api.example.com", "secret")
    >>> client
    Client('https://api.example.com')
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float | tuple[float, float] | None = DEFAULT_TIMEOUT,
        deadline: float | None = DEFAULT_DEADLINE,
        min_download_rate: float | None = DEFAULT_MIN_DOWNLOAD_RATE,
        retry: Retry | int | bool = True,
        session: requests.Session | None = None,
    ) -> None:
        fault = address_fault(base_url)
        if fault == "secret":
            raise secret_in_address("base_url", "the token goes in token=")
        if fault is not None:
            raise errors.InvalidInput("base_url must be an http:// or https:// address")
        if token is not None and (not isinstance(token, str) or not token.strip()):
            raise errors.InvalidInput("token must be a non-empty string (or None)")
        check_number("deadline", deadline, none=True)
        check_number("min_download_rate", min_download_rate, none=True)
        self._transport = Transport(
            base_url, token, timeout, deadline, min_download_rate, retry, session
        )

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    @property
    def session(self) -> requests.Session:
        return self._transport.session

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connections the client opened (a session passed in is left open)."""
        self._transport.close()

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Call ``method`` (after ``/api/v1.1/``) with ``params`` (no token) and return the reply.

        >>> client.call("tasks/status", task_id="42")  # doctest: +SKIP
        {'data': {'status': 'completed', 'progress': 100, ...}, 'error': 0, ...}
        """
        _check_method(method, params)
        return self._transport.call(method, params)

    def pages(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        from_id: str | None = None,
        max_rows: int | None = None,
        lookahead: int = DEFAULT_LOOKAHEAD,
        seen: Iterable[str] = (),
        workers: int | None = None,
        prepare: Callable[[Any, bytes], Any] | None = None,
    ) -> Stream[Page]:
        """Walk a cursor endpoint (``from_id``, ``next_from_id``) page by page, to an empty page.

        The stream joins its threads however it ends; its errors carry ``resume_from``;
        a cursor that stays is ``CursorStalled``. ``from_id``, ``lookahead``, ``workers``:
        as in :class:`~stoplist_nb.ProfilesRequest`.

        Args:
            method: The method, e.g. ``"profiles/list"``.
            params: The body of every request; its ``limit`` is the page size.
            max_rows: Stop after this many rows (a longer page is cut where its cursor allows).
            seen: Cursors an earlier walk of the list was at (a return is a stall).
            prepare: ``prepare(rows, content)`` in a worker on each page (:meth:`Page.prepared`).

        >>> pages = client.pages("profiles/list", {"db_id": 1, "limit": 500})  # doctest: +SKIP
        >>> sum(len(page) for page in pages)  # doctest: +SKIP
        2000
        """
        _check_method(method, params)
        check_threads(lookahead, workers)
        exchanges = Exchanges()

        def post(body: dict[str, Any], sent: Callable[[], None] | None = None) -> bytes:
            # Closing the walk cuts the exchange of the fetch thread short.
            with exchanges.tracking(sent):
                return self._transport.post(method, body)

        owner = Owner()
        owner.adopt(settle)  # the last thing a closed stream ends: the deadline's watchdog
        return walk(
            post,
            partial(_parse_page, method),
            method,
            params,
            from_id=from_id,
            max_rows=max_rows,
            lookahead=lookahead,
            seen=seen,
            workers=workers,
            prepare=prepare,
            cut=exchanges.cut,
            owner=owner,
        )

    def download(
        self,
        path: str,
        dest: str | os.PathLike[str] | None = None,
        *,
        progress: bool = True,
        max_bytes: int | None = None,
        overwrite: bool = False,
    ) -> pathlib.Path:
        """Download ``/api/download/<path>`` to a file, named only once complete (or not at all).

        Args:
            path: Relative to ``/api/download/`` as a task result gives it,
                or the same file as ``/api/download/...`` or a URL on this origin.
            dest: A file, or a directory for the file under its own name
                (default: the current directory).
            progress: Show a byte progress bar.
            max_bytes: Raise once the file would exceed this many bytes (``None``: no limit).
            overwrite: Replace a file already at the target.

        Raises:
            UnsafePath: ``path`` leaves ``/api/download/`` of this origin.
            OutputExists: A file is at the target and ``overwrite`` is false.
            IncompleteDownload: The body ended before its announced length.
            ArchiveTooLarge: The file exceeds ``max_bytes``.

        >>> client.download("suppress/1f0c/My list.md5.zip", "exports/")  # doctest: +SKIP
        PosixPath('exports/My list.md5.zip')
        """
        quoted = safe_download_path(path, base_url=self.base_url)
        if max_bytes is not None:
            check_int("max_bytes", max_bytes, minimum=0)
        target = self.download_target(path, dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        with Output(target, overwrite=overwrite) as output:
            part = output.temporary("part")
            new_bar = partial(Bar, unit="B", unit_scale=True, unit_divisor=1024)
            with open(part, "wb") as file, new_bar(desc=target.name, disable=not progress) as bar:
                self._transport.download(
                    quoted, file, on_start=bar.reset, on_chunk=bar.update, max_bytes=max_bytes
                )
            return output.put(part)

    def download_target(
        self, path: str, dest: str | os.PathLike[str] | None = None
    ) -> pathlib.Path:
        """Where :meth:`download` writes ``path`` for ``dest`` (a directory if it ends in ``/``).

        >>> client.download_target("suppress/1f0c/My%20list.md5.zip", "exports/")  # doctest: +SKIP
        PosixPath('exports/My list.md5.zip')
        """
        quoted = safe_download_path(path, base_url=self.base_url)
        name = redact(unquote(quoted.rsplit("/", 1)[-1]))
        target = pathlib.Path(dest) if dest is not None else pathlib.Path.cwd()
        if target.is_dir() or (dest is not None and str(dest).endswith(("/", os.sep))):
            target = target / name
        return target


def _parse_page(method: str, content: bytes) -> Reply:
    try:
        reply = read_reply(content)
    except ValueError as exc:
        raise errors.InvalidReply(f"{method}: {exc} ({len(content)} bytes)") from None
    check_envelope(method, reply.envelope)
    if "data" in reply.envelope:
        # Only a list is a page; null or no data at all is an empty one (the end).
        data = reply.envelope["data"]  # an object, a string, a boolean or a number
        kind = {dict: "an object", str: "a string", bool: "a boolean"}.get(type(data), "a number")
        raise errors.InvalidReply(
            f"{method}: 'data' is {kind}, not a list of rows ({len(content)} bytes)"
        )
    return reply


def _check_method(method: str, params: Mapping[str, Any]) -> None:
    if not isinstance(method, str) or not method.strip("/") or "?" in method:
        raise errors.InvalidInput(
            f"method must be an API method name like 'profiles/list', not {method!r}"
        )
    if "token" in params:
        raise errors.InvalidInput("pass the token to Client(), not as a parameter")
