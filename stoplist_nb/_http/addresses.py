"""Every rule about a URL: the service's address, its origin, and the download paths under it."""

from __future__ import annotations

import unicodedata
from typing import Literal, NoReturn
from urllib.parse import SplitResult, quote, unquote, urlsplit

from stoplist_nb import errors
from stoplist_nb._redact import redact

_DOWNLOADS = "/api/download/"
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Checked before urlsplit too, which drops tabs and newlines from a URL without a word.
_CONTROL = ("Cc", "Cf", "Cs", "Zl", "Zp")


def address_fault(url: object) -> Literal["scheme", "secret"] | None:
    """What is wrong with ``url`` as a service's address (user info, query, fragment: ``"secret"``).

    >>> address_fault("https://api.example.com:8443/altcraft/")
    >>> address_fault("api.example.com"), address_fault("https://api.example.com/?token=x")
    ('scheme', 'secret')
    """
    if not isinstance(url, str):
        return "scheme"
    try:
        parts = urlsplit(url)
        good = url.startswith(("http://", "https://")) and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number
    except ValueError:
        good = False
    if not good:
        return "scheme"
    return "secret" if "@" in parts.netloc or "?" in url or "#" in url else None


def secret_in_address(name: str, where: str) -> errors.InvalidInput:
    """Refuse the address in ``name`` that holds a secret; ``where``: where the token goes."""
    return errors.InvalidInput(
        f"{name} must not hold a user name, a password or a query",
        hint=f"{where}, and only the address in {name}: it is shown in reprs and messages",
    )


def _port(parts: SplitResult) -> int | None:
    return parts.port if parts.port is not None else _DEFAULT_PORTS.get(parts.scheme)


def address(base_url: str) -> str:
    """The host and port a checked base URL reaches, the port always said."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    return f"[{host}]:{_port(parts)}" if ":" in host else f"{host}:{_port(parts)}"


def origin(base_url: str) -> str:
    """The service at a checked base URL: scheme, host, port (always said) and base path.

    >>> origin("https://API.example.com/platform/"), origin("http://[::1]:8000")
    ('https://api.example.com:443/platform', 'http://[::1]:8000')
    """
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{address(base_url)}{parts.path.rstrip('/')}"


def same_origin(url: str, base_url: str) -> bool:
    """Whether ``url`` (any, from the service) has the scheme, host and port of ``base_url``."""

    def key(of: str) -> tuple[str, str, int | None]:
        parts = urlsplit(of)
        try:
            return (parts.scheme, parts.hostname or "", _port(parts))
        except ValueError:  # a port that is not a number: an origin of its own
            return (parts.scheme, parts.netloc.lower(), -1)

    return key(url) == key(base_url)


def shown(url: str) -> str:
    """``url`` fit for a message: no user info, query or fragment."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    path = parts.path if len(parts.path) <= 200 else parts.path[:200] + "..."
    return redact(f"{parts.scheme}://{host}{path}")


def _refuse(why: str) -> NoReturn:
    raise errors.UnsafePath(f"download path refused: {why}")


def _under_downloads(path: str, base_url: str) -> str:
    base = urlsplit(base_url)
    if path.startswith("//"):  # scheme-relative: the client's scheme, its own host
        path = f"{base.scheme}:{path}"
    parts = urlsplit(path)
    if parts.scheme or parts.netloc:
        if parts.scheme != base.scheme:
            _refuse("it is a URL of another scheme")
        if "@" in parts.netloc:  # user@host: the user name may well be a host
            _refuse("it is a URL with a user name")
        if not same_origin(path, base_url):
            _refuse("it is a URL on another host or port")
    try:
        plain = unquote(parts.path, errors="strict")
    except UnicodeDecodeError:
        raise errors.UnsafePath("download path refused: it is not UTF-8 once decoded") from None
    rooted = base.path.rstrip("/")
    # Behind a base path, the service may name its file from its own root or from ours.
    for prefix in ([rooted + _DOWNLOADS] if rooted else []) + [_DOWNLOADS]:
        if plain.startswith(prefix):
            return plain[len(prefix) :]
    _refuse(f"it is outside {_DOWNLOADS}")


def _dot_segment(segment: str) -> bool:
    for _ in range(4):  # a server or proxy may decode more than once
        if segment in ("", ".", ".."):
            return True
        segment, before = unquote(segment), segment
        if segment == before:
            return False
    return True  # still encoded after four decodings: no plain file is named so


def _bad_characters(path: str) -> str | None:
    if "\\" in path:  # browsers read it as "/" in an http URL
        return "it contains a backslash"
    if any(unicodedata.category(c) in _CONTROL for c in path):
        return "it contains control characters"
    return None


def safe_download_path(path: str, *, base_url: str | None = None) -> str:
    """Check a download path (a plain relative one, or with ``base_url`` one on its origin).

    The token travels with it: anything else is ``UnsafePath``; the path is returned URL-quoted.

    >>> safe_download_path("suppress/1f0c/Стоп-лист 1.md5.zip")
    'suppress/1f0c/%D0%A1%D1%82%D0%BE%D0%BF-%D0%BB%D0%B8%D1%81%D1%82%201.md5.zip'
    >>> safe_download_path("HTTPS://Api.Example.com:443/api/download/suppress/1f0c/My%20list.md5.zip",
    ...                    base_url="https://api.example.com")
    'suppress/1f0c/My%20list.md5.zip'
    >>> safe_download_path("https://elsewhere.example/x.zip")
    Traceback (most recent call last):
    ...
    stoplist_nb.errors.UnsafePath: download path refused: it is an absolute URL
    """
    if not isinstance(path, str) or not path.strip():
        _refuse("it is empty or not a string")
    if why := _bad_characters(path):
        _refuse(why)
    if base_url is not None:
        try:
            if path.startswith("/") or urlsplit(path).scheme:
                path = _under_downloads(path, base_url)
        except ValueError as exc:  # urlsplit's, e.g. an unclosed "[" of an IPv6 host
            if isinstance(exc, errors.UnsafePath):
                raise
            raise errors.UnsafePath("download path refused: it is not a valid URL") from None
    segments = path.split("/")
    if "://" in path or (":" in segments[0] and not path.startswith("/")):
        _refuse("it is an absolute URL")
    if path.startswith("/"):
        _refuse("it starts with '/'")
    if why := _bad_characters(path):
        _refuse(why)
    if any(_dot_segment(seg) for seg in segments):
        _refuse("it has empty, '.' or '..' segments")
    return quote(path, safe="/")
