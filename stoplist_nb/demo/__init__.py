"""A local stand-in for the Altcraft Platform API v1.1, over real HTTP.

It answers ``profiles/list`` and ``databases/fields_get`` from a generated, reproducible
data set with MongoDB query semantics (mongomock), and exports a suppression list that
overlaps the profiles as the platform does: ``suppresses/export`` starts a task,
``tasks/status`` moves it one step per poll, ``GET /api/download/<path>`` serves the
``.md5.zip``. Tests script failures through a real HTTP stack with
:meth:`DemoService.add_fault` and :meth:`DemoService.plan_next_export`. Nothing here
imports the client, so the two cannot share a bug.

Example:
    >>> import requests
    >>> with serve(profiles=50, seed=1) as svc:
    ...     def post(method, **params):
    ...         url, body = f"{svc.base_url}/api/v1.1/{method}", {"token": svc.token, **params}
    ...         return requests.post(url, json=body, timeout=5).json()["data"]
    ...     task_id = post("suppresses/export", id=svc.suppress_id, type="emails")["task_id"]
    ...     steps = [post("tasks/status", task_id=task_id) for _ in range(4)]
    >>> [(s["status"], s["progress"]) for s in steps]
    [('queued', 0), ('processing', 40), ('processing', 80), ('completed', 100)]
"""

from stoplist_nb.demo._data import generate_profiles
from stoplist_nb.demo._server import DemoService, Fault, RequestRecord, serve
from stoplist_nb.demo._suppress import ExportPlan

__all__ = ["DemoService", "ExportPlan", "Fault", "RequestRecord", "generate_profiles", "serve"]
