"""Benchmark: memory and time of a suppression list to Parquet, against reading it into a frame.

For each ``--rows`` size a ZIP is built once (cached under ``--cache-dir``) as
the demo service's ``semicolon`` export writes it: one member
``list.md5.csv``, a header ``md5;type``, then ``<32 hex>;email|phone|domain``
(6:3:1). Each route then runs once in a fresh child process, which reports:

* peak RSS (``ru_maxrss``) above its RSS once everything is imported;
* the peak of Arrow's memory pool;
* the time.

Routes: ``frame`` is ``read_hashed_csv`` of the ZIP (the whole list in a
DataFrame, what ``read_suppression_list`` does after the download); ``parquet``
is the streaming writer behind ``write_suppression_parquet``
(``HashedParquet.add`` of the ZIP, then ``finish``), which also reports the
file's size and row groups. Both unpack the ZIP; the download is left out of both.

    python benchmarks/suppression_parquet.py --rows 1000000 10000000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

MEMBER = "list.md5.csv"
KINDS = ("email",) * 6 + ("phone",) * 3 + ("domain",)


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def build_zip(path: Path, rows: int) -> None:
    """A ZIP of ``rows`` hashed contacts, written in blocks: never held whole."""
    part = path.with_name(path.name + ".part")
    with (
        zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open(MEMBER, "w", force_zip64=True) as out,
    ):
        out.write(b"md5;type\n")
        for start in range(0, rows, 100_000):
            out.write(
                "".join(
                    f"{hashlib.md5(f'user{i}@example.org'.encode()).hexdigest()};"
                    f"{KINDS[i % len(KINDS)]}\n"
                    for i in range(start, min(start + 100_000, rows))
                ).encode()
            )
    part.replace(path)


def _child(route: str, source: str, out: str) -> None:
    import pyarrow as pa

    from stoplist_nb.suppression.archive import read_hashed_csv
    from stoplist_nb.suppression.parquet import HashedParquet

    base = _rss_kb()
    started = time.perf_counter()
    extra: dict[str, float] = {}
    if route == "parquet":
        with HashedParquet(out) as sink:
            sink.add(source)
            sink.finish({})
        rows = sink.rows
        import pyarrow.parquet as pq

        extra = {
            "disk_mb": Path(out).stat().st_size / 2**20,
            "row_groups": pq.ParquetFile(out).metadata.num_row_groups,
        }
    else:
        rows = len(read_hashed_csv(source))
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {
        "rows": rows,
        "rss_mb": (peak - base) / 1024,
        "arrow_mb": pa.default_memory_pool().max_memory() / 2**20,
        "seconds": seconds,
        **extra,
    }
    print(json.dumps(result))


def _run(route: str, source: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="stoplist_nb-bench-") as tmp:
        done = subprocess.run(
            [sys.executable, __file__, "--child", route, str(source), str(Path(tmp) / "l.parquet")],
            check=True,
            capture_output=True,
            text=True,
        )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/stoplist_nb_bench"))
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")  # fmt: skip
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    print("| rows | route | peak RSS MiB | Arrow peak MiB | s | rows/s |")
    print("|---:|---|---:|---:|---:|---:|")
    ratios = []
    for rows in args.rows:
        source = args.cache_dir / f"suppression_{rows}.md5.zip"
        if not source.exists():
            build_zip(source, rows)
        got = {route: _run(route, source) for route in ("frame", "parquet")}
        for route, r in got.items():
            assert r["rows"] == rows, (route, r)
            print(f"| {rows:,} | {route} | {r['rss_mb']:,.0f} | {r['arrow_mb']:,.0f} "
                  f"| {r['seconds']:.2f} | {rows / r['seconds']:,.0f} |")  # fmt: skip
        ratio = got["frame"]["rss_mb"] / max(got["parquet"]["rss_mb"], 1e-9)
        ratios.append((rows, ratio, got))
    for rows, ratio, got in ratios:
        p = got["parquet"]
        print(f"{rows:,} rows: frame over parquet peak RSS {ratio:.1f}x; the Parquet file "
              f"{p['disk_mb']:,.0f} MiB in {p['row_groups']:,.0f} row groups")  # fmt: skip


if __name__ == "__main__":
    main()
