"""Ctrl-C at any line of the package: what is said to be kept is kept, and nothing else stays.

Python raises ``KeyboardInterrupt`` (and the command line SIGTERM and SIGHUP,
which it turns into one) between any two lines of the thread that called, so
a record and the file it describes must never be one line apart. A trace
function stands in for the signal, which no server can place: it raises at
the n-th line that the modules which write run in the calling thread, for
every n (or n spread over the whole call where it is long), and each time
the same answer must hold.
"""

from __future__ import annotations

import dis
import functools
import linecache
import pathlib
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any

import pandas as pd
import pytest
from dataset_helpers import (
    assert_same_dataset,
    dataset_fixtures,
    pull,
    temporaries,
)

import stoplist_nb as sn
from stoplist_nb._atomic import remove_debris
from stoplist_nb.demo import DemoService

svc, reference = dataset_fixtures()

PACKAGE = pathlib.Path(sn.__file__).parent
#: The modules that write a dataset, and a single file.
DATASET = tuple(str(p) for p in sorted((PACKAGE / "profiles" / "dataset").glob("*.py")))
FILE = (str(PACKAGE / "profiles" / "files.py"), str(PACKAGE / "_atomic.py"))
#: At most this many points of a call, spread evenly (each is a call, and a resume).
POINTS = 32
#: Each test's points are dealt into this many shares, one test each, so that
#: pytest-xdist's workers take them side by side.
SHARES = 4
EVERY_PAGE = {"commit_seconds": 0}


def counted(frame: FrameType) -> bool:
    """A line where a signal can land: not a bare ``try:``, nor a ``with`` block's end.

    CPython 3.11 runs a ``try:`` line as a no-op, and reports the end of a
    ``with`` block as a line before the call to ``__exit__``; it checks for
    signals at neither, and an exception raised there by a trace function
    escapes the handlers around it: places no real Ctrl-C reaches.
    """
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    if line == "try:":
        return False
    if line.startswith("with "):
        return _exits(frame.f_code).get(frame.f_lasti) is None
    return True


@functools.cache
def _exits(code: CodeType) -> dict[int, bool]:
    """The offsets in ``code`` where the call to a ``with`` block's ``__exit__`` begins."""
    found: dict[int, bool] = {}
    ops = list(dis.get_instructions(code))
    for i, op in enumerate(ops[:-3]):
        if all(o.opname == "LOAD_CONST" and o.argval is None for o in ops[i : i + 3]):
            found[op.offset] = True
    return found


def lines_run(call: Callable[[], Any], modules: tuple[str, ...]) -> int:
    """How many lines of ``modules`` ``call`` runs in the calling thread."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line" and counted(frame):
            count += 1
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename in modules else None

    found = sys.gettrace()  # coverage's, under coverage: put back after
    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(found)
    return count


@contextmanager
def interrupted_at(line: int, modules: tuple[str, ...]) -> Iterator[None]:
    """Raise ``KeyboardInterrupt`` at the ``line``-th line of ``modules`` run in this thread."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line" and counted(frame):
            count += 1
            if count == line:
                sys.settrace(None)
                raise KeyboardInterrupt
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename in modules else None

    found = sys.gettrace()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(found)


def spread(total: int, at_most: int) -> list[int]:
    """At most ``at_most`` of the lines 1..``total``, evenly spread, first and last among them."""
    if total <= at_most:
        return list(range(1, total + 1))
    return sorted({1 + (total - 1) * i // (at_most - 1) for i in range(at_most)})


def points(total: int, share: int, at_most: int = POINTS) -> list[int]:
    """Share ``share`` of ``spread(total, at_most)``."""
    return spread(total, at_most)[share::SHARES]


def test_the_shares_deal_every_point_once() -> None:
    for total, at_most in ((7, POINTS), (200, POINTS), (999, 4 * POINTS)):
        dealt = [p for share in range(SHARES) for p in points(total, share, at_most)]
        assert sorted(dealt) == spread(total, at_most)
        assert len(dealt) == min(total, at_most)
        assert {1, total} <= set(dealt)


@pytest.mark.slow
@pytest.mark.parametrize("share", range(SHARES))
@pytest.mark.parametrize("window", [EVERY_PAGE, {}], ids=["every-page", "parts-only"])
def test_a_dataset_keeps_what_it_says_wherever_ctrl_c_lands(
    demo: DemoService,
    reference: pathlib.Path,
    tmp_path: pathlib.Path,
    window: dict[str, Any],
    share: int,
) -> None:
    with demo.client() as client:
        total = lines_run(lambda: pull(client, tmp_path / "count", **window), DATASET)
        assert total > 50  # the whole pull was traced
        for line in points(total, share):
            out = tmp_path / f"at-{line}"
            said = ""
            try:
                with interrupted_at(line, DATASET):
                    pull(client, out, **window)
            except KeyboardInterrupt as exc:
                said = " ".join(getattr(exc, "__notes__", []))
            # No file is left half written.
            assert not out.exists() or not temporaries(out), line
            if (out / "_checkpoint.json").exists():
                summary = sn.dataset_summary(out)
                if said:  # what the message says is saved is what the checkpoint holds
                    assert f"{summary.profiles} profiles are saved in {out}" in said, (line, said)
                assert pull(client, out, resume=True, **window).complete, line
                assert_same_dataset(out, reference)
            else:
                assert not said or "0 profiles are saved" in said, (line, said)


@pytest.mark.slow
@pytest.mark.parametrize("share", range(SHARES))
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_file_is_whole_or_not_there_wherever_ctrl_c_lands(
    demo: DemoService, tmp_path: pathlib.Path, suffix: str, share: int
) -> None:
    # Pages of 50: the first, a middle one, the last (where the late column joins) and
    # the empty one; the points then fall closer together on each line of the writers.
    with demo.client() as client:
        whole = sn.read_profiles(client, 1, limit=50, progress=False)

        def write(path: pathlib.Path) -> Any:
            request = sn.ProfilesRequest(client, 1, limit=50, progress=False)
            return request.to_csv(path) if suffix == ".csv" else request.to_parquet(path)

        total = lines_run(lambda: write(tmp_path / f"count{suffix}"), FILE)
        assert total > 50
        # Parquet and CSV share all but the last step: the Parquet file is tried densely.
        for line in points(total, share, 4 * POINTS if suffix == ".parquet" else POINTS):
            folder = tmp_path / f"at-{line}"
            folder.mkdir()
            target = folder / f"profiles{suffix}"
            landed = ""
            try:
                with interrupted_at(line, FILE):
                    write(target)
            except KeyboardInterrupt as exc:
                ours = [
                    f
                    for f, _ in traceback.walk_tb(exc.__traceback__)
                    if f.f_code.co_filename in FILE
                ]
                landed = ours[-1].f_code.co_qualname if ours else ""
            # What a cleanup cut short left, the next write clears (remove_debris is
            # its first step); the file is whole or not there.
            remove_debris(folder)
            left = sorted(p.name for p in folder.iterdir())
            hidden = [name for name in left if name != target.name]
            # But for Ctrl-C on the call into the cleanup itself: what that leaves
            # stays until the process ends, and the next write after it clears it.
            assert not hidden or landed == "Output.__exit__", (line, left, landed)
            if target.name in left:
                back = pd.read_csv(target) if suffix == ".csv" else pd.read_parquet(target)
                assert back["profile_id"].tolist() == whole["profile_id"].tolist(), line
