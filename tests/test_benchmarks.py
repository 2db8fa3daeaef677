"""The benchmark scripts still run, on tiny inputs, and measure the right thing.

Their figures are not checked here (the machines are shared and noisy); only
that each route runs to the end and that ours builds the frame it should.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def run(script: str, *args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_normalize_benchmark_runs_every_route() -> None:
    out = run("normalize.py", "--sizes", "1500", "--page", "400", "--repeat", "1")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from profile_pages import make_pages
    finally:
        sys.path.remove(str(BENCHMARKS))
    from stoplist_nb.profiles.normalize import normalize_profiles

    pages = make_pages(1500, 400)
    assert [cursor for cursor, _ in pages][:2] == ["", f"{400:024x}"]
    records = [r for _, content in pages for r in json.loads(content)["data"]]
    assert len(records) == 1500
    expected = len(normalize_profiles(records))
    assert f"ours: {expected:,} rows" in out
    for route in ("tables dropped", "threads, kept", "with lookahead=0", "through requests"):
        assert route in out
    assert re.search(r"json_normalize [0-9.]+ s = [0-9.]+x ours", out)
    assert re.search(r"^\| 1,500 \| ", out, re.MULTILINE)


def test_hashes_benchmark_runs(tmp_path: Path) -> None:
    out = run(
        "hashes.py",
        "--rows", "20000", "--contacts", "2000", "--repeat", "1",
        "--cache-dir", str(tmp_path),
    )  # fmt: skip
    assert "list: 20,000 rows" in out
    for part in ("1. read, with decompression", "2. flag 2,000 contacts", "3. hash_emails"):
        assert part in out


def test_dataset_memory_benchmark_runs_both_routes() -> None:
    out = run("dataset_memory.py", "--sizes", "2000", "5000", "--frame-max", "2000")
    rows = re.findall(r"^\s+(dataset|frame)\s+([0-9,]+)\s", out, re.MULTILINE)
    assert rows == [("dataset", "2,000"), ("frame", "2,000"), ("dataset", "5,000")]
    assert "dataset peak RSS, 5,000 over 2,000 profiles:" in out
    assert "frame over dataset peak RSS at 2,000:" in out


def test_paced_benchmark_paces_and_times_both_readers() -> None:
    out = run(
        "paced.py",
        "--profiles", "1500", "--page", "400", "--repeat", "1",
        "--latencies", "0", "0.02", "--bandwidth", "5",
    )  # fmt: skip
    assert re.match(r".+, \d+ cores, .+pyarrow [0-9.]+, .+; \d{4}-\d\d-\d\d\n", out)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from profile_pages import make_pages
    finally:
        sys.path.remove(str(BENCHMARKS))
    from stoplist_nb.profiles.normalize import normalize_profiles

    pages = make_pages(1500, 400)
    total = sum(len(content) for _, content in pages)
    assert f"1,500 profiles: {total:,} bytes of JSON in 4 pages of 400" in out
    records = [r for _, content in pages for r in json.loads(content)["data"]]
    assert f"rows per read: {len(normalize_profiles(records)):,}\n" in out

    rows = re.findall(
        r"^\| ([0-9.]+) \| (\d) \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+)x \|$", out, re.MULTILINE
    )
    assert [(ms, lookahead) for ms, lookahead, *_ in rows] == [
        ("0", "2"), ("0", "0"), ("20", "2"), ("20", "0"),
    ]  # fmt: skip
    fetch = re.search(
        r"^fetch only \(requests, no parse\), s: 0 ms ([0-9.]+), 20 ms ([0-9.]+)$", out, re.M
    )
    assert fetch is not None
    # No reply can beat the paced link: 5 MB/s for the bytes, 20 ms before each of 5 replies.
    least = {"0": total / 5e6, "20": total / 5e6 + 5 * 0.02}
    assert float(fetch[1]) >= least["0"]
    assert float(fetch[2]) >= least["20"]
    for ms, _, guarded, unguarded, ratio in rows:
        assert float(guarded) >= least[ms]
        assert float(unguarded) >= least[ms]
        assert abs(float(ratio) - float(guarded) / float(unguarded)) < 0.01


def test_paced_benchmark_switches_the_guards_off_and_back() -> None:
    import stoplist_nb._json.reader as reader
    from stoplist_nb._json.nesting import depth_bound
    from stoplist_nb._json.records import exact_floats

    sys.path.insert(0, str(BENCHMARKS))
    try:
        from paced import unguarded
    finally:
        sys.path.remove(str(BENCHMARKS))
    deep = b"[" * 300 + b"]" * 300
    assert reader.depth_bound(deep) > 128
    with unguarded():
        assert reader.depth_bound(deep) == 0
        assert reader.exact_floats(None) is True
    assert (reader.depth_bound, reader.exact_floats) == (depth_bound, exact_floats)


def test_link_speed_benchmark_serves_from_a_child_and_times_every_route() -> None:
    out = run(
        "link_speed.py",
        "--profiles", "1500", "--repeat", "1", "--latencies", "0.02", "--bandwidth", "5",
        "--memory-profiles", "2000", "--memory-repeat", "1", "--workers", "2",
    )  # fmt: skip
    rows = re.findall(
        r"^\| 20 \| (\w+) \| ([0-9.]+) \| ([0-9.]+)x \| ([0-9-]+) \| ([0-9-]+) \| \d+ \|$",
        out,
        re.MULTILINE,
    )
    assert [route for route, *_ in rows] == ["fetch", "read_profiles", "parquet", "frames"]
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from profile_pages import make_pages
    finally:
        sys.path.remove(str(BENCHMARKS))
    total = sum(len(content) for _, content in make_pages(1500, 1000))
    for route, seconds, _, rows_read, profiles in rows:
        # No read can beat the paced link: 5 MB/s for the bytes, 20 ms before each reply.
        assert float(seconds) >= total / 5e6 + 3 * 0.02
        if route != "fetch":
            assert profiles == "1500"
            assert int(rows_read) > 1500
    memory = re.search(r"read_profiles [0-9.]+ s = ([0-9.]+)x, ([0-9,]+) rows; calling", out)
    assert memory is not None
    rows_from_memory = int(memory.group(2).replace(",", ""))
    bounds = re.search(
        r"CPU s: floor ([0-9.]+), read_profiles ([0-9.]+); on one thread: parse ([0-9.]+), "
        r"read ([0-9.]+), so (-?[0-9.]+) beside the parse; both cores busy all the time: the read "
        r"no less than ([0-9.]+) s = ([0-9.]+)x the floor\nonly one thread at a time \(GIL\): "
        r"the bare fetch ([0-9.]+) s, ([0-9,]+) cats cells as lists ([0-9.]+) s",
        out,
    )
    assert bounds is not None, out
    floor, _, parse_1, read_1, beside, least, _, _, cells, _ = bounds.groups()
    assert float(beside) == pytest.approx(float(read_1) - float(parse_1), abs=2e-3)
    assert float(least) == pytest.approx((float(floor) + float(beside)) / 2, abs=2e-3)
    # One cats cell a subscription, each on a row of its own; a profile without one has a row.
    assert 0 < int(cells.replace(",", "")) < rows_from_memory
    assert min(float(parse_1), float(read_1)) > 0
