"""Scriptable faults: misbehaviour the demo service shows on demand.

A fault is queued for one API method (or ``"*"`` for any) and fires for the next
``times`` requests of that method, in the order the faults were added: it takes the
place of the endpoint's reply, slows or cuts it, or bends its paging.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Literal, get_args

from stoplist_nb.demo._api import DEFAULT_LIMIT, JSON_TYPE, MAX_LIMIT, Reply, is_int, param

__all__ = [
    "FAULT_KINDS",
    "PAGING_KINDS",
    "REPLACING_KINDS",
    "Fault",
    "FaultKind",
    "bend",
    "fault_reply",
    "page_size",
]


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
        method: API method it applies to (``"profiles/list"``), ``"download"`` for
            ``GET /api/download/...``, or ``"*"`` for any.
        kind: In place of the reply: ``"status"`` (an HTTP error status with the
            envelope), ``"html"`` (an nginx error page), ``"malformed"`` (HTTP 200, cut
            JSON), ``"api_error"`` (HTTP 200, non-zero ``error``), ``"raw"`` (``status``
            (200), ``headers`` and ``body``, or ``text`` as UTF-8), ``"reset"`` (the
            connection reset). To the reply: ``"slow"`` (sent after ``delay``),
            ``"trickle"`` (one byte every ``delay``), ``"truncate"`` (full
            ``Content-Length``, half the body, then close). ``profiles/list`` paging:
            ``"stall"`` (``next_from_id`` repeats ``from_id``), ``"decoy"``
            (``next_from_id`` before ``data``, and a row field of that name holding the
            first id), ``"ignore_limit"`` (pages of ``size``, default twice ``limit``),
            ``"no_cursor"`` (no ``next_from_id`` key), ``"opaque_cursor"`` (the last id
            with ``"~"`` after it: works as ``from_id``, is no id), ``"cycle"``
            (``next_from_id`` is ``cursor`` on a page with rows).
        times: Requests it fires for; ``None`` for every request.
        status: HTTP status of ``"status"`` (default 503) and ``"html"`` (502).
        retry_after: ``Retry-After`` header of ``"status"`` and ``"html"``.
        delay: Seconds of ``"slow"`` (default 2.0) or between bytes of ``"trickle"`` (0.2).
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
        if self.size is not None and (
            isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1
        ):
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
        if isinstance(self.after, bool) or not isinstance(self.after, int) or self.after < 0:
            raise ValueError(f"after must be a whole number >= 0, got {self.after!r}")

    @property
    def remaining(self) -> int | None:
        """Requests it will still fire for (``None``: unlimited)."""
        return None if self.times is None else self.times - self.fired


def fault_reply(fault: Fault) -> Reply:
    """The reply of a fault that replaces the endpoint's answer."""
    headers = {} if fault.retry_after is None else {"Retry-After": str(fault.retry_after)}
    text = fault.text
    if fault.kind == "status":
        status = fault.status or 503
        error = {"error": status if fault.code is None else fault.code}
        text = _phrase(status) if text is None else text
        return Reply(status, {**error, "error_text": text}, headers=headers)
    if fault.kind == "html":
        status = fault.status or 502
        title = f"{status} {_phrase(status)}"
        page = (
            f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n"
            f"<center><h1>{title if text is None else text}</h1></center>\r\n"
            "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
        )
        return Reply(status, body=page.encode(), content_type="text/html", headers=headers)
    if fault.kind == "malformed":
        cut = '{"data": [{"id": "65a1f0c2e4b0a1b2c3d4e5f6", "_fname": "Ann'
        return Reply(200, body=(cut if text is None else text).encode("utf-8"))
    if fault.kind == "raw":
        raw = fault.body is not None
        return Reply(
            fault.status or 200,
            body=fault.body if fault.body is not None else (text or "").encode("utf-8"),
            content_type="application/octet-stream" if raw else JSON_TYPE,
            headers={**headers, **(fault.headers or {})},
        )
    # "api_error"
    code = 500 if fault.code is None else fault.code
    text = "Internal server error" if text is None else text
    return Reply(200, {"error": code, "error_text": text})


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


def page_size(params: dict[str, Any], fault: Fault) -> dict[str, Any]:
    """The request as a fault with a page size answers it: ``size``, or twice ``limit``."""
    limit = param(params, "limit", DEFAULT_LIMIT)
    if not is_int(limit) or not 1 <= limit <= MAX_LIMIT:
        return params  # refused as it stands
    return {**params, "limit": fault.size if fault.size is not None else min(2 * limit, MAX_LIMIT)}


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
