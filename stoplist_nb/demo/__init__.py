"""A local stand-in for the Altcraft Platform API v1.1, over real HTTP.

The demo service answers ``profiles/list`` and ``databases/fields_get`` from a
generated, reproducible data set, with MongoDB query semantics (through mongomock). It
also exports a suppression list the way the platform does: ``suppresses/export``
starts a task, ``tasks/status`` moves it one step per poll, and
``GET /api/download/<path>`` serves the ``.md5.zip`` of MD5-hashed contacts. The list
overlaps the profiles, so matching them finds real hits.

It serves example notebooks when no real token is at hand and lets tests script
failures that travel through a real HTTP stack: error statuses, HTML pages, broken JSON,
slow replies, stalled cursors, connection resets and truncated bodies
(:meth:`DemoService.add_fault`), and odd export tasks, CSV layouts and hostile archives
(:meth:`DemoService.plan_next_export`).

It is an independent implementation of the API contract: nothing here imports the
client, so the two cannot share a bug.

Example:
    >>> from stoplist_nb.demo import serve
    >>> with serve(profiles=50, seed=1) as svc:
    ...     print(len(svc.profiles), svc.suppress_id, svc.suppress_name)
    50 7 Стоп-лист 2024 (main)

    The three steps of an export, with plain ``requests``:

    >>> import io, zipfile, requests
    >>> with serve(profiles=50, seed=1) as svc:
    ...     def post(method, **params):
    ...         url = f"{svc.base_url}/api/v1.1/{method}"
    ...         body = {"token": svc.token, **params}
    ...         return requests.post(url, json=body, timeout=5).json()["data"]
    ...     task_id = post("suppresses/export", id=svc.suppress_id, type="emails")["task_id"]
    ...     steps = [post("tasks/status", task_id=task_id) for _ in range(4)]
    ...     path = steps[-1]["result"]["hashed_file"]
    ...     url = f"{svc.base_url}/api/download/{path}"
    ...     archive = requests.get(url, params={"token": svc.token}, timeout=5).content
    ...     emails = svc.suppressed["emails"]
    >>> [(s["status"], s["progress"]) for s in steps]
    [('queued', 0), ('processing', 40), ('processing', 80), ('completed', 100)]
    >>> rows = zipfile.ZipFile(io.BytesIO(archive)).read(svc.suppress_name + ".md5.csv")
    >>> len(rows.split()) == len(emails) == steps[-1]["result"]["total"]
    True
"""

from stoplist_nb.demo._data import generate_profiles
from stoplist_nb.demo._server import Fault, RequestRecord
from stoplist_nb.demo._service import DemoService, serve
from stoplist_nb.demo._tasks import ExportPlan

__all__ = ["DemoService", "ExportPlan", "Fault", "RequestRecord", "generate_profiles", "serve"]
