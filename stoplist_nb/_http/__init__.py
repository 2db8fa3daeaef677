"""Everything that touches requests and urllib3, behind :class:`Transport`.

:mod:`~stoplist_nb._http.transport` sends and receives; the retry policy
(:mod:`~stoplist_nb._http.retry`), the overall deadline of an exchange
(:mod:`~stoplist_nb._http.deadline`), which redirects are followed
(:mod:`~stoplist_nb._http.redirects`) and how a reply or a status becomes an
exception (:mod:`~stoplist_nb._http.replies`) are its parts. Every rule about a
URL is in :mod:`~stoplist_nb._http.addresses`. Here is what the modules above build on.
"""

from stoplist_nb._http.addresses import (
    address_fault,
    origin,
    safe_download_path,
    secret_in_address,
)
from stoplist_nb._http.transport import (
    DEFAULT_DEADLINE,
    DEFAULT_MIN_DOWNLOAD_RATE,
    DEFAULT_TIMEOUT,
    Transport,
    check_envelope,
)

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_MIN_DOWNLOAD_RATE",
    "DEFAULT_TIMEOUT",
    "Transport",
    "address_fault",
    "check_envelope",
    "origin",
    "safe_download_path",
    "secret_in_address",
]
