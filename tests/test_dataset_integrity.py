"""A Parquet dataset keeps its word: one writer, a checked checkpoint, checked files, one service,
progress saved as it goes.

Every test runs against the demo service on loopback. Writers that must be other
processes are (``held_writer``: held between two pages by its own session's hook,
then let go, interrupted or killed); "before any request" is the demo's request log,
empty.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow.parquet as pq
import pytest
import requests
from dataset_helpers import (
    NO_WINDOW,
    assert_same_dataset,
    checkpoint,
    contents,
    dataset_fixtures,
    held_writer,
    listing,
    pages_from,
    profiles,
    pull,
)

import stoplist_nb as sn
from stoplist_nb._http.addresses import origin
from stoplist_nb.demo import DemoService, serve
from stoplist_nb.profiles import dataset
from stoplist_nb.profiles.dataset import CHECKPOINT
from stoplist_nb.profiles.dataset.checkpoint import Checkpoint

EVERY_PAGE = {"commit_seconds": 0}

svc, reference = dataset_fixtures()


@pytest.fixture(scope="module")
def stopped(svc: DemoService, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A pull stopped by the service at its eighth request, every page committed.

    Parts 0 and 1 are closed (30 profiles each); part 2 has one segment, its first page.
    """
    path = tmp_path_factory.mktemp("stopped") / "profiles"
    svc.add_fault("profiles/list", "status", status=500, times=None, after=7)
    try:
        with svc.client() as client, pytest.raises(sn.ServerError):
            pull(client, path, **EVERY_PAGE)
    finally:
        svc.clear_faults()
    state = checkpoint(path)
    assert [p["profiles"] for p in state["parts"]] == [30, 30]
    assert [s["profiles"] for s in state["open"]] == [10]
    return path


@pytest.fixture
def unfinished(stopped: pathlib.Path, tmp_path: pathlib.Path) -> pathlib.Path:
    """A copy of ``stopped`` for one test to change."""
    return pathlib.Path(shutil.copytree(stopped, tmp_path / "profiles"))


@contextmanager
def hooked(demo: DemoService, action: Callable[[int], None]) -> Iterator[sn.Client]:
    """A client whose session calls ``action(n)`` as the n-th reply of profiles/list arrives."""
    answered = 0

    def hook(response: requests.Response, *args: Any, **kwargs: Any) -> None:
        nonlocal answered
        if response.request.path_url.endswith("/profiles/list"):
            answered += 1
            action(answered)

    session = requests.Session()
    session.hooks["response"].append(hook)
    try:
        with sn.Client(demo.base_url, demo.token, session=session) as client:
            yield client
    finally:
        session.close()


def notes(exc: BaseException) -> str:
    return " ".join(getattr(exc, "__notes__", []))


# --- one writer at a time ------------------------------------------------------------------


@pytest.mark.slow
def test_a_second_writer_is_refused_while_the_first_writes(
    client: sn.Client, demo: DemoService, reference: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "profiles"
    # The first writer, another process, holds between its fourth and fifth page.
    with held_writer(demo, out, 5, 40, **EVERY_PAGE) as first:
        before, sent = contents(out), len(demo.requests)
        for options in ({}, {"overwrite": True}, {"resume": False}, {"repair": True}):
            with pytest.raises(sn.DatasetLocked) as info:
                pull(client, out, **options)
            holder = info.value.holder
            assert f"host {socket.gethostname()}, process {first.pid}, started " in holder
            assert holder in str(info.value)
            assert isinstance(info.value, RuntimeError)
        with pytest.raises(sn.DatasetLocked, match=f"process {first.pid}"):
            sn.dataset_summary(out)
        # Nothing was removed or written, and the second writer sent nothing.
        assert contents(out) == before
        assert len(demo.requests) == sent
        assert first.stdin is not None
        assert first.stdout is not None
        first.stdin.write("\n")
        first.stdin.flush()
        assert first.stdout.read() == "finished 150\n"
        assert first.wait(timeout=60) == 0
    assert_same_dataset(out, reference)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_the_lock_of_a_killed_writer_does_not_block(
    client: sn.Client, demo: DemoService, reference: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "profiles"
    with held_writer(demo, out, 5, 30) as first:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=60)
    # Its lock file stays, naming it; its lock went with the process.
    assert f"process {first.pid}," in (out / dataset.LOCK).read_text()
    assert sn.dataset_summary(out).profiles == 30
    assert pull(client, out).complete
    assert dataset.LOCK not in listing(out)
    assert_same_dataset(out, reference)


def test_a_second_writer_in_the_same_process_is_refused(
    demo: DemoService, reference: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "profiles"
    refused: list[BaseException] = []

    def second_writer(reply: int) -> None:
        if reply != 5:
            return
        with demo.client() as other:
            for attempt in (lambda: pull(other, out), lambda: sn.dataset_summary(out)):
                try:
                    attempt()
                except sn.DatasetLocked as exc:
                    refused.append(exc)

    with hooked(demo, second_writer) as client:
        pull(client, out, lookahead=0)
    assert len(refused) == 2
    assert all(f"process {os.getpid()}," in str(exc) for exc in refused)
    assert_same_dataset(out, reference)


# --- the checkpoint is checked, not believed -------------------------------------------------


def _edit(key: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    def edit(state: dict[str, Any]) -> Any:
        state[key] = value
        return state

    return edit


def _edit_file(where: str, index: int, key: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    def edit(state: dict[str, Any]) -> Any:
        state[where][index][key] = value
        return state

    return edit


def _without(where: str, index: int, key: str) -> Callable[[dict[str, Any]], Any]:
    def edit(state: dict[str, Any]) -> Any:
        del state[where][index][key]
        return state

    return edit


def _call(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], Any]:
    def edit(state: dict[str, Any]) -> Any:
        change(state)
        return state

    return edit


EDITS: list[Any] = [
    # Each value of the wrong type, as a hand or another program might write it.
    pytest.param(
        _edit("ended", "false"), "'ended' is \"false\", not true or false", id="ended-text"
    ),
    pytest.param(_edit("ended", 0), "'ended' is 0, not true or false", id="ended-number"),
    pytest.param(_edit("complete", "false"), "'complete' is \"false\"", id="complete-text"),
    pytest.param(_edit("complete", None), "'complete' is null", id="complete-null"),
    pytest.param(_edit("next_from_id", None), "'next_from_id' is null", id="cursor-null"),
    pytest.param(_edit("next_from_id", 7), "'next_from_id' is 7", id="cursor-number"),
    pytest.param(_edit("profiles", "70"), "'profiles' is \"70\"", id="profiles-text"),
    pytest.param(_edit("profiles", True), "'profiles' is true", id="profiles-true"),
    pytest.param(_edit("rows", 130.0), "'rows' is 130.0", id="rows-float"),
    pytest.param(_edit("db_id", "1"), "'db_id' is \"1\", not a whole number", id="db-id-text"),
    pytest.param(_edit("db_id", True), "'db_id' is true", id="db-id-true"),
    pytest.param(_edit("service", None), "'service' is null, not a string", id="service-null"),
    pytest.param(_edit("query", "{}"), "'query' is \"{}\", not an object", id="query-text"),
    pytest.param(_edit("fields", [1]), "'fields'[0] is 1", id="fields-numbers"),
    pytest.param(_edit("dtypes", []), "'dtypes' is [], not an object", id="dtypes-list"),
    pytest.param(_edit("format", "2"), "'format' is \"2\", not a whole number", id="format-text"),
    pytest.param(_edit("cursors", "x"), "'cursors' is \"x\", not a list", id="cursors-text"),
    pytest.param(_edit("sealing", []), "'sealing' is [], not an object", id="sealing-list"),
    pytest.param(_edit_file("parts", 0, "rows", "30"), 'parts[0].rows is "30"', id="rows-text"),
    pytest.param(_edit_file("parts", 1, "bytes", -1), "parts[1].bytes is -1", id="bytes-neg"),
    pytest.param(_edit_file("parts", 0, "cursors", True), "parts[0].cursors is true", id="n-true"),
    pytest.param(_edit_file("open", 0, "name", 2), "open[0].name is 2", id="segment-name"),
    pytest.param(_edit_file("parts", 0, "sha256", "abc"), '"abc" is not a SHA-256', id="sha"),
    pytest.param(
        _edit_file("parts", 0, "schema", {"columns": "x", "sources": [], "declared": []}),
        'parts[0].schema.columns is "x", not a list',
        id="schema-text",
    ),
    # Keys missing, and keys no pull writes.
    pytest.param(_without("parts", 1, "sha256"), "parts[1] has no 'sha256'", id="no-checksum"),
    pytest.param(_without("parts", 0, "schema"), "parts[0] has no 'schema'", id="no-schema"),
    pytest.param(_edit_file("parts", 0, "note", "x"), "parts[0] has 'note'", id="part-key"),
    pytest.param(_call(lambda s: s.pop("sealing")), "has no 'sealing'", id="no-key"),
    pytest.param(_edit("note", 1), "has 'note', which no pull writes", id="unknown-key"),
    pytest.param(lambda s: [s], "the checkpoint is [", id="not-an-object"),
    # Right types, told apart from the files they list.
    pytest.param(_edit("next_from_id", ""), "'next_from_id' is \"\"", id="cursor-cleared"),
    pytest.param(_edit("profiles", 1019), "it counts 1019 profiles", id="wrong-total"),
    pytest.param(_edit("rows", 5), "and 5 rows, its files", id="wrong-rows"),
    pytest.param(
        _edit("cursors", []),
        "part-00001.parquet does not start at the cursor after part-00000.parquet",
        id="no-cursors",
    ),
    pytest.param(
        _call(lambda s: s["cursors"].append("1" * 24)),
        "'cursors' holds 7 cursors, its files added 6",
        id="cursor-added",
    ),
    pytest.param(
        _call(lambda s: s["cursors"].__setitem__(2, "0" * 24)),
        "part-00001.parquet does not start at the cursor after part-00000.parquet",
        id="cursor-changed",
    ),
    pytest.param(
        _call(lambda s: s["cursors"].__setitem__(0, "")), "'cursors'[0] is empty", id="cursor-empty"
    ),
    pytest.param(
        _edit_file("parts", 1, "name", "part-00009.parquet"),
        "parts[1] is named 'part-00009.parquet', not part-00001.parquet",
        id="part-renamed",
    ),
    pytest.param(
        _call(lambda s: s["parts"].reverse()),
        "parts[0] has no 'schema', and no file before it has one",
        id="parts-swapped",
    ),
    pytest.param(
        _call(lambda s: s.update(next_from_id=s["cursors"][0], open=[])),
        "it counts 70 profiles and 125 rows, its files 60 and",
        id="segment-dropped",
    ),
    pytest.param(
        _call(
            lambda s: s.update(
                next_from_id=s["cursors"][0],
                open=[{**s["open"][0], "next_from_id": s["cursors"][0]}],
            )
        ),
        "does not lead on from the pages saved: a pull carried on there would read them again",
        id="cursor-back",
    ),
    pytest.param(
        _call(lambda s: s["parts"][0].update(next_from_id="y")),
        "part-00001.parquet does not start at the cursor after part-00000.parquet ('y')",
        id="part-cursor",
    ),
    pytest.param(
        _edit("complete", True), "'complete' is true, 'ended' false", id="complete-unended"
    ),
    pytest.param(_edit("ended", True), "the last part is not closed", id="ended-open"),
    pytest.param(
        _edit("sealing", {"name": "part-00000.parquet", "bytes": 1, "sha256": "0" * 64}),
        "which no sealing writes",
        id="sealing-while-pulling",
    ),
]


@pytest.mark.parametrize(("edit", "said"), EDITS)
def test_a_checkpoint_that_is_not_what_was_written_is_refused(
    client: sn.Client,
    demo: DemoService,
    unfinished: pathlib.Path,
    edit: Callable[[dict[str, Any]], Any],
    said: str,
) -> None:
    path = unfinished / CHECKPOINT
    path.write_text(json.dumps(edit(checkpoint(unfinished))), encoding="utf-8")
    before = contents(unfinished)
    for attempt in (
        lambda: pull(client, unfinished),
        lambda: pull(client, unfinished, repair=True),  # repair mends files, not this
        lambda: sn.dataset_summary(unfinished),
    ):
        with pytest.raises(sn.DatasetDamaged) as info:
            attempt()
        exc = info.value
        assert exc.part is None
        assert f"{path} is not the checkpoint a pull wrote: " in str(exc)
        assert said in str(exc)
        assert "pass overwrite=True to start again" in str(exc)
        assert isinstance(exc, sn.DatasetMismatch)
    assert demo.requests == []
    assert contents(unfinished) == before


def test_a_checkpoint_that_is_not_json_is_refused(
    client: sn.Client, demo: DemoService, unfinished: pathlib.Path, reference: pathlib.Path
) -> None:
    text = (unfinished / CHECKPOINT).read_text(encoding="utf-8")
    (unfinished / CHECKPOINT).write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(sn.DatasetDamaged, match="it is not JSON text") as info:
        pull(client, unfinished)
    assert info.value.part is None
    assert demo.requests == []
    pull(client, unfinished, overwrite=True)
    assert_same_dataset(unfinished, reference)


@pytest.mark.parametrize(("format_", "version"), [(1, "an earlier"), (3, "a later")])
def test_a_checkpoint_of_another_format_is_refused(
    client: sn.Client,
    demo: DemoService,
    unfinished: pathlib.Path,
    reference: pathlib.Path,
    format_: int,
    version: str,
) -> None:
    state = checkpoint(unfinished)
    state["format"] = format_
    (unfinished / CHECKPOINT).write_text(json.dumps(state), encoding="utf-8")
    for attempt in (lambda: pull(client, unfinished), lambda: sn.dataset_summary(unfinished)):
        with pytest.raises(sn.DatasetMismatch) as info:
            attempt()
        assert not isinstance(info.value, sn.DatasetDamaged)
        assert f"was written by {version} version (format {format_}); this one reads" in str(
            info.value
        )
        assert "pass overwrite=True to start again" in str(info.value)
    assert demo.requests == []
    pull(client, unfinished, overwrite=True)
    assert_same_dataset(unfinished, reference)


# --- the files are checked before any request ----------------------------------------------


def _truncate(path: pathlib.Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _empty(path: pathlib.Path) -> None:
    path.write_bytes(b"")


def _fewer_rows(path: pathlib.Path) -> None:
    # A valid Parquet file in its place, with the first eight rows only.
    pq.write_table(pq.read_table(path).slice(0, 8), path)


def _flip_a_byte(path: pathlib.Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF  # in the row groups: the footer still reads
    path.write_bytes(bytes(data))


def _remove(path: pathlib.Path) -> None:
    path.unlink()


@pytest.mark.parametrize(
    ("name", "damage", "said", "kept", "cursor"),
    [
        ("part-00001.parquet", _truncate, "is not a Parquet file a reader can open", 30, 29),
        ("part-00000.parquet", _empty, "is not a Parquet file a reader can open", 0, None),
        ("part-00001.parquet", _fewer_rows, "holds 8 rows where", 30, 29),
        ("part-00000.parquet", _flip_a_byte, "does not hold the bytes that were written", 0, None),
        ("part-00001.parquet", _remove, "is missing", 30, 29),
        (".part-00002.parquet.seg-00000", _empty, "is not a Parquet file", 60, 59),
    ],
)
def test_a_damaged_file_is_named_before_any_request_and_repaired(
    client: sn.Client,
    demo: DemoService,
    unfinished: pathlib.Path,
    reference: pathlib.Path,
    name: str,
    damage: Callable[[pathlib.Path], None],
    said: str,
    kept: int,
    cursor: int | None,
) -> None:
    damage(unfinished / name)
    before = contents(unfinished)
    for attempt in (lambda: pull(client, unfinished), lambda: sn.dataset_summary(unfinished)):
        with pytest.raises(sn.DatasetDamaged) as info:
            attempt()
        exc = info.value
        assert exc.part == name
        assert f"{unfinished}: {name}, listed in the checkpoint, {said}" in str(exc)
        assert f"pass repair=True to drop {name}" in str(exc)
        assert f"({kept} profiles are kept), or pass overwrite=True to start again" in str(exc)
    assert demo.requests == []
    assert contents(unfinished) == before
    summary = pull(client, unfinished, repair=True)
    assert summary.complete
    # Pulled on from the end of the last good file, to the dataset of an uninterrupted pull.
    assert pages_from(demo)[0] == (None if cursor is None else demo.profiles[cursor]["id"])
    assert_same_dataset(unfinished, reference)


def test_a_damaged_part_of_a_complete_dataset_is_found_and_repaired(
    client: sn.Client, demo: DemoService, reference: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = pathlib.Path(shutil.copytree(reference, tmp_path / "profiles"))
    _truncate(out / "part-00004.parquet")
    with pytest.raises(sn.DatasetDamaged, match=r"part-00004\.parquet, listed") as info:
        pull(client, out)
    assert info.value.part == "part-00004.parquet"
    assert "drop part-00004.parquet and the 1 files after it" in str(info.value)
    assert demo.requests == []
    assert pull(client, out, repair=True).complete
    # Parts 0-3 hold profiles 0-99: the pull goes on from there.
    assert pages_from(demo)[0] == demo.profiles[99]["id"]
    assert_same_dataset(out, reference)


def test_a_complete_dataset_without_its_common_metadata_is_sealed_again(
    client: sn.Client, demo: DemoService, reference: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = pathlib.Path(shutil.copytree(reference, tmp_path / "profiles"))
    (out / "_common_metadata").unlink()
    with pytest.raises(sn.DatasetDamaged, match="pass repair=True to seal") as info:
        sn.dataset_summary(out)
    assert info.value.part == "_common_metadata"
    assert pull(client, out, repair=True).complete
    assert demo.requests == []
    assert_same_dataset(out, reference)


@pytest.mark.parametrize("stop", ["before", "after"])
def test_a_sealing_stopped_at_a_rename_is_carried_on(
    client: sn.Client,
    demo: DemoService,
    reference: pathlib.Path,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    stop: str,
) -> None:
    out = tmp_path / "profiles"
    # The crash must land just before or just after the sealing renames a rewritten
    # part into place, which no public name reaches: the checkpoint's save is wrapped.
    save = Checkpoint.save
    said: list[Any] = []

    def crash(state: Checkpoint, directory: pathlib.Path) -> Checkpoint:
        if stop == "after" and said and said[-1] is not None and state.sealing is None:
            raise KeyboardInterrupt  # renamed, not yet recorded
        save(state, directory)
        said.append(state.sealing)
        if stop == "before" and state.sealing is not None:
            raise KeyboardInterrupt  # recorded, not yet renamed
        return state

    monkeypatch.setattr(Checkpoint, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        pull(client, out)
    monkeypatch.undo()
    state = checkpoint(out)
    assert state["sealing"]["name"] == "part-00000.parquet"
    assert (state["ended"], state["complete"]) == (True, False)
    assert sn.dataset_summary(out).profiles == 150  # either file of part 0 is whole
    demo.requests.clear()
    assert pull(client, out).complete
    assert demo.requests == []
    assert_same_dataset(out, reference)


# --- a dataset belongs to one service ---------------------------------------------------------


def test_a_dataset_of_another_service_is_refused(
    client: sn.Client, demo: DemoService, unfinished: pathlib.Path
) -> None:
    before = contents(unfinished)
    here = origin(demo.base_url)
    with serve(profiles=profiles()) as other, other.client() as elsewhere:
        there = origin(other.base_url)
        assert there != here  # the same data, the same db_id: only the service differs
        with pytest.raises(sn.DatasetMismatch, match="checkpoint of another pull") as info:
            pull(elsewhere, unfinished)
        assert other.requests == []
    assert f"service: {here!r} there, {there!r} now" in str(info.value)
    assert demo.requests == []
    assert contents(unfinished) == before
    assert checkpoint(unfinished)["service"] == here
    # The checkpoint names the service, never its token.
    assert demo.token not in (unfinished / CHECKPOINT).read_text(encoding="utf-8")
    pull(client, unfinished)  # its own service carries it on


@pytest.mark.parametrize(
    ("url", "service"),
    [
        ("http://127.0.0.1:8123", "http://127.0.0.1:8123"),
        ("https://API.Example.com/", "https://api.example.com:443"),
        ("https://api.example.com:443/platform/", "https://api.example.com:443/platform"),
        ("http://api.example.com:80/x", "http://api.example.com:80/x"),
        ("http://[::1]:9000/", "http://[::1]:9000"),
    ],
)
def test_the_service_is_its_origin_and_base_path(url: str, service: str) -> None:
    with sn.Client(url, "token") as client:
        assert origin(client.base_url) == service


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com",
        "http://",
        "http://host:port/",
        "http://user:secret@api.example.com/x?token=abc#top",
    ],
)
def test_an_address_without_a_service_is_refused(url: str) -> None:
    # The client refuses it, so no dataset can hold it, nor a user name or a query.
    with pytest.raises(sn.InvalidInput):
        sn.Client(url, "token")


# --- progress is saved as it goes --------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "saved"),
    [
        # Every page: at each reply the checkpoint holds every page before it.
        pytest.param(EVERY_PAGE, [10 * n for n in range(16)], id="every-second"),
        pytest.param({"commit_bytes": 1}, [10 * n for n in range(16)], id="every-byte"),
        # No window: parts only, closed at 30 profiles, or early where late_score joins.
        pytest.param(
            {}, [0, 0, 0, 30, 30, 30, 60, 60, 60, 90, 90, 100, 100, 130, 130, 130], id="parts"
        ),
    ],
)
def test_progress_is_committed_at_each_window_into_the_same_files(
    demo: DemoService,
    reference: pathlib.Path,
    tmp_path: pathlib.Path,
    window: dict[str, Any],
    saved: list[int],
) -> None:
    out = tmp_path / "profiles"
    seen: list[int] = []

    def look(reply: int) -> None:
        # At each reply (15 pages and the empty one), the profiles saved on disk.
        seen.append(checkpoint(out)["profiles"])

    with hooked(demo, look) as client:
        summary = pull(client, out, lookahead=0, **window)
    # The writer works a page behind the replies: at each, its checkpoint holds the
    # pages before it, or all but the page it is writing.
    assert seen == sorted(seen)
    assert all(now in (saved[n], saved[max(n - 1, 0)]) for n, now in enumerate(seen)), seen
    assert summary.profiles == 150
    # Committed in segments or not, the parts are those of the reference, byte for byte.
    assert_same_dataset(out, reference)


@pytest.mark.parametrize("window", [EVERY_PAGE, NO_WINDOW], ids=["every-page", "no-window"])
# Nothing read; a part to go on with; a part to close as a column joins; all but the end.
@pytest.mark.parametrize("failing", [1, 5, 11, 12, 16])
def test_a_pull_failed_at_any_page_keeps_every_whole_page_and_resumes_exactly(
    client: sn.Client,
    demo: DemoService,
    reference: pathlib.Path,
    tmp_path: pathlib.Path,
    window: dict[str, Any],
    failing: int,
) -> None:
    out = tmp_path / "profiles"
    demo.add_fault("profiles/list", "status", status=500, times=None, after=failing - 1)
    with pytest.raises(sn.ServerError) as info:
        pull(client, out, **window)
    # Every page before the failing request is saved, whatever the window.
    profiles_saved = 10 * (failing - 1)
    assert info.value.partial.profiles == profiles_saved
    assert f"{profiles_saved} profiles are saved in {out}" in str(info.value)
    assert sn.dataset_summary(out) == info.value.partial
    demo.clear_faults()
    demo.requests.clear()
    assert pull(client, out, **window).complete
    first = demo.profiles[profiles_saved - 1]["id"] if profiles_saved else None
    assert pages_from(demo)[0] == first
    assert_same_dataset(out, reference)


def test_ctrl_c_between_pages_saves_them(
    demo: DemoService, reference: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "profiles"

    def ctrl_c(reply: int) -> None:
        if reply == 6:
            raise KeyboardInterrupt

    # At the sixth reply: part 0 (pages 1-3) is closed, pages 4 and 5 were written whole.
    with hooked(demo, ctrl_c) as client, pytest.raises(KeyboardInterrupt) as info:
        pull(client, out, lookahead=0)
    assert f"50 profiles are saved in {out}; call to_dataset again" in notes(info.value)
    assert listing(out) == [
        ".part-00001.parquet.seg-00000",
        "_checkpoint.json",
        "part-00000.parquet",
    ]
    summary = sn.dataset_summary(out)
    assert (summary.parts, summary.profiles, summary.complete) == (1, 50, False)
    assert summary.next_from_id == demo.profiles[49]["id"]
    demo.requests.clear()
    with demo.client() as client:
        pull(client, out)
    assert pages_from(demo)[0] == demo.profiles[49]["id"]
    assert_same_dataset(out, reference)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="needs SIGINT")
def test_a_real_ctrl_c_saves_the_pages_written(
    client: sn.Client, demo: DemoService, reference: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "profiles"
    with held_writer(demo, out, 6, 30) as writer:
        os.kill(writer.pid, signal.SIGINT)
        assert writer.stderr is not None
        said = writer.stderr.read()
        writer.wait(timeout=60)
    assert writer.returncode != 0
    assert "KeyboardInterrupt" in said
    assert f"50 profiles are saved in {out}" in said
    assert dataset.LOCK not in listing(out)  # the writer let its lock go on the way out
    assert sn.dataset_summary(out).profiles == 50
    demo.requests.clear()
    pull(client, out)
    assert pages_from(demo)[0] == demo.profiles[49]["id"]
    assert_same_dataset(out, reference)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_pull_loses_at_most_its_commit_window(
    client: sn.Client, demo: DemoService, reference: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "profiles"
    # Every page committed: killed at the sixth reply, the five pages before it are saved
    # (without a window only part 0 would be: tests/test_dataset.py).
    with held_writer(demo, out, 6, 50, **EVERY_PAGE) as writer:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=60)
    assert writer.returncode == -signal.SIGKILL
    assert sn.dataset_summary(out).profiles == 50
    assert [s["profiles"] for s in checkpoint(out)["open"]] == [10, 10]
    demo.requests.clear()
    pull(client, out)
    assert pages_from(demo)[0] == demo.profiles[49]["id"]
    assert_same_dataset(out, reference)


# --- dataset_summary ------------------------------------------------------------------------


def test_the_summary_of_a_complete_dataset_is_what_the_pull_returned(
    client: sn.Client, reference: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    returned = pull(client, reference)
    assert sn.dataset_summary(reference) == returned
    assert sn.dataset_summary(str(reference), checksums=False) == sn.DatasetSummary(
        reference, 6, 150, returned.rows, True, returned.next_from_id
    )
    assert len(returned) == returned.rows == len(pq.read_table(reference))


def test_a_summary_of_no_dataset_is_refused(tmp_path: pathlib.Path) -> None:
    (tmp_path / "file").write_text("")
    for path in (tmp_path, tmp_path / "file", tmp_path / "missing"):
        with pytest.raises(sn.InvalidInput, match="there is no dataset to sum up"):
            sn.dataset_summary(path)
    with pytest.raises(sn.InvalidInput, match="checksums"):
        sn.dataset_summary(tmp_path, checksums="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "options",
    [
        {"commit_seconds": -1},
        {"commit_seconds": float("nan")},
        {"commit_seconds": True},
        {"commit_seconds": "5"},
        {"commit_bytes": 0},
        {"commit_bytes": 1.5},
        {"repair": "yes"},
    ],
)
def test_bad_commit_options_are_refused_before_anything_is_written(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, options: dict[str, Any]
) -> None:
    with pytest.raises(sn.InvalidInput):
        pull(client, tmp_path / "profiles", **options)
    assert not (tmp_path / "profiles").exists()
    assert demo.requests == []
