"""Benchmark: peak memory of a pull to a Parquet dataset, against a pull into one frame.

A replay service in memory (a requests transport adapter, no network) answers
``profiles/list`` from 20 synthetic pages of 1000 profiles each
(``profile_pages.py``, ~0.7 KiB of JSON a profile), handed out in a cycle with
the cursor rewritten, so that any number of profiles can be served without
holding them. Each route runs once in a fresh child process, which reports:

* peak RSS (``ru_maxrss``) above its RSS once the pages are loaded;
* the peak of Arrow's memory pool;
* the time, profiles per second, and (for the dataset) bytes on disk.

Routes: ``ProfilesRequest(...).to_dataset`` at each size; ``read_profiles``
(the whole frame in memory) at the sizes up to ``--frame-max``, as the
baseline measured in the same run.

    python benchmarks/dataset_memory.py --sizes 100000 1000000 5000000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from profile_pages import EMPTY, make_pages, replay_client

PAGE = 1000
TEMPLATES = 20


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _replay_client(templates: list[bytes], profiles: int) -> Any:
    """A Client whose ``profiles/list`` is answered from ``templates``, in a cycle."""
    pages = profiles // PAGE
    key = b'"next_from_id":"'

    def reply(cursor: str) -> bytes:
        k = int(cursor, 16) if cursor else 0
        if k >= pages:
            return EMPTY
        content = templates[k % len(templates)]
        at = content.rfind(key) + len(key)
        return content[:at] + f"{k + 1:024x}".encode() + content[at + 24 :]

    return replay_client(reply)


def _child(route: str, profiles: int, templates_path: str, out: str) -> None:
    import pyarrow as pa

    import stoplist_nb as sn

    templates = json.loads(Path(templates_path).read_text())
    pages = [t.encode() for t in templates]
    base = _rss_kb()
    started = time.perf_counter()
    with _replay_client(pages, profiles) as client:
        if route == "dataset":
            sn.ProfilesRequest(client, 1, limit=PAGE, progress=False).to_dataset(out)
        else:
            frame = sn.read_profiles(client, 1, limit=PAGE, progress=False)
            assert frame.attrs["profiles"] == profiles
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    disk = sum(p.stat().st_size for p in Path(out).glob("*.parquet")) if route == "dataset" else 0
    print(
        json.dumps(
            {
                "rss_mb": (peak - base) / 1024,
                "arrow_mb": pa.default_memory_pool().max_memory() / 2**20,
                "seconds": seconds,
                "disk_mb": disk / 2**20,
            }
        )
    )


def _run(route: str, profiles: int, templates_path: str) -> dict[str, float]:
    out = tempfile.mkdtemp(prefix="stoplist_nb-bench-")
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", route, str(profiles), templates_path, out],
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--frame-max", type=int, default=1_000_000)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        route, profiles, templates_path, out = args.child
        _child(route, int(profiles), templates_path, out)
        return
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        templates_path = str(Path(tmp) / "pages.json")
        pages = make_pages(TEMPLATES * PAGE, PAGE)
        Path(templates_path).write_text(json.dumps([c.decode() for _, c in pages]))
        print(f"{'route':>9} {'profiles':>10} {'peak RSS MB':>12} {'Arrow MB':>9} "
              f"{'s':>7} {'profiles/s':>11} {'disk MB':>8}")  # fmt: skip
        rows: dict[tuple[str, int], dict[str, float]] = {}
        for size in args.sizes:
            routes = ["dataset"] + (["frame"] if size <= args.frame_max else [])
            for route in routes:
                r = rows[route, size] = _run(route, size, templates_path)
                print(f"{route:>9} {size:>10,} {r['rss_mb']:>12.0f} {r['arrow_mb']:>9.0f} "
                      f"{r['seconds']:>7.1f} {size / r['seconds']:>11,.0f} "
                      f"{r['disk_mb']:>8.0f}")  # fmt: skip
        small, large = min(args.sizes), max(args.sizes)
        grow = rows["dataset", large]["rss_mb"] / rows["dataset", small]["rss_mb"]
        print(f"dataset peak RSS, {large:,} over {small:,} profiles: {grow:.2f}x")
        framed = [s for s in args.sizes if ("frame", s) in rows]
        for size in framed:
            ratio = rows["frame", size]["rss_mb"] / rows["dataset", size]["rss_mb"]
            print(f"frame over dataset peak RSS at {size:,}: {ratio:.1f}x")


if __name__ == "__main__":
    main()
