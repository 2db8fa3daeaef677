"""The envelope types every endpoint handler of the demo service speaks.

Kept apart from the endpoint table so that handler modules (``_api``, ``_export``) can
share them without importing each other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "API_PREFIX",
    "DOWNLOAD_PREFIX",
    "JSON_TYPE",
    "SUCCESS_TEXT",
    "ApiError",
    "Call",
    "Reply",
    "error_reply",
    "is_int",
    "success",
]

API_PREFIX = "/api/v1.1/"
DOWNLOAD_PREFIX = "/api/download/"
SUCCESS_TEXT = "Successful operation"
JSON_TYPE = "application/json; charset=utf-8"


class ApiError(Exception):
    """An API-level failure: becomes the ``error``/``error_text`` envelope."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(code, text)
        self.code = code
        self.text = text


@dataclass
class Reply:
    """One HTTP reply: a JSON envelope (``payload``) or a raw ``body``."""

    status: int = 200
    payload: dict[str, Any] | None = None
    body: bytes = b""
    content_type: str = JSON_TYPE
    headers: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        """The bytes of the body: the JSON envelope, or ``body`` when there is none."""
        if self.payload is None:
            return self.body
        return json.dumps(self.payload, ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True)
class Call:
    """One parsed request as a handler sees it."""

    verb: str
    path: str
    params: dict[str, Any]
    bearer: str | None = None


def success(**payload: Any) -> Reply:
    """The success envelope with ``payload`` beside ``error`` and ``error_text``."""
    return Reply(payload={"error": 0, "error_text": SUCCESS_TEXT, **payload})


def error_reply(code: int, text: str, *, http_errors: bool) -> Reply:
    """The error envelope; its HTTP status is ``code`` only when ``http_errors``."""
    status = code if http_errors and 400 <= code <= 599 else 200
    if http_errors and status == 200:
        status = 400
    return Reply(status=status, payload={"error": code, "error_text": text})


def is_int(value: Any) -> bool:
    """Whether ``value`` is a JSON integer (``bool`` is not)."""
    return isinstance(value, int) and not isinstance(value, bool)
