"""Every output of the command line keeps one rule, and fails in one way.

A file that is there is replaced only with ``--overwrite``: without it the
command stops before anything is sent (exit 2), naming the file, and a file
that appears while it runs is not replaced either. A write that fails, for a
full disk (a file size limit in a child process) or a directory it may not
write, is one line, ``cannot write <path>: <reason>`` (exit 1), and what was
there before is left as it was, with nothing beside it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import pathlib
import re
import resource
import signal
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pandas as pd
import pytest
from cli_process import environment, hidden, run

from stoplist_nb.demo import DemoService
from stoplist_nb.suppression.archive import read_hashed_csv

if TYPE_CHECKING:
    from conftest import Run

PROFILES = ["profiles", "--db-id", "1", "--limit", "50"]
EXPORT = ["export", "--list-id", "7", "--poll-interval", "0.01"]
#: Each single file the command line writes: its command, and the name of its output.
FILES = {
    "profiles.parquet": (PROFILES, "p.parquet"),
    "profiles.csv": (PROFILES, "p.csv"),
    "export.zip": (EXPORT, "s.zip"),
    "export.csv": (EXPORT, "s.csv"),
    "export.parquet": (EXPORT, "s.parquet"),
}
DEMO = ["demo", "--profiles", "60", "--no-plots"]
DEMO_FILES = [
    f"{name}{suffix}"
    for name in ("profiles", "suppression_list", "flagged_contacts")
    for suffix in (".parquet", ".csv")
]
YESTERDAY = b"the file of yesterday"


def readable(path: pathlib.Path) -> pd.DataFrame:
    """The output read back: it must be a whole file of its kind."""
    if path.suffix == ".zip":
        return read_hashed_csv(path)
    return pd.read_csv(path) if path.suffix == ".csv" else pd.read_parquet(path)


def refused(path: pathlib.Path | str) -> str:
    return (
        f"stoplist-nb: error: {path} exists; nothing was sent\n"
        "stoplist-nb: hint: add --overwrite to replace it, or name another --out\n"
    )


# --- an output that is there -------------------------------------------------------------


@pytest.mark.parametrize("output", list(FILES))
def test_a_file_that_is_there_is_replaced_only_with_overwrite(
    run: Run, env: DemoService, tmp_path: pathlib.Path, output: str
) -> None:
    argv, name = FILES[output]
    path = tmp_path / name
    path.write_bytes(YESTERDAY)
    code, stdout, stderr = run(*argv, "--out", str(path))
    assert (code, stdout, stderr) == (2, "", refused(path))
    assert env.requests == []  # refused before anything was sent
    assert path.read_bytes() == YESTERDAY
    code, _, stderr = run(*argv, "--out", str(path), "--overwrite")
    assert code == 0, stderr
    assert len(readable(path)) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


@pytest.mark.slow
def test_the_demo_refuses_if_any_file_it_would_write_is_there(
    run: Run, tmp_path: pathlib.Path
) -> None:
    there = tmp_path / "flagged_contacts.csv"
    there.write_bytes(YESTERDAY)
    code, stdout, stderr = run(*DEMO, "--out", str(tmp_path))
    assert (code, stdout, stderr) == (2, "", refused(there))
    assert [p.name for p in tmp_path.iterdir()] == [there.name]  # none of the others either
    code, stdout, stderr = run(*DEMO, "--out", str(tmp_path), "--overwrite")
    assert code == 0, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(DEMO_FILES)
    assert len(pd.read_csv(there)) > 0
    assert hidden(tmp_path) == []


@pytest.fixture
def appears_meanwhile(monkeypatch: pytest.MonkeyPatch) -> Callable[[pathlib.Path], list[str]]:
    """Another program writes a file just before the command gives its own that name."""
    from stoplist_nb._atomic import Output

    put = Output.put

    def at(path: pathlib.Path) -> list[str]:
        seen: list[str] = []  # every file given its name (the downloads read on the way too)

        def put_after_someone_else(self: Output, temporary: pathlib.Path) -> pathlib.Path:
            seen.append(self.path.name)
            if self.path == path:
                path.write_bytes(YESTERDAY)
            return put(self, temporary)

        monkeypatch.setattr(Output, "put", put_after_someone_else)
        return seen

    return at


@pytest.mark.parametrize(
    ("argv", "name"),
    [(PROFILES, "p.parquet"), (PROFILES, "p.csv"), (EXPORT, "s.parquet"), (EXPORT, "s.zip"),
     (EXPORT, "s.csv")],
)  # fmt: skip
def test_a_file_that_appears_while_the_command_runs_is_not_replaced(
    run: Run,
    env: DemoService,
    tmp_path: pathlib.Path,
    appears_meanwhile: Callable[[pathlib.Path], list[str]],
    argv: list[str],
    name: str,
) -> None:
    path = tmp_path / name
    seen = appears_meanwhile(path)
    code, _, stderr = run(*argv, "--out", str(path))
    assert seen[-1] == name  # it was not there when the command began
    assert code == 2, stderr
    assert stderr.endswith(
        f"stoplist-nb: error: {path} appeared while the command ran; it was left as it was, "
        "and nothing was written\n"
        "stoplist-nb: hint: add --overwrite to replace it, or name another --out\n"
    )
    assert path.read_bytes() == YESTERDAY
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


# --- a write that fails ------------------------------------------------------------------

#: Each output: its command, the name of its output, and whether it is a directory.
OUTPUTS = {
    **{key: (argv, name) for key, (argv, name) in FILES.items()},
    "profiles dataset": (PROFILES, "ds/"),
    "demo": (DEMO, "d/"),
}


def file_size_limit(size: int) -> Callable[[], None]:
    """In the child: a full disk, as a file size limit. Writes past it fail with EFBIG."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error, not the end of the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def place_yesterday(folder: pathlib.Path, name: str) -> list[str]:
    """What was there before the run, with --overwrite given: its names, sorted."""
    if name == "d/":
        (folder / "d").mkdir()
        for file in DEMO_FILES:
            (folder / "d" / file).write_bytes(YESTERDAY)
        return ["d"]
    if name.endswith("/"):
        return []  # a dataset's directory starts empty; its checkpoint is what is kept
    (folder / name).write_bytes(YESTERDAY)
    return [name]


def left_as_it_was(folder: pathlib.Path, name: str, before: list[str]) -> None:
    if name == "d/":
        assert sorted(p.name for p in (folder / "d").iterdir()) == sorted(DEMO_FILES)
        assert all((folder / "d" / f).read_bytes() == YESTERDAY for f in DEMO_FILES)
    elif name == "ds/" and (folder / "ds").exists():
        # The checkpoint (of no part yet) may be there to carry on from; no part.
        assert {p.name for p in (folder / "ds").iterdir()} <= {"_checkpoint.json"}
    elif name != "ds/":
        assert (folder / name).read_bytes() == YESTERDAY
    assert sorted(p.name for p in folder.iterdir() if p.name != "ds") == before
    assert hidden(folder) == []


def said(stderr: str, line: str) -> None:
    """``line`` (a pattern) is the error; nothing else is said but the task's note and a hint."""
    lines = stderr.splitlines()
    errors = [x for x in lines if x.startswith("stoplist-nb: error: ")]
    assert len(errors) == 1, stderr
    assert re.fullmatch(f"stoplist-nb: error: {line}", errors[0]), stderr
    others = [x for x in lines if x not in errors]
    assert all(x.startswith(("stoplist-nb: export task ", "stoplist-nb: hint: ")) for x in others)
    assert "Traceback" not in stderr


@pytest.mark.slow
@pytest.mark.parametrize("output", list(OUTPUTS))
def test_a_full_disk_is_one_line_and_the_old_file_stays(
    svc: DemoService, demo: DemoService, tmp_path: pathlib.Path, output: str
) -> None:
    argv, name = OUTPUTS[output]
    before = place_yesterday(tmp_path, name)
    code, stdout, stderr = run(
        [*argv, "--out", name, "--overwrite"],
        env=environment(demo),
        cwd=tmp_path,
        preexec=file_size_limit(512),
    )
    assert code == 1, stderr
    failed = {
        "d/": "d/profiles.parquet",  # the first file it writes
        # The archive is read from a temporary file before the CSV is written: that
        # one is named, since that is where the room is missing.
        "s.csv": "/.*/[^/]*.md5.zip",
    }.get(name, re.escape(name))
    said(stderr, f"cannot write {failed}: {os.strerror(errno.EFBIG)}")
    left_as_it_was(tmp_path, name, before)
    assert demo.token not in stdout + stderr


def without_root_override() -> None:
    """In a child of root: no write where the mode says no, as for anyone else.

    Root keeps its other powers; only CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
    leave the bounding set, so that after exec the child has them no more.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2
    for cap in (cap_dac_override, cap_dac_read_search):
        if libc.prctl(pr_capbset_drop, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


@pytest.fixture
def read_only(tmp_path: pathlib.Path) -> Iterator[tuple[pathlib.Path, Callable[[], None] | None]]:
    """A directory of mode 0555, and what makes a child of root respect it."""
    folder = tmp_path / "ro"
    folder.mkdir()
    preexec = None
    if os.geteuid() == 0:
        probe = run(["--version"], env=environment(), cwd=tmp_path, preexec=without_root_override)
        if probe[0] != 0:
            pytest.skip(f"running as root, and root's override cannot be dropped: {probe[2]}")
        preexec = without_root_override
    yield folder, preexec
    for path in (folder, *folder.rglob("*")):
        if path.is_dir():
            path.chmod(0o755)


@pytest.mark.slow
@pytest.mark.parametrize("output", list(OUTPUTS))
def test_a_read_only_directory_is_one_line_and_the_old_file_stays(
    demo: DemoService,
    read_only: tuple[pathlib.Path, Callable[[], None] | None],
    output: str,
) -> None:
    folder, preexec = read_only
    argv, name = OUTPUTS[output]
    before = place_yesterday(folder, name)
    if name == "d/":
        (folder / "d").chmod(0o555)  # the demo's own directory is the one it cannot write
    folder.chmod(0o555)
    code, _, stderr = run(
        [*argv, "--out", name, "--overwrite"], env=environment(demo), cwd=folder, preexec=preexec
    )
    assert code == 1, stderr
    said(stderr, f"cannot write {name}: {os.strerror(errno.EACCES)}")
    assert not (folder / "ds").exists()
    left_as_it_was(folder, name, before)
