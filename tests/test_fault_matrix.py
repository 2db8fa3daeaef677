"""Faults of docs/faults.md that no other test file proves, and a check that the matrix holds.

Every fault is played by the demo service on loopback. The last test reads
docs/faults.md and checks that each test it names exists, and that each test
here is named there, so the matrix and the tests cannot drift apart.
"""

from __future__ import annotations

import ast
import hashlib
import json
import pathlib
import re
import warnings
from typing import Any

import archives
import pandas as pd
import pytest
from archives import make_zip

import stoplist_nb as sn
from stoplist_nb._http.retry import default_retry
from stoplist_nb.demo import DemoService
from stoplist_nb.profiles.normalize import normalize_profiles

ROOT = pathlib.Path(__file__).resolve().parent.parent
MATRIX = ROOT / "docs" / "faults.md"
HASHES = [hashlib.md5(str(i).encode()).hexdigest() for i in range(6)]
CSV = "".join(f"{h}\n" for h in HASHES).encode()


def ids(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["profile_id"]))


def page(rows: list[Any], **envelope: Any) -> str:
    return json.dumps({"error": 0, "error_text": "ok", "data": rows, **envelope})


def sent(demo: DemoService, method: str = "profiles/list") -> int:
    return sum(r.method == method for r in demo.requests)


def read(client: sn.Client, demo: DemoService, **kwargs: Any) -> pd.DataFrame:
    return sn.read_profiles(client, demo.db_id, limit=5, progress=False, **kwargs)


def assert_rest_completes(
    client: sn.Client, demo: DemoService, exc: sn.StoplistError, full: pd.DataFrame
) -> None:
    """The 10 profiles in ``exc.partial`` plus a read resumed at ``exc.resume_from`` are all."""
    assert ids(exc.partial) == [p["id"] for p in demo.profiles[:10]]
    assert exc.resume_from == demo.profiles[9]["id"]
    demo.clear_faults()
    rest = read(client, demo, from_id=exc.resume_from)
    pd.testing.assert_frame_equal(pd.concat([exc.partial, rest], ignore_index=True), full)


# --- HTTP statuses and broken replies, on the third page of a read ---------------------


def test_http_500_is_not_retried_and_keeps_what_was_read(
    client: sn.Client, demo: DemoService
) -> None:
    full = read(client, demo)
    demo.requests.clear()
    demo.add_fault("profiles/list", "status", status=500, times=None, after=2)
    with pytest.raises(sn.ServerError) as info:
        read(client, demo)
    assert (info.value.code, info.value.http_status) == (500, 500)
    assert sent(demo) == 3  # 500 is not among the statuses worth another try
    assert_rest_completes(client, demo, info.value, full)


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.parametrize(
    ("status", "cls"), [(429, sn.RateLimited), (502, sn.ServerError), (504, sn.ServerError)]
)
def test_retried_statuses_that_persist_keep_what_was_read(
    client: sn.Client, demo: DemoService, status: int, cls: type[sn.APIError]
) -> None:
    full = read(client, demo)
    demo.requests.clear()
    demo.add_fault("profiles/list", "status", status=status, times=None, after=2)
    with pytest.raises(cls) as info:
        read(client, demo)
    assert info.value.http_status == status
    retries = default_retry().total
    assert isinstance(retries, int)
    assert sent(demo) == 2 + 1 + retries
    assert_rest_completes(client, demo, info.value, full)


@pytest.mark.slow
@pytest.mark.parametrize(
    "body",
    ["<html><body><h1>Please sign in</h1></body></html>", '{"error":0,"data":[{"id":', "OK"],
    ids=["html page", "cut json", "plain text"],
)
def test_reply_with_http_200_that_is_not_json_is_an_invalid_reply(
    client: sn.Client, demo: DemoService, body: str
) -> None:
    full = read(client, demo)
    demo.requests.clear()
    demo.add_fault("profiles/list", "raw", text=body, headers={"Content-Type": "text/html"})
    with pytest.raises(sn.InvalidReply, match="not a JSON object"):
        client.call("profiles/list", db_id=demo.db_id)
    demo.add_fault("profiles/list", "raw", text=body, after=2)
    with pytest.raises(sn.InvalidReply, match=r"not a JSON") as info:
        read(client, demo)
    assert sent(demo) == 1 + 3  # an answer, if a useless one: not retried
    assert_rest_completes(client, demo, info.value, full)


def test_truncated_reply_to_a_read_keeps_what_was_read(
    client: sn.Client, demo: DemoService
) -> None:
    full = read(client, demo)
    demo.requests.clear()
    demo.add_fault("profiles/list", "truncate", after=2)  # half the body, then the socket closes
    with pytest.raises(sn.ConnectError) as info:
        read(client, demo)
    assert isinstance(info.value, ConnectionError)
    assert sent(demo) == 3  # the reply had begun: not retried
    assert_rest_completes(client, demo, info.value, full)


@pytest.mark.slow
@pytest.mark.parametrize(
    "envelope",
    [{}, {"error": None}, {"error_text": "Successful operation"}],
    ids=["no error", "error null", "error_text only"],
)
def test_envelope_without_error_is_read_as_success(
    client: sn.Client, demo: DemoService, envelope: dict[str, Any]
) -> None:
    full = read(client, demo)
    rows = demo.profiles[10:15]
    body = json.dumps({**envelope, "data": rows, "next_from_id": rows[-1]["id"]})
    demo.add_fault("profiles/list", "raw", text=body, after=2)
    pd.testing.assert_frame_equal(read(client, demo), full)
    demo.add_fault("profiles/list", "raw", text=json.dumps(envelope))
    assert client.call("profiles/list", db_id=demo.db_id) == envelope


@pytest.mark.parametrize("error", ["boom", [1], {"code": 1}], ids=repr)
def test_error_that_is_not_a_number_is_an_invalid_reply(
    client: sn.Client, demo: DemoService, error: Any
) -> None:
    demo.add_fault("profiles/list", "raw", text=json.dumps({"error": error, "data": []}))
    with pytest.raises(sn.InvalidReply, match="'error' is not a number"):
        client.call("profiles/list", db_id=demo.db_id)
    assert sent(demo) == 1


@pytest.mark.parametrize(
    ("status", "envelope", "cls", "code"),
    [
        (404, {"error": 400, "error_text": "bad query"}, sn.BadRequest, 400),
        (403, {"error": 403, "error_text": "no access"}, sn.AuthError, 403),
        (400, {"error": 0, "error_text": "Successful operation"}, sn.BadRequest, 400),
        (409, {"error_text": "conflict"}, sn.APIError, 409),
        (404, {"error": 777, "error_text": "odd"}, sn.APIError, 777),
    ],
    ids=["code wins", "same code", "error 0", "no error", "unknown code"],
)
def test_error_code_with_a_4xx_status(
    client: sn.Client,
    demo: DemoService,
    status: int,
    envelope: dict[str, Any],
    cls: type[sn.APIError],
    code: int,
) -> None:
    demo.add_fault("profiles/list", "raw", status=status, text=json.dumps(envelope))
    with pytest.raises(cls) as info:
        client.call("profiles/list", db_id=demo.db_id)
    assert type(info.value) is cls
    assert (info.value.code, info.value.http_status) == (code, status)
    assert info.value.text == envelope["error_text"]
    assert sent(demo) == 1


# --- what the rows hold -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("row", [None, 42, "profile", ["a", "b"]], ids=repr)
def test_profile_that_is_not_an_object_keeps_what_was_read(
    client: sn.Client, demo: DemoService, row: Any
) -> None:
    full = read(client, demo)
    rows = [*demo.profiles[10:14], row]
    demo.add_fault("profiles/list", "raw", text=page(rows, next_from_id="z"), after=2)
    with pytest.raises(sn.InvalidReply, match=r"not an object|must be an object") as info:
        read(client, demo)
    assert not isinstance(info.value, sn.InvalidInput)  # the service's fault, not the caller's
    assert_rest_completes(client, demo, info.value, full)


def test_duplicate_ids_across_pages_are_kept_as_sent(client: sn.Client, demo: DemoService) -> None:
    # The cursor moves on, but the second page repeats the last profile of the first.
    first, second = demo.profiles[0:5], demo.profiles[4:9]
    demo.add_fault("profiles/list", "raw", text=page(first, next_from_id=first[-1]["id"]))
    demo.add_fault("profiles/list", "raw", text=page(second, next_from_id=second[-1]["id"]))
    demo.add_fault("profiles/list", "raw", text=page([]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = read(client, demo)
    # Each profile as sent, the repeated one twice (its rows are twice in the frame).
    assert df.attrs["profiles"] == 10
    assert ids(df) == [p["id"] for p in demo.profiles[:9]]
    pd.testing.assert_frame_equal(df, normalize_profiles(first + second))


# --- export tasks ---------------------------------------------------------------------------


def task_reply(status: str, progress: Any, **result: Any) -> str:
    data = {"status": status, "progress": progress, "result": result}
    return json.dumps({"error": 0, "data": data})


def expected_hashes(demo: DemoService, *kinds: str) -> list[str]:
    return sorted(hashlib.md5(v.encode()).hexdigest() for k in kinds for v in demo.suppressed[k])


def suppression_list(client: sn.Client, demo: DemoService, **kwargs: Any) -> pd.DataFrame:
    return sn.read_suppression_list(
        client, demo.suppress_id, poll_interval=0.01, progress=False, **kwargs
    )


@pytest.mark.parametrize(
    "progress",
    [[80, 20, 50], [-5, 250, "abc", None, 1.5, True, "70"]],
    ids=["backwards", "garbage"],
)
def test_task_progress_going_backwards_or_garbage_still_completes(
    client: sn.Client, demo: DemoService, progress: list[Any]
) -> None:
    for value in progress:
        demo.add_fault("tasks/status", "raw", text=task_reply("processing", value))
    demo.plan_next_export(steps=0)
    df = suppression_list(client, demo)
    assert sorted(df["md5"]) == expected_hashes(demo, "emails", "phones", "domains")
    assert sent(demo, "tasks/status") == len(progress) + 1


def test_unknown_status_words_wait_until_a_final_word_or_100_with_a_file(
    client: sn.Client, demo: DemoService
) -> None:
    # "ready" is no final word the package knows: progress 100 with a file ends the wait.
    demo.plan_next_export(steps=3, words=("queued", "exporting", "packing"), final="ready")
    df = suppression_list(client, demo, type="emails")
    assert sorted(df["md5"]) == expected_hashes(demo, "emails")
    assert sent(demo, "tasks/status") == 4


@pytest.mark.parametrize("word", ["failed", "error", "Canceled", " ABORTED ", "rejected"])
def test_failure_words_end_the_wait(client: sn.Client, demo: DemoService, word: str) -> None:
    reply = task_reply(word, 30, error="list is locked")
    demo.add_fault("tasks/status", "raw", text=reply, after=1)
    with pytest.raises(sn.TaskFailed, match=f"{re.escape(word)}: list is locked") as info:
        suppression_list(client, demo)
    assert info.value.status == word
    assert info.value.task_id.startswith("exp-")
    assert sent(demo, "tasks/status") == 2
    assert sent(demo, "download") == 0


@pytest.mark.parametrize("hashed_file", ["", [], ["", ""], None, 5, {"path": "x"}], ids=repr)
def test_finished_task_naming_no_file_is_an_invalid_reply(
    client: sn.Client, demo: DemoService, hashed_file: Any
) -> None:
    demo.add_fault(
        "tasks/status", "raw", text=task_reply("completed", 100, hashed_file=hashed_file)
    )
    with pytest.raises(sn.InvalidReply, match="done but names no file"):
        suppression_list(client, demo)
    assert sent(demo, "download") == 0


def finished_paths(client: sn.Client, demo: DemoService, *kinds: str) -> list[str]:
    """The download paths of real finished exports, one per kind."""
    paths = []
    for kind in kinds:
        demo.plan_next_export(steps=0)
        task_id = sn.start_suppression_export(client, demo.suppress_id, type=kind)
        status = sn.wait_for_task(client, task_id, poll_interval=0.01, progress=False)
        paths.append(status.hashed_files[0])
    return paths


def test_several_hashed_files_are_each_read_and_stacked(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    paths = finished_paths(client, demo, "emails", "phones")
    last = client.download(paths[1], tmp_path / "last.zip", progress=False).read_bytes()
    kept = tmp_path / "kept"
    kept.mkdir()
    total = len(demo.suppressed["emails"]) + len(demo.suppressed["phones"])
    demo.add_fault(
        "tasks/status", "raw", text=task_reply("completed", 100, hashed_file=paths, total=total)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rows match the total: no warning
        df = suppression_list(client, demo, dest=kept)
    assert sorted(df["md5"]) == expected_hashes(demo, "emails", "phones")
    assert df.attrs["file"] == [pathlib.PurePosixPath(p).name for p in paths]
    downloads = [r.path for r in demo.requests if r.method == "download"]
    assert downloads == [f"/api/download/{p}" for p in [paths[1], *paths]]
    # Both files bear the list's name: each was read before the next download
    # replaced it, so the one kept is the last.
    (file,) = kept.iterdir()
    assert file.read_bytes() == last


def test_several_hashed_files_with_an_unsafe_one_are_refused(
    client: sn.Client, demo: DemoService
) -> None:
    (path,) = finished_paths(client, demo, "emails")
    listed = [path, "suppress/../../etc/passwd"]
    demo.add_fault("tasks/status", "raw", text=task_reply("completed", 100, hashed_file=listed))
    with pytest.raises(sn.UnsafePath):
        suppression_list(client, demo)
    # The files are fetched in order: the safe one was, the unsafe one never.
    assert [r.path for r in demo.requests if r.method == "download"] == [f"/api/download/{path}"]


def test_hashed_file_with_a_lone_surrogate_is_unsafe(client: sn.Client, demo: DemoService) -> None:
    # Valid JSON ("\udc80" escaped) that no UTF-8 URL can carry.
    reply = task_reply("completed", 100, hashed_file="suppress/x/\udc80.md5.zip")
    demo.add_fault("tasks/status", "raw", text=reply)
    with pytest.raises(sn.UnsafePath):
        suppression_list(client, demo)
    assert sent(demo, "download") == 0


# --- what the download holds ----------------------------------------------------------------


def serve_download(demo: DemoService, body: bytes, *, total: int | None = None) -> None:
    """Make the next export end at once and its download answer ``body`` (HTTP 200)."""
    status = None
    if total is not None:
        status = task_reply("completed", 100, hashed_file="suppress/x/list.md5.zip", total=total)
    archives.serve_download(demo, body, status=status)


def test_too_many_members_are_refused_and_the_file_kept(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    data = make_zip({f"{i}.csv": b"" for i in range(10_001)})
    serve_download(demo, data)
    with pytest.raises(sn.ArchiveTooLarge, match="lists 10,001 members, beyond the 10,000"):
        suppression_list(client, demo, dest=tmp_path)
    (kept,) = tmp_path.iterdir()
    assert kept.read_bytes() == data


def test_archive_without_a_csv_is_a_bad_archive(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    serve_download(demo, make_zip({"list.json": b"{}", "x.bin": b"\x00\x01", "dir/": b""}))
    with pytest.raises(
        sn.BadArchive, match=r"no CSV file in the ZIP archive; it holds 'list\.json'"
    ):
        suppression_list(client, demo, dest=tmp_path)
    assert len(list(tmp_path.iterdir())) == 1  # the archive, kept as asked


def test_member_names_that_climb_out_are_read_in_memory_never_extracted(
    client: sn.Client, demo: DemoService, tmp_path: pathlib.Path
) -> None:
    dest = tmp_path / "a" / "b"
    dest.mkdir(parents=True)
    members = {"../../escaped.csv": CSV, "/absolute.csv": CSV[:99], "ok/../../x.csv": CSV[99:]}
    serve_download(demo, make_zip(members), total=2 * len(HASHES))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = suppression_list(client, demo, dest=dest)
    assert sorted(df["md5"]) == sorted(HASHES * 2)
    assert df.attrs["file"] == "list.md5.zip"
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert written == ["a", "a/b", "a/b/list.md5.zip"]


@pytest.mark.parametrize("csv", [b"", b"md5\n"], ids=["no bytes", "header only"])
def test_empty_csv_is_an_empty_list(client: sn.Client, demo: DemoService, csv: bytes) -> None:
    serve_download(demo, make_zip({"list.csv": csv}), total=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = suppression_list(client, demo)
    assert len(df) == 0
    assert list(df.columns) == ["md5"]
    assert df["md5"].dtype == pd.StringDtype("pyarrow")


@pytest.mark.parametrize(
    "body",
    [b"", b"<html><body><h1>Please sign in</h1></body></html>\n"],
    ids=["empty", "html page"],
)
def test_download_that_is_not_a_zip_is_a_bad_archive(
    client: sn.Client, demo: DemoService, body: bytes
) -> None:
    # What a captive proxy or a broken gateway answers with HTTP 200; the task gave no total.
    (path,) = finished_paths(client, demo, "emails")
    demo.add_fault("tasks/status", "raw", text=task_reply("completed", 100, hashed_file=path))
    demo.add_fault("download", "raw", body=body, headers={"Content-Type": "text/html"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            df = suppression_list(client, demo)
        except sn.BadArchive:
            return
    raise AssertionError(f"read as a list of {len(df)} rows")


# --- the matrix itself ---------------------------------------------------------------------

NAMED = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def defined_tests(path: pathlib.Path) -> set[str]:
    """Names of the test functions in a test module, at top level or in classes."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def matrix_rows() -> list[tuple[str, list[tuple[str, str]]]]:
    """Each row of the table in docs/faults.md: its fault, and the tests it names."""
    rows = []
    for line in MATRIX.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not line.lstrip().startswith("|") or set(cells[0]) <= set("-: "):
            continue
        if cells[0].lower() == "fault":
            continue
        rows.append((cells[0], NAMED.findall(cells[-1])))
    return rows


def test_every_test_the_matrix_names_exists() -> None:
    rows = matrix_rows()
    assert len(rows) >= 40
    missing, bare = [], []
    cache: dict[str, set[str]] = {}
    for fault, named in rows:
        if not named:
            bare.append(fault)
        for file, name in named:
            path = ROOT / file
            if file not in cache:
                cache[file] = defined_tests(path) if path.is_file() else set()
            if name not in cache[file]:
                missing.append(f"{file}::{name}")
    assert bare == [], "rows that name no test"
    assert missing == [], "tests named in docs/faults.md that do not exist"
    # Each test of this file proves a row: one the matrix does not name is a row missing.
    this = f"tests/{pathlib.Path(__file__).name}"
    named_here = {name for _, named in rows for file, name in named if file == this}
    unnamed = defined_tests(pathlib.Path(__file__)) - named_here
    assert unnamed == {"test_every_test_the_matrix_names_exists"}
