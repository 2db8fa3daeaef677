"""What the tests of the Parquet dataset share: its profiles, a pull, and how two datasets compare.

A module of its own, not conftest.py, as ``demo_fixtures`` is: the dataset's test
modules import what they use.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from children import popen

import stoplist_nb as sn
from stoplist_nb.demo import DemoService, generate_profiles, serve
from stoplist_nb.profiles import dataset

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE, PER_PART = 10, 30
LATE = 105  # the first profile with "late_score": its column joins on the eleventh page
#: No commit by time or size within a test: the pages of a part are committed when it
#: closes, on an error or Ctrl-C, or when a test asks for smaller windows.
NO_WINDOW = {"commit_seconds": 3600, "commit_bytes": 2**40}


def profiles() -> list[dict[str, Any]]:
    """150 demo profiles, with a custom field from profile 105 on."""
    made = generate_profiles(150, seed=11)
    for i, profile in enumerate(made):
        if i >= LATE:
            profile["late_score"] = i
    return made


def pull(client: sn.Client, path: pathlib.Path, **options: Any) -> sn.DatasetSummary:
    """``ProfilesRequest.to_dataset`` in pages of 10 and parts of 30, without commit windows.

    ``options`` are those of the request and of ``to_dataset``, side by side.
    """
    options = {
        "limit": PAGE,
        "profiles_per_part": PER_PART,
        "progress": False,
        **NO_WINDOW,
        **options,
    }
    db_id = options.pop("db_id", 1)
    asked, options = split_options(options)
    return sn.ProfilesRequest(client, db_id, **asked).to_dataset(path, **options)


#: The options of ``ProfilesRequest`` (the others are those of its methods).
REQUEST_OPTIONS = (
    "query",
    "fields",
    "limit",
    "from_id",
    "max_profiles",
    "lookahead",
    "progress",
    "workers",
)


def split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` as those of ``ProfilesRequest`` and those of its method."""
    asked = {name: value for name, value in options.items() if name in REQUEST_OPTIONS}
    return asked, {name: value for name, value in options.items() if name not in asked}


def dataset_fixtures() -> tuple[Any, Any]:
    """The fixtures of a dataset test module: ``svc`` and ``reference``.

    ``svc`` is the demo service of the module, with :func:`profiles`; ``reference`` is
    the dataset of a pull from it that nothing interrupted. Bind both at a module's
    top level::

        svc, reference = dataset_fixtures()
    """

    @pytest.fixture(scope="module", name="svc")
    def served() -> Iterator[DemoService]:
        with serve(profiles=profiles()) as service:
            yield service

    @pytest.fixture(scope="module", name="reference")
    def pulled(svc: DemoService, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
        path = tmp_path_factory.mktemp("reference") / "profiles"
        with svc.client() as client:
            assert pull(client, path).complete
        return path

    return served, pulled


def checkpoint(path: pathlib.Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / dataset.CHECKPOINT).read_text(encoding="utf-8"))
    return data


def listing(path: pathlib.Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


#: A file being written: ``.<name>.stoplist_nb-<host>-<pid>-<nonce>.<label>``.
TEMPORARY = re.compile(r"\.(.+)\.stoplist_nb-[0-9a-f]{8}-[0-9]+-[0-9a-f]{8}\.[a-z0-9]+")


def temporaries(path: pathlib.Path) -> list[str]:
    """The files being written in ``path``, by the names they are to take."""
    return sorted(found[1] for name in listing(path) if (found := TEMPORARY.fullmatch(name)))


def contents(path: pathlib.Path) -> dict[str, bytes]:
    """Every file of the directory, by name: to show that nothing changed."""
    return {name: (path / name).read_bytes() for name in listing(path)}


def assert_same_dataset(path: pathlib.Path, reference: pathlib.Path) -> None:
    """Same files, same bytes, same rows in the same order, same checkpoint as the reference."""
    assert listing(path) == listing(reference)
    pd.testing.assert_frame_equal(pd.read_parquet(path), pd.read_parquet(reference))
    for name in listing(reference):
        if name.endswith(".parquet"):
            assert pq.read_table(path / name).equals(pq.read_table(reference / name), True)
            assert (path / name).read_bytes() == (reference / name).read_bytes(), name
    assert checkpoint(path) == checkpoint(reference)


def pages_from(demo: DemoService) -> list[str | None]:
    """The ``from_id`` of each ``profiles/list`` request the demo answered, in order."""
    return [r.params.get("from_id") for r in demo.requests if r.method == "profiles/list"]


#: A writer in a process of its own. Its session calls ``hold`` as each reply
#: arrives; at the ``hold_at``-th reply of profiles/list the pull prints "holding"
#: and waits for a line on stdin, its earlier pages written, before it goes on.
WRITER = r"""
import json, os, sys, time
import requests
import stoplist_nb as sn

path, hold_at, saved = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
options = json.loads(sys.argv[4])
answered = 0

def checkpointed():
    try:
        with open(os.path.join(path, "_checkpoint.json"), encoding="utf-8") as file:
            return json.load(file)["profiles"]
    except (OSError, ValueError):
        return -1

def hold(response, *args, **kwargs):
    global answered
    if response.request.path_url.endswith("/profiles/list"):
        answered += 1
        if answered == hold_at:
            # The writer works a page behind the replies: held once it has caught up.
            deadline = time.monotonic() + 60
            while checkpointed() < saved and time.monotonic() < deadline:
                time.sleep(0.01)
            print("holding", os.getpid(), flush=True)
            sys.stdin.readline()

session = requests.Session()
session.hooks["response"].append(hold)
url, token = os.environ["STOPLIST_NB_URL"], os.environ["STOPLIST_NB_TOKEN"]
with sn.Client(url, token, session=session) as client:
    asked = {name: options.pop(name) for name in sys.argv[5].split(",") if name in options}
    summary = sn.ProfilesRequest(client, 1, **asked).to_dataset(path, **options)
print("finished", summary.profiles, flush=True)
"""


@contextmanager
def held_writer(
    demo: DemoService, path: pathlib.Path, hold_at: int, saved: int, **options: Any
) -> Iterator[subprocess.Popen[str]]:
    """A writer process held at its ``hold_at``-th reply (see ``WRITER``), killed if left over.

    Requests go out one at a time (``lookahead=0``), and it holds once its
    checkpoint holds ``saved`` profiles, so that when it holds, the pages
    before that reply are written and no other request is on its way.
    """
    options = {
        "limit": PAGE,
        "profiles_per_part": PER_PART,
        "progress": False,
        "lookahead": 0,
        **NO_WINDOW,
        **options,
    }
    env = {**os.environ, "STOPLIST_NB_URL": demo.base_url, "STOPLIST_NB_TOKEN": demo.token}
    with popen(
        [
            *(sys.executable, "-c", WRITER, str(path), str(hold_at), str(saved)),
            *(json.dumps(options), ",".join(REQUEST_OPTIONS)),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stderr is not None
            said = child.stdout.readline()
            assert said == f"holding {child.pid}\n", said + child.stderr.read()
            yield child
        finally:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=60)
