"""``connect()``: your account when the environment names one, the demo service when asked.

Demo data must never pass for an account's (they decide whom a campaign may
contact): the demo is read only when asked, and a line then says so.
"""

from __future__ import annotations

import atexit
import getpass
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stoplist_nb import errors
from stoplist_nb._checks import check_int
from stoplist_nb._http.addresses import address_fault, secret_in_address
from stoplist_nb.client import Client

if TYPE_CHECKING:
    from stoplist_nb.demo import DemoService


#: The account's address and API token, kept in the environment, out of the notebook.
ENV_URL, ENV_TOKEN = "STOPLIST_NB_URL", "STOPLIST_NB_TOKEN"


@dataclass(frozen=True)
class EnvSettings:
    """The service named by the environment (the token is left out of ``repr``)."""

    url: str
    token: str = field(repr=False)


def settings_from_env(*, ask: Callable[[str], str] | None = None) -> EnvSettings | None:
    """Read ``STOPLIST_NB_URL`` and ``STOPLIST_NB_TOKEN`` (blank is unset); ``None`` if neither.

    ``ask(url)`` supplies the token when only the URL is set; else one alone is ``InvalidInput``.
    """
    url = os.environ.get(ENV_URL, "").strip()
    token = os.environ.get(ENV_TOKEN, "").strip()
    if url and (fault := address_fault(url)) is not None:
        if fault == "secret":
            raise secret_in_address(ENV_URL, f"the token goes in {ENV_TOKEN}")
        shown = url.split("?", 1)[0].rsplit("@", 1)[-1]  # never a query or a user's password
        bare = shown.split("://", 1)[-1].lstrip("/")
        scheme = "http" if bare.startswith(("localhost", "127.", "::1", "[::1]")) else "https"
        raise errors.InvalidInput(
            f"{ENV_URL} must be an http:// or https:// address, not {shown!r}",
            hint=f"e.g. export {ENV_URL}={scheme}://{bare}",
        )
    if url and not token and ask is not None:
        token = ask(url).strip()
    if url and token:
        return EnvSettings(url, token)
    if url:
        missing, other = ENV_TOKEN, ENV_URL
        hint = (
            f"export {ENV_TOKEN} too (it is never printed); in a notebook, "
            "sn.connect(ask_token=True) asks for it instead"
        )
    elif token:
        missing, other = ENV_URL, ENV_TOKEN
        hint = (
            f"export {ENV_URL} too (e.g. https://your-platform.example); for the "
            f"embedded demo service, unset {ENV_TOKEN} and call sn.connect(demo=True)"
        )
    else:
        return None
    raise errors.InvalidInput(f"{other} is set but {missing} is not", hint=hint)


#: ``1`` (or ``true``, ``yes``, ``on``): with no account set, ``connect()`` reads the demo.
ENV_DEMO = "STOPLIST_NB_DEMO"

# One demo service per data set for the kernel's life: re-running connect() starts no new one.
_services: dict[tuple[int, int], DemoService] = {}
_lock = threading.Lock()


def connect(
    *,
    demo: bool | None = None,
    ask_token: bool = False,
    profiles: int = 2000,
    seed: int = 0,
    quiet: bool = False,
    **client_options: Any,
) -> Client:
    """Return a client for your account, or for the embedded demo service when asked.

    The account comes from ``STOPLIST_NB_URL`` and ``STOPLIST_NB_TOKEN``. The
    demo (on loopback, once per process and data set) is read with
    ``demo=True``, with ``None`` only when no account is set and
    ``STOPLIST_NB_DEMO=1`` (Binder sets it), and then a line says so.

    Args:
        demo: ``True``, ``False`` or ``None``, as above.
        ask_token: Ask for the token (:func:`getpass.getpass`) when only the URL is set.
        profiles: Size of the demo data set.
        seed: Seed of the demo data set.
        quiet: Do not print the demo line.
        **client_options: Passed to :class:`Client` (``timeout``, ``retry``, ...).

    Raises:
        InvalidInput: No account and no demo asked for, one variable set, a bad
            ``STOPLIST_NB_DEMO``, or ``demo=True`` with ``ask_token=True``.
        ImportError: The demo service is needed but ``mongomock`` is missing.

    >>> import stoplist_nb as sn
    >>> client = sn.connect()  # doctest: +SKIP
    >>> client = sn.connect(demo=True)  # doctest: +SKIP
    Demo data: the embedded demo service (2000 generated profiles); database id 1, ...
    """
    if demo is not None and not isinstance(demo, bool):
        raise errors.InvalidInput(f"demo must be True, False or None, not {demo!r}")
    if demo and ask_token:
        raise errors.InvalidInput(
            "demo=True reads the demo service, ask_token=True asks for your account's "
            "token: pass one of them"
        )
    if not demo:
        ask = (lambda url: getpass.getpass(f"API token for {url}: ")) if ask_token else None
        settings = settings_from_env(ask=ask)
        if settings is not None:
            return Client(settings.url, settings.token, **client_options)
        if demo is False or ask_token or not _demo_from_env():
            hint = (
                f"export {ENV_URL}=https://your-platform.example and {ENV_TOKEN} before "
                f"starting Python, or only {ENV_URL} with sn.connect(ask_token=True)"
            )
            if demo is None:
                hint += "; to read the embedded demo service instead, sn.connect(demo=True)"
                hint += f" or {ENV_DEMO}=1"
            message = f"no account to read: {ENV_URL} and {ENV_TOKEN} are not set"
            raise errors.InvalidInput(message, hint=hint)
    svc = _demo_service(profiles, seed)
    if not quiet:
        account = (
            f"Without demo=True, connect() reads your own account from {ENV_URL} and {ENV_TOKEN}."
            if demo
            else f"Set {ENV_URL} and {ENV_TOKEN} to read your own account."
        )
        print(
            f"Demo data: the embedded demo service ({len(svc.profiles)} generated profiles); "
            f"database id {svc.db_id}, suppression list id {svc.suppress_id}. {account}"
        )
    return Client(svc.base_url, svc.token, **client_options)


def _demo_from_env() -> bool:
    value = os.environ.get(ENV_DEMO, "").strip()
    if value.lower() not in ("", "0", "false", "no", "off", "1", "true", "yes", "on"):
        raise errors.InvalidInput(
            f"{ENV_DEMO} must be 1 or 0, not {value!r}",
            hint=f"{ENV_DEMO}=1 lets connect() read the embedded demo service when no account "
            "is set",
        )
    return value.lower() in ("1", "true", "yes", "on")


def _demo_service(profiles: int, seed: int) -> DemoService:
    check_int("profiles", profiles, minimum=0)
    check_int("seed", seed)
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
