"""Everything that touches requests and urllib3, behind :class:`Transport`."""

from stoplist_nb._http.addresses import address_fault, origin, safe_download_path, secret_in_address
from stoplist_nb._http.replies import check_envelope
from stoplist_nb._http.transport import (
    DEFAULT_DEADLINE,
    DEFAULT_MIN_DOWNLOAD_RATE,
    DEFAULT_TIMEOUT,
    Transport,
)

__all__ = [
    "DEFAULT_DEADLINE", "DEFAULT_MIN_DOWNLOAD_RATE", "DEFAULT_TIMEOUT", "Transport",
    "address_fault", "check_envelope", "origin", "safe_download_path", "secret_in_address"
]  # fmt: skip
