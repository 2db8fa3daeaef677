"""The HTTP layer of the demo service: a threading HTTP/1.1 server on loopback.

It parses a request, lets a scripted fault take over if one is queued, otherwise hands
the request to the endpoint table, logs it (without the token) and writes the reply
with a correct ``Content-Length`` so keep-alive connections work.
"""

from __future__ import annotations

import contextlib
import copy
import socket
import struct
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from stoplist_nb.demo._api import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    ApiError,
    Backend,
    Call,
    Reply,
    error_reply,
    method_name,
    parse_json_object,
)
from stoplist_nb.demo._faults import Fault, FaultQueue
from stoplist_nb.demo._reply import JSON_TYPE, is_int
from stoplist_nb.demo._routes import dispatch

__all__ = ["DemoHTTPServer", "RequestRecord"]

MAX_BODY = 16 * 1024 * 1024


@dataclass(frozen=True)
class RequestRecord:
    """One request the demo service handled.

    Attributes:
        method: API method name (``"profiles/list"``), ``"download"`` for
            ``/api/download/...``, otherwise the URL path.
        path: URL path, without the query string.
        params: Body (POST) or query (GET) parameters, with ``token`` removed.
        status: HTTP status sent; 0 when the connection was reset.
    """

    method: str
    path: str
    params: dict[str, Any]
    status: int


def fault_reply(fault: Fault) -> Reply:
    """The reply of a fault that replaces the endpoint's answer."""
    headers = {} if fault.retry_after is None else {"Retry-After": str(fault.retry_after)}
    if fault.kind == "status":
        status = fault.status or 503
        text = fault.text if fault.text is not None else _phrase(status)
        code = fault.code if fault.code is not None else status
        return Reply(status, {"error": code, "error_text": text}, headers=headers)
    if fault.kind == "html":
        status = fault.status or 502
        title = f"{status} {_phrase(status)}"
        message = fault.text if fault.text is not None else title
        page = (
            f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n"
            f"<center><h1>{message}</h1></center>\r\n<hr><center>nginx</center>\r\n"
            "</body>\r\n</html>\r\n"
        )
        return Reply(status, body=page.encode(), content_type="text/html", headers=headers)
    if fault.kind == "malformed":
        if fault.text is not None:
            body = fault.text.encode("utf-8")
        else:
            body = b'{"data": [{"id": "65a1f0c2e4b0a1b2c3d4e5f6", "_fname": "Ann'
        return Reply(200, body=body)
    if fault.kind == "raw":
        body = fault.body if fault.body is not None else (fault.text or "").encode("utf-8")
        return Reply(
            fault.status or 200,
            body=body,
            content_type="application/octet-stream" if fault.body is not None else JSON_TYPE,
            headers={**headers, **(fault.headers or {})},
        )
    # "api_error"
    code = fault.code if fault.code is not None else 500
    text = fault.text if fault.text is not None else "Internal server error"
    return Reply(200, {"error": code, "error_text": text})


def _decoy(payload: dict[str, Any]) -> dict[str, Any]:
    """The same reply, written so that a text search for the cursor finds a wrong one."""
    rows = payload["data"]
    wrong = rows[0].get("id", "")
    head = {key: value for key, value in payload.items() if key != "data"}
    return {**head, "data": [{**row, "next_from_id": wrong} for row in rows]}


def _ignore_limit(params: dict[str, Any], fault: Fault) -> dict[str, Any]:
    """The request as an ``"ignore_limit"`` fault answers it: with its page size."""
    limit = params.get("limit")
    if limit is None:
        limit = DEFAULT_LIMIT
    if not is_int(limit) or not 1 <= limit <= MAX_LIMIT:
        return params  # refused as it stands
    return {**params, "limit": fault.size if fault.size is not None else min(2 * limit, MAX_LIMIT)}


def _recursor(payload: dict[str, Any], fault: Fault) -> None:
    """The cursor of a ``"no_cursor"``, ``"opaque_cursor"`` or ``"cycle"`` fault, in place."""
    if fault.kind not in ("no_cursor", "opaque_cursor", "cycle"):
        return
    if fault.kind == "no_cursor":
        payload.pop("next_from_id", None)
    elif not payload.get("data"):
        return  # an empty page ends the list: nothing to lead anywhere
    elif fault.kind == "opaque_cursor" and payload.get("next_from_id"):
        # After the last id and before any later one: it works as from_id, yet is no id.
        payload["next_from_id"] = f"{payload['next_from_id']}~"
    elif fault.kind == "cycle":
        payload["next_from_id"] = fault.cursor


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


class DemoHTTPServer(ThreadingHTTPServer):
    """Threading HTTP server that knows the backend, the faults and the request log."""

    daemon_threads = True
    # stop() wakes every handler itself (close_connections, the stopping event);
    # joining them on server_close could still hang on a client that stopped mid-body.
    block_on_close = False

    def __init__(
        self,
        address: tuple[str, int],
        backend: Backend,
        faults: FaultQueue,
        log: Callable[[RequestRecord], None],
        stopping: threading.Event,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.backend = backend
        self.faults = faults
        self.log = log
        self.stopping = stopping
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name (socket.getfqdn), which can
        # stall for seconds on a machine with slow DNS; the name is never used here.
        TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (timeouts, reset faults) is routine, not an error.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    def track(self, conn: socket.socket, *, add: bool) -> None:
        with self._connections_lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def close_connections(self) -> None:
        """Wake every handler blocked on an idle keep-alive connection."""
        with self._connections_lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


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
        self.server.track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request access log on stderr."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def _handle(self) -> None:
        srv = self.server
        split = urlsplit(self.path)
        path = unquote(split.path)
        name = method_name(path)
        params: dict[str, Any] = {}
        reply: Reply | None = None
        try:
            body = self._read_body()
            if self.command == "GET":
                query = parse_qs(split.query, keep_blank_values=True)
                params = {key: values[-1] for key, values in query.items()}
            else:
                params = parse_json_object(body)
        except ApiError as exc:
            reply = error_reply(exc.code, exc.text, http_errors=srv.backend.http_errors)
        logged = {k: copy.deepcopy(v) for k, v in params.items() if k != "token"}
        fault = srv.faults.take(name)
        kind = fault.kind if fault is not None else None
        if fault is not None and kind == "reset":
            srv.log(RequestRecord(name, path, logged, 0))
            self._reset()
            return
        if fault is not None and kind in ("status", "html", "malformed", "api_error", "raw"):
            reply = fault_reply(fault)
        elif reply is None:
            if fault is not None and (kind == "ignore_limit" or fault.size is not None):
                params = _ignore_limit(params, fault)  # the log keeps what was asked
            reply = self._dispatch(name, path, params)
            if fault is not None and reply.payload is not None:
                _recursor(reply.payload, fault)
            if kind == "stall" and reply.payload is not None and "next_from_id" in reply.payload:
                from_id = params.get("from_id")
                reply.payload["next_from_id"] = from_id if isinstance(from_id, str) else ""
            if kind == "decoy" and reply.payload is not None and reply.payload.get("data"):
                reply.payload = _decoy(reply.payload)
        # Logged before the reply goes out: a client that has its answer sees the record.
        srv.log(RequestRecord(name, path, logged, reply.status))
        if fault is not None and kind == "slow":
            srv.stopping.wait(2.0 if fault.delay is None else fault.delay)
        trickle = None
        if fault is not None and kind == "trickle":
            trickle = 0.2 if fault.delay is None else fault.delay
        self._send(reply, truncate=kind == "truncate", trickle=trickle)

    def _dispatch(self, name: str, path: str, params: dict[str, Any]) -> Reply:
        auth = self.headers.get("Authorization", "")
        bearer = auth[7:].strip() if auth[:7].lower() == "bearer " else None
        call = Call(self.command, path, params, bearer)
        try:
            return dispatch(self.server.backend, name, call)
        except Exception:  # a bug in a handler: answer 500 and show it, do not hang
            traceback.print_exc()
            return error_reply(500, "internal error", http_errors=self.server.backend.http_errors)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            raise ApiError(411, "chunked request bodies are not supported")
        raw = self.headers.get("Content-Length")
        if raw is None:
            return b""
        try:
            length = int(raw)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            raise ApiError(413 if length > MAX_BODY else 400, "bad Content-Length")
        return self.rfile.read(length)

    def _send(self, reply: Reply, *, truncate: bool = False, trickle: float | None = None) -> None:
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
