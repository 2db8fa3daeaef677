"""Which redirects the client follows: only within the base URL's origin.

requests would follow a redirect anywhere, replaying a 307/308 POST body
(token and all) to the new host; its ``rebuild_auth`` drops only the
``Authorization`` header, not the token in the body or the download's query.
So the transport sends every request with ``allow_redirects=False`` and asks
:func:`next_url` what to do with a 3xx reply.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from stoplist_nb import errors
from stoplist_nb._redact import redact

__all__ = ["MAX_REDIRECTS", "next_url", "shown"]

#: Redirects within the base URL's origin followed for one request.
MAX_REDIRECTS = 3


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:  # a port that is not a number: an origin of its own
        return (scheme, parts.netloc.lower(), -1)
    return (scheme, (parts.hostname or "").lower(), port)


def shown(url: str) -> str:
    """``url`` fit for a message: no user info, query or fragment (they may hold secrets)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    path = parts.path if len(parts.path) <= 200 else parts.path[:200] + "..."
    return redact(f"{parts.scheme}://{host}{path}")


def next_url(
    what: str, verb: str, status: int, location: str | None, url: str, base_url: str, hop: int
) -> str:
    """The URL to send the request to next, for a 3xx reply to ``url``.

    Within the base URL's origin (scheme, host, port) at most
    :data:`MAX_REDIRECTS` are followed: a POST only on 307 and 308 (which keep
    the method and body; the API serves no GET), a GET on any of them.

    Args:
        what: The API method (or ``"download"``), for messages.
        verb: The HTTP method sent.
        status: The reply's status.
        location: Its ``Location`` header.
        url: The URL the reply came from.
        base_url: The client's base URL.
        hop: Redirects followed so far.

    Raises:
        InvalidReply: Another origin (named without its query), a POST turned
            into a GET, too many redirects, or no ``Location``.
    """
    if location is None:
        raise errors.InvalidReply(f"{what}: an HTTP {status} reply with no Location")
    target = urljoin(url, location)
    if _origin(target) != _origin(base_url):
        raise errors.InvalidReply(
            f"{what}: the service redirects (HTTP {status}) to another origin, "
            f"{shown(target)}; not followed, so the token stays with {shown(base_url)}. "
            "If that is the service's address, use it as base_url"
        )
    if verb != "GET" and status not in (307, 308):
        raise errors.InvalidReply(
            f"{what}: the service redirects (HTTP {status}) to {shown(target)} "
            "with a GET, which the API does not serve; not followed"
        )
    if hop >= MAX_REDIRECTS:
        raise errors.InvalidReply(f"{what}: more than {MAX_REDIRECTS} redirects")
    return target
