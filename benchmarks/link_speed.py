"""Benchmark: the readers against a bare ``requests`` fetch over a paced link, and the parse floor.

Part 1, over a network. The pages (``profile_pages.py``, 1000 profiles each)
come from the pacing HTTP server of ``paced.py`` (first byte after
``latency`` seconds, then the body at ``bandwidth`` bytes per second), run in
a CHILD PROCESS started with ``multiprocessing`` (fork), so that its Python
work and its GIL are not in any figure. Each measurement runs in a fresh child
of its own (``subprocess``), timed after its imports, so that its peak RSS
(``VmHWM``, reset once imported, minus the RSS then) is its own:

* ``fetch``: every page, and the empty one that ends paging, POSTed with a
  ``requests.Session``, the body read, nothing parsed: the floor;
* ``read_profiles``: ``read_profiles(Client(url, token), 1, limit=1000,
  progress=False)``;
* ``parquet``: ``ProfilesRequest(...).to_dataset`` into a fresh temporary directory;
* ``frames``: iterating ``ProfilesRequest(...).frames()`` to the end, each frame dropped.

Routes alternate within each round; best of ``--repeat`` for each.

Part 2, from memory (``--memory-profiles``, default 1M): the pages answered
by a requests transport adapter (no network, ``profile_pages.replay_client``),
in one child: pyarrow's JSON parse of the same bytes on 2 threads (the
"2-thread parse floor": ``read_json`` per page, the options ``read_reply``
uses, in a ``ThreadPoolExecutor`` of 2), and ``read_profiles``, alternately,
best of ``--memory-repeat``; for the read, the calling thread's CPU time
(``time.thread_time``) against the process's (``time.process_time``). Then
the bounds the machine sets, in CPU seconds: the parse on one thread and the
read on one thread (``lookahead=0, workers=1``), whose difference is the work
beside the parse; the least the read could take were both cores busy all the
time (the floor's CPU plus that work, over 2); and two parts of that work
which only one thread at a time can do under the GIL: the bare fetch through
the same adapter, and making the ``cats`` cells Python lists (the default
dtypes hold them so) with the collector running as it does in a read.

    python benchmarks/link_speed.py
    python benchmarks/link_speed.py --latencies 0.02 --repeat 5 --memory-profiles 0
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from normalize import _machine
from paced import TOKEN, PacedServer, fetch_only
from profile_pages import EMPTY, make_pages

ROUTES = ("fetch", "read_profiles", "parquet", "frames")


def _serve(pages: dict[str, bytes], latency: float, bandwidth: float, conn: Any) -> None:
    """The pacing server, in the child process: it sends its port, then serves until killed."""
    server = PacedServer(pages, latency, bandwidth)
    conn.send(server.server_address[1])
    conn.close()
    server.serve_forever()


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


def _reset_peak() -> int:
    """The RSS now, in KiB, with the peak (``VmHWM``) reset to it (Linux 4.0+).

    Without the reset the peak of a short route is that of the imports.
    """
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_kb("VmRSS")


def _fetch(url: str, cursors: list[str]) -> tuple[int, int]:
    return fetch_only(url, cursors), 0


def _child(route: str, url: str, cursors_path: str, workers: int | None) -> dict[str, Any]:
    import pandas  # noqa: F401  (imports are not part of the peak)
    import pyarrow.parquet  # noqa: F401
    import requests  # noqa: F401

    import stoplist_nb as sn

    cursors = json.loads(Path(cursors_path).read_text())
    kw: dict[str, Any] = {} if workers is None else {"workers": workers}
    gc.collect()
    base = _reset_peak()
    t = time.perf_counter()
    profiles = None
    if route == "fetch":
        received, rows = _fetch(url, cursors)
    else:
        with sn.Client(url, TOKEN) as client:
            if route == "read_profiles":
                frame = sn.read_profiles(client, 1, limit=1000, progress=False, **kw)
                rows, profiles = len(frame), frame.attrs["profiles"]
            elif route == "parquet":
                with tempfile.TemporaryDirectory() as tmp:
                    summary = sn.ProfilesRequest(
                        client, 1, limit=1000, progress=False, **kw
                    ).to_dataset(Path(tmp) / "ds")
                    rows, profiles = summary.rows, summary.profiles
            else:
                rows = profiles = 0
                for frame in sn.ProfilesRequest(
                    client, 1, limit=1000, progress=False, **kw
                ).frames():
                    rows += len(frame)
                    profiles = frame.attrs["profiles"]
    seconds = time.perf_counter() - t
    peak = _status_kb("VmHWM")
    out = {"seconds": seconds, "rows": rows, "profiles": profiles, "peak_mb": (peak - base) / 1024}
    if route == "fetch":
        out["bytes"] = received
    return out


def _run_child(route: str, url: str, cursors_path: str, workers: int | None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", route, "--url", url, "--cursors", cursors_path]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _memory_child(profiles: int, repeat: int, workers: int | None) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    from normalize import _parse
    from profile_pages import replay_client

    import stoplist_nb as sn
    from stoplist_nb._json.reader import read_reply

    pages = make_pages(profiles, 1000)
    replies = dict(pages)
    total = sum(len(content) for _, content in pages)
    kw: dict[str, Any] = {} if workers is None else {"workers": workers}

    def floor() -> None:
        with ThreadPoolExecutor(2) as pool:
            tables = list(pool.map(_parse, (content for _, content in pages)))
        del tables

    def read(**options: Any) -> tuple[int, float, float]:
        with replay_client(lambda cursor: replies.get(cursor, EMPTY)) as client:
            cpu, own = time.process_time(), time.thread_time()
            frame = sn.read_profiles(client, 1, limit=1000, progress=False, **options)
            own, cpu = time.thread_time() - own, time.process_time() - cpu
        return len(frame), own, cpu

    def parse_one_thread() -> None:
        for _, content in pages:
            _parse(content)

    def fetch() -> None:
        with replay_client(lambda cursor: replies.get(cursor, EMPTY)) as client:
            cursors = [cursor for cursor, _ in pages]
            received = fetch_only(client.base_url, cursors, client.session)
        assert received == total, (received, total)

    cats = [read_reply(c).data.field("subscriptions").flatten().field("cats") for _, c in pages]

    def lists() -> None:
        made = [chunk.to_pylist() for chunk in cats]
        del made

    best = {"floor": float("inf"), "read": float("inf")}
    cpu_of = {"floor": float("inf"), "read": float("inf")}
    share, rows = 1.0, 0
    for _ in range(repeat):
        for name in ("floor", "read"):
            gc.collect()
            t, c = time.perf_counter(), time.process_time()
            if name == "floor":
                floor()
            else:
                rows, own, cpu = read(**kw)
            seconds = time.perf_counter() - t
            cpu_of[name] = min(cpu_of[name], time.process_time() - c)
            if seconds < best[name]:
                best[name] = seconds
                if name == "read":
                    share = own / cpu
    bounds = {
        "parse_1": parse_one_thread,
        "read_1": partial(read, lookahead=0, workers=1),
        "fetch": fetch,
    }
    spent = {name: float("inf") for name in (*bounds, "lists")}
    for _ in range(repeat):
        for name, run in (*bounds.items(), ("lists", lists)):
            gc.collect()
            c = time.process_time()
            run()
            spent[name] = min(spent[name], time.process_time() - c)
    return {
        **best,
        "floor_cpu": cpu_of["floor"],
        "read_cpu": cpu_of["read"],
        **{name + "_cpu": value for name, value in spent.items()},
        "cells": sum(len(chunk) for chunk in cats),
        "rows": rows,
        "thread_share": share,
        "bytes": total,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", type=int, default=100_000)
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.02, 0.005, 0.0])
    parser.add_argument("--bandwidth", type=float, default=50, help="MB/s (10**6 bytes)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--routes", nargs="+", default=list(ROUTES), choices=ROUTES)
    parser.add_argument("--memory-profiles", type=int, default=1_000_000)
    parser.add_argument("--memory-repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None, help="workers= of the readers")
    parser.add_argument("--child", choices=(*ROUTES, "memory"))
    parser.add_argument("--url")
    parser.add_argument("--cursors")
    args = parser.parse_args()

    if args.child == "memory":
        print(json.dumps(_memory_child(args.memory_profiles, args.memory_repeat, args.workers)))
        return
    if args.child:
        print(json.dumps(_child(args.child, args.url, args.cursors, args.workers)))
        return

    print(_machine())
    pages = make_pages(args.profiles, 1000)
    total = sum(len(content) for _, content in pages)
    cursors = [cursor for cursor, _ in pages] + [json.loads(pages[-1][1])["next_from_id"]]
    print(
        f"{args.profiles:,} profiles, {total:,} bytes in {len(pages)} pages (+1 empty), "
        f"{args.bandwidth:g} MB/s, best of {args.repeat}; server in a child process",
        flush=True,
    )
    fork = multiprocessing.get_context("fork")
    results: list[tuple[float, dict[str, dict[str, Any]]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cursors_path = str(Path(tmp) / "cursors.json")
        Path(cursors_path).write_text(json.dumps(cursors))
        for latency in args.latencies:
            receive, send = fork.Pipe(duplex=False)
            server = fork.Process(
                target=_serve, args=(dict(pages), latency, args.bandwidth * 1e6, send)
            )
            server.start()
            url = f"http://127.0.0.1:{receive.recv()}"
            best: dict[str, dict[str, Any]] = {}
            try:
                for i in range(args.repeat):
                    order = args.routes if i % 2 == 0 else args.routes[::-1]
                    for route in order:
                        got = _run_child(route, url, cursors_path, args.workers)
                        if route == "fetch":
                            assert got["bytes"] == total + len(EMPTY), got
                        if route not in best or got["seconds"] < best[route]["seconds"]:
                            best[route] = got
            finally:
                server.kill()
                server.join()
            results.append((latency, best))
            fetch = best["fetch"]["seconds"] if "fetch" in best else float("nan")
            print(
                f"  {latency * 1000:g} ms: "
                + ", ".join(
                    f"{r} {b['seconds']:.3f} s ({b['seconds'] / fetch:.3f}x, "
                    f"{b['peak_mb']:.0f} MiB)"
                    for r, b in best.items()
                ),
                flush=True,
            )
    print("\n| latency ms | route | s | / fetch | rows | profiles | peak RSS + MiB |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for latency, best in results:
        fetch = best["fetch"]["seconds"] if "fetch" in best else float("nan")
        for route in ROUTES:
            if route in best:
                b = best[route]
                print(
                    f"| {latency * 1000:g} | {route} | {b['seconds']:.3f} | "
                    f"{b['seconds'] / fetch:.3f}x | {b['rows'] or '-'} | {b['profiles'] or '-'} | "
                    f"{b['peak_mb']:.0f} |"
                )
    if args.memory_profiles:
        cmd = [sys.executable, __file__, "--child", "memory"]
        cmd += ["--memory-profiles", str(args.memory_profiles)]
        cmd += ["--memory-repeat", str(args.memory_repeat)]
        if args.workers is not None:
            cmd += ["--workers", str(args.workers)]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        m = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"\nfrom memory, {args.memory_profiles:,} profiles ({m['bytes']:,} bytes), best of "
            f"{args.memory_repeat}: 2-thread parse floor {m['floor']:.3f} s, read_profiles "
            f"{m['read']:.3f} s = {m['read'] / m['floor']:.3f}x, {m['rows']:,} rows; calling "
            f"thread's CPU {m['thread_share']:.1%} of the process's"
        )
        beside = m["read_1_cpu"] - m["parse_1_cpu"]
        least = (m["floor_cpu"] + beside) / 2
        print(
            f"CPU s: floor {m['floor_cpu']:.3f}, read_profiles {m['read_cpu']:.3f}; on one "
            f"thread: parse {m['parse_1_cpu']:.3f}, read {m['read_1_cpu']:.3f}, so "
            f"{beside:.3f} beside the parse; both cores busy all the time: the read "
            f"no less than {least:.3f} s = {least / m['floor']:.3f}x the floor\n"
            f"only one thread at a time (GIL): the bare fetch {m['fetch_cpu']:.3f} s, "
            f"{m['cells']:,} cats cells as lists {m['lists_cpu']:.3f} s"
        )


if __name__ == "__main__":
    main()
