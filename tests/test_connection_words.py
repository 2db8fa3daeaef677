"""A connection that fails says how: refused, a name that does not resolve, no reply in time.

The transport turns requests' and urllib3's errors into ours by one table
(stoplist_nb._http.replies); each row is played here for real, on loopback or
with a name of the reserved ``.invalid`` domain, which resolves nowhere.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

import stoplist_nb as sn
from stoplist_nb._http.replies import what_to_check
from stoplist_nb.demo import DemoService

#: RFC 6761: no name under .invalid resolves, on any resolver.
NOWHERE = "stoplist-nb-test.invalid"


@pytest.fixture
def free_port() -> int:
    """A port on loopback nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_says_so_and_names_the_address(free_port: int) -> None:
    base = f"http://127.0.0.1:{free_port}"
    with (
        sn.Client(base, "t0ken-of-test", retry=0) as client,
        pytest.raises(sn.ConnectError) as info,
    ):
        client.call("profiles/list", db_id=1)
    message = str(info.value)
    assert message == (
        f"profiles/list: the connection to 127.0.0.1:{free_port} was refused: nothing listens there"
    )
    assert what_to_check(info.value, base, "STOPLIST_NB_URL") == (
        f"check that the service runs at 127.0.0.1:{free_port}, the address STOPLIST_NB_URL names"
    )


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names looked up, counted: .invalid ones fail as the resolver fails them."""
    asked: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(host)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def test_a_name_that_does_not_resolve_says_so_and_is_asked_once(resolutions: list[str]) -> None:
    base = f"http://{NOWHERE}:8000"
    # The default policy: five retries of a connection that fails to open.
    with sn.Client(base, "t0ken-of-test") as client, pytest.raises(sn.ConnectError) as info:
        client.call("profiles/list", db_id=1)
    assert str(info.value) == (
        f"profiles/list: the host name {NOWHERE!r} does not resolve (no such name in DNS)"
    )
    assert resolutions == [NOWHERE]  # not five more times, with pauses between
    assert what_to_check(info.value, base) == f"check the host name in base_url ({NOWHERE}:8000)"


def test_a_refused_connection_is_still_retried(
    free_port: int, resolutions: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A service being restarted refuses for a moment: that is worth the retries.
    from stoplist_nb._http import transport

    monkeypatch.setattr(
        transport, "default_retry", lambda: sn.default_retry().new(backoff_factor=0)
    )
    with (
        sn.Client(f"http://localhost:{free_port}", "t0ken-of-test") as client,
        pytest.raises(sn.ConnectError, match="was refused"),
    ):
        client.call("profiles/list", db_id=1)
    assert resolutions == ["localhost"] * 6  # the first try and five retries


def test_no_reply_in_time_and_a_reset_are_told_apart(demo: DemoService) -> None:
    demo.add_fault("profiles/list", "slow", delay=2.0)
    with demo.client(timeout=(5, 0.2), retry=0) as client, pytest.raises(sn.RequestTimeout) as slow:
        client.call("profiles/list", db_id=1)
    assert str(slow.value) == f"profiles/list: no reply within the timeout at {demo.base_url}"
    assert what_to_check(slow.value, demo.base_url) is None  # the service was reached
    demo.add_fault("profiles/list", "reset")
    with demo.client(retry=0) as client, pytest.raises(sn.ConnectError) as reset:
        client.call("profiles/list", db_id=1)
    assert str(reset.value) == f"profiles/list: the connection was reset at {demo.base_url}"
    assert what_to_check(reset.value, demo.base_url) is None
