"""connect(): the environment's account; the embedded demo service only when asked for."""

from __future__ import annotations

import subprocess
import sys

import pytest

import stoplist_nb as sn
from stoplist_nb import _connect
from stoplist_nb.demo import DemoService

URL, TOKEN, DEMO = "STOPLIST_NB_URL", "STOPLIST_NB_TOKEN", "STOPLIST_NB_DEMO"
# The line the notebooks save, on Binder and in the test run (STOPLIST_NB_DEMO=1).
DEMO_LINE = (
    "Demo data: the embedded demo service (2000 generated profiles); database id 1, "
    "suppression list id 7. Set STOPLIST_NB_URL and STOPLIST_NB_TOKEN to read your own account.\n"
)


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(URL, raising=False)
    monkeypatch.delenv(TOKEN, raising=False)
    monkeypatch.delenv(DEMO, raising=False)


@pytest.mark.usefixtures("no_env")
def test_without_environment_refuses_and_says_how_to_ask_for_the_demo(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started = dict(_connect._services)
    with pytest.raises(sn.InvalidInput) as info:
        sn.connect()
    said = str(info.value)
    assert said.startswith("no account to read: STOPLIST_NB_URL and STOPLIST_NB_TOKEN are not set")
    assert "sn.connect(demo=True) or STOPLIST_NB_DEMO=1" in said
    assert isinstance(info.value, ValueError)
    assert _connect._services == started  # no demo service started
    assert capsys.readouterr().out == ""


@pytest.mark.usefixtures("no_env")
@pytest.mark.parametrize("demo_env", [None, "1"])
def test_ask_token_without_url_refuses_the_same_way(
    monkeypatch: pytest.MonkeyPatch, demo_env: str | None
) -> None:
    # ask_token=True asks for an account: STOPLIST_NB_DEMO does not turn it into the demo.
    if demo_env is not None:
        monkeypatch.setenv(DEMO, demo_env)
    monkeypatch.setattr(_connect.getpass, "getpass", pytest.fail)
    with pytest.raises(sn.InvalidInput) as asked:
        sn.connect(ask_token=True)
    monkeypatch.delenv(DEMO, raising=False)
    with pytest.raises(sn.InvalidInput) as plain:
        sn.connect()
    assert str(asked.value) == str(plain.value)
    assert "STOPLIST_NB_URL" in str(asked.value)


@pytest.mark.usefixtures("no_env")
def test_demo_variable_reads_the_demo_with_the_notebooks_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(DEMO, "1")
    with sn.connect() as client:
        assert client.base_url == _connect._services[(2000, 0)].base_url
    assert capsys.readouterr().out == DEMO_LINE


@pytest.mark.usefixtures("no_env")
@pytest.mark.parametrize(("value", "reads_demo"), [
    ("1", True), ("true", True), (" YES ", True), ("on", True),
    ("0", False), ("false", False), ("", False), ("no", False), ("off", False),
])  # fmt: skip
def test_demo_variable_values(
    monkeypatch: pytest.MonkeyPatch, value: str, reads_demo: bool
) -> None:
    monkeypatch.setenv(DEMO, value)
    if reads_demo:
        sn.connect(profiles=10, quiet=True).close()
    else:
        with pytest.raises(sn.InvalidInput, match="no account to read"):
            sn.connect(profiles=10, quiet=True)


@pytest.mark.usefixtures("no_env")
def test_demo_variable_with_another_value_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEMO, "ture")
    with pytest.raises(sn.InvalidInput, match="STOPLIST_NB_DEMO must be 1 or 0, not 'ture'"):
        sn.connect()


@pytest.mark.usefixtures("no_env")
def test_demo_false_never_reads_the_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEMO, "1")
    with pytest.raises(sn.InvalidInput, match="no account to read") as info:
        sn.connect(demo=False)
    assert "demo=True" not in str(info.value)


def test_the_account_wins_over_the_demo_variable(
    monkeypatch: pytest.MonkeyPatch, svc: DemoService, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(URL, svc.base_url)
    monkeypatch.setenv(TOKEN, svc.token)
    monkeypatch.setenv(DEMO, "1")
    with sn.connect() as client:
        assert client.base_url == svc.base_url
    assert capsys.readouterr().out == ""  # no demo line: this is the account


def test_demo_true_reads_the_demo_even_with_an_account_set(
    monkeypatch: pytest.MonkeyPatch, svc: DemoService, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(URL, svc.base_url)
    monkeypatch.setenv(TOKEN, svc.token)
    with sn.connect(demo=True, profiles=25) as client:
        assert client.base_url == _connect._services[(25, 0)].base_url != svc.base_url
    line = capsys.readouterr().out
    assert line.startswith("Demo data: the embedded demo service (25 generated profiles)")
    assert line.endswith(
        "Without demo=True, connect() reads your own account from STOPLIST_NB_URL and "
        "STOPLIST_NB_TOKEN.\n"
    )
    assert svc.token not in line


def test_a_half_set_account_is_refused_even_with_the_demo_variable(
    monkeypatch: pytest.MonkeyPatch, demo: DemoService
) -> None:
    monkeypatch.setenv(URL, demo.base_url)
    monkeypatch.delenv(TOKEN, raising=False)
    monkeypatch.setenv(DEMO, "1")
    with pytest.raises(
        sn.InvalidInput, match="STOPLIST_NB_URL is set but STOPLIST_NB_TOKEN is not"
    ):
        sn.connect()
    assert demo.requests == []


@pytest.mark.usefixtures("no_env")
@pytest.mark.parametrize(
    ("options", "match"),
    [({"demo": "yes"}, "demo must be True, False or None"),
     ({"demo": True, "ask_token": True}, "pass one of them")],
)  # fmt: skip
def test_demo_argument_is_checked(options: dict[str, object], match: str) -> None:
    with pytest.raises(sn.InvalidInput, match=match):
        sn.connect(**options)  # type: ignore[arg-type]


@pytest.mark.usefixtures("no_env")
def test_demo_true_reads_the_demo_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    client = sn.connect(demo=True, profiles=40, seed=3)
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
    first = sn.connect(demo=True, profiles=30, seed=1)
    second = sn.connect(demo=True, profiles=30, seed=1)
    other = sn.connect(demo=True, profiles=31, seed=1, quiet=True)
    assert first.base_url == second.base_url != other.base_url
    assert capsys.readouterr().out.count("Demo data") == 2  # quiet printed nothing


@pytest.mark.usefixtures("no_env")
def test_demo_service_restarts_if_it_was_stopped(capsys: pytest.CaptureFixture[str]) -> None:
    sn.connect(demo=True, profiles=20, seed=2, quiet=True)
    _connect._services[(20, 2)].stop()
    client = sn.connect(demo=True, profiles=20, seed=2, quiet=True)
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
        sn.connect(demo=True, **{name: value})  # type: ignore[arg-type]


def test_demo_without_mongomock_says_what_to_install(tmp_path: object) -> None:
    code = (
        "import os, sys; sys.modules['mongomock'] = None\n"
        "import stoplist_nb as sn\n"
        "try:\n    sn.connect(demo=True)\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'stoplist_nb[demo]'" in out.stdout
    assert "mongomock" in out.stdout
