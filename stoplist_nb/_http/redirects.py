"""Which redirects the client follows: only within the base URL's origin.

requests would follow one anywhere, replaying a 307/308 POST body (token and all)
to the new host: every request is sent with ``allow_redirects=False`` instead.
"""

from __future__ import annotations

from urllib.parse import urljoin

from stoplist_nb import errors
from stoplist_nb._http.addresses import same_origin, shown

#: Redirects within the base URL's origin followed for one request.
MAX_REDIRECTS = 3


def next_url(
    what: str, verb: str, status: int, location: str | None, url: str, base_url: str, hop: int
) -> str:
    """The URL to send the request to next, for a 3xx reply to ``url`` (``hop``: followed so far).

    Within the origin, at most :data:`MAX_REDIRECTS`: a POST only on 307 and
    308 (the API serves no GET). Anything else is ``InvalidReply``.
    """
    if location is None:
        raise errors.InvalidReply(f"{what}: an HTTP {status} reply with no Location")
    target = urljoin(url, location)
    if not same_origin(target, base_url):
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
