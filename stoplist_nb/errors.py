"""Every exception stoplist_nb raises, in one tree.

::

    StoplistError
    ├── APIError                  the service answered, with a non-zero ``error``
    │   ├── BadRequest            400: the service refused the request's content
    │   ├── AuthError             401/403: token missing, wrong or without access
    │   ├── TariffLimit           402: the account's tariff limit is reached
    │   ├── RateLimited           429: too many requests, retries ran out
    │   └── ServerError           5xx: the service failed, retries ran out
    ├── TransportError            no usable reply at all
    │   ├── ConnectError          the connection failed or was reset
    │   ├── RequestTimeout        the reply did not arrive in time
    │   ├── InvalidReply          the reply was not the JSON envelope
    │   └── IncompleteDownload    a download ended before its last byte
    ├── InvalidInput              bad arguments, caught before anything is sent
    │   ├── InvalidQuery          a MongoDB query the service would not accept
    │   ├── UnsafePath            a download path that leaves the service's base URL
    │   ├── OutputExists          a file is where the output goes, and replacing it was not asked
    │   └── DatasetMismatch       a dataset directory that holds another pull, or other files
    │       └── DatasetDamaged    a dataset's checkpoint or parts are not what it recorded
    ├── DatasetLocked             another writer is writing the dataset directory
    ├── CursorStalled             paging: the cursor stopped advancing
    ├── TaskFailed                an export task ended in failure
    ├── TaskTimeout               an export task was still running at the deadline
    └── BadArchive                a download is not a readable ZIP of CSV files
        └── ArchiveTooLarge       the download or its unpacking exceeds the set limits

Leaves also inherit the builtin they resemble, so ``except ValueError`` and
``except TimeoutError`` keep working. Every exception raised while paging
carries what was already fetched (``partial``) and where to resume
(``resume_from``); its message says so. Every exception raised by an export
after its task was started names the task (``task_id``), in its message too.

No message ever contains the API token: every exception here scrubs its own
message of the tokens of this process's clients.
"""

from __future__ import annotations

import sys
from typing import Any

from stoplist_nb._redact import redact


class StoplistError(Exception):
    """Raised for anything that goes wrong in stoplist_nb (the root of the tree).

    Attributes:
        partial: What a paging call fetched before it failed (a DataFrame for
            ``read_profiles``), or ``None``.
        resume_from: The ``from_id`` to resume a paging call from (``""``: the
            first page failed, start again); ``partial`` plus the read resumed
            there are the whole list, each row once.
        hint: How to carry on, when there is a way (also shown in the message).
        task_id: The export task the error happened in, once it was started.
    """

    partial: Any = None
    resume_from: str | None = None
    task_id: str | None = None
    hint: str | None = None

    def __init__(self, *args: Any, hint: str | None = None) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))
        if hint is not None:
            self.hint = hint

    def __str__(self) -> str:
        text = super().__str__()
        named = f"task {redact(self.task_id)!r}" if self.task_id is not None else None
        if named is not None and named not in text:
            text = f"export {named}: {text}"
        if self.hint:
            text += f" ({self.hint})"
        if self.resume_from == "":
            text += " (nothing was read yet: call again without from_id)"
        elif self.resume_from is not None:
            if self.partial is None:
                fetched = ""
            elif getattr(self.partial, "written", True) is False:
                # A file written page by page: what was read is not kept, only counted.
                fetched = f"{len(self.partial)} rows were read, no file was written; "
            else:
                fetched = f"{len(self.partial)} rows fetched so far are in .partial; "
            text += f" ({fetched}resume with from_id={self.resume_from!r})"
        return redact(text)


class APIError(StoplistError):
    """Raised when the service answers with a non-zero ``error``.

    Attributes:
        code: The service's error code (the HTTP status when the body had none).
        text: The service's ``error_text``.
        method: The API method called, e.g. ``"profiles/list"``.
        http_status: The HTTP status of the reply.
    """

    def __init__(self, code: int, text: str, *, method: str, http_status: int = 200) -> None:
        self.code = code
        self.text = text
        self.method = method
        self.http_status = http_status
        where = f"HTTP {http_status}, " if http_status != 200 else ""
        super().__init__(f"{method}: error {code} ({where}{text or 'no error text'})")


class BadRequest(APIError, ValueError):
    """Raised when the service refuses the request's content (error 400)."""


class AuthError(APIError, PermissionError):
    """Raised when the token is missing, wrong or has no access (errors 401, 403)."""


class TariffLimit(APIError):
    """Raised when the account's tariff limit is reached (error 402)."""


class RateLimited(APIError):
    """Raised when the service still answers 429 after every retry."""


class ServerError(APIError):
    """Raised when the service still fails (5xx) after every retry."""


class TransportError(StoplistError):
    """Raised when no usable reply arrived."""


class ConnectError(TransportError, ConnectionError):
    """Raised when the connection cannot be opened or breaks off."""


class RequestTimeout(TransportError, TimeoutError):
    """Raised when the service does not answer within the timeout or the deadline."""


class InvalidReply(TransportError):
    """Raised when a reply is not the JSON envelope (an HTML error page, say)."""


class IncompleteDownload(TransportError):
    """Raised when a download stops short of its announced length."""


class InvalidInput(StoplistError, ValueError):
    """Raised for a bad argument, before any request is sent."""


class InvalidQuery(InvalidInput):
    """Raised for a MongoDB query the service would not accept."""


class UnsafePath(InvalidInput):
    """Raised for a download path that is not a plain path under ``/api/download/``."""


class DatasetMismatch(InvalidInput):
    """Raised when a directory cannot take the Parquet dataset asked for; nothing is changed.

    It holds another pull's checkpoint, another version's, a dataset while
    neither resuming nor overwriting was asked, or files not the dataset's.
    """


class OutputExists(InvalidInput, FileExistsError):
    """Raised when the output file exists and ``overwrite`` was not given; nothing is sent.

    Attributes:
        path: The file that is there.
    """

    def __init__(self, message: str, *, path: Any = None) -> None:
        super().__init__(message)
        self.path = path


class DatasetDamaged(DatasetMismatch):
    """Raised when a dataset's checkpoint or files differ from what was written.

    Attributes:
        part: The first file that fails its check (``repair=True`` pulls on
            from there), or ``None`` for the checkpoint itself (only
            ``overwrite=True`` starts again).
    """

    def __init__(self, message: str, *, part: str | None = None) -> None:
        super().__init__(message)
        self.part = part


class DatasetLocked(StoplistError, RuntimeError):
    """Raised when another writer, named in the message, holds the dataset's ``.lock``.

    Nothing was removed, written or sent; the OS lock dies with its process.
    Also raised, with ``holder`` empty, where the filesystem cannot lock.

    Attributes:
        holder: What the lock file says of its holder (host, pid, start time).
    """

    def __init__(self, message: str, *, holder: str = "") -> None:
        super().__init__(message)
        self.holder = holder


class CursorStalled(StoplistError, RuntimeError):
    """Raised when a page keeps returning rows but ``next_from_id`` does not move."""


class TaskFailed(StoplistError):
    """Raised when an export task reports failure.

    Attributes:
        status: The status word the service reported.
    """

    def __init__(self, message: str, *, task_id: str, status: str) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.status = status


class TaskTimeout(StoplistError, TimeoutError):
    """Raised when an export task is still running at the deadline.

    The task goes on: ``wait_for_task(client, exc.task_id)`` picks it up again.
    """

    def __init__(self, message: str, *, task_id: str, progress: int | None = None) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.progress = progress


class BadArchive(StoplistError, ValueError):
    """Raised when a downloaded file is not a readable ZIP holding CSV files."""


class ArchiveTooLarge(BadArchive):
    """Raised when a download exceeds ``max_bytes``, or a ZIP would unpack too far.

    The unpacking limits (against zip bombs) are ``max_size`` and ``max_ratio``.
    """


_BY_CODE: dict[int, type[APIError]] = {
    400: BadRequest,
    401: AuthError,
    402: TariffLimit,
    403: AuthError,
    429: RateLimited,
}


def api_error_class(code: int) -> type[APIError]:
    """The ``APIError`` subclass for a service or HTTP error code."""
    return _BY_CODE.get(code, ServerError if 500 <= code <= 599 else APIError)


def add_note(exc: BaseException, note: str) -> None:
    """Add ``note`` to ``exc`` (PEP 678), also on Python 3.10, as the backport does."""
    if sys.version_info >= (3, 11):
        exc.add_note(note)
    else:
        exc.__notes__ = [*getattr(exc, "__notes__", []), note]
