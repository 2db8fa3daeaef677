"""A local stand-in for the Altcraft Platform API v1.1, over real HTTP.

The demo service answers ``profiles/list`` and ``databases/fields_get`` from a
generated, reproducible data set, with MongoDB query semantics (through mongomock). It
serves example notebooks when no real token is at hand and lets tests script failures
(error statuses, HTML pages, broken JSON, slow replies, stalled cursors, connection
resets) that travel through a real HTTP stack.

It is an independent implementation of the API contract: nothing here imports the
client, so the two cannot share a bug.

Example:
    >>> from stoplist_nb.demo import serve
    >>> with serve(profiles=50, seed=1) as svc:
    ...     print(len(svc.profiles))
    50
"""

from stoplist_nb.demo._data import generate_profiles
from stoplist_nb.demo._faults import Fault
from stoplist_nb.demo._server import RequestRecord
from stoplist_nb.demo._service import DemoService, serve

__all__ = ["DemoService", "Fault", "RequestRecord", "generate_profiles", "serve"]
