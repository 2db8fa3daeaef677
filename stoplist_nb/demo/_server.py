"""The demo service: its HTTP/1.1 server on loopback, its request log and its faults.

A queued :class:`Fault` replaces the endpoint's reply, slows or cuts it, or bends its
paging; the reply has a correct ``Content-Length`` so keep-alive connections work.
"""

from __future__ import annotations

import contextlib
import copy
import json
import secrets
import socket
import struct
import sys
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.client import responses
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import TYPE_CHECKING, Any, Literal, get_args
from urllib.parse import parse_qs, unquote, urlsplit

from stoplist_nb.demo import _api, _suppress
from stoplist_nb.demo._data import generate_profiles
from stoplist_nb.demo._suppress import ExportPlan

if TYPE_CHECKING:  # only for the annotation: the demo must not import the client at run time
    from stoplist_nb.client import Client


#: The size of the data set wherever none is named (``python -m stoplist_nb.demo``, ...).
DEFAULT_PROFILES = 2000

MAX_BODY = 16 * 1024 * 1024


# The kinds that take the place of the endpoint's reply, and the quirks of paging.
Replacing = Literal["status", "html", "malformed", "api_error", "raw", "reset"]
_Paging = Literal["stall", "decoy", "ignore_limit", "no_cursor", "opaque_cursor", "cycle"]
FaultKind = Literal[Replacing, "slow", "trickle", "truncate", _Paging]
FAULT_KINDS: frozenset[str] = frozenset(get_args(FaultKind))
REPLACING_KINDS: frozenset[str] = frozenset(get_args(Replacing))
PAGING_KINDS: frozenset[str] = frozenset(get_args(_Paging))


@dataclass
class Fault:
    """One scripted misbehaviour; queue it with ``DemoService.add_fault``.

    Attributes:
        method: API method (``"profiles/list"``), ``"download"`` or ``"*"`` for any.
        kind: In place of the reply: ``"status"`` (an HTTP error with the envelope), ``"html"``
            (an nginx error page), ``"malformed"`` (200, cut JSON), ``"api_error"`` (200,
            non-zero ``error``), ``"raw"`` (``status``, ``headers`` and ``body`` or ``text``),
            ``"reset"`` (the connection reset). To the reply: ``"slow"`` (sent after ``delay``),
            ``"trickle"`` (a byte every ``delay``), ``"truncate"`` (full ``Content-Length``,
            half the body). ``profiles/list`` paging: ``"stall"`` (``next_from_id`` repeats
            ``from_id``), ``"decoy"`` (a row field ``next_from_id`` first), ``"ignore_limit"``
            (pages of ``size``, default twice ``limit``), ``"no_cursor"``, ``"opaque_cursor"``
            (the last id and ``"~"``), ``"cycle"`` (``next_from_id`` is ``cursor``).
        times: Requests it fires for; ``None`` for every request.
        status: HTTP status of ``"status"`` (503), ``"html"`` (502) and ``"raw"`` (200).
        retry_after: ``Retry-After`` header of ``"status"`` and ``"html"``.
        delay: Seconds of ``"slow"`` (2.0) or between bytes of ``"trickle"`` (0.2).
        code: The envelope's ``error`` of ``"status"`` (the status) and ``"api_error"`` (500).
        text: The envelope's ``error_text``, the ``"html"`` message, or the raw body.
        after: Requests of the method let through before it fires.
        body: The raw body of ``"raw"`` as bytes (wins over ``text``).
        headers: Extra reply headers of ``"raw"``.
        size: Page size of the last four paging quirks (which then ignore ``limit``).
        cursor: The ``next_from_id`` of ``"cycle"`` (required for it).
        fired: Requests it has fired for so far.
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
        if self.kind in PAGING_KINDS and self.method != "profiles/list":
            raise ValueError(f"a {self.kind!r} fault applies to 'profiles/list' only")
        if self.size is not None and not (_api.is_int(self.size) and self.size >= 1):
            raise ValueError(f"size must be a positive int, got {self.size!r}")
        if self.size is not None and self.kind not in PAGING_KINDS - {"stall", "decoy"}:
            raise ValueError(f"size applies to paging quirks, not to a {self.kind!r} fault")
        if self.kind == "cycle" and (not isinstance(self.cursor, str) or not self.cursor):
            raise ValueError("a 'cycle' fault needs cursor=, the from_id it goes back to")
        if self.times is not None and (isinstance(self.times, bool) or self.times < 1):
            raise ValueError(f"times must be a positive int or None, got {self.times!r}")
        if self.status is not None and not 100 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP status code, got {self.status!r}")
        if self.delay is not None and self.delay < 0:
            raise ValueError(f"delay must not be negative, got {self.delay!r}")
        if not (_api.is_int(self.after) and self.after >= 0):
            raise ValueError(f"after must be a whole number >= 0, got {self.after!r}")

    @property
    def remaining(self) -> int | None:
        """Requests it will still fire for (``None``: unlimited)."""
        return None if self.times is None else self.times - self.fired


def fault_reply(fault: Fault) -> _api.Reply:
    """The reply of a fault that replaces the endpoint's answer."""
    headers = {} if fault.retry_after is None else {"Retry-After": str(fault.retry_after)}
    text = fault.text
    if fault.kind == "status":
        status = fault.status or 503
        error = {"error": status if fault.code is None else fault.code}
        text = responses.get(status, "Error") if text is None else text
        return _api.Reply(status, {**error, "error_text": text}, headers=headers)
    if fault.kind == "html":
        status = fault.status or 502
        title = f"{status} {responses.get(status, 'Error')}"
        page = (
            f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n"
            f"<center><h1>{title if text is None else text}</h1></center>\r\n"
            "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
        )
        return _api.Reply(status, body=page.encode(), content_type="text/html", headers=headers)
    if fault.kind == "malformed":
        cut = '{"data": [{"id": "65a1f0c2e4b0a1b2c3d4e5f6", "_fname": "Ann'
        return _api.Reply(200, body=(cut if text is None else text).encode("utf-8"))
    if fault.kind == "raw":
        raw = fault.body is not None
        return _api.Reply(
            fault.status or 200,
            body=fault.body if fault.body is not None else (text or "").encode("utf-8"),
            content_type="application/octet-stream" if raw else _api.JSON_TYPE,
            headers={**headers, **(fault.headers or {})},
        )
    # "api_error"
    code = 500 if fault.code is None else fault.code
    text = "Internal server error" if text is None else text
    return _api.Reply(200, {"error": code, "error_text": text})


def bend(payload: dict[str, Any], fault: Fault, from_id: Any) -> None:
    """The paging quirk of ``fault`` on a reply's ``payload``, in place."""
    rows, kind = payload.get("data"), fault.kind
    if kind == "no_cursor":
        payload.pop("next_from_id", None)
    elif kind == "stall" and "next_from_id" in payload:
        payload["next_from_id"] = from_id if isinstance(from_id, str) else ""
    elif not rows:
        return  # an empty page ends the list: nothing to lead anywhere
    elif kind == "opaque_cursor" and payload.get("next_from_id"):
        # After the last id and before any later one: it works as from_id, yet is no id.
        payload["next_from_id"] = f"{payload['next_from_id']}~"
    elif kind == "cycle":
        payload["next_from_id"] = fault.cursor
    elif kind == "decoy":
        # A text search for the cursor finds a wrong one first.
        del payload["data"]
        payload["data"] = [{**row, "next_from_id": rows[0].get("id", "")} for row in rows]


@dataclass(frozen=True)
class RequestRecord:
    """One request the demo service handled.

    Attributes:
        method: As :attr:`Fault.method`, else the URL path.
        path: URL path, without the query string.
        params: Body (POST) or query (GET) parameters, with ``token`` removed.
        status: HTTP status sent; 0 when the connection was reset.
    """

    method: str
    path: str
    params: dict[str, Any]
    status: int


class DemoHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # stop() wakes every handler itself (its connections shut, the stopping event);
    # joining them on server_close could still hang on a client that stopped mid-body.
    block_on_close = False

    def __init__(self, address: tuple[str, int], service: DemoService) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.service = service
        self.stopping = service._stopping
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name (socket.getfqdn), which can
        # stall for seconds on a machine with slow DNS; the name is never used here.
        TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (timeouts, reset faults) is routine, not an error.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "stoplist-nb-demo/1.0"
    sys_version = ""
    server: DemoHTTPServer

    def setup(self) -> None:
        super().setup()
        # Headers and body leave in two writes; with Nagle's algorithm the second one
        # waits for the client's delayed ACK, about 40 ms per request.
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.connections_lock:
                self.server.connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # no access log on stderr
        pass

    def _handle(self) -> None:
        srv = self.server
        split = urlsplit(self.path)
        path = unquote(split.path)
        name = _api.method_name(path)
        params: dict[str, Any] = {}
        reply: _api.Reply | None = None
        try:
            params = self._read_params(split.query)
        except _api.ApiError as exc:
            reply = _api.error_reply(exc.code, exc.text, http_errors=srv.service.http_errors)
        logged = {k: copy.deepcopy(v) for k, v in params.items() if k != "token"}
        fault = srv.service._take_fault(name)
        kind = fault.kind if fault is not None else None
        if kind == "reset":
            srv.service._record(RequestRecord(name, path, logged, 0))
            self._reset()
            return
        if fault is not None and kind in REPLACING_KINDS:
            reply = fault_reply(fault)
        elif reply is None:
            if fault is not None and (kind == "ignore_limit" or fault.size is not None):
                limit = _api.param(params, "limit", _api.DEFAULT_LIMIT)
                if _api.is_int(limit) and 1 <= limit <= _api.MAX_LIMIT:  # else refused as is
                    # The log keeps what was asked.
                    params = {**params, "limit": fault.size or min(2 * limit, _api.MAX_LIMIT)}
            auth = self.headers.get("Authorization", "")
            bearer = auth[7:].strip() if auth[:7].lower() == "bearer " else None
            reply = _api.dispatch(srv.service, name, _api.Call(self.command, path, params, bearer))
            if fault is not None and reply.payload is not None:
                bend(reply.payload, fault, params.get("from_id"))
        # Logged before the reply goes out: a client that has its answer sees the record.
        srv.service._record(RequestRecord(name, path, logged, reply.status))
        delay = None if fault is None else fault.delay
        if kind == "slow":
            srv.stopping.wait(2.0 if delay is None else delay)
        trickle = (0.2 if delay is None else delay) if kind == "trickle" else None
        self._send(reply, truncate=kind == "truncate", trickle=trickle)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

    def _read_params(self, query: str) -> dict[str, Any]:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            raise _api.ApiError(411, "chunked request bodies are not supported")
        raw = self.headers.get("Content-Length")
        try:
            length = 0 if raw is None else int(raw)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            raise _api.ApiError(413 if length > MAX_BODY else 400, "bad Content-Length")
        body = self.rfile.read(length)
        if self.command == "GET":
            return {key: values[-1] for key, values in parse_qs(query, True).items()}
        try:
            params = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise _api.ApiError(400, "request body is not valid JSON") from None
        if not isinstance(params, dict):
            raise _api.ApiError(400, "request body must be a JSON object")
        return params

    def _send(self, reply: _api.Reply, *, truncate: bool, trickle: float | None) -> None:
        body = reply.encode()
        if truncate:
            # The full Content-Length, half the body, then the end of the connection:
            # what a download cut off by a proxy or a dropped link looks like.
            self.close_connection = True
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in reply.headers.items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if trickle is not None:
            # Every byte resets a socket read timeout: only an overall deadline ends this.
            self.close_connection = True
            for i in range(len(body)):
                if self.server.stopping.wait(trickle):
                    return
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
            return
        self.wfile.write(body[: len(body) // 2] if truncate else body)

    def _reset(self) -> None:
        # Linger 0 makes close() send RST instead of FIN: the client gets a connection
        # reset, not a clean end of stream. The descriptor really closes once finish()
        # has closed rfile/wfile, which still hold references to it.
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()


class DemoService:
    """A local implementation of the API, served over real HTTP on loopback.

    Args:
        profiles: Number of profiles to generate, or the profiles (dicts with unique ``"id"``).
        seed: Seed of :func:`generate_profiles` and of the suppression list.
        token: API token to accept; a random one when ``None``.
        host: Address to listen on.
        port: Port to listen on; 0 for a free one.
        db_id: Id of the one database.
        http_errors: Answer API errors with their code as HTTP status, or with 200.
        suppress_id: Id of the one suppression list.
        suppress_name: Its name, which names the exported ``<name>.md5.zip``.
        suppressed: Its contacts per kind (``"emails"``, ``"phones"``, ``"domains"``); by
            default some of the profiles' and as many that no profile has.

    Attributes:
        profiles: The data set, as ``profiles/list`` returns it without ``fields``.
        requests: One :class:`RequestRecord` per request handled, token removed.
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
        suppress_id: int = 7,
        # Spaces, Cyrillic and parentheses on purpose: the download path must be URL-quoted.
        suppress_name: str = "Стоп-лист 2024 (main)",
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
        for name, value in (("db_id", db_id), ("suppress_id", suppress_id)):
            if not _api.is_int(value):
                raise ValueError(f"{name} must be an int, got {value!r}")
        if suppressed is None:
            suppressed = _suppress.build_suppressed(data, seed)
        self.exports = _suppress.ExportStore(suppress_id, suppress_name, suppressed)
        self.suppress_id, self.suppress_name = suppress_id, suppress_name
        self.token = token or secrets.token_hex(16)
        self.db_id, self.http_errors = db_id, http_errors
        self.profiles: list[dict[str, Any]] = data
        self.requests: list[RequestRecord] = []
        # mongomock is not thread-safe; the HTTP server runs one thread per connection.
        self._lock = threading.Lock()
        self._collection = _api.load(data)
        self._address = (host, port)
        self._log_lock = threading.Lock()  # guards the request log and the faults
        self._faults: dict[str, deque[Fault]] = {}
        self._server: DemoHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def running(self) -> bool:
        """Whether the server is accepting requests."""
        return self._server is not None

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the running server, without a trailing slash."""
        if self._server is None:
            raise RuntimeError("the demo service is not running; call start() first")
        host, port = str(self._server.server_address[0]), self._server.server_address[1]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @property
    def suppressed(self) -> dict[str, list[str]]:
        """A copy of the list's canonical contacts per kind, whose MD5 the exports hold."""
        return {kind: list(values) for kind, values in self.exports.suppressed.items()}

    def start(self) -> DemoService:
        """Bind the port and serve in a daemon thread; returns the service itself."""
        if self._server is not None:
            raise RuntimeError("the demo service is already running")
        self._stopping = threading.Event()
        server = DemoHTTPServer(self._address, self)
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},  # stop() waits for one poll
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
        with server.connections_lock:
            conns = list(server.connections)
        for conn in conns:  # a handler may wait on a client that stopped mid-body
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> DemoService:
        return self if self._server is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.base_url if self._server is not None else "not running"
        return f"<DemoService {where} db_id={self.db_id} profiles={len(self.profiles)}>"

    def add_fault(self, method: str, kind: FaultKind, **options: Any) -> Fault:
        """Queue a fault for the next requests of ``method``.

        ``method``, ``kind`` and ``**options`` are those of :class:`Fault`; returns the fault.

        >>> with serve(profiles=3) as svc:
        ...     fault = svc.add_fault("profiles/list", "status", status=503, times=2)
        >>> fault.remaining
        2
        """
        fault = Fault(method, kind, **options)
        with self._log_lock:
            self._faults.setdefault(method, deque()).append(fault)
        return fault

    def clear_faults(self) -> None:
        """Drop every queued fault."""
        with self._log_lock:
            self._faults.clear()

    def plan_next_export(self, **options: Any) -> ExportPlan:
        """Script the next export started with the :class:`ExportPlan` of ``options``, returned.

        A second call replaces it; later exports get the defaults.

        >>> with serve(profiles=3) as svc:
        ...     plan = svc.plan_next_export(steps=1, final="success")
        >>> plan.words, plan.final
        (('queued', 'processing'), 'success')
        """
        plan = ExportPlan(**options)
        self.exports.plan_next(plan)
        return plan

    def client(self, **kwargs: Any) -> Client:
        """A ``stoplist_nb.Client`` of this service, ``kwargs`` passed on."""
        from stoplist_nb.client import Client

        return Client(self.base_url, self.token, **kwargs)

    def _record(self, record: RequestRecord) -> None:
        with self._log_lock:
            self.requests.append(record)

    def _take_fault(self, method: str) -> Fault | None:
        with self._log_lock:
            # A fault for the method itself wins over a catch-all one.
            for key in (method, "*"):
                if queue := self._faults.get(key):
                    fault = queue[0]
                    if fault.passed < fault.after:
                        fault.passed += 1
                        return None
                    fault.fired += 1
                    if fault.remaining == 0:
                        queue.popleft()
                    return fault
        return None


def serve(
    profiles: int | Iterable[Mapping[str, Any]] = DEFAULT_PROFILES, seed: int = 0, **options: Any
) -> DemoService:
    """A :class:`DemoService` (same arguments) that runs for the duration of a ``with`` block.

    >>> import requests
    >>> with serve(profiles=5) as svc:
    ...     url = svc.base_url + "/api/v1.1/profiles/list"
    ...     body = {"token": svc.token, "db_id": svc.db_id, "limit": 2}
    ...     reply = requests.post(url, json=body, timeout=5).json()
    >>> reply["error"], len(reply["data"])
    (0, 2)
    """
    return DemoService(profiles, seed, **options)
