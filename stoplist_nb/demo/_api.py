"""The demo service's endpoints: one handler per API method, and the envelope they speak.

A handler takes the service and the parsed :class:`Call` and returns a :class:`Reply` or
raises :class:`ApiError`; it knows nothing about sockets, faults or the request log.
"""

from __future__ import annotations

import json
import re
import secrets
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

try:
    import mongomock
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("the demo service needs mongomock: pip install 'stoplist_nb[demo]'") from exc

from stoplist_nb.demo._data import FIELDS
from stoplist_nb.demo._suppress import EXPORT_TYPES

if TYPE_CHECKING:
    from stoplist_nb.demo._server import DemoService

API_PREFIX = "/api/v1.1/"
DOWNLOAD_PREFIX = "/api/download/"
JSON_TYPE = "application/json; charset=utf-8"
DEFAULT_LIMIT = 1000
MAX_LIMIT = 10_000

# What mongomock raises for a query or projection it will not evaluate; a real MongoDB
# refuses the same input, so it is the caller's error (400), not the server's.
_QUERY_ERRORS = (mongomock.OperationFailure, ValueError, TypeError, KeyError, AttributeError,
                 IndexError, NotImplementedError, re.error)  # fmt: skip


class ApiError(Exception):
    """An API-level failure: becomes the ``error``/``error_text`` envelope."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(code, text)
        self.code, self.text = code, text


@dataclass
class Reply:
    """One HTTP reply: a JSON envelope (``payload``) or a raw ``body``."""

    status: int = 200
    payload: dict[str, Any] | None = None
    body: bytes = b""
    content_type: str = JSON_TYPE
    headers: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        payload = self.payload
        return self.body if payload is None else json.dumps(payload, ensure_ascii=False).encode()


@dataclass(frozen=True)
class Call:
    verb: str
    path: str
    params: dict[str, Any]
    bearer: str | None = None


def success(**payload: Any) -> Reply:
    return Reply(payload={"error": 0, "error_text": "Successful operation", **payload})


def error_reply(code: int, text: str, *, http_errors: bool) -> Reply:
    """The error envelope, with HTTP status ``code`` (or 400) only if ``http_errors``."""
    status = (code if 400 <= code <= 599 else 400) if http_errors else 200
    return Reply(status=status, payload={"error": code, "error_text": text})


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def method_name(path: str) -> str:
    """The API method a URL path names: ``/api/v1.1/profiles/list`` -> ``profiles/list``."""
    if path.startswith(API_PREFIX):
        return path[len(API_PREFIX) :]
    # Any other path keeps its leading slash, so it never names an endpoint.
    return "download" if path.startswith(DOWNLOAD_PREFIX) else path


def param(params: dict[str, Any], name: str, default: Any) -> Any:
    return default if (value := params.get(name)) is None else value


def _check_id(value: Any, name: str, expected: int, what: str) -> None:
    if value is None:
        raise ApiError(400, f"{name} is required")
    if not is_int(value):
        raise ApiError(400, f"{name} must be an integer")
    if value != expected:
        raise ApiError(400, f"{what} not found")


def load(profiles: list[dict[str, Any]]) -> Any:
    """An in-memory MongoDB collection of ``profiles``, each ``id`` its ``_id``."""
    collection = mongomock.MongoClient().demo.profiles
    docs = [{"_id": p["id"], **{k: v for k, v in p.items() if k != "id"}} for p in profiles]
    if docs:
        collection.insert_many(docs)
    return collection


def authorize(svc: DemoService, call: Call) -> None:
    """Check the token of the body (or query), else of ``Authorization: Bearer``."""
    token = call.params.get("token")
    token = call.bearer if token in (None, "") else token
    if token in (None, ""):
        raise ApiError(401, "API token required")
    if not (isinstance(token, str) and secrets.compare_digest(token.encode(), svc.token.encode())):
        raise ApiError(403, "Access denied")


def _exists_false_as_nor(query: Any) -> Any:
    """``$exists: false`` as the ``$nor`` of ``$exists: true``, which mongomock gets right.

    >>> _exists_false_as_nor({"a.b": {"$exists": False, "$ne": 1}})
    {'$and': [{'$nor': [{'a.b': {'$exists': True}}]}, {'a.b': {'$ne': 1}}]}
    """
    # mongomock matches {"a.b": {"$exists": false}} to {"a": [{"b": 1}, {}]}; MongoDB does
    # not. Anything malformed passes as is, for mongomock to refuse.
    if isinstance(query, list):
        return [_exists_false_as_nor(q) for q in query]
    if not isinstance(query, dict):
        return query
    parts: list[dict[str, Any]] = []
    for key, value in query.items():
        if key in ("$and", "$or", "$nor"):
            parts.append({key: _exists_false_as_nor(value)})
        elif isinstance(value, dict) and value.get("$exists") is False:
            parts.append({"$nor": [{key: {"$exists": True}}]})
            rest = {op: arg for op, arg in value.items() if op != "$exists"}
            if rest:
                parts.append({key: rest})
        elif isinstance(value, dict) and isinstance(value.get("$elemMatch"), dict):
            parts.append({key: {**value, "$elemMatch": _exists_false_as_nor(value["$elemMatch"])}})
        else:
            parts.append({key: value})
    if len(parts) <= 1:
        return parts[0] if parts else {}
    return {"$and": parts}


def profiles_list(svc: DemoService, call: Call) -> Reply:
    params = call.params
    _check_id(params.get("db_id"), "db_id", svc.db_id, "database")
    if (fmt := params.get("format")) not in (None, "json"):
        raise ApiError(400, f"unsupported format: {fmt!r}")
    from_id = param(params, "from_id", "")
    if not isinstance(from_id, str):
        raise ApiError(400, "from_id must be a string")
    limit = param(params, "limit", DEFAULT_LIMIT)
    if not is_int(limit) or limit < 1:
        raise ApiError(400, "limit must be a positive integer")
    if limit > MAX_LIMIT:
        raise ApiError(400, f"limit must not exceed {MAX_LIMIT}")
    query = param(params, "query", {})
    if not isinstance(query, dict):
        raise ApiError(400, "query must be a JSON object")
    fields = params.get("fields")
    if fields is not None and (
        not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields)
    ):
        raise ApiError(400, "fields must be a list of field names")
    query = _exists_false_as_nor(query)
    if from_id:
        after = {"_id": {"$gt": from_id}}
        query = {"$and": [query, after]} if query else after
    # The service names the id `_id` in `fields`; accept its reply name `id` too.
    projection = {"_id" if name == "id" else name: 1 for name in fields} if fields else None
    with svc._lock:
        try:
            cursor = svc._collection.find(query, projection).sort("_id", 1).limit(limit)
            docs = list(cursor)  # mongomock evaluates lazily: errors surface here
        except _QUERY_ERRORS as exc:
            what = "fields" if projection and "collision" in str(exc).lower() else "query"
            raise ApiError(400, f"invalid {what}: {exc}") from None
    rows = [{"id": doc.pop("_id"), **doc} for doc in docs]
    return success(data=rows, next_from_id=rows[-1]["id"] if rows else "")


def databases_fields_get(svc: DemoService, call: Call) -> Reply:
    _check_id(call.params.get("id"), "id", svc.db_id, "database")
    keys = ("name", "title", "type", "category")
    data = [{**dict(zip(keys, row, strict=True)), "required": False} for row in FIELDS]
    return success(data=data)


def suppresses_export(svc: DemoService, call: Call) -> Reply:
    _check_id(call.params.get("id"), "id", svc.exports.suppress_id, "suppression list")
    type_ = param(call.params, "type", "all")
    if type_ not in EXPORT_TYPES:
        raise ApiError(400, f"type must be one of {', '.join(EXPORT_TYPES)}")
    return success(data={"task_id": svc.exports.start(type_)})


def tasks_status(svc: DemoService, call: Call) -> Reply:
    task_id = call.params.get("task_id")
    if task_id is None or task_id == "":
        raise ApiError(400, "task_id is required")
    if not isinstance(task_id, str):
        raise ApiError(400, "task_id must be a string")
    if (data := svc.exports.poll(task_id)) is None:
        raise ApiError(400, "task not found")
    return success(data=data)


def download(svc: DemoService, call: Call) -> Reply:
    """``GET /api/download/<path>``: the archive, with real HTTP statuses (a file server)."""
    try:
        authorize(svc, call)
    except ApiError:
        # Missing or wrong, the file server says the same: no access.
        return Reply(403, {"error": 403, "error_text": "Access denied"})
    if (data := svc.exports.file(call.path[len(DOWNLOAD_PREFIX) :])) is None:
        return Reply(404, {"error": 404, "error_text": "file not found"})
    filename = quote(call.path.rsplit("/", 1)[-1], safe="")
    disposition = f"attachment; filename*=UTF-8''{filename}"
    return Reply(
        200, body=data, content_type="application/zip", headers={"Content-Disposition": disposition}
    )


# Each API method: the HTTP verb it answers and its handler.
ENDPOINTS: dict[str, tuple[str, Callable[[DemoService, Call], Reply]]] = {
    "profiles/list": ("POST", profiles_list),
    "databases/fields_get": ("POST", databases_fields_get),
    "suppresses/export": ("POST", suppresses_export),
    "tasks/status": ("POST", tasks_status),
    "download": ("GET", download),
}


def dispatch(svc: DemoService, name: str, call: Call) -> Reply:
    """Run the endpoint for ``name``; every failure becomes the error envelope."""
    try:
        endpoint = ENDPOINTS.get(name)
        if endpoint is None or endpoint[0] != call.verb:
            raise ApiError(404, "unknown method")
        if name != "download":  # which answers 403/404 itself: a file is not an API call
            authorize(svc, call)
        return endpoint[1](svc, call)
    except ApiError as exc:
        return error_reply(exc.code, exc.text, http_errors=svc.http_errors)
    except Exception:  # a bug in a handler: answer 500 and show it, do not hang
        traceback.print_exc()
        return error_reply(500, "internal error", http_errors=svc.http_errors)
