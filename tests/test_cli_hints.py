"""Hints that work: what the command line advises is what a person can run, as it is.

Each test runs ``python -m stoplist_nb`` in a child process, as a person runs
it, and where a hint gives a command, runs that command too.
"""

from __future__ import annotations

import pathlib

import pytest
from cli_process import environment, run

import stoplist_nb as sn

TOKEN = "t0ken-never-shown"


@pytest.mark.parametrize(
    ("url", "suggested"),
    [
        ("127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("localhost:8000/", "http://localhost:8000/"),
        ("api.example.com", "https://api.example.com"),
        ("ftp://api.example.com", "https://api.example.com"),
        ("http//api.example.com", "https://http//api.example.com"),
    ],
)
def test_an_address_that_is_no_http_url_names_the_variable(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, url: str, suggested: str
) -> None:
    env = environment(STOPLIST_NB_URL=url, STOPLIST_NB_TOKEN=TOKEN)
    code, stdout, stderr = run(
        ["profiles", "--db-id", "1", "--out", "p.csv"], env=env, cwd=tmp_path
    )
    assert (code, stdout) == (2, "")
    assert stderr == (
        f"stoplist-nb: error: STOPLIST_NB_URL must be an http:// or https:// address, "
        f"not {url!r}\n"
        f"stoplist-nb: hint: e.g. export STOPLIST_NB_URL={suggested}\n"
    )
    assert list(tmp_path.iterdir()) == []
    # The library reads the variable by the same rule, and says the same.
    monkeypatch.setenv("STOPLIST_NB_URL", url)
    monkeypatch.setenv("STOPLIST_NB_TOKEN", TOKEN)
    with pytest.raises(sn.InvalidInput, match=r"^STOPLIST_NB_URL must be an http"):
        sn.Client.from_env()
    with pytest.raises(sn.InvalidInput, match=r"^STOPLIST_NB_URL must be an http"):
        sn.connect()
