"""Every exception stoplist_nb raises, rooted at :class:`StoplistError` (the tree: docs/errors.md).

Leaves also inherit the builtin they resemble (``except ValueError`` works);
no message ever holds the token of one of this process's clients.
"""

from __future__ import annotations

import sys
from typing import Any

from stoplist_nb._redact import redact


class StoplistError(Exception):
    """Raised for anything that goes wrong in stoplist_nb (the root of the tree).

    Attributes:
        partial: What a paging call fetched before it failed, or ``None``.
        resume_from: The ``from_id`` to resume from (``""``: start again);
            ``partial`` plus the resumed read are the whole list, each row once.
        hint: How to carry on, when there is a way (also in the message).
        task_id: The export task the error happened in, once it was started.

    >>> print(InvalidInput("limit must be positive", hint="e.g. limit=500"))
    limit must be positive (e.g. limit=500)
    """

    partial: Any = None
    resume_from: str | None = None
    task_id: str | None = None
    hint: str | None = None

    def __init__(self, *args: Any, **attributes: Any) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))
        for name, value in attributes.items():
            if not hasattr(type(self), name):
                raise TypeError(f"{type(self).__name__} has no attribute {name!r}")
            setattr(self, name, value)

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

    >>> str(APIError(404, "no such list", method="suppresses/export"))
    'suppresses/export: error 404 (no such list)'
    """

    def __init__(self, code: int, text: str, *, method: str, http_status: int = 200) -> None:
        self.code, self.text, self.method, self.http_status = code, text, method, http_status
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
    """Raised when a directory holds another pull, version or files; nothing changes."""


class OutputExists(InvalidInput, FileExistsError):
    """Raised when the output file ``path`` exists and ``overwrite`` is false."""

    path: Any = None


class DatasetDamaged(DatasetMismatch):
    """Raised when a dataset's ``part`` (``None``: its checkpoint) differs from what was written."""

    part: str | None = None


class DatasetLocked(StoplistError, RuntimeError):
    """Raised when another writer (``holder``: host, pid, start) holds the dataset's ``.lock``."""

    holder: str = ""


class CursorStalled(StoplistError, RuntimeError):
    """Raised when a page keeps returning rows but ``next_from_id`` does not move."""


class TaskFailed(StoplistError):
    """Raised when an export task reports failure (``status``: the service's word)."""

    status: str = ""


class TaskTimeout(StoplistError, TimeoutError):
    """Raised when an export task still runs at the deadline (``wait_for_task`` resumes)."""

    progress: int | None = None


class BadArchive(StoplistError, ValueError):
    """Raised when a downloaded file is not a readable ZIP holding CSV files."""


class ArchiveTooLarge(BadArchive):
    """Raised past ``max_bytes``, or for a ZIP past ``max_size`` or ``max_ratio``."""


_BY_CODE = {400: BadRequest, 401: AuthError, 402: TariffLimit, 403: AuthError, 429: RateLimited}


def api_error_class(code: int) -> type[APIError]:
    """The ``APIError`` subclass for a service or HTTP error code."""
    return _BY_CODE.get(code, ServerError if 500 <= code <= 599 else APIError)


def add_note(exc: BaseException, note: str) -> None:
    """Add ``note`` to ``exc`` (PEP 678), also on Python 3.10, as the backport does."""
    if sys.version_info >= (3, 11):
        exc.add_note(note)
    else:
        exc.__notes__ = [*getattr(exc, "__notes__", []), note]
