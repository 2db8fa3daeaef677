"""The demo service object: data set, credentials, server thread, faults and log."""

from __future__ import annotations

import contextlib
import copy
import secrets
import threading
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from stoplist_nb.demo._api import Backend
from stoplist_nb.demo._controls import ExportControls
from stoplist_nb.demo._data import generate_profiles
from stoplist_nb.demo._faults import Fault, FaultKind, FaultQueue
from stoplist_nb.demo._server import DemoHTTPServer, RequestRecord
from stoplist_nb.demo._suppress import DEFAULT_SUPPRESS_ID, DEFAULT_SUPPRESS_NAME
from stoplist_nb.demo._tasks import ExportStore

if TYPE_CHECKING:  # only for the annotation: the demo must not import the client at run time
    from stoplist_nb.client import Client

__all__ = ["DEFAULT_PROFILES", "DemoService", "serve"]

#: The size of the demo data set wherever none is named: ``python -m stoplist_nb.demo``,
#: ``stoplist-nb demo`` and ``connect(demo=True)`` read the same 2000 profiles.
DEFAULT_PROFILES = 2000

# Short enough that stop() returns promptly (shutdown waits for one poll).
_POLL_INTERVAL = 0.05


class DemoService(ExportControls):
    """A local implementation of the API, served over real HTTP on loopback.

    Args:
        profiles: Number of profiles to generate, or the profiles themselves (each a
            dict with a unique string ``"id"``).
        seed: Seed for :func:`generate_profiles`.
        token: API token the service accepts; a random one when ``None``.
        host: Address to listen on.
        port: Port to listen on; 0 lets the system pick a free one.
        db_id: Id of the one database the service knows.
        http_errors: Answer API errors with the HTTP status equal to the error code
            (``True``) or always with HTTP 200 (``False``).
        suppress_id: Id of the one suppression list ``suppresses/export`` knows.
        suppress_name: Its name, which names the exported ``<name>.md5.zip``.
        suppressed: Its contacts as ``{"emails": [...], "phones": [...], "domains":
            [...]}`` (missing keys are empty); by default about 15% of the profiles'
            subscription e-mails and phones and 10% of their e-mail domains, drawn with
            ``seed``, plus as many contacts again that no profile has.

    Attributes:
        token: The accepted API token.
        db_id: The database id.
        profiles: The full data set, as ``profiles/list`` returns it without ``fields``.
        requests: One :class:`RequestRecord` per request handled, token removed.
        suppress_id: Id of the suppression list (read-only).
        suppress_name: Name of the suppression list (read-only).
        suppressed: Copy of its canonical contacts per kind, sorted.
    """

    def __init__(
        self,
        profiles: int | Iterable[Mapping[str, Any]] = DEFAULT_PROFILES,
        seed: int = 0,
        *,
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        db_id: int = 1,
        http_errors: bool = True,
        suppress_id: int = DEFAULT_SUPPRESS_ID,
        suppress_name: str = DEFAULT_SUPPRESS_NAME,
        suppressed: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        if isinstance(profiles, int):
            data = generate_profiles(profiles, seed)
        else:
            data = [copy.deepcopy(dict(p)) for p in profiles]
            ids = [p.get("id") for p in data]
            if not all(isinstance(i, str) and i for i in ids) or len(set(ids)) != len(ids):
                raise ValueError("every profile needs a unique non-empty string 'id'")
        if token is not None and (not isinstance(token, str) or not token):
            raise ValueError("token must be a non-empty string or None")
        if isinstance(db_id, bool) or not isinstance(db_id, int):
            raise ValueError(f"db_id must be an int, got {db_id!r}")
        self.token: str = token if token is not None else secrets.token_hex(16)
        self.db_id = db_id
        self.profiles: list[dict[str, Any]] = data
        self.requests: list[RequestRecord] = []
        self._host = host
        self._port = port
        self._requests_lock = threading.Lock()
        self._faults = FaultQueue()
        exports = ExportStore.for_profiles(
            data, seed, suppress_id=suppress_id, suppress_name=suppress_name, suppressed=suppressed
        )
        self._backend = Backend(
            data, token=self.token, db_id=db_id, http_errors=http_errors, exports=exports
        )
        self._server: DemoHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def http_errors(self) -> bool:
        """Whether API errors use the HTTP status equal to the code (settable)."""
        return self._backend.http_errors

    @http_errors.setter
    def http_errors(self, value: bool) -> None:
        self._backend.http_errors = bool(value)

    @property
    def running(self) -> bool:
        """Whether the server is accepting requests."""
        return self._server is not None

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the running server, without a trailing slash."""
        if self._server is None:
            raise RuntimeError("the demo service is not running; call start() first")
        host, port = self._server.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def start(self) -> DemoService:
        """Bind the port and serve in a daemon thread; returns the service itself."""
        if self._server is not None:
            raise RuntimeError("the demo service is already running")
        self._stopping = threading.Event()
        server = DemoHTTPServer(
            (self._host, self._port), self._backend, self._faults, self._record, self._stopping
        )
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": _POLL_INTERVAL},
            name=f"stoplist-nb-demo:{server.server_address[1]}",
            daemon=True,
        )
        thread.start()
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        """Stop serving, close the port and every open connection; idempotent."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        self._stopping.set()  # wakes handlers sleeping in a "slow" fault
        server.shutdown()
        server.close_connections()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> DemoService:
        if self._server is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.base_url if self._server is not None else "not running"
        return f"<DemoService {where} db_id={self.db_id} profiles={len(self.profiles)}>"

    def add_fault(
        self,
        method: str,
        kind: FaultKind,
        *,
        times: int | None = 1,
        status: int | None = None,
        retry_after: int | str | None = None,
        delay: float | None = None,
        code: int | None = None,
        text: str | None = None,
        after: int = 0,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        size: int | None = None,
        cursor: str | None = None,
    ) -> Fault:
        """Queue a fault for the next ``times`` requests of ``method`` (see :class:`Fault`).

        Args:
            method: API method name such as ``"profiles/list"``, ``"download"`` for
                ``GET /api/download/...``, or ``"*"`` for any.
            kind: ``"status"``, ``"html"``, ``"malformed"``, ``"api_error"``, ``"raw"``
                (exactly the given status, headers and body), ``"slow"``, ``"trickle"``
                (the normal reply one byte every ``delay`` seconds), ``"stall"``,
                ``"decoy"``, ``"reset"`` or ``"truncate"`` (full ``Content-Length``, half
                the body, then the connection closes); quirks of ``profiles/list``
                paging: ``"ignore_limit"`` (pages of ``size``), ``"no_cursor"`` (no
                ``next_from_id``), ``"opaque_cursor"`` (a working cursor that is not
                the last id) and ``"cycle"`` (``next_from_id`` goes back to ``cursor``).
            times: Requests it fires for; ``None`` for all of them.
            status: HTTP status of ``"status"`` (503) and ``"html"`` (502).
            retry_after: ``Retry-After`` header of ``"status"`` and ``"html"``.
            delay: Seconds a ``"slow"`` reply waits (2.0), or a ``"trickle"`` between
                two bytes (0.2).
            code: Envelope ``error`` of ``"status"`` and ``"api_error"``.
            text: Envelope ``error_text``, HTML message, or raw ``"malformed"`` and
                ``"raw"`` body.
            after: Requests of ``method`` let through untouched before it fires.
            body: The body of ``"raw"`` as bytes.
            headers: Extra headers of ``"raw"``.
            size: Profiles per page of ``"ignore_limit"`` (default: twice the
                ``limit`` asked), or of ``"no_cursor"``, ``"opaque_cursor"`` and
                ``"cycle"`` (default: the ``limit`` asked).
            cursor: The ``next_from_id`` of ``"cycle"``: a ``from_id`` the pull was at.

        Returns:
            The queued fault; its ``fired`` counts the requests it has hit.
        """
        fault = Fault(
            method,
            kind,
            times,
            status,
            retry_after,
            delay,
            code,
            text,
            after=after,
            body=body,
            headers=dict(headers) if headers else None,
            size=size,
            cursor=cursor,
        )
        return self._faults.add(fault)

    def clear_faults(self) -> None:
        """Drop every queued fault."""
        self._faults.clear()

    def client(self, **kwargs: Any) -> Client:
        """A ``stoplist_nb`` client for this service; ``kwargs`` go to its constructor."""
        from stoplist_nb.client import Client

        return Client(self.base_url, self.token, **kwargs)

    def _record(self, record: RequestRecord) -> None:
        with self._requests_lock:
            self.requests.append(record)


@contextlib.contextmanager
def serve(
    profiles: int | Iterable[Mapping[str, Any]] = DEFAULT_PROFILES,
    seed: int = 0,
    *,
    token: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    db_id: int = 1,
    http_errors: bool = True,
    suppress_id: int = DEFAULT_SUPPRESS_ID,
    suppress_name: str = DEFAULT_SUPPRESS_NAME,
    suppressed: Mapping[str, Iterable[str]] | None = None,
) -> Iterator[DemoService]:
    """Run a :class:`DemoService` for the duration of a ``with`` block.

    Args:
        profiles: Number of profiles to generate, or the profiles themselves.
        seed: Seed of the generated data set.
        token: API token to accept; a random one when ``None``.
        host: Address to listen on.
        port: Port to listen on; 0 picks a free one.
        db_id: Id of the database.
        http_errors: Use the error code as the HTTP status of API errors (the
            download always answers with real HTTP statuses).
        suppress_id: Id of the suppression list.
        suppress_name: Name of the suppression list (spaces and non-ASCII allowed).
        suppressed: The list's contacts (``"emails"``, ``"phones"``, ``"domains"``);
            by default drawn from the profiles with ``seed``, plus extra contacts.

    Yields:
        The running service; it is stopped when the block exits.

    >>> import requests
    >>> with serve(profiles=5) as svc:
    ...     url = svc.base_url + "/api/v1.1/profiles/list"
    ...     body = {"token": svc.token, "db_id": svc.db_id, "limit": 2}
    ...     reply = requests.post(url, json=body, timeout=5).json()
    >>> reply["error"], len(reply["data"])
    (0, 2)
    """
    service = DemoService(
        profiles,
        seed,
        token=token,
        host=host,
        port=port,
        db_id=db_id,
        http_errors=http_errors,
        suppress_id=suppress_id,
        suppress_name=suppress_name,
        suppressed=suppressed,
    )
    service.start()
    try:
        yield service
    finally:
        service.stop()
