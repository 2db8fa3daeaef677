"""The demo service's routes: which handler answers each API method, and how a failure is told."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stoplist_nb.demo._api import Backend, databases_fields_get, profiles_list
from stoplist_nb.demo._export import download, suppresses_export, tasks_status
from stoplist_nb.demo._reply import ApiError, Call, Reply, error_reply

__all__ = ["ENDPOINTS", "dispatch"]


@dataclass(frozen=True)
class Endpoint:
    """An API method: the HTTP verb it answers and its handler."""

    verb: str
    handler: Callable[[Backend, Call], Reply]
    auth: bool = True


ENDPOINTS: dict[str, Endpoint] = {
    "profiles/list": Endpoint("POST", profiles_list),
    "databases/fields_get": Endpoint("POST", databases_fields_get),
    "suppresses/export": Endpoint("POST", suppresses_export),
    "tasks/status": Endpoint("POST", tasks_status),
    # Answers 403/404 itself: a file download is not a JSON API call.
    "download": Endpoint("GET", download, auth=False),
}


def dispatch(backend: Backend, name: str, call: Call) -> Reply:
    """Run the endpoint for ``name``; every failure becomes the error envelope."""
    endpoint = ENDPOINTS.get(name)
    try:
        if endpoint is None or endpoint.verb != call.verb:
            raise ApiError(404, "unknown method")
        if endpoint.auth:
            backend.authorize(call)
        return endpoint.handler(backend, call)
    except ApiError as exc:
        return error_reply(exc.code, exc.text, http_errors=backend.http_errors)
