"""Handlers of the export flow: ``suppresses/export``, ``tasks/status`` and the download.

They check the parameters and leave the state to the backend's
:class:`~stoplist_nb.demo._tasks.ExportStore`.
"""

from __future__ import annotations

from urllib.parse import quote

from stoplist_nb.demo._api import Backend
from stoplist_nb.demo._reply import DOWNLOAD_PREFIX, ApiError, Call, Reply, is_int, success
from stoplist_nb.demo._suppress import EXPORT_TYPES

__all__ = ["download", "suppresses_export", "tasks_status"]

ZIP_TYPE = "application/zip"


def suppresses_export(backend: Backend, call: Call) -> Reply:
    """``POST /api/v1.1/suppresses/export``: start exporting the list; ``data.task_id``."""
    store = backend.exports
    list_id = call.params.get("id")
    if list_id is None:
        raise ApiError(400, "id is required")
    if not is_int(list_id):
        raise ApiError(400, "id must be an integer")
    if list_id != store.suppress_id:
        raise ApiError(400, "suppression list not found")
    type_ = call.params.get("type")
    if type_ is None:
        type_ = "all"
    if type_ not in EXPORT_TYPES:
        raise ApiError(400, f"type must be one of {', '.join(EXPORT_TYPES)}")
    return success(data={"task_id": store.start(type_)})


def tasks_status(backend: Backend, call: Call) -> Reply:
    """``POST /api/v1.1/tasks/status``: advance the task one step and report it."""
    task_id = call.params.get("task_id")
    if task_id is None or task_id == "":
        raise ApiError(400, "task_id is required")
    if not isinstance(task_id, str):
        raise ApiError(400, "task_id must be a string")
    data = backend.exports.poll(task_id)
    if data is None:
        raise ApiError(400, "task not found")
    return success(data=data)


def _refusal(status: int, text: str) -> Reply:
    return Reply(status, {"error": status, "error_text": text})


def download(backend: Backend, call: Call) -> Reply:
    """``GET /api/download/<path>``: the archive of a completed export.

    The token comes in the query parameter ``token`` or as ``Authorization: Bearer``.
    Answers are real HTTP statuses whatever ``http_errors`` says: this is a file
    server, not the JSON API (403 without a valid token, 404 for an unknown path or
    a file its plan holds back: see ``done_before_file`` and ``not_ready_downloads``).
    """
    try:
        backend.authorize(call)
    except ApiError:
        # Missing or wrong, the file server says the same: no access.
        return _refusal(403, "Access denied")
    data = backend.exports.file(call.path[len(DOWNLOAD_PREFIX) :])
    if data is None:
        return _refusal(404, "file not found")
    filename = call.path.rsplit("/", 1)[-1]
    disposition = f"attachment; filename*=UTF-8''{quote(filename, safe='')}"
    return Reply(
        200, body=data, content_type=ZIP_TYPE, headers={"Content-Disposition": disposition}
    )
