"""Requests sent from a fetch thread of their own, against the demo service on loopback.

With ``lookahead > 0`` the paging walk sends each request from a thread of its
own as soon as its cursor is read from the previous reply's bytes, while
workers parse and flatten the replies. These tests hold what that must never
change: the rows, the options checked before anything is sent, a bounded
number of pages in flight, and nothing running or sent after a close or Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import closing
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import stoplist_nb as sn
from stoplist_nb.demo import DemoService

OURS = ("stoplist_nb-parse", "stoplist_nb-fetch")


def ours() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(OURS)]


def wait_for_requests(demo: DemoService, count: int) -> None:
    """Until the service has logged ``count`` requests (an event, not a time)."""
    for _ in range(2000):
        if len(demo.requests) >= count:
            return
        threading.Event().wait(0.005)
    raise AssertionError(f"{len(demo.requests)} requests, never {count}")


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_workers_is_checked_before_any_request(
    client: sn.Client, demo: DemoService, workers: Any, tmp_path: Any
) -> None:
    calls = [
        lambda: sn.read_profiles(client, demo.db_id, workers=workers),
        lambda: sn.ProfilesRequest(client, demo.db_id, workers=workers).to_arrow(),
        lambda: sn.ProfilesRequest(client, demo.db_id, workers=workers).pages(),
        lambda: sn.ProfilesRequest(client, demo.db_id, workers=workers).tables(),
        lambda: sn.ProfilesRequest(client, demo.db_id, workers=workers).frames(),
        lambda: sn.ProfilesRequest(client, demo.db_id, workers=workers).to_dataset(tmp_path / "ds"),
        lambda: sn.ProfilesRequest(client, demo.db_id, workers=workers),
        lambda: client.pages("profiles/list", {"db_id": demo.db_id}, workers=workers),
    ]
    for call in calls:
        with pytest.raises(sn.errors.InvalidInput, match="workers"):
            call()
    assert demo.requests == []
    assert not (tmp_path / "ds").exists()


@pytest.mark.parametrize("workers", [1, 2, 5])
def test_every_worker_count_reads_the_same_rows(
    client: sn.Client, demo: DemoService, workers: int
) -> None:
    plain = sn.read_profiles(client, demo.db_id, limit=7, lookahead=0, progress=False)
    ahead = sn.read_profiles(client, demo.db_id, limit=7, progress=False, workers=workers)
    pd.testing.assert_frame_equal(ahead, plain)
    assert ahead.attrs == plain.attrs
    frames = list(sn.ProfilesRequest(client, demo.db_id, limit=7, progress=False).frames())
    assert sum(len(f) for f in frames) == len(plain)
    assert ours() == [] or all(not t.is_alive() for t in ours())


@pytest.mark.parametrize("lookahead", [1, 2, 4])
def test_a_wrong_guess_never_changes_the_rows_of_any_reader(
    client: sn.Client, demo: DemoService, lookahead: int, tmp_path: Any
) -> None:
    # The decoy's rows carry a field of their own: the plain read gets the same reply.
    demo.add_fault("profiles/list", "decoy")
    plain = sn.ProfilesRequest(client, demo.db_id, limit=7, lookahead=0, progress=False).to_arrow()
    demo.add_fault("profiles/list", "decoy")
    arrow = sn.ProfilesRequest(
        client, demo.db_id, limit=7, lookahead=lookahead, progress=False
    ).to_arrow()
    assert arrow.equals(plain)
    demo.add_fault("profiles/list", "decoy")
    tables = list(
        sn.ProfilesRequest(
            client, demo.db_id, limit=7, lookahead=lookahead, progress=False
        ).tables()
    )
    assert pa.concat_tables(tables, promote_options="default")["profile_id"].equals(
        plain["profile_id"]
    )
    demo.add_fault("profiles/list", "decoy")
    summary = sn.ProfilesRequest(
        client, demo.db_id, limit=7, lookahead=lookahead, progress=False
    ).to_dataset(tmp_path / "ds")
    assert summary.rows == plain.num_rows
    assert summary.profiles == len(demo.profiles)


@pytest.mark.parametrize(("lookahead", "workers"), [(1, 1), (2, 1), (1, 3), (3, 2)])
def test_pages_in_flight_are_bounded(
    client: sn.Client, demo: DemoService, lookahead: int, workers: int
) -> None:
    # The caller takes one page and stops: the fetch thread may hold a page for
    # each worker and ``lookahead`` more, then waits for the caller, not sending.
    with closing(
        sn.ProfilesRequest(
            client, demo.db_id, limit=5, lookahead=lookahead, workers=workers
        ).pages()
    ) as pages:
        next(pages)
        wait_for_requests(demo, 1 + lookahead + workers)
        threading.Event().wait(0.3)  # room for a request past the bound, were there one
        assert len(demo.requests) == 1 + lookahead + workers
    assert ours() == []


def test_closing_cuts_the_request_on_the_wire(client: sn.Client, demo: DemoService) -> None:
    before = set(threading.enumerate())
    demo.add_fault("profiles/list", "slow", delay=60, after=1)
    pages = sn.ProfilesRequest(client, demo.db_id, limit=5, lookahead=2).pages()
    next(pages)
    wait_for_requests(demo, 2)  # the second request waits 60 s for its reply
    closer = threading.Thread(target=pages.close)
    closer.start()
    closer.join(20)
    assert not closer.is_alive(), "closing waited for the slow reply"
    assert ours() == []
    sent = len(demo.requests)
    assert [t for t in threading.enumerate() if t not in before and t.name.startswith(OURS)] == []
    threading.Event().wait(0.2)
    assert len(demo.requests) == sent == 2


@pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="SIGINT goes to main"
)
@pytest.mark.usefixtures("ctrl_c")
def test_ctrl_c_while_waiting_for_a_page_leaves_nothing_running(
    client: sn.Client, demo: DemoService
) -> None:
    demo.add_fault("profiles/list", "slow", delay=60, after=2)

    def interrupt() -> None:
        wait_for_requests(demo, 3)  # the caller now waits for the slow third page
        os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=interrupt)
    sender.start()
    with pytest.raises(KeyboardInterrupt):
        sn.read_profiles(client, demo.db_id, limit=5, lookahead=2, progress=False)
    sender.join()
    assert ours() == []
    sent = len(demo.requests)
    threading.Event().wait(0.2)
    assert len(demo.requests) == sent == 3  # no request after Ctrl-C


def test_a_reply_is_parsed_once_the_next_request_is_on_the_wire(
    client: sn.Client, demo: DemoService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sending holds the GIL for a while; a parse started at the same instant would hold
    # the request back. Each request after the first takes 0.2 s to begin sending: the
    # parse of the reply before it must wait for it, and run while its reply is awaited.
    import stoplist_nb.client as client_module

    begun: list[int] = []
    post = client._transport.post

    def slow_to_send(method: str, params: Any) -> bytes:
        if begun:
            threading.Event().wait(0.2)
        begun.append(1)
        return post(method, params)

    at_parse: list[int] = []
    parse = client_module.read_reply

    def recorded(content: bytes) -> Any:
        at_parse.append(len(begun))
        return parse(content)

    monkeypatch.setattr(client._transport, "post", slow_to_send)
    monkeypatch.setattr(client_module, "read_reply", recorded)
    got = sn.read_profiles(client, demo.db_id, limit=40, lookahead=2, workers=1, progress=False)
    pages = -(-len(demo.profiles) // 40)
    assert got.attrs["profiles"] == len(demo.profiles)
    # Reply k (the empty last one too) is parsed once request k + 1 is sent; the last
    # reply has no request after it.
    assert at_parse == [*range(2, pages + 2), pages + 1]


def test_a_fetch_thread_that_fails_leaves_no_page_unparsed_and_no_caller_waiting(
    client: sn.Client, demo: DemoService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bug in the fetch thread after a reply is in (planning the request after the
    # second page): the pages it received are still parsed and handed over, then the
    # caller gets the failure instead of waiting for ever.
    from stoplist_nb import _lookahead

    plan, calls = _lookahead.Ahead._ahead, []

    def broken(self: Any, *args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise LookupError("a bug")
        return plan(self, *args)

    monkeypatch.setattr(_lookahead.Ahead, "_ahead", broken)
    got: list[Any] = []

    def read() -> None:
        pages = sn.ProfilesRequest(client, demo.db_id, limit=5, lookahead=2, workers=1).pages()
        with closing(pages):
            try:
                got.extend(len(page) for page in pages)
            except RuntimeError as exc:
                got.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(20)
    assert not reader.is_alive(), "the caller waited for a page never parsed"
    assert got[:2] == [5, 5]
    assert isinstance(got[2], RuntimeError)
    assert isinstance(got[2].__cause__, LookupError)
    assert ours() == []


@pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread()
    or not hasattr(signal, "pthread_kill"),
    reason="SIGINT is handled in the main thread; pthread_kill is POSIX",
)
@pytest.mark.usefixtures("ctrl_c")
def test_ctrl_c_that_another_thread_receives_still_stops_the_read(
    client: sn.Client, demo: DemoService
) -> None:
    # The kernel may hand a process's signal to any thread that does not block it (ours
    # do; another library's thread may not); Python runs the handler in the main thread
    # only, which must not sleep through it while the third reply is held for a minute.
    demo.add_fault("profiles/list", "slow", delay=60, after=2)
    bystander_done = threading.Event()
    bystander = threading.Thread(target=bystander_done.wait, name="another-library")
    bystander.start()

    def interrupt() -> None:
        wait_for_requests(demo, 3)
        threading.Event().wait(0.5)  # the caller is asleep, waiting for the third page
        signal.pthread_kill(bystander.ident, signal.SIGINT)  # type: ignore[arg-type]

    sender = threading.Thread(target=interrupt)
    sender.start()
    began = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            sn.read_profiles(client, demo.db_id, limit=5, lookahead=2, workers=1, progress=False)
    finally:
        sender.join()
        bystander_done.set()
        bystander.join()
    # Not a measure of speed: the held reply would have come after 60 s.
    assert time.monotonic() - began < 30, "the caller slept through the signal"
    assert ours() == []


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
def test_the_threads_of_a_read_leave_the_stopping_signals_to_the_main_thread(
    client: sn.Client, demo: DemoService, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import stoplist_nb.client as client_module

    masks: dict[str, set[int]] = {}

    def record() -> None:
        name = next(p for p in OURS if threading.current_thread().name.startswith(p))
        masks[name] = set(signal.pthread_sigmask(signal.SIG_BLOCK, []))

    post, parse = client._transport.post, client_module.read_reply

    def posting(method: str, params: Any) -> bytes:
        record()
        return post(method, params)

    def parsing(content: bytes) -> Any:
        record()
        return parse(content)

    monkeypatch.setattr(client._transport, "post", posting)
    monkeypatch.setattr(client_module, "read_reply", parsing)
    sn.ProfilesRequest(client, demo.db_id, limit=7, progress=False).to_dataset(tmp_path / "ds")
    stopping = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    assert set(masks) == {"stoplist_nb-fetch", "stoplist_nb-parse"}
    for name, mask in masks.items():
        assert stopping <= mask, name
    assert stopping.isdisjoint(signal.pthread_sigmask(signal.SIG_BLOCK, []))  # this thread
