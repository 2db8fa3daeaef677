"""write_suppression_parquet and ``export --out FILE.parquet``, against the demo service.

The file must read back as the frame read_suppression_list gives for the same
export, appear whole or not at all, and be written in memory that does not
grow with the list (measured in a fresh interpreter, where Arrow's pool peak
is this write's alone).
"""

from __future__ import annotations

import doctest
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from archives import make_zip, serve_download

import stoplist_nb as sn
from stoplist_nb.cli import commands, main
from stoplist_nb.demo import DemoService, serve
from stoplist_nb.suppression import parquet

OUT = "stop.parquet"


def written(folder: pathlib.Path) -> list[str]:
    """Every name in ``folder``, hidden ones (a temporary file) included."""
    return sorted(p.name for p in folder.iterdir())


def read_list(client: sn.Client, demo: DemoService, **kwargs: Any) -> pd.DataFrame:
    return sn.read_suppression_list(
        client, demo.suppress_id, poll_interval=0.01, progress=False, **kwargs
    )


def write_list(
    client: sn.Client, demo: DemoService, path: pathlib.Path, **kwargs: Any
) -> sn.SuppressionSummary:
    return sn.write_suppression_parquet(
        client, demo.suppress_id, path, poll_interval=0.01, progress=False, **kwargs
    )


def without_task(attrs: dict[Any, Any]) -> dict[Any, Any]:
    return {k: v for k, v in attrs.items() if k != "task_id"}


def md5s(count: int) -> list[str]:
    return [hashlib.md5(str(i).encode()).hexdigest() for i in range(count)]


# --- the file reads back as read_suppression_list's frame ---------------------------


@pytest.mark.parametrize(
    ("layout", "archive"),
    [
        ("plain", "normal"),
        ("semicolon", "normal"),
        ("two_columns", "junk"),
        ("upper", "normal"),
        ("crlf", "two_csv"),
        ("semicolon", "two_csv"),
    ],
)
def test_the_file_reads_back_as_read_suppression_list(
    client: sn.Client,
    demo: DemoService,
    tmp_path: pathlib.Path,
    layout: str,
    archive: str,
) -> None:
    demo.plan_next_export(steps=1, csv_layout=layout, archive=archive)
    frame = read_list(client, demo, type="all")
    demo.plan_next_export(steps=1, csv_layout=layout, archive=archive)
    done = write_list(client, demo, tmp_path / OUT, type="all")
    back = pd.read_parquet(tmp_path / OUT)
    pd.testing.assert_frame_equal(back, frame)
    assert back["md5"].dtype == pd.StringDtype("pyarrow")
    assert without_task(back.attrs) == without_task(frame.attrs)
    assert back.attrs["task_id"] == done.task_id != frame.attrs["task_id"]
    assert done.path == tmp_path / OUT
    assert done.rows == len(frame) == back.attrs["total"]
    assert done.kinds == frame.attrs.get("kinds")
    assert written(tmp_path) == [OUT]
    exports = [r.params for r in demo.requests if r.method == "suppresses/export"]
    assert exports[-1] == {"id": demo.suppress_id, "type": "all"}


def test_kinds_are_counted_and_recorded(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    demo.plan_next_export(csv_layout="semicolon")
    done = write_list(client, demo, tmp_path / OUT)
    sizes = {kind: len(demo.suppressed[f"{kind}s"]) for kind in ("email", "phone", "domain")}
    assert done.kinds == sizes
    assert pd.read_parquet(tmp_path / OUT).attrs["kinds"] == sizes
    # pyarrow's own route to pandas reads attrs from pyarrow 22 on (pandas' own key).
    if int(pa.__version__.split(".")[0]) >= 22:
        assert pq.read_table(tmp_path / OUT).to_pandas().attrs["kinds"] == sizes


def test_a_started_task_is_picked_up(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    task_id = sn.start_suppression_export(client, demo.suppress_id, type="phones")
    done = sn.write_suppression_parquet(
        client, None, str(tmp_path / OUT), task_id=task_id, poll_interval=0.01, progress=False
    )
    back = pd.read_parquet(tmp_path / OUT)
    assert done.task_id == task_id
    assert done.rows == len(back) == len(demo.suppressed["phones"])
    assert back.attrs["type"] is None  # an export picked up holds what it was started with
    assert back.attrs["list_id"] is None
    assert [r.method for r in demo.requests].count("suppresses/export") == 1


def test_warnings_are_those_of_the_reader_and_point_at_the_caller(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    demo.plan_next_export(csv_layout="bad_rows")
    with warnings.catch_warnings(record=True) as read_warned:
        warnings.simplefilter("always")
        frame = read_list(client, demo)
    demo.plan_next_export(csv_layout="bad_rows")
    with warnings.catch_warnings(record=True) as write_warned:
        warnings.simplefilter("always")
        write_list(client, demo, tmp_path / OUT)
    said = [str(w.message) for w in write_warned]
    assert said == [str(w.message) for w in read_warned]
    assert said[0].startswith("2 of ")  # two lines of the file are no MD5
    assert "the service reported" in said[1]
    assert [w.filename for w in write_warned] == [__file__, __file__]
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / OUT), frame)


def test_an_empty_list_is_an_empty_file(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    serve_download(demo, make_zip({"list.csv": b""}))
    with pytest.warns(UserWarning, match="the file holds 0 rows"):
        done = write_list(client, demo, tmp_path / OUT)
    back = pd.read_parquet(tmp_path / OUT)
    assert done.rows == len(back) == 0
    assert list(back.columns) == ["md5"]
    assert back["md5"].dtype == pd.StringDtype("pyarrow")


# --- whole or not at all ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("archive", "error"),
    [("bomb", sn.ArchiveTooLarge), ("corrupt", sn.BadArchive)],
)
def test_a_refused_archive_leaves_no_file(
    client: sn.Client,
    demo: DemoService,
    tmp_path: pathlib.Path,
    archive: str,
    error: type[Exception],
) -> None:
    demo.plan_next_export(archive=archive)
    with pytest.raises(error):
        write_list(client, demo, tmp_path / OUT, max_size=50 * 2**20)
    assert written(tmp_path) == []


def test_an_error_after_rows_were_written_leaves_no_file(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Several blocks of good rows, then one that is not UTF-8: caught block by block.
    good = "".join(f"{h}\n" for h in md5s(100_000)).encode()
    serve_download(demo, make_zip({"list.csv": good + b"caf\xe9\n"}))
    batches = []
    write_batch = pq.ParquetWriter.write_batch

    def counted(self: pq.ParquetWriter, batch: Any, *args: Any, **kwargs: Any) -> None:
        batches.append(batch.num_rows)
        write_batch(self, batch, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_batch", counted)
    with pytest.raises(sn.BadArchive, match="UTF-8"):
        write_list(client, demo, tmp_path / OUT)
    assert len(batches) >= 2  # rows were written before the error
    assert written(tmp_path) == []


def test_an_interruption_leaves_no_file_and_an_old_one_as_it_was(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / OUT).write_bytes(b"the file of yesterday")
    good = "".join(f"{h}\n" for h in md5s(100_000)).encode()
    serve_download(demo, make_zip({"list.csv": good}))
    write_batch = pq.ParquetWriter.write_batch
    calls = []

    def interrupted(self: pq.ParquetWriter, batch: Any, *args: Any, **kwargs: Any) -> None:
        # Ctrl-C between two blocks: no server can send that.
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        write_batch(self, batch, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_batch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_list(client, demo, tmp_path / OUT, overwrite=True)
    assert written(tmp_path) == [OUT]
    assert (tmp_path / OUT).read_bytes() == b"the file of yesterday"


def test_a_download_that_fails_leaves_no_file(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    demo.plan_next_export(steps=0)
    demo.add_fault("download", "status", status=404, times=None)  # one 404 is waited out
    with pytest.raises(sn.TaskTimeout):
        write_list(client, demo, tmp_path / OUT, task_timeout=0.2)
    assert written(tmp_path) == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_size": 0}, "max_size"),
        ({"max_ratio": "200"}, "max_ratio"),
        ({"type": "urls"}, "type must be one of"),
        ({"list_id": None}, "give list_id"),
        ({"path": "no-such-dir/stop.parquet"}, "no directory"),
        ({"path": "."}, "names a directory"),
        ({"path": 12}, "file name"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_sent(
    client: sn.Client,
    demo: DemoService,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    kwargs: dict[str, Any],
    match: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    options: dict[str, Any] = {"path": OUT, "list_id": demo.suppress_id, **kwargs}
    with pytest.raises(sn.InvalidInput, match=match):
        sn.write_suppression_parquet(client, progress=False, **options)
    assert demo.requests == []
    assert written(tmp_path) == []


def test_files_of_one_export_with_other_columns_are_refused(tmp_path: pathlib.Path) -> None:
    plain = make_zip({"a.csv": "".join(f"{h}\n" for h in md5s(3)).encode()})
    typed = make_zip({"a.csv": "".join(f"{h};email\n" for h in md5s(3)).encode()})

    def write_both() -> None:
        with parquet.HashedParquet(tmp_path / OUT) as sink:
            sink.add(plain, label="the first file")
            sink.add(typed, label="the second file")

    with pytest.raises(sn.BadArchive, match="the second file has other columns"):
        write_both()
    assert written(tmp_path) == []


def test_doctests() -> None:
    result = doctest.testmod(parquet)
    assert result.attempted > 0
    assert result.failed == 0


# --- the command line -----------------------------------------------------------------


def test_cli_export_streams_to_parquet(
    env: DemoService,
    client: sn.Client,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env.plan_next_export(csv_layout="two_columns")
    frame = read_list(client, env, type="emails")
    streamed: list[int] = []
    add = parquet.HashedParquet.add

    def spied(self: parquet.HashedParquet, *args: Any, **kwargs: Any) -> None:
        add(self, *args, **kwargs)
        streamed.append(self.rows)

    monkeypatch.setattr(parquet.HashedParquet, "add", spied)
    env.plan_next_export(csv_layout="two_columns")
    out = tmp_path / OUT
    code = main(
        ["export", "--list-id", str(env.suppress_id), "--type", "emails", "--out", str(out),
         "--poll-interval", "0.01"]
    )  # fmt: skip
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    assert streamed == [len(frame)]  # through the writer, not a frame
    back = pd.read_parquet(out)
    pd.testing.assert_frame_equal(back, frame)
    assert without_task(back.attrs) == without_task(frame.attrs)
    assert back.attrs["type"] == "emails"
    assert f"wrote {len(frame)} hashes of suppression list {env.suppress_id} to {out}" in stdout
    assert f"rows per kind: email {len(frame)}" in stdout
    assert written(tmp_path) == [OUT]


def test_cli_export_of_a_started_task_passes_its_options_to_the_writer(
    env: DemoService,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    real = sn.write_suppression_parquet

    def spy(*args: Any, **kwargs: Any) -> sn.SuppressionSummary:
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(commands, "write_suppression_parquet", spy)
    with env.client() as client:
        task_id = sn.start_suppression_export(client, env.suppress_id, type="emails")
    out = tmp_path / OUT
    code = main(
        ["export", "--task-id", task_id, "--out", str(out), "--poll-interval", "0.01",
         "--task-timeout", "30"]
    )  # fmt: skip
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    ((args, kwargs),) = calls
    assert args[1:] == (None, out)
    assert kwargs["task_id"] == task_id
    assert (kwargs["task_timeout"], kwargs["poll_interval"], kwargs["type"]) == (30, 0.01, None)
    back = pd.read_parquet(out)
    assert len(back) == len(env.suppressed["emails"])
    assert back.attrs["task_id"] == task_id
    assert f"of task {task_id} to" in stdout
    assert [r.method for r in env.requests].count("suppresses/export") == 1


def test_cli_export_failure_midway_leaves_no_parquet_file(
    env: DemoService, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = "".join(f"{h}\n" for h in md5s(100_000)).encode()
    serve_download(env, make_zip({"list.csv": good + b"caf\xe9\n"}))
    out = str(tmp_path / OUT)
    code = main(["export", "--list-id", "7", "--out", out, "--poll-interval", "0.01"])
    _, stderr = capsys.readouterr()
    assert code == 1
    assert "stoplist-nb: error: list.csv: cannot be read as CSV (it is not UTF-8 text)" in stderr
    assert written(tmp_path) == []


# --- memory ------------------------------------------------------------------------------

ROWS = 1_000_000

CHILD = """
import json, sys
import pyarrow as pa
import stoplist_nb as sn

route, path, dest = sys.argv[1:]
if route == "write":
    with sn.connect(demo=False) as client:
        done = sn.write_suppression_parquet(
            client, 7, path, dest=dest, progress=False, poll_interval=0.01
        )
    rows = done.rows
else:  # the archive the write downloaded, read into a frame
    rows = len(sn.read_hashed_csv(dest))
pool = pa.default_memory_pool()
print(json.dumps({"rows": rows, "peak": pool.max_memory(), "held": pa.total_allocated_bytes()}))
"""


@pytest.fixture(scope="module")
def large() -> Iterator[DemoService]:
    """A service whose list holds a million contacts of the three kinds."""
    emails = [f"user{i}@d{i % 97}.example" for i in range(ROWS * 6 // 10)]
    phones = [f"+7{i:010d}" for i in range(ROWS * 3 // 10)]
    domains = [f"d{i}.example.org" for i in range(ROWS - len(emails) - len(phones))]
    contacts = {"emails": emails, "phones": phones, "domains": domains}
    with serve(profiles=5, seed=2, suppressed=contacts) as svc:
        yield svc


def measured(
    svc: DemoService, route: str, path: pathlib.Path, dest: pathlib.Path
) -> dict[str, int]:
    """Arrow's pool peak and what it still holds, in a fresh interpreter."""
    env = dict(os.environ, STOPLIST_NB_URL=svc.base_url, STOPLIST_NB_TOKEN=svc.token)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, route, str(path), str(dest)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_memory_stays_far_below_the_whole_list(large: DemoService, tmp_path: pathlib.Path) -> None:
    out, kept = tmp_path / OUT, tmp_path / "list.md5.zip"
    large.plan_next_export(steps=0, csv_layout="semicolon")
    streamed = measured(large, "write", out, kept)
    whole = pq.read_table(out).nbytes  # the list in Arrow, as it reads back
    framed = measured(large, "frame", out, kept)
    assert streamed["rows"] == framed["rows"] == ROWS
    # The frame holds the whole list, so the measure can tell the two apart...
    assert framed["peak"] > whole
    # ...and the writer holds a few blocks of it, whatever its size.
    assert streamed["peak"] < whole / 3, (streamed, whole)
    assert streamed["held"] < 2**20  # nothing kept once the file is written
    assert pq.ParquetFile(out).metadata.num_row_groups > 10  # a row group per block


@pytest.mark.slow
def test_the_benchmark_runs_both_routes(tmp_path: pathlib.Path) -> None:
    script = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "suppression_parquet.py"
    done = subprocess.run(
        [sys.executable, str(script), "--rows", "20000", "--cache-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| 20,000 | frame | " in done.stdout
    assert "| 20,000 | parquet | " in done.stdout
    assert "20,000 rows: frame over parquet peak RSS " in done.stdout
    assert written(tmp_path) == ["suppression_20000.md5.zip"]
