"""Shared fixtures: a real demo service on loopback for each test module; Hypothesis's profiles."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest
from demo_fixtures import served_and_cleared
from hypothesis import HealthCheck, settings

from stoplist_nb.cli import main
from stoplist_nb.demo import DemoService

if TYPE_CHECKING:
    from stoplist_nb.client import Client


# How many examples each property test tries: "suite" for the test command (and the
# quick run), "thorough" for a nightly or local run (--hypothesis-profile=thorough).
# Tests say what else they need (no example database, a phase left out), never how
# many examples; one whose every example is a whole read asks for a share of these.
_PROFILE = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("suite", max_examples=100, **_PROFILE)
settings.register_profile("thorough", max_examples=1000, **_PROFILE)
settings.load_profile("suite")

#: ``svc``: a demo service of 120 profiles, shared by the tests of one module (a module
#: may define its own ``svc``); ``demo``: that service with no faults left over and an
#: empty request log.
svc, demo = served_and_cleared("svc", profiles=120, seed=7)


@pytest.fixture
def client(demo: DemoService) -> Iterator[Client]:
    """A client with fast retries, so retry tests take milliseconds."""
    from stoplist_nb._http.retry import default_retry

    with demo.client(retry=default_retry().new(backoff_factor=0.01)) as c:
        yield c


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """SIGINT raises ``KeyboardInterrupt`` here for the test, however the run was started.

    For the tests that send this process SIGINT: a script's ``cmd &`` starts it
    with SIGINT ignored, and the signal would never arrive.
    """
    found = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, found)


#: What the ``run`` fixture gives: call the command line, get (exit code, stdout, stderr).
Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def env(demo: DemoService, monkeypatch: pytest.MonkeyPatch) -> DemoService:
    """The demo service named by the environment, as a user would configure it."""
    monkeypatch.setenv("STOPLIST_NB_URL", demo.base_url)
    monkeypatch.setenv("STOPLIST_NB_TOKEN", demo.token)
    return demo


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], svc: DemoService) -> Iterator[Run]:
    """Call ``main`` and return (exit code, stdout, stderr); the token must appear in none."""
    said: list[str] = []

    def call(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        said.extend([out, err])
        return code, out, err

    yield call
    assert svc.token not in "".join(said)
