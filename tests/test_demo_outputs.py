"""How ``stoplist-nb demo`` puts its files in place: all of them, or none.

The command writes into a hidden staging directory and then moves the files
into ``--out``. Without ``--overwrite`` each is linked in, so a file that
appeared meanwhile is never replaced; where the filesystem has no hard links
(FAT, some network mounts: ``link`` refused, which no test server can make a
local disk do, hence the patched ``os.link``) a look just before the move has
to do. When one file cannot be put, those already put are taken back.
"""

from __future__ import annotations

import errno
import os
import pathlib

import pytest

import stoplist_nb.cli.demo as demo
from stoplist_nb.cli.output import CliError

NAMES = ("a.csv", "b.csv", "c.csv")


def _staged(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    staging, out = tmp_path / ".staging", tmp_path / "out"
    staging.mkdir()
    out.mkdir()
    for name in NAMES:
        (staging / name).write_text(f"{name}\n")
    return staging, out


def _no_links(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_: object) -> None:
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(demo.os, "link", refused)


@pytest.mark.parametrize("links", [True, False])
def test_every_file_is_put_in_place(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, links: bool
) -> None:
    staging, out = _staged(tmp_path)
    if not links:
        _no_links(monkeypatch)
    demo._put_in_place(staging, out, NAMES, overwrite=False)
    assert {p.name: p.read_text() for p in out.iterdir()} == {n: f"{n}\n" for n in NAMES}


@pytest.mark.parametrize("links", [True, False])
def test_a_file_that_appeared_is_kept_and_nothing_else_is_put(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, links: bool
) -> None:
    staging, out = _staged(tmp_path)
    if not links:
        _no_links(monkeypatch)
    (out / "b.csv").write_text("theirs")
    with pytest.raises(CliError, match=r"b\.csv"):
        demo._put_in_place(staging, out, NAMES, overwrite=False)
    assert {p.name: p.read_text() for p in out.iterdir()} == {"b.csv": "theirs"}


def test_overwrite_replaces_what_is_there(tmp_path: pathlib.Path) -> None:
    staging, out = _staged(tmp_path)
    (out / "a.csv").write_text("old")
    demo._put_in_place(staging, out, NAMES, overwrite=True)
    assert (out / "a.csv").read_text() == "a.csv\n"


def test_a_move_that_fails_takes_back_the_files_already_put(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staging, out = _staged(tmp_path)
    _no_links(monkeypatch)
    moves = []

    def full(source: object, target: object) -> None:
        if len(moves) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        moves.append(target)
        os.rename(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(demo.os, "replace", full)
    with pytest.raises(CliError, match=r"cannot write .*c\.csv: No space left on device"):
        demo._put_in_place(staging, out, NAMES, overwrite=False)
    assert list(out.iterdir()) == []
