"""Benchmark: profiles/list reply pages (raw bytes) -> the flat DataFrame.

For each size it generates synthetic reply pages (``profile_pages.py``, 1000
profiles each) and times, alternately in one child process (best of
``--repeat``; json_normalize best of 3 at 100k, once at 1M), so that all see
the same machine load:

* floor: ``pyarrow.json.read_json`` of every page (parse only, with the
  options ``read_reply`` uses: one block per page), on one thread with each
  table dropped at once ("dropped") or kept in a list as any real use would
  ("kept": it pays for fresh memory like ours does), and on as many worker
  threads as ``read_profiles`` parses in, tables kept ("threads");
* ours: what ``read_profiles`` does, fed from memory instead of the network:
  the paging walk (``_paging.walk``: the next request goes out on the cursor
  found in the raw bytes while worker threads parse), ``flatten_profiles`` of
  each page, one ``frame_from_tables``; with the default lookahead (2) and with
  ``lookahead=0`` (one thread: each page parsed before the next is asked for);
* read_profiles itself, through requests, with a transport adapter answering
  from memory (so it includes building and reading HTTP requests and
  responses, but no network), for both lookaheads: for information;
* json_normalize: ``json.loads`` per page, then one
  ``pandas.json_normalize(records, record_path="subscriptions", meta=[...],
  errors="ignore")`` (profiles without the key get ``[]`` first, or it raises).

Memory is the peak RSS (``ru_maxrss``) of a fresh process running ours (or
json_normalize) once, minus its RSS once the input pages are loaded; ours also
reports the peak of Arrow's memory pool (``pa.default_memory_pool().max_memory()``).

``--dates`` adds a date-like profile field (``_bdate``, ``"1990-05-01"``) to
half the profiles: pyarrow.json turns such strings into timestamps, so
``read_reply`` parses those pages twice to keep the text.

    python benchmarks/normalize.py --sizes 100000 1000000
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from profile_pages import EMPTY, PROFILE_FIELDS, make_pages, replay_client

from stoplist_nb._lookahead import default_workers
from stoplist_nb._paging import DEFAULT_LOOKAHEAD

# --- routes (each runs in a child process) -----------------------------------------

# As many as read_profiles parses in: its workers (each has a page in flight).
PARSE_THREADS = default_workers()


def _parse(content: bytes) -> Any:
    import pyarrow as pa
    import pyarrow.json as pa_json

    options = pa_json.ReadOptions(block_size=len(content) + 64, use_threads=False)
    return pa_json.read_json(pa.BufferReader(content), read_options=options)


def _floor_discard(pages: list[tuple[str, bytes]]) -> None:
    for _, content in pages:
        _parse(content)


def _floor_kept(pages: list[tuple[str, bytes]]) -> list[Any]:
    return [_parse(content) for _, content in pages]


def _floor_threads(pages: list[tuple[str, bytes]]) -> list[Any]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(PARSE_THREADS) as pool:
        return list(pool.map(_parse, (content for _, content in pages)))


def _ours(pages: list[tuple[str, bytes]], lookahead: int = DEFAULT_LOOKAHEAD) -> Any:
    """read_profiles' own steps, fed from memory: the paging walk, flatten, one frame."""
    from functools import partial

    from stoplist_nb._paging import walk
    from stoplist_nb.client import _parse_page
    from stoplist_nb.profiles.normalize import flatten_profiles, frame_from_tables

    replies = dict(pages)

    def post(body: dict[str, Any], sent: Callable[[], None] | None = None) -> bytes:
        if sent is not None:
            sent()  # from memory, a request is answered as soon as it is asked
        return replies.get(body.get("from_id", ""), EMPTY)

    walker = walk(
        post,
        partial(_parse_page, "profiles/list"),
        "profiles/list",
        {"db_id": 1, "limit": 1000},
        from_id=None,
        max_rows=None,
        lookahead=lookahead,
    )
    return frame_from_tables([flatten_profiles(page.data) for page in walker])


def _ours_one_thread(pages: list[tuple[str, bytes]]) -> Any:
    return _ours(pages, lookahead=0)


def _unguarded(route: Any) -> Any:
    """``route`` with the reply reader's two guards switched off, as a baseline for their cost.

    The nesting guard bounds the depth of every page from its bytes; the number
    guard looks for floats of 2**53 or more that may be rounded integers.
    """

    def run(pages: list[tuple[str, bytes]]) -> Any:
        import stoplist_nb._json.reader as reader

        saved = reader.depth_bound, reader.exact_floats
        reader.depth_bound, reader.exact_floats = (lambda content: 0), (lambda array: True)
        try:
            return route(pages)
        finally:
            reader.depth_bound, reader.exact_floats = saved

    return run


def _replay_client(pages: list[tuple[str, bytes]]) -> Any:
    """A Client whose ``profiles/list`` requests are answered from ``pages`` in memory."""
    replies = dict(pages)
    return replay_client(lambda cursor: replies.get(cursor, EMPTY))


def _read_profiles(pages: list[tuple[str, bytes]], lookahead: int = DEFAULT_LOOKAHEAD) -> Any:
    """read_profiles itself, through requests, answered from memory."""
    import stoplist_nb as sn

    with _replay_client(pages) as client:
        return sn.read_profiles(client, 1, limit=1000, progress=False, lookahead=lookahead)


def _read_profiles_one_thread(pages: list[tuple[str, bytes]]) -> Any:
    return _read_profiles(pages, lookahead=0)


def _json_normalize(pages: list[tuple[str, bytes]]) -> Any:
    import pandas as pd

    records: list[dict[str, Any]] = []
    for _, content in pages:
        records.extend(json.loads(content)["data"])
    records = [r if "subscriptions" in r else {**r, "subscriptions": []} for r in records]
    return pd.json_normalize(
        records, record_path="subscriptions", meta=PROFILE_FIELDS, errors="ignore"
    )


def _load(path: str) -> list[tuple[str, bytes]]:
    blob = Path(path).read_bytes()
    index = json.loads(Path(path + ".json").read_text())
    pages, at = [], 0
    for cursor, size in index:
        pages.append((cursor, blob[at : at + size]))
        at += size
    return pages


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _child(what: str, path: str, repeat: int, jn_repeat: int = 0) -> dict[str, Any]:
    import pandas  # noqa: F401  (imports are not part of the peak)
    import pyarrow.json

    import stoplist_nb.profiles.normalize  # noqa: F401

    pages = _load(path)
    gc.collect()
    base = _rss_kb()
    out: dict[str, Any] = {"base_rss_mb": base / 1024}
    if what == "timing":  # the floors and ours alternately, best of each
        runs = {
            "discard": _floor_discard,
            "kept": _floor_kept,
            "threads": _floor_threads,
            "ours": _ours,
            "one_thread": _ours_one_thread,
            "unguarded": _unguarded(_ours),
            "one_thread_unguarded": _unguarded(_ours_one_thread),
            "read_profiles": _read_profiles,
            "read_profiles_one_thread": _read_profiles_one_thread,
        }
        best = dict.fromkeys(runs, float("inf"))
        if jn_repeat:
            best["json_normalize"] = float("inf")
        for i in range(max(repeat, jn_repeat)):
            todo = list(runs.items()) if i < repeat else []
            if i < jn_repeat:  # last in its round, after the routes it is compared with
                todo.append(("json_normalize", _json_normalize))
            for name, fn in todo:
                gc.collect()
                t = time.perf_counter()
                result = fn(pages)
                best[name] = min(best[name], time.perf_counter() - t)
                del result
        out.update(best)
        return out
    import pyarrow as pa

    fn = _ours if what == "ours" else _json_normalize
    best_time = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        frame = fn(pages)
        best_time = min(best_time, time.perf_counter() - t)
        rows = len(frame)
        del frame
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    out.update(
        seconds=best_time,
        rows=rows,
        peak_rss_mb=peak / 1024,
        extra_rss_mb=(peak - base) / 1024,
        arrow_pool_peak_mb=pa.default_memory_pool().max_memory() / 2**20,
    )
    return out


def _run_child(what: str, path: str, repeat: int, jn_repeat: int = 0) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", what, "--pages-file", path]
    cmd += ["--repeat", str(repeat), "--jn-repeat", str(jn_repeat)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _machine() -> str:
    import numpy
    import pandas
    import pyarrow

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{cpu}, {os.cpu_count()} cores, {ram:.0f} GiB RAM; Python {platform.python_version()}, "
        f"pandas {pandas.__version__}, pyarrow {pyarrow.__version__}, numpy {numpy.__version__}; "
        f"{dt.date.today().isoformat()}"
    )


def _report(timing: dict[str, Any], ours: dict[str, Any]) -> None:
    t = timing
    print(
        f"  floor: {t['discard']:.3f} s one thread, tables dropped / {t['kept']:.3f} s kept / "
        f"{t['threads']:.3f} s {PARSE_THREADS} threads, kept\n"
        f"  ours: {t['ours']:.3f} s = {t['ours'] / t['threads']:.2f}x the "
        f"{PARSE_THREADS}-thread floor; {t['one_thread']:.3f} s with lookahead=0 = "
        f"{t['one_thread'] / t['discard']:.2f}x / {t['one_thread'] / t['kept']:.2f}x the "
        f"one-thread floors\n"
        f"  guards (nesting, numbers): ours / ours without them: "
        f"{t['ours'] / t['unguarded']:.3f}x ({t['unguarded']:.3f} s), "
        f"{t['one_thread'] / t['one_thread_unguarded']:.3f}x with lookahead=0 "
        f"({t['one_thread_unguarded']:.3f} s)\n"
        f"  read_profiles through requests, answered from memory: {t['read_profiles']:.3f} s "
        f"/ {t['read_profiles_one_thread']:.3f} s with lookahead=0\n"
        f"  ours: {ours['rows']:,} rows, peak RSS +{ours['extra_rss_mb']:.0f} MiB, "
        f"Arrow pool peak {ours['arrow_pool_peak_mb']:.0f} MiB",
        flush=True,
    )


def _table(rows: list[tuple[int, int, dict[str, Any], dict[str, Any], Any]]) -> None:
    print(
        "\n| profiles | JSON MiB | floor s: 1 thread dropped / kept / 2 threads "
        "| ours s: lookahead 2 / 0 | ours / floor: 2 threads / 1 thread (dropped, kept) "
        "| json_normalize s | json_normalize / ours: lookahead 2 / 0 "
        "| ours peak RSS +MiB (Arrow pool) | json_normalize peak RSS +MiB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, total, t, ours, jn in rows:
        jn_s = f"{jn['seconds']:.2f}" if jn else "skipped"
        jn_x = (
            f"{jn['seconds'] / t['ours']:.1f}x / {jn['seconds'] / t['one_thread']:.1f}x"
            if jn
            else "-"
        )
        jn_m = f"{jn['extra_rss_mb']:.0f}" if jn else "-"
        print(
            f"| {size:,} | {total / 2**20:.0f} "
            f"| {t['discard']:.3f} / {t['kept']:.3f} / {t['threads']:.3f} "
            f"| {t['ours']:.3f} / {t['one_thread']:.3f} "
            f"| {t['ours'] / t['threads']:.2f}x / {t['one_thread'] / t['discard']:.2f}x, "
            f"{t['one_thread'] / t['kept']:.2f}x | {jn_s} | {jn_x} "
            f"| {ours['extra_rss_mb']:.0f} ({ours['arrow_pool_peak_mb']:.0f}) | {jn_m} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--page", type=int, default=1000, help="profiles per page")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions below 200k profiles")
    parser.add_argument("--repeat-large", type=int, default=3, help="repetitions from 200k up")
    parser.add_argument("--skip-json-normalize-above", type=int, default=None, metavar="N")
    parser.add_argument("--dates", action="store_true", help="add a date-like profile field")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--pages-file", help=argparse.SUPPRESS)
    parser.add_argument("--jn-repeat", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.pages_file, args.repeat, args.jn_repeat)))
        return

    print(_machine() + ("; with a date-like profile field" if args.dates else ""))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            t = time.perf_counter()
            pages = make_pages(size, args.page, args.seed, args.dates)
            path = str(Path(tmp) / f"pages-{size}.bin")
            Path(path).write_bytes(b"".join(content for _, content in pages))
            index = [(cursor, len(content)) for cursor, content in pages]
            Path(path + ".json").write_text(json.dumps(index))
            total = sum(size for _, size in index)
            del pages
            print(
                f"\n{size:,} profiles: {total / 2**20:.1f} MiB of JSON in pages of "
                f"{args.page} (generated in {time.perf_counter() - t:.1f} s)",
                flush=True,
            )
            repeat = args.repeat if size < 200_000 else args.repeat_large
            skip = args.skip_json_normalize_above
            jn_repeat = 0 if skip is not None and size > skip else 3 if size < 200_000 else 1
            timing = _run_child("timing", path, repeat, jn_repeat)
            ours = _run_child("ours", path, 1)
            _report(timing, ours)
            jn = None
            if jn_repeat:
                jn = _run_child("json_normalize", path, 1)  # for its rows and memory
                jn["seconds"] = timing["json_normalize"]
                print(
                    f"  json_normalize {jn['seconds']:.2f} s "
                    f"= {jn['seconds'] / timing['ours']:.1f}x ours "
                    f"({jn['seconds'] / timing['one_thread']:.1f}x with lookahead=0), "
                    f"{jn['rows']:,} rows, peak RSS +{jn['extra_rss_mb']:.0f} MiB",
                    flush=True,
                )
            rows.append((size, total, timing, ours, jn))
    _table(rows)


if __name__ == "__main__":
    main()
