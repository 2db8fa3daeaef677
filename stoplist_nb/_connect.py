"""``connect()``: your account when the environment names one, the demo service otherwise.

A notebook that starts with ``client = sn.connect()`` runs anywhere: on a laptop
with ``STOPLIST_NB_URL`` and ``STOPLIST_NB_TOKEN`` exported it reads the real
service; on Binder, or in a fresh clone, it reads the embedded demo service and
says so in one line.
"""

from __future__ import annotations

import atexit
import getpass
import threading
from typing import TYPE_CHECKING, Any

from stoplist_nb import errors
from stoplist_nb.client import ENV_TOKEN, ENV_URL, Client, settings_from_env

if TYPE_CHECKING:
    from stoplist_nb.demo import DemoService

__all__ = ["connect"]

# One demo service per data set for the life of the kernel: re-running the
# connect() cell must not start a new server (and a new token) every time.
_services: dict[tuple[int, int], DemoService] = {}
_lock = threading.Lock()


def connect(
    *,
    ask_token: bool = False,
    profiles: int = 2000,
    seed: int = 0,
    quiet: bool = False,
    **client_options: Any,
) -> Client:
    """Return a client for your account, or for the embedded demo service.

    The environment is read by :func:`~stoplist_nb.client.settings_from_env`,
    as everywhere: with ``STOPLIST_NB_URL`` and ``STOPLIST_NB_TOKEN`` set, this
    is :meth:`Client.from_env`. With neither set, it starts the embedded demo
    service on loopback (once per Python process and data set) and prints one
    line saying that the data are demo data, with the demo's database id (1) and
    suppression-list id (7).

    Args:
        ask_token: When ``STOPLIST_NB_URL`` is set but ``STOPLIST_NB_TOKEN`` is
            not, ask for the token with :func:`getpass.getpass`. What you type
            is neither echoed nor kept in the notebook; it lives only in the
            returned client.
        profiles: Size of the demo data set.
        seed: Seed of the demo data set.
        quiet: Do not print the demo line.
        **client_options: Passed to :class:`Client` (``timeout``, ``retry``,
            ``session``).

    Returns:
        A :class:`Client`.

    Raises:
        InvalidInput: Only one of the two variables is set (and ``ask_token``
            cannot supply the missing token).
        ImportError: The demo service is needed but ``mongomock`` is missing
            (``pip install "stoplist_nb[demo]"``).

    >>> import stoplist_nb as sn
    >>> client = sn.connect()  # doctest: +SKIP
    Demo data: the embedded demo service (2000 generated profiles); database id 1, ...
    """
    settings = settings_from_env(ask=_ask_token if ask_token else None)
    if settings is not None:
        return Client(settings.url, settings.token, **client_options)
    svc = _demo_service(profiles, seed)
    if not quiet:
        print(
            f"Demo data: the embedded demo service ({len(svc.profiles)} generated profiles); "
            f"database id {svc.db_id}, suppression list id {svc.suppress_id}. "
            f"Set {ENV_URL} and {ENV_TOKEN} to read your own account."
        )
    return Client(svc.base_url, svc.token, **client_options)


def _ask_token(url: str) -> str:
    return getpass.getpass(f"API token for {url}: ")


def _demo_service(profiles: int, seed: int) -> DemoService:
    errors.require_int("profiles", profiles, minimum=0)
    errors.require_int("seed", seed)
    try:
        from stoplist_nb.demo import DemoService
    except ModuleNotFoundError as exc:
        raise ImportError(
            f"the embedded demo service needs {exc.name}: pip install 'stoplist_nb[demo]'"
        ) from exc
    with _lock:
        svc = _services.get((profiles, seed))
        if svc is None or not svc.running:
            svc = DemoService(profiles, seed).start()
            _services[(profiles, seed)] = svc
            atexit.register(svc.stop)
        return svc
