"""Benchmark: what the reply guards cost ``read_profiles`` when replies come over a network.

``normalize.py`` measures the guards (the nesting bound and the float check
of ``stoplist_nb._json.reader``) from memory, where the parse is all there is
to wait for. Here the pages (``profile_pages.py``, 1000 profiles each) come
from a pacing HTTP server on 127.0.0.1: a ``ThreadingHTTPServer`` in a thread
of this process that answers ``POST /api/v1.1/profiles/list`` by the request's
``from_id``, waits ``latency`` seconds before the first byte of each reply,
then sends the body (``Content-Length`` set) in 64 KiB chunks at
``bandwidth`` bytes per second, each chunk once a link of that bandwidth
would have delivered all of it. No network namespace or ``tc`` is needed.

For each latency it times, alternately and best of ``--repeat``:

* fetch only: every page (and the empty one that ends paging) POSTed with a
  ``requests.Session``, the body read, nothing parsed: the floor;
* for each lookahead, ``read_profiles(Client(url, token), 1, limit=1000,
  progress=False, lookahead=L)`` guarded (as shipped) and unguarded (the
  depth bound and the float check switched off as ``normalize.py`` does;
  the UTF-8 check stays).

The server's thread shares the machine and the GIL with the client: it
mostly sleeps and hands 64 KiB to the kernel per write.

    python benchmarks/paced.py --profiles 100000
"""

from __future__ import annotations

import argparse
import gc
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from normalize import _machine
from profile_pages import EMPTY, make_pages

import stoplist_nb as sn
import stoplist_nb._json.reader as reader

PATH = "/api/v1.1/profiles/list"
CHUNK = 64 * 1024
TOKEN = "paced-benchmark"


class PacedServer(ThreadingHTTPServer):
    """Serves ``pages`` (cursor -> reply bytes) after ``latency`` s, at ``bandwidth`` B/s."""

    def __init__(self, pages: dict[str, bytes], latency: float, bandwidth: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.pages, self.latency, self.bandwidth = pages, latency, bandwidth

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection, as requests reuses it
    disable_nagle_algorithm = True  # or a short tail segment can wait for a delayed ACK
    server: PacedServer

    def do_POST(self) -> None:
        request = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != PATH:
            self.send_error(404)
            return
        body = self.server.pages.get(json.loads(request).get("from_id") or "", EMPTY)
        time.sleep(self.server.latency)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        start, view = time.perf_counter(), memoryview(body)
        for at in range(0, len(body), CHUNK):
            chunk = view[at : at + CHUNK]
            # each chunk leaves once a link of that bandwidth would have delivered all of it,
            # timed from the start of the body so that a late wake-up is caught up
            wait = start + (at + len(chunk)) / self.server.bandwidth - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            self.wfile.write(chunk)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(pages: dict[str, bytes], bandwidth: float) -> Iterator[PacedServer]:
    """A :class:`PacedServer` running in a thread for the ``with`` block."""
    server = PacedServer(pages, 0.0, bandwidth)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def unguarded() -> Iterator[None]:
    """The reply reader with its depth bound and float check switched off."""
    names = vars(reader)  # the names the reader calls, as normalize.py's ``_unguarded`` patches
    saved = {name: names[name] for name in ("depth_bound", "exact_floats")}
    names.update(depth_bound=lambda content: 0, exact_floats=lambda array: True)
    try:
        yield
    finally:
        names.update(saved)


def fetch_only(url: str, cursors: list[str], session: Any = None) -> int:
    """POST every cursor as ``read_profiles`` would, read each body, parse nothing.

    ``session``: a ``requests.Session`` to send through (one whose adapter
    answers from memory, say), left open; by default a fresh one.
    """
    import requests

    received = 0
    with nullcontext(session) if session is not None else requests.Session() as session:
        for cursor in cursors:
            body: dict[str, Any] = {"db_id": 1, "limit": 1000, "token": TOKEN}
            if cursor:
                body["from_id"] = cursor
            response = session.post(url + PATH, json=body, timeout=60)
            response.raise_for_status()
            received += len(response.content)
    return received


def read(url: str, lookahead: int) -> int:
    """``read_profiles`` against the server; the number of rows."""
    with sn.Client(url, TOKEN) as client:
        frame = sn.read_profiles(client, 1, limit=1000, progress=False, lookahead=lookahead)
    return len(frame)


def timed(fn: Callable[[], Any], times: list[float]) -> Any:
    """``fn()``, its wall time appended to ``times``."""
    gc.collect()
    t = time.perf_counter()
    result = fn()
    times.append(time.perf_counter() - t)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", type=int, default=100_000)
    parser.add_argument("--page", type=int, default=1000, help="profiles per page")
    parser.add_argument(
        "--latencies", type=float, nargs="+", default=[0, 0.005, 0.02, 0.08], metavar="S",
        help="seconds before the first byte of each reply",
    )  # fmt: skip
    parser.add_argument("--bandwidth", type=float, default=50, help="MB/s (10**6 bytes)")
    parser.add_argument("--lookaheads", type=int, nargs="+", default=[2, 0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    print(_machine())
    t = time.perf_counter()
    pages = make_pages(args.profiles, args.page, args.seed)
    total = sum(len(content) for _, content in pages)
    # read_profiles stops at the first empty page: the last next_from_id asks for it
    cursors = [cursor for cursor, _ in pages] + [json.loads(pages[-1][1])["next_from_id"]]
    print(
        f"{args.profiles:,} profiles: {total:,} bytes of JSON in {len(pages)} pages of "
        f"{args.page} (+1 empty reply), generated in {time.perf_counter() - t:.1f} s; "
        f"served at {args.bandwidth:g} MB/s, repeat {args.repeat}",
        flush=True,
    )
    bandwidth = args.bandwidth * 1e6
    table, floors = [], []
    rows_seen: set[int] = set()
    with serving(dict(pages), bandwidth) as server:
        for latency in args.latencies:
            server.latency = latency
            fetch: list[float] = []
            runs: dict[tuple[int, bool], list[float]] = {
                (la, g): [] for la in args.lookaheads for g in (True, False)
            }
            for i in range(args.repeat):
                received = timed(lambda: fetch_only(server.url, cursors), fetch)
                assert received == total + len(EMPTY), received
                for lookahead in args.lookaheads:
                    run = partial(read, server.url, lookahead)
                    # which goes first alternates, so neither always follows the fetch
                    for guarded in (True, False) if i % 2 == 0 else (False, True):
                        with nullcontext() if guarded else unguarded():
                            rows_seen.add(timed(run, runs[lookahead, guarded]))
            floors.append((latency, min(fetch)))
            print(f"  latency {latency * 1000:g} ms: fetch only {min(fetch):.3f} s", flush=True)
            for lookahead in args.lookaheads:
                g, u = min(runs[lookahead, True]), min(runs[lookahead, False])
                table.append((latency, lookahead, g, u))
                print(
                    f"    lookahead {lookahead}: guarded {g:.3f} s, unguarded {u:.3f} s, "
                    f"{g / u:.3f}x",
                    flush=True,
                )
    print(f"\nrows per read: {', '.join(f'{r:,}' for r in sorted(rows_seen))}")
    print("\n| latency ms | lookahead | guarded s | unguarded s | guarded / unguarded |")
    print("|---:|---:|---:|---:|---:|")
    for latency, lookahead, g, u in table:
        print(f"| {latency * 1000:g} | {lookahead} | {g:.3f} | {u:.3f} | {g / u:.3f}x |")
    print(
        "\nfetch only (requests, no parse), s: "
        + ", ".join(f"{latency * 1000:g} ms {s:.3f}" for latency, s in floors)
    )


if __name__ == "__main__":
    main()
