"""The demo service object: data set, credentials, server thread, faults, exports and log."""

from __future__ import annotations

import contextlib
import copy
import secrets
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from stoplist_nb.demo._api import Backend
from stoplist_nb.demo._data import generate_profiles
from stoplist_nb.demo._server import DemoHTTPServer, Fault, FaultKind, FaultQueue, RequestRecord
from stoplist_nb.demo._suppress import (
    DEFAULT_SUPPRESS_ID,
    DEFAULT_SUPPRESS_NAME,
    ExportPlan,
    ExportStore,
    build_suppressed,
)

if TYPE_CHECKING:  # only for the annotation: the demo must not import the client at run time
    from stoplist_nb.client import Client

__all__ = ["DEFAULT_PROFILES", "DemoService", "serve"]

#: The size of the data set wherever none is named (``python -m stoplist_nb.demo``, ...).
DEFAULT_PROFILES = 2000


class DemoService(Backend):
    """A local implementation of the API, served over real HTTP on loopback.

    Args:
        profiles: Number of profiles to generate, or the profiles themselves (dicts
            with unique string ``"id"``).
        seed: Seed of :func:`generate_profiles` and of the suppression list.
        token: API token to accept; a random one when ``None``.
        host: Address to listen on.
        port: Port to listen on; 0 for a free one.
        db_id: Id of the one database.
        http_errors: Answer API errors with the error code as HTTP status (``True``)
            or with 200 (``False``); the download always uses real statuses.
        suppress_id: Id of the one suppression list.
        suppress_name: Its name, which names the exported ``<name>.md5.zip``.
        suppressed: Its contacts as ``{"emails": [...], "phones": [...], "domains":
            [...]}``; by default about 15% of the profiles' e-mails and phones and 10%
            of their domains, plus as many that no profile has.

    Attributes:
        profiles: The data set, as ``profiles/list`` returns it without ``fields``.
        requests: One :class:`RequestRecord` per request handled, token removed.
    """

    def __init__(
        self,
        profiles: int | Iterable[Mapping[str, Any]] = DEFAULT_PROFILES,
        seed: int = 0,
        *,
        token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        db_id: int = 1,
        http_errors: bool = True,
        suppress_id: int = DEFAULT_SUPPRESS_ID,
        suppress_name: str = DEFAULT_SUPPRESS_NAME,
        suppressed: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        if isinstance(profiles, int):
            data = generate_profiles(profiles, seed)
        else:
            data = [copy.deepcopy(dict(p)) for p in profiles]
            ids = [p.get("id") for p in data]
            if not all(isinstance(i, str) and i for i in ids) or len(set(ids)) != len(ids):
                raise ValueError("every profile needs a unique non-empty string 'id'")
        if token is not None and (not isinstance(token, str) or not token):
            raise ValueError("token must be a non-empty string or None")
        if isinstance(db_id, bool) or not isinstance(db_id, int):
            raise ValueError(f"db_id must be an int, got {db_id!r}")
        if suppressed is None:
            suppressed = build_suppressed(data, seed)
        exports = ExportStore(suppress_id, suppress_name, suppressed)
        super().__init__(data, token or secrets.token_hex(16), db_id, http_errors, exports)
        self.profiles: list[dict[str, Any]] = data
        self.requests: list[RequestRecord] = []
        self._address = (host, port)
        self._requests_lock = threading.Lock()
        self._faults = FaultQueue()
        self._server: DemoHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @property
    def running(self) -> bool:
        """Whether the server is accepting requests."""
        return self._server is not None

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the running server, without a trailing slash."""
        if self._server is None:
            raise RuntimeError("the demo service is not running; call start() first")
        host, port = self._server.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    @property
    def suppress_id(self) -> int:
        """Id of the suppression list."""
        return self.exports.suppress_id

    @property
    def suppress_name(self) -> str:
        """Name of the suppression list; the export is ``<name>.md5.zip``."""
        return self.exports.suppress_name

    @property
    def suppressed(self) -> dict[str, list[str]]:
        """A copy of the list's canonical contacts per kind, whose MD5 the exports hold."""
        return {kind: list(values) for kind, values in self.exports.suppressed.items()}

    def start(self) -> DemoService:
        """Bind the port and serve in a daemon thread; returns the service itself."""
        if self._server is not None:
            raise RuntimeError("the demo service is already running")
        self._stopping = threading.Event()
        server = DemoHTTPServer(self._address, self, self._faults, self._record, self._stopping)
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},  # stop() waits for one poll
            name=f"stoplist-nb-demo:{server.server_address[1]}",
            daemon=True,
        )
        thread.start()
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        """Stop serving, close the port and every open connection; idempotent."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        self._stopping.set()  # wakes handlers sleeping in a "slow" fault
        server.shutdown()
        server.close_connections()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> DemoService:
        if self._server is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.base_url if self._server is not None else "not running"
        return f"<DemoService {where} db_id={self.db_id} profiles={len(self.profiles)}>"

    def add_fault(self, method: str, kind: FaultKind, **options: Any) -> Fault:
        """Queue a fault for the next requests of ``method``.

        Args:
            method: As :attr:`Fault.method`.
            kind: What goes wrong; see :class:`Fault`.
            **options: The other attributes of :class:`Fault`.

        Returns:
            The queued fault; its ``fired`` counts the requests it has hit.

        >>> with serve(profiles=3) as svc:
        ...     fault = svc.add_fault("profiles/list", "status", status=503, times=2)
        >>> fault.remaining
        2
        """
        return self._faults.add(Fault(method, kind, **options))

    def clear_faults(self) -> None:
        """Drop every queued fault."""
        self._faults.clear()

    def plan_next_export(self, **options: Any) -> ExportPlan:
        """Script the next export started (a second call replaces it); later ones get defaults.

        Args:
            **options: The attributes of :class:`ExportPlan`.

        Returns:
            The validated plan.

        >>> with serve(profiles=3) as svc:
        ...     plan = svc.plan_next_export(steps=1, final="success")
        >>> plan.words, plan.final
        (('queued', 'processing'), 'success')
        """
        plan = ExportPlan(**options)
        self.exports.plan_next(plan)
        return plan

    def client(self, **kwargs: Any) -> Client:
        """A ``stoplist_nb`` client for this service; ``kwargs`` go to its constructor."""
        from stoplist_nb.client import Client

        return Client(self.base_url, self.token, **kwargs)

    def _record(self, record: RequestRecord) -> None:
        with self._requests_lock:
            self.requests.append(record)


@contextlib.contextmanager
def serve(
    profiles: int | Iterable[Mapping[str, Any]] = DEFAULT_PROFILES,
    seed: int = 0,
    **options: Any,
) -> Iterator[DemoService]:
    """Run a :class:`DemoService` for the duration of a ``with`` block.

    Args:
        profiles: Same as :class:`DemoService`.
        seed: Same as :class:`DemoService`.
        **options: The keyword arguments of :class:`DemoService`.

    Yields:
        The running service; it is stopped when the block exits.

    >>> import requests
    >>> with serve(profiles=5) as svc:
    ...     url = svc.base_url + "/api/v1.1/profiles/list"
    ...     body = {"token": svc.token, "db_id": svc.db_id, "limit": 2}
    ...     reply = requests.post(url, json=body, timeout=5).json()
    >>> reply["error"], len(reply["data"])
    (0, 2)
    """
    with DemoService(profiles, seed, **options) as service:
        yield service
