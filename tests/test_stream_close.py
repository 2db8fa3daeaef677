"""A page stream closes itself on every way out, in bounded time, and sends nothing after.

Each test keeps the exception as a notebook keeps it (``sys.last_value`` and
``sys.last_traceback`` hold its frames, and so every generator and local of the
read), then looks at once: no thread of the package (fetch, parse workers,
dataset writer, the deadline's watchdog) or of its progress bar (tqdm's
monitor) is alive, and no ``profiles/list`` request reaches the service after
the exception reached the caller.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pathlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tqdm import tqdm
from tqdm._monitor import TMonitor

import stoplist_nb as sn
from stoplist_nb._stream import Stream
from stoplist_nb.demo import DemoService

#: Pages of 5 out of the demo's profiles: many pages, so a read is mid-way when it stops.
LIMIT = 5


def ours() -> list[threading.Thread]:
    """The threads of the package's readers and of its progress bars alive now."""
    return [
        t
        for t in threading.enumerate()
        if (t.name.startswith(("stoplist_nb-", "stoplist-nb-")) and "demo" not in t.name)
        or isinstance(t, TMonitor)
    ]


def listed(demo: DemoService) -> int:
    return sum(1 for r in demo.requests if r.method == "profiles/list")


@contextlib.contextmanager
def kept_as_a_notebook_keeps_it() -> Iterator[list[BaseException]]:
    """Catch what the block raises and keep it in ``sys.last_*``, as IPython does."""
    caught: list[BaseException] = []
    try:
        yield caught
    except BaseException as exc:
        caught.append(exc)
        sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
    finally:
        assert caught or sys.exc_info()[0] is None


@pytest.fixture(autouse=True)
def _forget_the_last_exception() -> Iterator[None]:
    before = [getattr(sys, name, None) for name in ("last_type", "last_value", "last_traceback")]
    yield
    for name, value in zip(("last_type", "last_value", "last_traceback"), before, strict=True):
        setattr(sys, name, value)


@pytest.fixture
def quiet() -> None:
    """No thread of ours from an earlier test (the watchdog outlives an exchange by a second)."""
    deadline = time.monotonic() + 5
    while ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ours() == []


def nothing_left(demo: DemoService, sent: int) -> None:
    """No thread of ours now, and no request after ``sent`` within half a second."""
    assert ours() == []
    time.sleep(0.5)
    assert listed(demo) == sent


def ctrl_c_at_update(monkeypatch: pytest.MonkeyPatch, at: int) -> list[int]:
    """Make the progress bar's ``at``-th ``update`` raise Ctrl-C; the list counts the calls."""
    updates = [0]
    update = tqdm.update

    def interrupted(bar: Any, n: float | None = 1) -> bool | None:
        updates[0] += 1
        if updates[0] == at:
            raise KeyboardInterrupt  # in the calling thread, as a real Ctrl-C lands
        return update(bar, n)

    monkeypatch.setattr(tqdm, "update", interrupted)
    return updates


READS: dict[str, Callable[[sn.ProfilesRequest], Any]] = {
    "pages": lambda req: req.pages(),
    "tables": lambda req: req.tables(),
    "frames": lambda req: req.frames(),
}


@pytest.mark.parametrize("read", READS)
def test_exhaustion_closes_it(client: sn.Client, demo: DemoService, quiet: None, read: str) -> None:
    stream = READS[read](sn.ProfilesRequest(client, demo.db_id, limit=LIMIT, lookahead=2))
    count = sum(1 for _ in stream)
    assert count == -(-len(demo.profiles) // LIMIT)
    nothing_left(demo, listed(demo))


def test_an_exception_in_the_callers_loop_closes_it(
    client: sn.Client, demo: DemoService, quiet: None
) -> None:
    req = sn.ProfilesRequest(client, demo.db_id, limit=LIMIT, lookahead=2)
    with kept_as_a_notebook_keeps_it() as caught, req.frames() as frames:
        for frame in frames:
            if frame.attrs["profiles"] >= 2 * LIMIT:
                raise ValueError("the caller's own error")
    assert isinstance(caught[0], ValueError)
    nothing_left(demo, listed(demo))


def test_an_exception_in_a_bare_loop_closes_the_dropped_stream(
    client: sn.Client, demo: DemoService, quiet: None
) -> None:
    req = sn.ProfilesRequest(client, demo.db_id, limit=LIMIT, lookahead=2)
    gc.disable()  # the stream is ended by its last reference going, not by a collection
    try:
        with kept_as_a_notebook_keeps_it() as caught:
            for frame in req.frames():
                if frame.attrs["profiles"] >= 2 * LIMIT:
                    raise ValueError("the caller's own error")
        assert isinstance(caught[0], ValueError)
        nothing_left(demo, listed(demo))
    finally:
        gc.enable()


@pytest.mark.parametrize("read", READS)
def test_ctrl_c_in_a_callback_the_package_calls_closes_it(
    client: sn.Client,
    demo: DemoService,
    quiet: None,
    monkeypatch: pytest.MonkeyPatch,
    read: str,
) -> None:
    updates = ctrl_c_at_update(monkeypatch, 2)
    demo.add_fault("profiles/list", "slow", delay=0.05, times=1000)  # requests keep going out
    req = sn.ProfilesRequest(client, demo.db_id, limit=LIMIT, lookahead=2)
    stream = READS[read](req) if read != "pages" else req.tables()  # pages have no bar
    with kept_as_a_notebook_keeps_it() as caught:
        for _ in stream:
            pass
    assert isinstance(caught[0], KeyboardInterrupt)
    assert updates == [2]
    nothing_left(demo, listed(demo))


def test_a_real_ctrl_c_while_a_page_is_awaited_closes_it(
    client: sn.Client, demo: DemoService, quiet: None, ctrl_c: None
) -> None:
    demo.add_fault("profiles/list", "slow", delay=0.3, times=1000)
    req = sn.ProfilesRequest(client, demo.db_id, limit=LIMIT, lookahead=2, progress=False)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    with kept_as_a_notebook_keeps_it() as caught, req.frames() as frames:
        timer.start()
        for _ in frames:
            pass
    timer.join()
    assert isinstance(caught[0], KeyboardInterrupt)
    nothing_left(demo, listed(demo))


def test_a_second_ctrl_c_during_close_leaves_nothing_running(
    client: sn.Client, demo: DemoService, quiet: None, ctrl_c: None
) -> None:
    demo.add_fault("profiles/list", "slow", delay=0.2, times=1000)
    req = sn.ProfilesRequest(client, demo.db_id, limit=LIMIT, lookahead=2)
    stream = req.frames()
    next(stream)

    def second_ctrl_c() -> None:  # the first thing close() ends, so the rest comes after it
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the signal arrives while close() runs

    stream._owner.adopt(second_ctrl_c)
    with kept_as_a_notebook_keeps_it() as caught:
        try:
            raise KeyboardInterrupt  # the first Ctrl-C
        finally:
            stream.close()
    # The second one is handled once close() has ended everything.
    assert isinstance(caught[0], KeyboardInterrupt)
    assert isinstance(caught[0].__context__, KeyboardInterrupt)
    nothing_left(demo, listed(demo))


def test_a_stream_dropped_half_read_closes_itself(
    client: sn.Client, demo: DemoService, quiet: None
) -> None:
    req = sn.ProfilesRequest(client, demo.db_id, limit=LIMIT, lookahead=2)
    gc.disable()
    try:
        stream = req.frames()
        next(stream)
        assert ours()  # the fetch thread, the workers and the bar's monitor
        del stream  # no close(), no with: the backstop ends it
        nothing_left(demo, listed(demo))
    finally:
        gc.enable()


def test_a_dataset_pull_stopped_by_ctrl_c_leaves_no_writer(
    client: sn.Client,
    demo: DemoService,
    quiet: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: pathlib.Path,
) -> None:
    ctrl_c_at_update(monkeypatch, 3)
    req = sn.ProfilesRequest(client, demo.db_id, limit=LIMIT, lookahead=2)
    with kept_as_a_notebook_keeps_it() as caught:
        req.to_dataset(tmp_path / "ds", commit_seconds=0)
    assert isinstance(caught[0], KeyboardInterrupt)
    nothing_left(demo, listed(demo))
    assert sn.dataset_summary(tmp_path / "ds").profiles == 2 * LIMIT


def test_close_is_bounded_when_a_thread_will_not_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    from stoplist_nb import _threads

    monkeypatch.setattr(_threads, "JOIN_SECONDS", 0.2)
    stop = threading.Event()
    stuck = threading.Thread(target=stop.wait, name="stoplist_nb-stuck", daemon=True)

    def source(owner: Any) -> Iterator[int]:
        stuck.start()
        owner.adopt(lambda: _threads.join(stuck))
        yield 1

    try:
        stream = Stream(source)
        next(stream)
        started = time.monotonic()
        stream.close()
        assert time.monotonic() - started < 2
        assert stuck.is_alive()  # told nothing, it goes on: close() did not hang on it
    finally:
        stop.set()
        stuck.join()
