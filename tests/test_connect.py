"""connect(): the environment's account, else the embedded demo service."""

from __future__ import annotations

import subprocess
import sys

import pytest

import stoplist_nb as sn
from stoplist_nb import _connect
from stoplist_nb.demo import DemoService

URL, TOKEN = "STOPLIST_NB_URL", "STOPLIST_NB_TOKEN"


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(URL, raising=False)
    monkeypatch.delenv(TOKEN, raising=False)


@pytest.mark.usefixtures("no_env")
def test_without_environment_reads_the_demo_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    client = sn.connect(profiles=40, seed=3)
    line = capsys.readouterr().out
    assert line.count("\n") == 1
    assert "Demo data" in line
    assert "40 generated profiles" in line
    assert "database id 1" in line
    assert "suppression list id 7" in line
    svc = _connect._services[(40, 3)]
    assert svc.token not in line
    assert svc.token not in repr(client)
    with client:
        df = sn.read_profiles(client, 1, progress=False)
    assert sorted(df["profile_id"].unique()) == sorted(p["id"] for p in svc.profiles)


@pytest.mark.usefixtures("no_env")
def test_demo_service_is_started_once_per_data_set(capsys: pytest.CaptureFixture[str]) -> None:
    first = sn.connect(profiles=30, seed=1)
    second = sn.connect(profiles=30, seed=1)
    other = sn.connect(profiles=31, seed=1, quiet=True)
    assert first.base_url == second.base_url != other.base_url
    assert capsys.readouterr().out.count("Demo data") == 2  # quiet printed nothing


@pytest.mark.usefixtures("no_env")
def test_demo_service_restarts_if_it_was_stopped(capsys: pytest.CaptureFixture[str]) -> None:
    sn.connect(profiles=20, seed=2, quiet=True)
    _connect._services[(20, 2)].stop()
    client = sn.connect(profiles=20, seed=2, quiet=True)
    with client:
        assert client.call("profiles/list", db_id=1, limit=1)["data"]


def test_environment_wins(
    monkeypatch: pytest.MonkeyPatch, svc: DemoService, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(URL, svc.base_url)
    monkeypatch.setenv(TOKEN, svc.token)
    with sn.connect(timeout=5) as client:
        assert client.base_url == svc.base_url
        assert len(sn.read_profiles(client, svc.db_id, progress=False)) > 0
    assert capsys.readouterr().out == ""


def test_url_without_token_is_refused_before_any_request(
    monkeypatch: pytest.MonkeyPatch, demo: DemoService
) -> None:
    monkeypatch.setenv(URL, demo.base_url)
    monkeypatch.delenv(TOKEN, raising=False)
    with pytest.raises(sn.InvalidInput) as info:
        sn.connect()
    assert str(info.value).startswith("STOPLIST_NB_URL is set but STOPLIST_NB_TOKEN is not")
    assert "ask_token=True" in str(info.value)
    assert demo.requests == []


def test_ask_token_with_an_empty_answer_is_refused(
    monkeypatch: pytest.MonkeyPatch, demo: DemoService
) -> None:
    monkeypatch.setenv(URL, demo.base_url)
    monkeypatch.delenv(TOKEN, raising=False)
    monkeypatch.setattr(_connect.getpass, "getpass", lambda prompt="": " \n")
    with pytest.raises(
        sn.InvalidInput, match="STOPLIST_NB_URL is set but STOPLIST_NB_TOKEN is not"
    ):
        sn.connect(ask_token=True)
    assert demo.requests == []


def test_token_without_url_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(URL, raising=False)
    monkeypatch.setenv(TOKEN, "s3cr3t-token-value")
    with pytest.raises(
        sn.InvalidInput, match="STOPLIST_NB_TOKEN is set but STOPLIST_NB_URL is not"
    ) as info:
        sn.connect()
    assert "s3cr3t-token-value" not in str(info.value)


def test_ask_token_uses_getpass_and_never_prints_it(
    monkeypatch: pytest.MonkeyPatch, demo: DemoService, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts: list[str] = []

    def fake_getpass(prompt: str = "") -> str:
        prompts.append(prompt)
        return f"  {demo.token}\n"

    monkeypatch.setenv(URL, demo.base_url)
    monkeypatch.delenv(TOKEN, raising=False)
    monkeypatch.setattr(_connect.getpass, "getpass", fake_getpass)
    with sn.connect(ask_token=True) as client:
        assert sn.read_profiles(client, demo.db_id, max_profiles=3, progress=False).shape[0] > 0
        assert demo.token not in repr(client)
    assert prompts == [f"API token for {demo.base_url}: "]
    out = capsys.readouterr()
    assert demo.token not in out.out + out.err


def test_ask_token_not_needed_when_token_is_set(
    monkeypatch: pytest.MonkeyPatch, svc: DemoService
) -> None:
    monkeypatch.setenv(URL, svc.base_url)
    monkeypatch.setenv(TOKEN, svc.token)
    monkeypatch.setattr(_connect.getpass, "getpass", pytest.fail)
    sn.connect(ask_token=True).close()


@pytest.mark.usefixtures("no_env")
@pytest.mark.parametrize(("name", "value"), [("profiles", -1), ("profiles", "10"), ("seed", 1.5)])
def test_bad_demo_options(name: str, value: object) -> None:
    with pytest.raises(sn.InvalidInput, match=name):
        sn.connect(**{name: value})  # type: ignore[arg-type]


def test_demo_without_mongomock_says_what_to_install(tmp_path: object) -> None:
    code = (
        "import os, sys; sys.modules['mongomock'] = None\n"
        "os.environ.pop('STOPLIST_NB_URL', None); os.environ.pop('STOPLIST_NB_TOKEN', None)\n"
        "import stoplist_nb as sn\n"
        "try:\n    sn.connect()\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'stoplist_nb[demo]'" in out.stdout
    assert "mongomock" in out.stdout
