"""stoplist_nb: Altcraft Platform API v1.1 profiles and suppression lists in pandas.

>>> import stoplist_nb as sn
>>> client = sn.Client.from_env()                        # doctest: +SKIP
>>> df = sn.read_profiles(client, db_id=1)               # doctest: +SKIP

The widget (:mod:`stoplist_nb.widgets`), the plots (:mod:`stoplist_nb.plots`)
and the demo service (:mod:`stoplist_nb.demo`) are imported on demand.
"""

from stoplist_nb.client import Client, Page
from stoplist_nb.errors import (
    APIError,
    AuthError,
    BadRequest,
    ConnectError,
    CursorStalled,
    InvalidInput,
    InvalidQuery,
    InvalidReply,
    RateLimited,
    RequestTimeout,
    ServerError,
    StoplistError,
    TariffLimit,
    TransportError,
)
from stoplist_nb.normalize import normalize_profiles, split_channels
from stoplist_nb.profiles import iter_profile_pages, read_profiles
from stoplist_nb.query import validate_query

__all__ = [
    "APIError",
    "AuthError",
    "BadRequest",
    "Client",
    "ConnectError",
    "CursorStalled",
    "InvalidInput",
    "InvalidQuery",
    "InvalidReply",
    "Page",
    "RateLimited",
    "RequestTimeout",
    "ServerError",
    "StoplistError",
    "TariffLimit",
    "TransportError",
    "iter_profile_pages",
    "normalize_profiles",
    "read_profiles",
    "split_channels",
    "validate_query",
]
__version__ = "0.1.0"
