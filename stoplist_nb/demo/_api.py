"""The demo service's backend and its profile handlers.

Each API method is one function in the ``ENDPOINTS`` table of ``_routes`` (method
name such as ``"profiles/list"`` -> HTTP verb and handler), so a new endpoint is one
function and one table row. Handlers return a :class:`Reply` or raise :class:`ApiError`;
they know nothing about sockets, faults or the request log. The export flow's handlers
live in ``_export`` and its state in the backend's ``exports`` store (``_tasks``).
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from typing import Any

try:
    import mongomock
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("the demo service needs mongomock: pip install 'stoplist_nb[demo]'") from exc

from stoplist_nb.demo._data import FIELDS
from stoplist_nb.demo._reply import (
    API_PREFIX,
    DOWNLOAD_PREFIX,
    ApiError,
    Call,
    Reply,
    error_reply,
    is_int,
    success,
)
from stoplist_nb.demo._tasks import ExportStore

__all__ = ["ApiError", "Backend", "Call", "Reply", "error_reply", "method_name"]

DEFAULT_LIMIT = 1000
MAX_LIMIT = 10_000

# What mongomock raises for a query or projection it will not evaluate; a real MongoDB
# refuses the same input, so it is the caller's error (400), not the server's.
_QUERY_ERRORS = (
    mongomock.OperationFailure,
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    IndexError,
    NotImplementedError,
    re.error,
)


def method_name(path: str) -> str:
    """The API method a URL path names: ``/api/v1.1/profiles/list`` -> ``profiles/list``."""
    if path.startswith(API_PREFIX):
        return path[len(API_PREFIX) :]
    if path.startswith(DOWNLOAD_PREFIX):
        return "download"
    # Keeps its leading slash, so it never matches a key of ENDPOINTS.
    return path


def parse_json_object(body: bytes) -> dict[str, Any]:
    """The request body as a JSON object, or ApiError 400."""
    try:
        value = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ApiError(400, "request body is not valid JSON") from None
    if not isinstance(value, dict):
        raise ApiError(400, "request body must be a JSON object")
    return value


class Backend:
    """The data set, the credentials, the in-memory MongoDB collection and the exports."""

    def __init__(
        self,
        profiles: list[dict[str, Any]],
        *,
        token: str,
        db_id: int,
        http_errors: bool,
        exports: ExportStore | None = None,
    ) -> None:
        self.token = token
        self.db_id = db_id
        self.http_errors = http_errors
        self.exports = exports if exports is not None else ExportStore.for_profiles(profiles)
        # mongomock is not thread-safe; the HTTP server runs one thread per connection.
        self._lock = threading.Lock()
        self._collection = mongomock.MongoClient().demo.profiles
        docs = [{"_id": p["id"], **{k: v for k, v in p.items() if k != "id"}} for p in profiles]
        if docs:
            self._collection.insert_many(docs)

    def authorize(self, call: Call) -> None:
        """Check the token of the body (or query), else of ``Authorization: Bearer``."""
        token = call.params.get("token")
        if token is None or token == "":
            token = call.bearer
        if token is None or token == "":
            raise ApiError(401, "API token required")
        if not isinstance(token, str) or not secrets.compare_digest(
            token.encode("utf-8"), self.token.encode("utf-8")
        ):
            raise ApiError(403, "Access denied")

    def check_db(self, value: Any, name: str) -> None:
        """Require parameter ``name`` to be this database's id (an int)."""
        if value is None:
            raise ApiError(400, f"{name} is required")
        if not is_int(value):
            raise ApiError(400, f"{name} must be an integer")
        if value != self.db_id:
            raise ApiError(400, "database not found")

    def find(
        self, query: dict[str, Any], fields: list[str] | None, from_id: str, limit: int
    ) -> list[dict[str, Any]]:
        """One page of profiles, ``_id`` renamed to ``id`` and put first."""
        query = _exists_false_as_nor(query)
        if from_id:
            query = (
                {"$and": [query, {"_id": {"$gt": from_id}}]} if query else {"_id": {"$gt": from_id}}
            )
        projection = None
        if fields:
            # The service names the id `_id` in `fields`; accept its reply name `id` too.
            projection = {"_id" if name == "id" else name: 1 for name in fields}
        with self._lock:
            try:
                cursor = self._collection.find(query, projection).sort("_id", 1).limit(limit)
                docs = list(cursor)  # mongomock evaluates lazily: errors surface here
            except _QUERY_ERRORS as exc:
                what = "fields" if projection and "collision" in str(exc).lower() else "query"
                raise ApiError(400, f"invalid {what}: {exc}") from None
        return [{"id": doc.pop("_id"), **doc} for doc in docs]


def _exists_false_as_nor(query: Any) -> Any:
    """Rewrite ``{path: {"$exists": false}}`` as ``{"$nor": [{path: {"$exists": true}}]}``.

    MongoDB defines ``$exists: false`` as the negation of ``$exists: true``, so
    ``{"a.b": {"$exists": false}}`` rules out ``{"a": [{"b": 1}, {}]}``; mongomock
    matches it because one element lacks ``b``. The rewritten form means the
    same in MongoDB and is evaluated right by mongomock. Anything malformed is
    passed through untouched, for mongomock to refuse.

    >>> _exists_false_as_nor({"a.b": {"$exists": False, "$ne": 1}})
    {'$and': [{'$nor': [{'a.b': {'$exists': True}}]}, {'a.b': {'$ne': 1}}]}
    """
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


def profiles_list(backend: Backend, call: Call) -> Reply:
    """``POST /api/v1.1/profiles/list``: one page of profiles."""
    params = call.params
    backend.check_db(params.get("db_id"), "db_id")
    fmt = params.get("format")
    if fmt is not None and fmt != "json":
        raise ApiError(400, f"unsupported format: {fmt!r}")
    from_id = params.get("from_id")
    if from_id is None:
        from_id = ""
    if not isinstance(from_id, str):
        raise ApiError(400, "from_id must be a string")
    limit = params.get("limit")
    if limit is None:
        limit = DEFAULT_LIMIT
    if not is_int(limit) or limit < 1:
        raise ApiError(400, "limit must be a positive integer")
    if limit > MAX_LIMIT:
        raise ApiError(400, f"limit must not exceed {MAX_LIMIT}")
    query = params.get("query")
    if query is None:
        query = {}
    if not isinstance(query, dict):
        raise ApiError(400, "query must be a JSON object")
    fields = params.get("fields")
    if fields is not None and (
        not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields)
    ):
        raise ApiError(400, "fields must be a list of field names")
    rows = backend.find(query, fields, from_id, limit)
    return success(data=rows, next_from_id=rows[-1]["id"] if rows else "")


def databases_fields_get(backend: Backend, call: Call) -> Reply:
    """``POST /api/v1.1/databases/fields_get``: the profile fields of the database."""
    backend.check_db(call.params.get("id"), "id")
    data = [
        {"name": name, "title": title, "type": kind, "category": category, "required": False}
        for name, title, kind, category in FIELDS
    ]
    return success(data=data)
