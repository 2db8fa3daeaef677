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
