"""Suppression-list export end to end, against the demo service on loopback."""

from __future__ import annotations

import hashlib
import logging
import pathlib
import sys
import traceback
import warnings
from collections.abc import Iterator

import pandas as pd
import pytest

import stoplist_nb as sn
from stoplist_nb.demo import DemoService, serve
from stoplist_nb.suppression import tasks as tasks_module
from stoplist_nb.suppression.export import read_export_files
from stoplist_nb.suppression.tasks import get_task

SECRET = "exp0rt-T0KEN-5ec2e7"


@pytest.fixture(scope="module")
def svc() -> Iterator[DemoService]:
    with serve(profiles=150, seed=11, token=SECRET) as service:
        yield service


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def expected_hashes(svc: DemoService, type: str) -> set[str]:
    kinds = ["emails", "phones", "domains"] if type == "all" else [type]
    return {md5(v) for kind in kinds for v in svc.suppressed[kind]}


def fast_wait(client: sn.Client, task_id: str, **kwargs: object) -> sn.TaskStatus:
    kwargs = {"poll_interval": 0.01, "max_interval": 0.02, "progress": False, **kwargs}
    return sn.wait_for_task(client, task_id, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("type", ["emails", "phones", "domains", "all"])
def test_read_suppression_list_every_type(
    client: sn.Client, demo: DemoService, type: str, tmp_path: pathlib.Path
) -> None:
    demo.plan_next_export(steps=2)
    df = sn.read_suppression_list(
        client, demo.suppress_id, poll_interval=0.01, type=type, progress=False, dest=tmp_path
    )
    assert set(df["md5"]) == expected_hashes(demo, type)
    assert df["md5"].dtype == pd.StringDtype("pyarrow")
    assert df.attrs["list_id"] == demo.suppress_id
    assert df.attrs["total"] == len(df)
    assert df.attrs["file"] == f"{demo.suppress_name}.md5.zip"
    assert (tmp_path / df.attrs["file"]).is_file()
    assert not list(tmp_path.glob("*.part"))
    exports = [r for r in demo.requests if r.method == "suppresses/export"]
    assert [r.params["type"] for r in exports] == [type]


def test_steps_progress_and_result(client: sn.Client, demo: DemoService) -> None:
    demo.plan_next_export(steps=3, words=("queued", "exporting", "packing"))
    task_id = sn.start_suppression_export(client, demo.suppress_id, type="emails")
    seen = []
    while not (status := sn.get_task(client, task_id)).done:
        assert not status.failed
        seen.append((status.status, status.progress, status.hashed_files))
    assert seen[0][0] == "queued"
    assert {s[2] for s in seen} == {()}  # no file before completion
    assert [s[1] for s in seen] == sorted(s[1] for s in seen)
    assert status.progress == 100
    assert status.total == len(demo.suppressed["emails"])
    assert status.hashed_files[0].startswith("suppress/")


@pytest.mark.parametrize("final", ["completed", "success"])
@pytest.mark.parametrize("as_list", [False, True])
def test_final_words_and_list_paths(
    client: sn.Client, demo: DemoService, final: str, as_list: bool
) -> None:
    demo.plan_next_export(steps=1, final=final, hashed_file_as_list=as_list)
    df = sn.read_suppression_list(
        client, demo.suppress_id, poll_interval=0.01, type="phones", progress=False
    )
    assert set(df["md5"]) == expected_hashes(demo, "phones")


def test_failed_task_raises_with_service_text(client: sn.Client, demo: DemoService) -> None:
    demo.plan_next_export(steps=1, fail=True)
    task_id = sn.start_suppression_export(client, demo.suppress_id)
    with pytest.raises(sn.TaskFailed, match="list is locked") as info:
        fast_wait(client, task_id)
    assert info.value.task_id == task_id


def test_deadline_names_the_task_and_wait_resumes(client: sn.Client, demo: DemoService) -> None:
    demo.plan_next_export(steps=1, never=True)
    task_id = sn.start_suppression_export(client, demo.suppress_id)
    with pytest.raises(sn.TaskTimeout) as info:
        fast_wait(client, task_id, task_timeout=0.2)
    err = info.value
    assert isinstance(err, TimeoutError)
    assert err.task_id == task_id
    assert f"wait_for_task(client, {task_id!r})" in str(err)
    polls = [r for r in demo.requests if r.method == "tasks/status"]
    assert 2 <= len(polls) <= 25  # growing interval, bounded by the deadline


def test_interrupt_leaves_the_task_id_visible(
    client: sn.Client,
    demo: DemoService,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ctrl-C in a notebook: no server can send that, so the third poll raises it here.
    demo.plan_next_export(steps=1, never=True)
    task_id = sn.start_suppression_export(client, demo.suppress_id)
    polls: list[str] = []

    def interrupted(c: sn.Client, t: str) -> sn.TaskStatus:
        polls.append(t)
        if len(polls) == 3:
            raise KeyboardInterrupt
        return get_task(c, t)

    monkeypatch.setattr(tasks_module, "get_task", interrupted)  # where wait_for_task looks
    with pytest.raises(KeyboardInterrupt) as info:
        fast_wait(client, task_id)
    assert len(polls) == 3
    assert f"wait_for_task(client, {task_id!r})" in capsys.readouterr().err
    if sys.version_info >= (3, 11):
        assert any(task_id in note for note in info.value.__notes__)


@pytest.mark.parametrize("bad", [{"type": "sms"}, {"type": None}, {"list_id": "7"}])
def test_bad_arguments_before_any_request(
    client: sn.Client, demo: DemoService, bad: dict[str, object]
) -> None:
    kwargs: dict[str, object] = {"list_id": demo.suppress_id, "type": "all", **bad}
    list_id = kwargs.pop("list_id")
    with pytest.raises(sn.InvalidInput):
        sn.start_suppression_export(client, list_id, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(sn.InvalidInput):
        sn.read_suppression_list(client, list_id, progress=False, **kwargs)  # type: ignore[arg-type]
    assert demo.requests == []


UNSAFE = [
    "https://evil.example/x.zip",
    "//evil.example/x.zip",
    "/etc/passwd",
    "suppress/../../x.zip",
    "suppress\\x.zip",
    "suppress/x\n.zip",
]


@pytest.mark.parametrize("path", UNSAFE)
def test_foreign_hashed_file_is_refused(client: sn.Client, demo: DemoService, path: str) -> None:
    demo.plan_next_export(steps=1, hashed_file=path)
    with pytest.raises(sn.UnsafePath) as info:
        sn.read_suppression_list(client, demo.suppress_id, poll_interval=0.01, progress=False)
    assert isinstance(info.value, ValueError)
    assert not [r for r in demo.requests if r.method == "download"]


def first_file(client: sn.Client, demo: DemoService, **plan: object) -> str:
    demo.plan_next_export(steps=1, **plan)
    task_id = sn.start_suppression_export(client, demo.suppress_id)
    return fast_wait(client, task_id).hashed_files[0]


@pytest.mark.parametrize(
    ("kind", "status", "cls"),
    [
        ("status", 404, sn.APIError),
        ("status", 403, sn.AuthError),
        ("truncate", None, sn.IncompleteDownload),
        ("reset", None, sn.ConnectError),
    ],
)
def test_failed_download_leaves_nothing_and_no_token(
    client: sn.Client,
    demo: DemoService,
    tmp_path: pathlib.Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    status: int | None,
    cls: type[Exception],
) -> None:
    path = first_file(client, demo)
    demo.add_fault("download", kind, status=status or 503, times=None)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(cls) as info:
        sn.download_export(client, path, tmp_path, progress=True)
    assert list(tmp_path.iterdir()) == []
    said = "".join(traceback.format_exception(info.value)) + caplog.text
    said += "".join(capsys.readouterr())
    assert SECRET not in said
    assert SECRET not in repr(vars(info.value))


def test_download_streams_to_file(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = first_file(client, demo)
    caplog.set_level(logging.DEBUG)
    saved = sn.download_export(client, [path], tmp_path / "copy.zip", progress=False)
    assert saved == tmp_path / "copy.zip"
    assert sn.read_hashed_csv(saved)["md5"].notna().all()
    download = [r for r in demo.requests if r.method == "download"][-1]
    assert SECRET not in str(download)
    assert "token=***" in caplog.text or "/api/download/" not in caplog.text
    assert SECRET not in caplog.text


@pytest.mark.parametrize("layout", ["plain", "header", "semicolon", "two_columns", "crlf", "upper"])
def test_csv_layouts_from_the_service(client: sn.Client, demo: DemoService, layout: str) -> None:
    demo.plan_next_export(steps=1, csv_layout=layout)
    df = sn.read_suppression_list(
        client, demo.suppress_id, poll_interval=0.01, type="all", progress=False
    )
    assert set(df["md5"]) == expected_hashes(demo, "all")


def test_bad_rows_warn_and_count_mismatch_warns(client: sn.Client, demo: DemoService) -> None:
    demo.plan_next_export(steps=1, csv_layout="bad_rows")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = sn.read_suppression_list(client, demo.suppress_id, poll_interval=0.01, progress=False)
    messages = " ".join(str(w.message) for w in caught)
    assert "rows have no valid MD5" in messages
    assert "reported" in messages  # rows != total
    assert len(df) > df.attrs["total"]


@pytest.mark.parametrize(
    ("archive", "cls"), [("bomb", sn.ArchiveTooLarge), ("corrupt", sn.BadArchive)]
)
def test_hostile_archives(
    client: sn.Client, demo: DemoService, archive: str, cls: type[Exception]
) -> None:
    demo.plan_next_export(steps=1, archive=archive)
    with pytest.raises(cls):
        sn.read_suppression_list(client, demo.suppress_id, poll_interval=0.01, progress=False)


@pytest.mark.slow
def test_zip_limits_can_be_raised(client: sn.Client, demo: DemoService) -> None:
    demo.plan_next_export(steps=1, archive="bomb")
    with pytest.warns(UserWarning, match="reported 64 contacts"):  # the bomb is not the list
        df = sn.read_suppression_list(
            client, demo.suppress_id, poll_interval=0.01, progress=False, max_ratio=10_000
        )
    assert len(df) > 1_000_000  # the 200 MiB member, read once the limit allows it
    assert df["md5"].str.len().eq(32).all()


@pytest.mark.parametrize("archive", ["junk", "two_csv"])
def test_junk_members_are_ignored(client: sn.Client, demo: DemoService, archive: str) -> None:
    demo.plan_next_export(steps=1, archive=archive)
    df = sn.read_suppression_list(client, demo.suppress_id, poll_interval=0.01, progress=False)
    assert set(df["md5"]) == expected_hashes(demo, "all")


def test_match_own_contacts(client: sn.Client, demo: DemoService) -> None:
    stop = sn.read_suppression_list(client, demo.suppress_id, poll_interval=0.01, progress=False)
    profiles = sn.read_profiles(client, demo.db_id, progress=False)
    flagged = sn.flag_suppressed(profiles, stop, email="email", phone="phone")
    hit = flagged[flagged["suppressed"]]
    assert len(hit) > 0
    assert set(hit["suppressed_by"]) == {"email", "phone", "domain"}
    assert flagged.attrs["checked"] == ["email", "phone", "domain"]
    emails = {e.strip().lower() for e in demo.suppressed["emails"]}
    assert set(flagged.loc[flagged["suppressed_by"] == "email", "email"].str.lower()) <= emails
    at_domain = flagged.loc[flagged["suppressed_by"] == "domain", "email"]
    assert set(at_domain.str.strip().str.lower().str.rpartition("@")[2]) <= set(
        demo.suppressed["domains"]
    )
    assert len(flagged) == len(profiles)


def test_files_of_one_export_that_share_a_name_are_each_read(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    # Two exports of one list: their files differ but share the name "<list>.md5.zip".
    done = [
        fast_wait(client, sn.start_suppression_export(client, demo.suppress_id, type=kind))
        for kind in ("emails", "phones")
    ]
    paths = [s.hashed_files[0] for s in done]
    assert paths[0] != paths[1]
    assert pathlib.PurePosixPath(paths[0]).name == pathlib.PurePosixPath(paths[1]).name
    both = sn.TaskStatus("t", "completed", 100, {"hashed_file": paths})
    frame, saved = read_export_files(client, both, tmp_path, progress=False)
    expected = [hashlib.md5(c.encode()).hexdigest() for k in ("emails", "phones")
                for c in demo.suppressed[k]]  # fmt: skip
    assert sorted(frame["md5"].str.lower()) == sorted(expected)
    assert [p.name for p in saved] == [pathlib.PurePosixPath(p).name for p in paths]


def test_a_finished_task_without_a_file_is_an_invalid_reply(client: sn.Client) -> None:
    with pytest.raises(sn.InvalidReply, match="names no file"):
        read_export_files(client, sn.TaskStatus("t", "completed", 100, {}), ".")
