"""Every single-file writer follows one rule: a file put in place whole.

The writers are ``ProfilesRequest.to_parquet`` / ``to_csv`` (one file),
``write_suppression_parquet``, ``download_export`` / ``Client.download`` and the
command line's ``write_frame``. Each is run for real, most in a child process
against the demo service: killed with SIGKILL mid-write (a later write clears
what it left), interrupted with SIGINT (it leaves nothing), held to a file size
limit (a full disk), in a read-only directory, under two umasks. A file already
there is never replaced unasked, before anything is sent and in the race; and
what the service names (a file, a task id) reaches no file unscrubbed.
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pandas as pd
import pyarrow.parquet as pq
import pytest
from archives import make_zip, serve_download
from children import popen
from demo_fixtures import served_and_cleared

import stoplist_nb as sn
import stoplist_nb._atomic as output_module
from stoplist_nb._atomic import Output
from stoplist_nb.cli.output import CliError, write_frame
from stoplist_nb.demo import DemoService
from stoplist_nb.suppression.download import download_export
from stoplist_nb.suppression.parquet import HashedParquet

#: The writers a child process runs (see CHILD), each with the name of its file.
WRITERS = {
    "parquet": "p.parquet",
    "csv": "p.csv",
    "suppression": "stop.parquet",
    "zip": "stop.zip",
    "frame": "frame.parquet",
    "frame-csv": "frame.csv",
}

CHILD = r"""
import json, os, pathlib, resource, signal, stat, sys

job = json.loads(sys.argv[1])

import pandas as pd
import stoplist_nb as sn
from stoplist_nb.cli.output import write_frame
from stoplist_nb.suppression.download import download_export

writer, path, overwrite = job["writer"], job["path"], job.get("overwrite", False)


def write(client):
    if writer in ("parquet", "csv"):
        req = sn.ProfilesRequest(client, 1, limit=10, lookahead=0, progress=False)
        to = req.to_csv if writer == "csv" else req.to_parquet
        return to(path, overwrite=overwrite)
    if writer == "suppression":
        return sn.write_suppression_parquet(
            client, 7, path, poll_interval=0.01, progress=False, overwrite=overwrite
        )
    if writer == "zip":
        task_id = sn.start_suppression_export(client, 7)
        status = sn.wait_for_task(client, task_id, poll_interval=0.01, progress=False)
        return download_export(
            client, status.hashed_files[0], path, progress=False, overwrite=overwrite
        )
    if writer.startswith("frame"):
        frame = pd.DataFrame({"n": range(20_000), "word": ["stop"] * 20_000})
        return write_frame(frame, pathlib.Path(path), overwrite=overwrite)
    if writer == "read":  # its downloads go to a scratch directory in TMPDIR
        return sn.read_suppression_list(client, 7, poll_interval=0.01, progress=False)
    raise SystemExit(f"no writer {writer!r}")


if "umask" in job:
    os.umask(job["umask"])
with sn.connect(demo=False) as client:
    if "fsize" in job:  # a full disk: past this size a write fails with EFBIG
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (job["fsize"], job["fsize"]))
    try:
        write(client)
    except Exception as exc:
        said = {"error": type(exc).__name__, "oserror": isinstance(exc, OSError)}
        said.update(errno=getattr(exc, "errno", None), filename=getattr(exc, "filename", None))
        said["message"] = str(exc)
        print(json.dumps(said))
    else:
        print(json.dumps({"mode": stat.S_IMODE(os.stat(path).st_mode)}))
"""


def listing(folder: pathlib.Path) -> list[str]:
    """Every name in ``folder``, hidden ones (temporaries) included."""
    return sorted(p.name for p in folder.iterdir())


def hidden(folder: pathlib.Path) -> list[str]:
    return [name for name in listing(folder) if name.startswith(".")]


def child_env(service: DemoService, **extra: str) -> dict[str, str]:
    return dict(
        os.environ, STOPLIST_NB_URL=service.base_url, STOPLIST_NB_TOKEN=service.token, **extra
    )


def start_child(
    service: DemoService, job: dict[str, Any], *, prefix: tuple[str, ...] = (), **env: str
) -> subprocess.Popen[str]:
    return popen(
        [*prefix, sys.executable, "-c", CHILD, json.dumps(job)],
        env=child_env(service, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_child(
    service: DemoService, job: dict[str, Any], *, prefix: tuple[str, ...] = (), **env: str
) -> dict[str, Any]:
    """Run one write in a child process; what it said (its error, or the file's mode)."""
    child = start_child(service, job, prefix=prefix, **env)
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err[-3000:]
    said: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return said


def wait_for(ready: Callable[[], bool], what: str) -> None:
    """Wait until ``ready()``; the bound only keeps a broken test from hanging."""
    give_up = time.monotonic() + 120
    while not ready():
        assert time.monotonic() < give_up, f"still waiting for {what}"
        time.sleep(0.01)


def asked(service: DemoService, method: str) -> int:
    return sum(1 for record in list(service.requests) if record.method == method)


def temporaries_with_data(folder: pathlib.Path) -> bool:
    """Whether a write in ``folder`` has put bytes in a hidden temporary."""
    return any(p.is_file() and p.stat().st_size > 0 for p in folder.rglob(".*"))


def hold_mid_write(service: DemoService, writer: str) -> Callable[[pathlib.Path], bool]:
    """Make the next ``writer`` run stop mid-write; return the test of being there.

    Profiles: the second page takes a minute to come, after the first is in a
    segment. Exports: the ZIP comes one byte every half second, once asked for.
    """
    if writer in ("parquet", "csv"):
        service.add_fault("profiles/list", "slow", delay=60, after=1)
        return lambda folder: asked(service, "profiles/list") >= 2 and temporaries_with_data(folder)
    service.plan_next_export(steps=0)
    service.add_fault("download", "trickle", delay=0.5)
    # The file is made before the download is asked for; its bytes come by 64 KiB.
    return lambda folder: asked(service, "download") >= 1


def write_here(client: sn.Client, demo: DemoService, writer: str, path: pathlib.Path) -> None:
    """The write of ``writer`` to ``path`` in this process (``overwrite`` where asked)."""
    if writer in ("parquet", "csv"):
        req = sn.ProfilesRequest(client, 1, limit=50, progress=False)
        (req.to_csv if writer == "csv" else req.to_parquet)(path)
    elif writer == "suppression":
        sn.write_suppression_parquet(client, 7, path, poll_interval=0.01, progress=False)
    elif writer == "zip":
        task_id = sn.start_suppression_export(client, demo.suppress_id)
        status = sn.wait_for_task(client, task_id, poll_interval=0.01, progress=False)
        download_export(client, status.hashed_files[0], path, progress=False)
    else:
        write_frame(pd.DataFrame({"n": [1, 2]}), path)


# --- debris of a killed run is cleared by the next one ------------------------------------


@pytest.mark.parametrize("writer", ["parquet", "csv", "suppression", "zip"])
@pytest.mark.slow  # a child process
def test_a_run_killed_mid_write_leaves_debris_the_next_write_clears(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, writer: str
) -> None:
    path = tmp_path / WRITERS[writer]
    there = hold_mid_write(demo, writer)
    child = start_child(demo, {"writer": writer, "path": str(path)})
    try:
        wait_for(lambda: there(tmp_path), "the child to be mid-write")
        left = hidden(tmp_path)
        # A write beside it, while it runs, leaves a live writer's files alone.
        write_frame(pd.DataFrame({"n": [1]}), tmp_path / "beside.csv")
        assert hidden(tmp_path) == left
    finally:
        child.kill()
        child.communicate()
    assert child.returncode == -signal.SIGKILL
    assert hidden(tmp_path) == left  # nothing cleans up after SIGKILL ...
    assert all(".stoplist_nb-" in name for name in left)
    demo.clear_faults()
    write_here(client, demo, writer, path)
    assert listing(tmp_path) == sorted(["beside.csv", path.name])  # ... but the next write does


@pytest.mark.parametrize("writer", ["parquet", "suppression", "frame-csv"])
@pytest.mark.slow  # a child process
def test_every_writer_clears_the_debris_of_any_other_in_its_directory(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, writer: str
) -> None:
    there = hold_mid_write(demo, "csv")
    child = start_child(demo, {"writer": "csv", "path": str(tmp_path / "killed.csv")})
    try:
        wait_for(lambda: there(tmp_path), "the child to be mid-write")
    finally:
        child.kill()
        child.communicate()
    assert hidden(tmp_path) != []
    demo.clear_faults()
    write_here(client, demo, writer, tmp_path / WRITERS[writer])
    assert listing(tmp_path) == [WRITERS[writer]]


@pytest.mark.slow  # a child process
def test_a_killed_read_leaves_a_findable_scratch_directory_the_next_read_clears(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    there = hold_mid_write(demo, "read")
    child = start_child(demo, {"writer": "read", "path": ""}, TMPDIR=str(scratch))
    try:
        wait_for(lambda: there(scratch), "the child to be mid-download")
    finally:
        child.kill()
        child.communicate()
    [left] = listing(scratch)
    assert left.startswith(".stoplist_nb-")
    assert left.endswith(".zips")
    demo.clear_faults()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    frame = sn.read_suppression_list(client, demo.suppress_id, poll_interval=0.01, progress=False)
    assert len(frame) > 0
    assert listing(scratch) == []


# --- Ctrl-C leaves nothing ----------------------------------------------------------------


@pytest.mark.parametrize("writer", ["parquet", "csv", "suppression", "zip"])
@pytest.mark.slow  # a child process
def test_sigint_mid_write_leaves_nothing_and_an_old_file_as_it_was(
    demo: DemoService, tmp_path: pathlib.Path, writer: str
) -> None:
    path = tmp_path / WRITERS[writer]
    path.write_bytes(b"the file of yesterday")
    there = hold_mid_write(demo, writer)
    child = start_child(demo, {"writer": writer, "path": str(path), "overwrite": True})
    try:
        wait_for(lambda: there(tmp_path), "the child to be mid-write")
        assert hidden(tmp_path) != []
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert "KeyboardInterrupt" in err
    assert listing(tmp_path) == [path.name]
    assert path.read_bytes() == b"the file of yesterday"


# --- a full disk and a read-only directory are clean errors ----------------------------


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.slow  # a child process
def test_a_full_disk_is_a_clean_error_leaving_the_old_file(
    demo: DemoService, tmp_path: pathlib.Path, writer: str
) -> None:
    path = tmp_path / WRITERS[writer]
    path.write_bytes(b"the file of yesterday")
    if writer in ("suppression", "zip"):  # an archive larger than the limit
        hashes = "".join(f"{i:032x}\n" for i in range(20_000)).encode()
        serve_download(demo, make_zip({"list.csv": hashes}, level=0))
    said = run_child(demo, {"writer": writer, "path": str(path), "overwrite": True, "fsize": 4096})
    if writer.startswith("frame"):  # the command line's own words for it
        assert said["error"] == "CliError"
        assert said["message"] == f"cannot write {path}: File too large"
    else:
        assert said["error"] == "OSError"
        assert said["oserror"]
        assert (said["errno"], said["filename"]) == (errno.EFBIG, str(path))
        assert said["message"] == f"[Errno {errno.EFBIG}] File too large: {str(path)!r}"
    assert listing(tmp_path) == [path.name]
    assert path.read_bytes() == b"the file of yesterday"


@pytest.fixture
def read_only(tmp_path: pathlib.Path) -> Iterator[tuple[pathlib.Path, tuple[str, ...], int]]:
    """A directory the child cannot write: (it, the child's command prefix, the errno).

    Mode 0555 for a user; root writes there anyway, so for root the child runs in
    a mount namespace of its own where the directory is bound read-only.
    """
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder, (), errno.EACCES
        folder.chmod(0o755)
        return
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'
    prefix = ("unshare", "--mount", "sh", "-c", script, str(folder))
    if shutil.which("unshare") is None:
        pytest.skip("running as root without unshare: no read-only directory to test in")
    probe = subprocess.run(
        [*prefix, "sh", "-c", f'! touch "{folder}/probe" 2>/dev/null'],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(f"running as root and no read-only bind mount: {probe.stderr!r}")
    yield folder, prefix, errno.EROFS


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.slow  # a child process
def test_a_read_only_directory_is_a_clean_error_leaving_the_old_file(
    demo: DemoService, read_only: tuple[pathlib.Path, tuple[str, ...], int], writer: str
) -> None:
    folder, prefix, code = read_only
    path = folder / WRITERS[writer]
    if os.geteuid() == 0:
        path.write_bytes(b"the file of yesterday")  # outside the child's namespace: writable
    else:
        folder.chmod(0o755)
        path.write_bytes(b"the file of yesterday")
        folder.chmod(0o555)
    said = run_child(demo, {"writer": writer, "path": str(path), "overwrite": True}, prefix=prefix)
    if writer.startswith("frame"):
        assert said["error"] == "CliError"
        assert said["message"] == f"cannot write {path}: {os.strerror(code)}"
    else:
        assert said["oserror"]
        assert said["error"] in ("OSError", "PermissionError")
        assert (said["errno"], said["filename"]) == (code, str(path))
    assert listing(folder) == [path.name]
    assert path.read_bytes() == b"the file of yesterday"
    if writer in ("parquet", "csv", "suppression"):  # found before anything is sent
        assert [r.method for r in demo.requests] == []


TURNING = r"""
import os, pathlib, subprocess, sys
from stoplist_nb._atomic import Output

folder = pathlib.Path(sys.argv[1])
try:
    with Output(folder / "stop.parquet") as output:
        output.temporary("part").write_bytes(b"half a file")
        if os.geteuid() == 0:  # in a mount namespace of its own: see the test
            subprocess.run(["mount", "-o", "remount,bind,ro", folder, folder], check=True)
        else:
            folder.chmod(0o555)
        raise RuntimeError("the error to tell")
except BaseException as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.slow  # a child process
def test_a_temporary_that_cannot_be_removed_does_not_hide_the_error(
    read_only: tuple[pathlib.Path, tuple[str, ...], int],
) -> None:
    folder, prefix, _ = read_only
    if prefix:  # bound writable first; the child makes it read-only mid-write
        script = 'mount --bind "$0" "$0" && exec "$@"'
        prefix = ("unshare", "--mount", "sh", "-c", script, str(folder))
    else:
        folder.chmod(0o755)
    done = subprocess.run(
        [*prefix, sys.executable, "-c", TURNING, str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "RuntimeError the error to tell"
    folder.chmod(0o755)
    [left] = listing(folder)  # debris, for the next write to clear (its writer is gone)
    assert ".stoplist_nb-" in left
    with Output(folder / "other.csv"):
        pass
    assert listing(folder) == []


# --- one file mode: the umask's ----------------------------------------------------------


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.slow  # a child process
def test_every_format_gets_the_mode_of_the_umask(
    demo: DemoService, tmp_path: pathlib.Path, writer: str, umask: int, mode: int
) -> None:
    path = tmp_path / WRITERS[writer]
    said = run_child(demo, {"writer": writer, "path": str(path), "umask": umask})
    assert said == {"mode": mode}


# --- a file that is there is never replaced unasked ----------------------------------


def refused_writes(
    client: sn.Client, demo: DemoService
) -> dict[str, Callable[[pathlib.Path], object]]:
    req = sn.ProfilesRequest(client, 1, limit=50, progress=False)
    return {
        "to_parquet": lambda path: req.to_parquet(path),
        "to_csv": lambda path: req.to_csv(path),
        "write_suppression_parquet": lambda path: sn.write_suppression_parquet(
            client, demo.suppress_id, path, progress=False
        ),
        "write_suppression_parquet(task_id=)": lambda path: sn.write_suppression_parquet(
            client, None, path, task_id="exp-1", progress=False
        ),
        "download_export": lambda path: download_export(
            client, "suppress/1/stop.md5.zip", path, progress=False
        ),
        "download_export(task_id=)": lambda path: download_export(
            client, "suppress/1/stop.md5.zip", path, task_id="exp-1", progress=False
        ),
        "download_export(directory)": lambda path: download_export(
            client, f"suppress/1/{path.name}", path.parent, task_id="exp-1", progress=False
        ),
        "Client.download": lambda path: client.download(
            "suppress/1/stop.md5.zip", path, progress=False
        ),
        "HashedParquet": lambda path: HashedParquet(path).__enter__(),
        "write_frame": lambda path: write_frame(pd.DataFrame({"n": [1]}), path),
    }


@pytest.mark.parametrize(
    "writer",
    [
        "to_parquet",
        "to_csv",
        "write_suppression_parquet",
        "write_suppression_parquet(task_id=)",
        "download_export",
        "download_export(task_id=)",
        "download_export(directory)",
        "Client.download",
        "HashedParquet",
        "write_frame",
    ],
)
def test_a_file_that_is_there_is_refused_before_anything_is_sent(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, writer: str
) -> None:
    path = tmp_path / "taken name.parquet"
    path.write_bytes(b"the file of yesterday")
    with pytest.raises(sn.OutputExists) as info:
        refused_writes(client, demo)[writer](path)
    assert info.value.path == path
    assert isinstance(info.value, FileExistsError)
    assert "overwrite=True" in str(info.value)
    assert demo.requests == []
    assert listing(tmp_path) == [path.name]
    assert path.read_bytes() == b"the file of yesterday"


def test_a_broken_link_at_the_name_is_refused_too(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    path = tmp_path / "p.csv"
    path.symlink_to(tmp_path / "nowhere.csv")
    with pytest.raises(sn.OutputExists):
        sn.ProfilesRequest(client, 1, progress=False).to_csv(path)
    assert demo.requests == []


@pytest.mark.parametrize("writer", ["parquet", "csv", "suppression", "zip", "frame"])
def test_overwrite_replaces_the_file(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, writer: str
) -> None:
    path = tmp_path / WRITERS[writer]
    path.write_bytes(b"the file of yesterday")
    if writer in ("parquet", "csv"):
        req = sn.ProfilesRequest(client, 1, limit=50, progress=False)
        (req.to_csv if writer == "csv" else req.to_parquet)(path, overwrite=True)
    elif writer == "suppression":
        sn.write_suppression_parquet(
            client, 7, path, poll_interval=0.01, progress=False, overwrite=True
        )
    elif writer == "zip":
        task_id = sn.start_suppression_export(client, demo.suppress_id)
        status = sn.wait_for_task(client, task_id, poll_interval=0.01, progress=False)
        download_export(client, status.hashed_files[0], path, progress=False, overwrite=True)
    else:
        write_frame(pd.DataFrame({"n": [1, 2]}), path, overwrite=True)
    assert listing(tmp_path) == [path.name]
    assert path.read_bytes() != b"the file of yesterday"


@pytest.mark.slow  # a child process
def test_a_file_that_appears_during_a_pull_is_kept(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    path = tmp_path / "p.parquet"
    demo.add_fault("profiles/list", "slow", delay=2, after=1)  # time for another program

    def another_program() -> None:
        wait_for(lambda: asked(demo, "profiles/list") >= 2, "the second page")
        path.write_bytes(b"written meanwhile")

    other = threading.Thread(target=another_program)
    other.start()
    try:
        with pytest.raises(sn.OutputExists, match="appeared while it was being written") as info:
            sn.ProfilesRequest(client, 1, limit=50, progress=False).to_parquet(path)
    finally:
        other.join()
    assert info.value.path == path
    assert isinstance(info.value.partial, sn.FileSummary)
    assert info.value.partial.rows > 0
    assert not info.value.partial.written
    assert listing(tmp_path) == [path.name]
    assert path.read_bytes() == b"written meanwhile"


def test_a_file_that_appears_before_the_parquet_file_is_put_in_place_is_kept(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "stop.parquet"
    archive = make_zip({"a.csv": "0cc175b9c0f1b6a831c399e269772661\n"})
    with HashedParquet(path) as sink:
        sink.add(archive)
        path.write_bytes(b"written meanwhile")
        with pytest.raises(sn.OutputExists):
            sink.finish({"list_id": 7})
    assert listing(tmp_path) == [path.name]
    assert path.read_bytes() == b"written meanwhile"


def test_files_of_one_export_that_share_a_name_are_each_read_into_a_kept_directory(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    # The second replaces the first, read already: not a file that was there.
    task_id = sn.start_suppression_export(client, demo.suppress_id)
    status = sn.wait_for_task(client, task_id, poll_interval=0.01, progress=False)
    both = sn.TaskStatus(task_id, "completed", 100, {"hashed_file": [*status.hashed_files] * 2})
    from stoplist_nb.suppression.export import read_export_files

    frame, saved = read_export_files(client, both, tmp_path, progress=False)
    assert saved[0] == saved[1]
    assert len(frame) == 2 * status.total
    with pytest.raises(sn.OutputExists):  # a second read into the same directory
        read_export_files(client, both, tmp_path, progress=False)
    read_export_files(client, both, tmp_path, progress=False, overwrite=True)


# --- what the service names is scrubbed before it is written ---------------------------

SECRET = "tok-5ecret-9f8e7d6c5b4a3210"
echo, echoing = served_and_cleared(
    "echo", profiles=40, seed=5, token=SECRET, suppress_name=f"Stop {SECRET}"
)


def assert_no_token(folder: pathlib.Path) -> None:
    """No name holds the token, and no Parquet file's bytes (its metadata included).

    A kept ZIP is the service's archive byte for byte, its members' names as sent.
    """
    for path in folder.rglob("*"):
        assert SECRET not in path.name
        if path.suffix == ".parquet":
            body = path.read_bytes()
            assert SECRET.encode() not in body, path
            assert quote(SECRET).encode() not in body, path


def test_a_file_name_echoing_the_token_reaches_no_file(
    echoing: DemoService, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "kept").mkdir()
    with echoing.client() as client:
        done = sn.write_suppression_parquet(
            client, echoing.suppress_id, tmp_path / "stop.parquet", poll_interval=0.01
        )
        frame = sn.read_suppression_list(
            client, echoing.suppress_id, poll_interval=0.01, dest=tmp_path / "kept"
        )
    assert SECRET in json.dumps(echoing.requests[-1].path)  # the service did echo it
    attrs = pd.read_parquet(done.path).attrs
    assert attrs["file"] == "Stop ***.md5.zip" == frame.attrs["file"]
    metadata = pq.read_schema(done.path).metadata
    assert SECRET.encode() not in b"".join(key + value for key, value in metadata.items())
    assert listing(tmp_path / "kept") == ["Stop ***.md5.zip"]
    assert_no_token(tmp_path)
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    assert "Stop ***.md5.zip" in err  # the progress bar


def test_a_task_id_echoing_the_token_reaches_no_file(
    echoing: DemoService, tmp_path: pathlib.Path
) -> None:
    with echoing.client() as client:
        task_id = sn.start_suppression_export(client, echoing.suppress_id)
        status = sn.wait_for_task(client, task_id, poll_interval=0.01, progress=False)
        echoed = f"exp-{SECRET}"
        done = {"status": "completed", "progress": 100, "result": status.result}
        echoing.add_fault(
            "suppresses/export", "raw", text=json.dumps({"error": 0, "data": {"task_id": echoed}})
        )
        echoing.add_fault("tasks/status", "raw", text=json.dumps({"error": 0, "data": done}))
        summary = sn.write_suppression_parquet(
            client, echoing.suppress_id, tmp_path / "stop.parquet", progress=False
        )
        echoing.add_fault(
            "suppresses/export", "raw", text=json.dumps({"error": 0, "data": {"task_id": echoed}})
        )
        echoing.add_fault("tasks/status", "raw", text=json.dumps({"error": 0, "data": done}))
        frame = sn.read_suppression_list(client, echoing.suppress_id, progress=False)
    assert summary.task_id == echoed  # to pick the task up; shown and written scrubbed
    assert pd.read_parquet(summary.path).attrs["task_id"] == "exp-***"
    assert frame.attrs["task_id"] == "exp-***"
    assert_no_token(tmp_path)


def test_write_frame_keeps_its_usage_error_for_a_suffix(tmp_path: pathlib.Path) -> None:
    with pytest.raises(CliError, match=r"must end in \.parquet or \.csv"):
        write_frame(pd.DataFrame({"n": [1]}), tmp_path / "x.txt")
    assert listing(tmp_path) == []


# ---------------------------------------------------------------- no hard links


def _write_through_output(target: pathlib.Path, text: str) -> pathlib.Path:
    with Output(target) as out:
        part = out.temporary("part")
        part.write_text(text)
        return out.put(part)


@pytest.mark.parametrize("code", sorted(output_module._NO_LINKS))
def test_where_links_are_refused_the_name_is_claimed_then_filled(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    # Filesystems without hard links (FAT, some network mounts) answer link()
    # with one of these; no server can make a local filesystem do that.
    def refused(*_: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(output_module.os, "link", refused)
    target = tmp_path / "out.csv"
    assert _write_through_output(target, "a,b\n1,2\n") == target
    assert target.read_text() == "a,b\n1,2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_where_links_are_refused_a_file_that_appeared_is_left_as_it_is(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.csv"

    def refused(*_: object) -> None:
        target.write_text("theirs")  # another program takes the name meanwhile
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(output_module.os, "link", refused)
    with pytest.raises(sn.OutputExists, match="appeared while it was being written"):
        _write_through_output(target, "ours")
    assert target.read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_a_failed_move_after_the_claim_leaves_no_empty_file(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*_: object) -> None:
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    def full(*_: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(output_module.os, "link", refused)
    monkeypatch.setattr(output_module.os, "replace", full)
    target = tmp_path / "out.csv"
    with pytest.raises(OSError, match="No space left") as caught:
        _write_through_output(target, "ours")
    assert caught.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


def test_a_temporary_label_is_checked(tmp_path: pathlib.Path) -> None:
    with Output(tmp_path / "x.csv") as out:
        with pytest.raises(ValueError, match="lower-case letters and digits, not 'A b'"):
            out.temporary("A b")
        out.temporary("part")
        with pytest.raises(ValueError, match="already has a temporary 'part'"):
            out.temporary("part")


def test_debris_of_a_directory_that_is_not_there_is_none(tmp_path: pathlib.Path) -> None:
    assert output_module.remove_debris(tmp_path / "missing") == []
