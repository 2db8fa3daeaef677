"""Keeping the API token out of text: messages, chained exceptions, log records.

Notebooks are saved and shared, so a traceback or a log line that shows the
token leaks it. Everything a user may see passes through here first.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import quote

__all__ = ["Redactor", "filter_urllib3_logs"]

_TOKEN_QUERY = re.compile(r"(?i)((?:\?|&|%3F|%26)token(?:=|%3D))[^&\s'\"]*")
_URLLIB3_LOGGERS = ("urllib3.connectionpool", "urllib3.util.retry", "urllib3.poolmanager")


class _TokenQueryFilter(logging.Filter):
    """Blank ``token=...`` in urllib3's log records (it logs request URLs at DEBUG)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = _TOKEN_QUERY.sub(r"\1***", message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def filter_urllib3_logs() -> None:
    """Install the token filter on urllib3's loggers (once; later calls do nothing)."""
    for name in _URLLIB3_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _TokenQueryFilter) for f in logger.filters):
            logger.addFilter(_TokenQueryFilter())


class Redactor:
    """Remove a secret, and its URL-quoted form, from text and from exceptions."""

    def __init__(self, secret: str | None) -> None:
        forms = {secret, quote(secret, safe=""), quote(secret)} if secret else set()
        self._forms = sorted((f for f in forms if f), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, "***")
        return text

    def scrub(self, exc: BaseException) -> BaseException:
        """Rewrite the messages of ``exc`` and of everything chained to it."""
        seen: set[int] = set()
        todo: list[BaseException] = [exc]
        while todo:
            item = todo.pop()
            if id(item) in seen:
                continue
            seen.add(id(item))
            item.args = tuple(self._clean(a) for a in item.args)
            for attr in ("reason", "__cause__", "__context__"):
                linked = getattr(item, attr, None)
                if isinstance(linked, BaseException):
                    todo.append(linked)
            # requests keeps the whole prepared request (URL and body) on its errors
            for attr in ("request", "response"):
                if getattr(item, attr, None) is not None:
                    setattr(item, attr, None)
            if isinstance(getattr(item, "url", None), str):
                item.url = self(item.url)  # type: ignore[attr-defined]
        return exc

    def _clean(self, value: Any) -> Any:
        if isinstance(value, str):
            return self(value)
        if isinstance(value, BaseException):
            self.scrub(value)
            return value
        if isinstance(value, tuple):
            return tuple(self._clean(v) for v in value)
        return value if isinstance(value, int | float | type(None)) else self(repr(value))
