"""Client, transport and error mapping, against the demo service on loopback."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import requests
from urllib3.util.retry import Retry

import stoplist_nb as sn
from stoplist_nb._connect import settings_from_env
from stoplist_nb._http.retry import NON_REPLAYABLE, CappedRetry, default_retry
from stoplist_nb.demo import DemoService, serve


def calls(demo: DemoService, method: str = "profiles/list") -> int:
    return sum(1 for r in demo.requests if r.method == method)


def test_call_returns_the_envelope(client: sn.Client, demo: DemoService) -> None:
    reply = client.call("profiles/list", db_id=demo.db_id, limit=2)
    assert reply["error"] == 0
    assert reply["error_text"] == "Successful operation"
    assert [p["id"] for p in reply["data"]] == [p["id"] for p in demo.profiles[:2]]
    assert reply["next_from_id"] == demo.profiles[1]["id"]


def test_repr_shows_url_not_token(demo: DemoService) -> None:
    client = demo.client()
    assert repr(client) == f"Client({demo.base_url!r})"
    assert demo.token not in repr(client)
    assert demo.token not in str(vars(client))


def test_connect_reads_the_url_and_token_of_the_environment(
    monkeypatch: pytest.MonkeyPatch, demo: DemoService
) -> None:
    monkeypatch.setenv("STOPLIST_NB_URL", f" {demo.base_url}\n")
    monkeypatch.setenv("STOPLIST_NB_TOKEN", f"{demo.token}\n")  # as $(cat token.txt) leaves it
    with sn.connect(demo=False) as client:
        assert client.call("databases/fields_get", id=demo.db_id)["data"]


@pytest.mark.parametrize(
    ("url", "token", "message"),
    [
        ("http://127.0.0.1:9", None, "STOPLIST_NB_URL is set but STOPLIST_NB_TOKEN is not"),
        ("http://127.0.0.1:9", "  ", "STOPLIST_NB_URL is set but STOPLIST_NB_TOKEN is not"),
        (None, "s3cr3t-token-value", "STOPLIST_NB_TOKEN is set but STOPLIST_NB_URL is not"),
        (None, None, "no account to read: STOPLIST_NB_URL and STOPLIST_NB_TOKEN are not set"),
    ],
)
def test_connect_refuses_an_incomplete_environment(
    monkeypatch: pytest.MonkeyPatch, url: str | None, token: str | None, message: str
) -> None:
    for name, value in (("STOPLIST_NB_URL", url), ("STOPLIST_NB_TOKEN", token)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    with pytest.raises(sn.InvalidInput) as info:
        sn.connect(demo=False)
    assert str(info.value).startswith(message + " (export ")
    assert "s3cr3t" not in str(info.value)


def test_settings_from_env_keeps_the_token_out_of_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOPLIST_NB_URL", "https://api.example.com")
    monkeypatch.setenv("STOPLIST_NB_TOKEN", "s3cr3t-token-value")
    settings = settings_from_env()
    assert settings is not None
    assert (settings.url, settings.token) == ("https://api.example.com", "s3cr3t-token-value")
    assert "s3cr3t" not in repr(settings)


@pytest.mark.parametrize("base_url", ["", "ftp://x", "api.example.com", None])
def test_bad_base_url(base_url: object) -> None:
    with pytest.raises(sn.InvalidInput):
        sn.Client(base_url)  # type: ignore[arg-type]


def test_token_parameter_is_refused(client: sn.Client, demo: DemoService) -> None:
    with pytest.raises(sn.InvalidInput, match="token"):
        client.call("profiles/list", db_id=1, token="x")
    assert demo.requests == []


@pytest.mark.parametrize("http_errors", [True, False])
@pytest.mark.parametrize(
    ("token", "code"), [(None, 401), ("wrong-token", 403)], ids=["missing", "wrong"]
)
def test_auth_errors(http_errors: bool, token: str | None, code: int) -> None:
    with serve(profiles=3, http_errors=http_errors) as svc:
        client = sn.Client(svc.base_url, token, retry=False)
        with pytest.raises(sn.AuthError) as info:
            client.call("profiles/list", db_id=svc.db_id)
    err = info.value
    assert (err.code, err.method) == (code, "profiles/list")
    assert err.http_status == (code if http_errors else 200)
    assert isinstance(err, PermissionError)
    assert str(code) in str(err)


@pytest.mark.parametrize("http_errors", [True, False])
def test_unknown_database_is_bad_request(http_errors: bool) -> None:
    with serve(profiles=3, http_errors=http_errors) as svc, pytest.raises(sn.BadRequest) as info:
        svc.client(retry=False).call("profiles/list", db_id=svc.db_id + 100)
    assert info.value.code == 400
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (400, sn.BadRequest),
        (401, sn.AuthError),
        (402, sn.TariffLimit),
        (403, sn.AuthError),
        (429, sn.RateLimited),
        (500, sn.ServerError),
        (777, sn.APIError),
    ],
)
def test_api_error_in_http_200_maps_by_code(
    client: sn.Client, demo: DemoService, code: int, cls: type[sn.APIError]
) -> None:
    demo.add_fault("profiles/list", "api_error", code=code, text="custom words")
    with pytest.raises(cls) as info:
        client.call("profiles/list", db_id=demo.db_id)
    assert type(info.value) is cls
    assert (info.value.code, info.value.text, info.value.http_status) == (code, "custom words", 200)
    assert calls(demo) == 1  # an API error in a 200 reply is an answer, not retried


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_retryable_status_then_success(client: sn.Client, demo: DemoService, status: int) -> None:
    demo.add_fault("profiles/list", "status", status=status, times=2)
    reply = client.call("profiles/list", db_id=demo.db_id, limit=1)
    assert reply["data"][0]["id"] == demo.profiles[0]["id"]
    assert calls(demo) == 3


def test_retry_after_is_honoured(
    client: sn.Client, demo: DemoService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pauses the caller's thread takes are recorded, not waited out, with the
    # requests the service had seen by then; the backoff alone would be none at all.
    pauses: list[tuple[float, int]] = []
    sleep, caller = time.sleep, threading.current_thread()

    def recorded(seconds: float) -> None:
        if threading.current_thread() is caller:
            pauses.append((seconds, len(demo.requests)))
        else:
            sleep(seconds)

    monkeypatch.setattr(time, "sleep", recorded)
    demo.add_fault("profiles/list", "status", status=429, retry_after=1)
    client.call("profiles/list", db_id=demo.db_id, limit=1)
    assert pauses == [(1, 1)]  # Retry-After's second, after the 429 and before the retry
    assert calls(demo) == 2


def test_retry_after_is_capped() -> None:
    retry = CappedRetry(total=1)
    response = type("R", (), {"headers": {"Retry-After": "3600"}})()
    assert retry.get_retry_after(response) == CappedRetry.retry_after_cap


@pytest.mark.slow
@pytest.mark.parametrize(("status", "cls"), [(429, sn.RateLimited), (503, sn.ServerError)])
def test_budget_exhausted_is_typed(
    client: sn.Client, demo: DemoService, status: int, cls: type[sn.APIError]
) -> None:
    demo.add_fault("profiles/list", "status", status=status, times=None)
    with pytest.raises(cls) as info:
        client.call("profiles/list", db_id=demo.db_id)
    assert info.value.code == status
    assert not isinstance(info.value.__cause__, requests.exceptions.RetryError)
    assert calls(demo) == 1 + default_retry().total


def test_html_error_page_maps_by_status(client: sn.Client, demo: DemoService) -> None:
    demo.add_fault("profiles/list", "html", status=502, times=None)
    with pytest.raises(sn.ServerError, match="text/html body, not the API's JSON") as info:
        client.call("profiles/list", db_id=demo.db_id)
    assert info.value.http_status == 502


def test_malformed_json_is_invalid_reply(client: sn.Client, demo: DemoService) -> None:
    demo.add_fault("profiles/list", "malformed")
    with pytest.raises(sn.InvalidReply, match="not a JSON object"):
        client.call("profiles/list", db_id=demo.db_id)


@pytest.mark.slow
@pytest.mark.network
def test_slow_reply_times_out(demo: DemoService) -> None:
    demo.add_fault("profiles/list", "slow", delay=1.0, times=None)
    client = demo.client(timeout=(2, 0.2), retry=default_retry().new(backoff_factor=0))
    with pytest.raises(sn.RequestTimeout) as info:
        client.call("profiles/list", db_id=demo.db_id)
    assert isinstance(info.value, TimeoutError)
    assert calls(demo) == 1 + default_retry().read  # read timeouts are retried for reads


def test_connection_reset_is_retried_then_typed(client: sn.Client, demo: DemoService) -> None:
    demo.add_fault("profiles/list", "reset")
    assert client.call("profiles/list", db_id=demo.db_id, limit=1)["error"] == 0
    demo.add_fault("profiles/list", "reset", times=None)
    with pytest.raises(sn.ConnectError) as info:
        client.call("profiles/list", db_id=demo.db_id)
    assert isinstance(info.value, ConnectionError)


def test_nothing_listening_is_connect_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = sn.Client(f"http://127.0.0.1:{port}", "t", retry=Retry(1, backoff_factor=0))
    with pytest.raises(sn.ConnectError, match=f"127.0.0.1:{port}"):
        client.call("profiles/list", db_id=1)


@pytest.mark.parametrize("kind", ["status", "reset"])
def test_creating_calls_are_not_replayed(client: sn.Client, demo: DemoService, kind: str) -> None:
    assert "suppresses/export" in NON_REPLAYABLE
    demo.add_fault("suppresses/export", kind, status=503, times=None)
    with pytest.raises((sn.ServerError, sn.ConnectError)):
        client.call("suppresses/export", id=1)
    assert calls(demo, "suppresses/export") == 1


def test_creating_calls_retry_connections_that_never_opened(client: sn.Client) -> None:
    url = f"{client.base_url}/api/v1.1/suppresses/export"
    policy = client.session.get_adapter(url).max_retries
    read_policy = client.session.get_adapter(f"{client.base_url}/api/v1.1/tasks/status").max_retries
    assert policy.connect == read_policy.connect > 0
    assert (policy.read, policy.status, policy.status_forcelist) == (0, 0, frozenset())
    assert not policy.is_retry("POST", 503)
    assert read_policy.is_retry("POST", 503)


def test_user_session_is_used(demo: DemoService) -> None:
    session = requests.Session()
    session.headers["X-Trace"] = "abc"
    client = demo.client(session=session)
    assert client.session is session
    assert client.call("profiles/list", db_id=demo.db_id, limit=1)["error"] == 0
