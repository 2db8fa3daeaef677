"""Keeping the API token out of messages, chained exceptions and log records, in every form."""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any
from urllib.parse import quote, quote_plus

#: Tokens shorter than this (they would match ordinary words) are scrubbed only by their client.
MIN_SECRET = 8

_MASK = "***"
_TOKEN_QUERY = re.compile(r"(?i)((?:\?|&|%3F|%26)token(?:=|%3D))[^&\s'\"]*")
_FILTERED_LOGGERS = (
    "stoplist_nb",
    *(f"urllib3.{n}" for n in ("connectionpool", "util.retry", "poolmanager")),
)


def _forms(secret: str) -> set[str]:
    """The ways ``secret`` may be written in text a service sends back."""
    forms = {
        secret, quote(secret, safe=""), quote(secret), quote_plus(secret, safe=""),
        json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1],
    }  # fmt: skip
    forms |= {form.replace("/", "\\/") for form in list(forms)}  # PHP's json_encode
    # Quoted once more: a path the service built from the token, quoted again for a URL.
    forms |= {quote(form, safe="") for form in list(forms)}
    return {form for form in forms if form}


def _pattern(forms: set[str]) -> re.Pattern[str] | None:
    if not forms:
        return None
    # Longest first, not to half-replace a form; case-insensitive for %2f and %2F.
    return re.compile("|".join(map(re.escape, sorted(forms, key=len, reverse=True))), re.I)


# The secrets of every client of this process (only ever added to).
_known: set[str] = set()
_known_pattern: re.Pattern[str] | None = None
_lock = threading.Lock()


def redact(text: str) -> str:
    r"""Return ``text`` with every registered token, in each of its forms, replaced by ``***``.

    >>> _ = Redactor("doctest/token-4f2a")
    >>> redact('bad token doctest%2ftoken-4f2a in {"token": "doctest\\/token-4f2a"}')
    'bad token *** in {"token": "***"}'
    """
    pattern = _known_pattern
    return text if pattern is None else pattern.sub(_MASK, text)


def exception_chain(exc: BaseException | None) -> list[BaseException]:
    """``exc`` and every exception under it: in its args (tuples too), reason, cause, context."""
    todo: list[Any] = [exc]
    found: dict[int, BaseException] = {}
    while todo:
        item = todo.pop(0)
        if isinstance(item, tuple):
            todo.extend(item)
        elif isinstance(item, BaseException) and id(item) not in found:
            found[id(item)] = item
            todo += [*item.args, getattr(item, "reason", None), item.__cause__, item.__context__]
    return list(found.values())


class _TokenFilter(logging.Filter):
    """Blank ``token=...`` (in urllib3's URLs) and every registered token in log records."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(_TOKEN_QUERY.sub(r"\1" + _MASK, message))
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def filter_logs() -> None:
    """Install the token filter on our logger and urllib3's (once)."""
    for name in _FILTERED_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _TokenFilter) for f in logger.filters):
            logger.addFilter(_TokenFilter())


class Redactor:
    """Remove a secret, in each of its forms, from text and from exceptions (other clients' too)."""

    def __init__(self, secret: str | None) -> None:
        forms = _forms(secret) if secret else set()
        self._pattern = _pattern(forms)
        if secret and len(secret) >= MIN_SECRET:
            global _known_pattern
            with _lock:
                if not forms <= _known:
                    _known.update(forms)
                    _known_pattern = _pattern(_known)

    def __call__(self, text: str) -> str:
        if self._pattern is not None:
            text = self._pattern.sub(_MASK, text)
        return redact(text)

    def scrub(self, exc: BaseException) -> BaseException:
        """Rewrite the messages of ``exc`` and of everything chained to it."""
        for item in exception_chain(exc):
            item.args = tuple(self._clean(a) for a in item.args)
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
            return value  # scrubbed as a part of the chain
        if isinstance(value, tuple):
            return tuple(self._clean(v) for v in value)
        return value if isinstance(value, int | float | type(None)) else self(repr(value))
