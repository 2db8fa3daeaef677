"""The token never appears: not in messages, tracebacks, chained causes or logs."""

from __future__ import annotations

import logging
import socket
import traceback
from collections.abc import Callable

import pytest
from demo_fixtures import served_and_cleared
from urllib3.util.retry import Retry

import stoplist_nb as sn
from stoplist_nb.demo import DemoService

SECRET = "s3cr3t-T0KEN-9f8e7d6c"


secret_svc, fresh = served_and_cleared("secret_svc", profiles=30, seed=3, token=SECRET)


def everything_said(exc: BaseException) -> str:
    """All the text a notebook could show of ``exc``, causes and attributes included."""
    parts = ["".join(traceback.format_exception(exc)), str(exc), repr(exc)]
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        parts += [repr(item), repr(item.args), repr(vars(item))]
        todo += [item.__cause__, item.__context__]
    return "\n".join(parts)


def fast(svc: DemoService, **kwargs: object) -> sn.Client:
    kwargs.setdefault(
        "retry",
        Retry(
            2,
            backoff_factor=0,
            status_forcelist=[502, 503, 429],
            allowed_methods=None,
            raise_on_status=False,
        ),
    )
    return sn.Client(svc.base_url, SECRET, **kwargs)  # type: ignore[arg-type]


def refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


FAILURES: dict[str, tuple[str | None, Callable[[DemoService], sn.Client]]] = {
    "status-503": ("status", fast),
    "status-429": ("status", fast),
    "html": ("html", fast),
    "malformed": ("malformed", fast),
    "api-error": ("api_error", fast),
    "reset": ("reset", fast),
    "slow": ("slow", lambda s: fast(s, timeout=(1, 0.1))),
    "stall": ("stall", fast),
    "refused": (
        None,
        lambda s: sn.Client(
            f"http://127.0.0.1:{refused_port()}", SECRET, retry=Retry(1, backoff_factor=0)
        ),
    ),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_token_absent_from_every_failure(
    case: str,
    fresh: DemoService,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kind, make = FAILURES[case]
    if kind is not None:
        status = 429 if case.endswith("429") else 503
        fresh.add_fault("profiles/list", kind, status=status, delay=0.5, times=None)
    client = make(fresh)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(sn.StoplistError) as info:
        sn.read_profiles(client, fresh.db_id, limit=5, progress=True)
    text = everything_said(info.value)
    assert SECRET not in text
    assert SECRET not in caplog.text
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    if case == "stall":  # the first page's empty cursor is none: it goes on, then stalls
        assert info.value.resume_from == fresh.profiles[4]["id"]
        assert len(info.value.partial) > 0
    else:
        assert info.value.resume_from == ""  # the first page failed: nothing to resume
        assert "call again without from_id" in str(info.value)


def test_wrong_token_absent_from_auth_error(fresh: DemoService) -> None:
    client = sn.Client(fresh.base_url, "wrong-" + SECRET, retry=False)
    with pytest.raises(sn.AuthError) as info:
        client.call("profiles/list", db_id=fresh.db_id)
    assert SECRET not in everything_said(info.value)


def test_token_absent_from_debug_logs_of_a_good_read(
    fresh: DemoService, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    df = sn.read_profiles(fast(fresh), fresh.db_id, limit=10, progress=False)
    assert df["profile_id"].nunique() == len(fresh.profiles)
    assert "profiles/list" in caplog.text  # the log does speak, just not of the token
    assert SECRET not in caplog.text


@pytest.mark.parametrize(
    "address",
    [
        f"http://user:{SECRET}@127.0.0.1:8080",
        f"https://{SECRET}@api.example.com",
        f"https://api.example.com/api?token={SECRET}",
        f"https://api.example.com/#{SECRET}",
    ],
)
def test_an_address_holding_a_secret_is_refused(
    address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(sn.InvalidInput) as info:
        sn.Client(address, SECRET)
    assert str(info.value).startswith("base_url must not hold a user name, a password or a query")
    assert info.value.hint.startswith("the token goes in token=")
    assert SECRET not in everything_said(info.value)
    # The same address in the environment: refused, naming the variables.
    monkeypatch.setenv("STOPLIST_NB_URL", address)
    monkeypatch.setenv("STOPLIST_NB_TOKEN", SECRET)
    with pytest.raises(sn.InvalidInput) as info:
        sn.connect(demo=False)
    assert "STOPLIST_NB_URL must not hold" in str(info.value)
    assert "STOPLIST_NB_TOKEN" in info.value.hint
    assert SECRET not in everything_said(info.value)


def test_an_address_with_a_port_and_a_path_is_taken() -> None:
    with sn.Client("https://api.example.com:8443/altcraft/", SECRET) as client:
        assert repr(client) == "Client('https://api.example.com:8443/altcraft')"
