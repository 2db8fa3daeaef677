"""stoplist_nb: Altcraft Platform API v1.1 profiles and suppression lists in pandas.

>>> import stoplist_nb as sn
>>> client = sn.connect()  # doctest: +SKIP
>>> df = sn.read_profiles(client, db_id=1)  # doctest: +SKIP

The widget, the plots and the demo service are imported on demand.
"""

from stoplist_nb._connect import connect
from stoplist_nb._http.retry import default_retry
from stoplist_nb.client import Client, Page
from stoplist_nb.errors import (
    APIError,
    ArchiveTooLarge,
    AuthError,
    BadArchive,
    BadRequest,
    ConnectError,
    CursorStalled,
    DatasetDamaged,
    DatasetLocked,
    DatasetMismatch,
    IncompleteDownload,
    InvalidInput,
    InvalidQuery,
    InvalidReply,
    OutputExists,
    RateLimited,
    RequestTimeout,
    ServerError,
    StoplistError,
    TariffLimit,
    TaskFailed,
    TaskTimeout,
    TransportError,
    UnsafePath,
)
from stoplist_nb.profiles.dataset import DatasetSummary, dataset_summary
from stoplist_nb.profiles.fields import database_fields
from stoplist_nb.profiles.files import FileSummary
from stoplist_nb.profiles.normalize import normalize_profiles, split_channels
from stoplist_nb.profiles.reading import ProfilesRequest, read_profiles
from stoplist_nb.query import And, Condition, F, Nor, Or, Query, parse_query, validate_query
from stoplist_nb.suppression.archive import read_hashed_csv
from stoplist_nb.suppression.download import download_export, start_suppression_export
from stoplist_nb.suppression.export import (
    SuppressionSummary,
    read_suppression_list,
    write_suppression_parquet,
)
from stoplist_nb.suppression.flagging import flag_suppressed
from stoplist_nb.suppression.hashing import hash_email, hash_emails, hash_phone, hash_phones
from stoplist_nb.suppression.tasks import TaskStatus, get_task, wait_for_task

__all__ = [
    "APIError", "And", "ArchiveTooLarge", "AuthError", "BadArchive", "BadRequest", "Client",
    "Condition", "ConnectError", "CursorStalled", "DatasetDamaged", "DatasetLocked",
    "DatasetMismatch", "DatasetSummary", "F", "FileSummary", "IncompleteDownload", "InvalidInput",
    "InvalidQuery", "InvalidReply", "Nor", "Or", "OutputExists", "Page", "ProfilesRequest", "Query",
    "RateLimited", "RequestTimeout", "ServerError", "StoplistError", "SuppressionSummary",
    "TariffLimit", "TaskFailed", "TaskStatus", "TaskTimeout", "TransportError", "UnsafePath",
    "connect", "database_fields", "dataset_summary", "default_retry", "download_export",
    "flag_suppressed", "get_task", "hash_email", "hash_emails", "hash_phone", "hash_phones",
    "normalize_profiles", "parse_query", "read_hashed_csv", "read_profiles",
    "read_suppression_list", "split_channels", "start_suppression_export", "validate_query",
    "wait_for_task", "write_suppression_parquet"
]  # fmt: skip
__version__ = "0.1.0"
