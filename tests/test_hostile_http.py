"""A hostile or broken service: trickled replies, echoed tokens, redirects, huge files.

Each test talks to the demo service on loopback (a raw socket server stands in
where the demo cannot misbehave enough: headers sent byte by byte).
"""

from __future__ import annotations

import io
import json
import logging
import pathlib
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from functools import partial
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from demo_fixtures import served_and_cleared

import stoplist_nb as sn
from stoplist_nb._http.retry import default_retry
from stoplist_nb._http.transport import DEFAULT_DEADLINE, MAX_REDIRECTS
from stoplist_nb.demo import DemoService, serve

# Characters that URL-quoting and JSON-escaping both rewrite, so each form differs.
TOKEN = 'h0stile/t0k"en+\u00e9-9f8e7d6c'
FORMS = {
    TOKEN,
    quote(TOKEN, safe=""),
    quote_plus(TOKEN, safe=""),
    json.dumps(TOKEN)[1:-1],
    json.dumps(TOKEN, ensure_ascii=False)[1:-1],
    json.dumps(TOKEN)[1:-1].replace("/", "\\/"),
    quote(quote(TOKEN, safe=""), safe=""),  # a service's file name, quoted for the URL
}
TEXT = f"bad token {TOKEN}; as sent: ?token={quote(TOKEN, safe='')}; body {json.dumps(TOKEN)}"


#: ``svc3``: the hostile-token service, cleared.
hostile, svc3 = served_and_cleared("hostile", profiles=40, seed=5, token=TOKEN)


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[DemoService]:
    """A second service: another port on loopback is another origin."""
    with serve(profiles=5, seed=1) as service:
        yield service


def fast(svc: DemoService, **kwargs: object) -> sn.Client:
    kwargs.setdefault("retry", default_retry().new(backoff_factor=0.01))
    return svc.client(**kwargs)


def leaks(text: str) -> list[str]:
    return sorted(form for form in FORMS if form.lower() in text.lower())


def everything_said(exc: BaseException) -> str:
    return "\n".join(["".join(traceback.format_exception(exc)), str(exc), repr(exc)])


def finished_export(client: sn.Client, svc: DemoService) -> str:
    """The download path of a finished export."""
    task_id = sn.start_suppression_export(client, svc.suppress_id)
    status = sn.wait_for_task(client, task_id, poll_interval=0.01, progress=False)
    return status.hashed_files[0]


# -- 1. The overall deadline ----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(30)
def test_trickled_call_ends_at_the_deadline(demo: DemoService) -> None:
    demo.add_fault("profiles/list", "trickle", delay=0.2)
    client = fast(demo, deadline=1.0)
    with pytest.raises(sn.RequestTimeout, match=r"profiles/list: .* deadline of 1 s") as info:
        client.call("profiles/list", db_id=demo.db_id, limit=50)
    assert isinstance(info.value, TimeoutError)
    assert demo.token not in everything_said(info.value)


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(30)
def test_trickled_download_ends_at_the_deadline(demo: DemoService, tmp_path: pathlib.Path) -> None:
    client = fast(demo, deadline=1.0)
    path = finished_export(client, demo)
    demo.add_fault("download", "trickle", delay=0.2)
    with pytest.raises(sn.RequestTimeout, match=r"download: .* deadline") as info:
        client.download(path, tmp_path, progress=False)
    assert demo.token not in everything_said(info.value)
    assert list(tmp_path.iterdir()) == []  # not even the .part file


class _SlowHeaders:
    """A server that sends a valid HTTP reply one byte every ``delay`` seconds, headers too."""

    def __init__(self, delay: float = 0.2) -> None:
        self.delay = delay
        self.accepted = 0
        self.stop = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        reply = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b'Content-Length: 11\r\n\r\n{"error":0}'
        )
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._trickle, args=(conn, reply), daemon=True).start()

    def _trickle(self, conn: socket.socket, reply: bytes) -> None:
        with conn:
            conn.recv(65536)
            for i in range(len(reply)):
                if self.stop.wait(self.delay):
                    return
                try:
                    conn.sendall(reply[i : i + 1])
                except OSError:
                    return

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(30)
def test_headers_sent_byte_by_byte_end_at_the_deadline() -> None:
    server = _SlowHeaders(delay=0.2)  # 75 header bytes: 15 s, each well within the read timeout
    try:
        client = sn.Client(
            f"http://127.0.0.1:{server.port}", "t0ken-headers-1234", timeout=(5, 5), deadline=1.0
        )
        with pytest.raises(sn.RequestTimeout, match="deadline of 1 s"):
            client.call("profiles/list", db_id=1)
        assert server.accepted == 1  # the deadline also ended the retries
    finally:
        server.close()


@pytest.mark.timeout(20)
def test_a_retry_pause_past_the_deadline_is_not_made(demo: DemoService) -> None:
    demo.add_fault("profiles/list", "status", status=503, retry_after=30, times=None)
    with pytest.raises(sn.ServerError) as info:  # the service's own error, not a timeout
        fast(demo, deadline=2.0).call("profiles/list", db_id=demo.db_id)
    assert info.value.http_status == 503
    assert sum(r.method == "profiles/list" for r in demo.requests) == 1


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.timeout(60)
def test_a_download_earns_time_for_what_arrives(demo: DemoService) -> None:
    client = fast(demo, deadline=0.3, min_download_rate=100)  # 10 ms earned per byte
    path = finished_export(client, demo)
    demo.add_fault("download", "trickle", delay=0.0005)  # about 2 ms a byte: well over 100 B/s
    sink = io.BytesIO()
    # Small chunks, as each one earns its time when it is complete (the client reads 64 KiB).
    written = client._transport.download(quote(path, safe="/"), sink, chunk_size=64)
    assert written == len(sink.getvalue()) > 500  # so it ran well past the plain 0.3 s


@pytest.mark.parametrize("value", [0, -1, "5", True])
def test_deadline_must_be_positive_or_none(demo: DemoService, value: object) -> None:
    with pytest.raises(sn.InvalidInput, match="deadline"):
        demo.client(deadline=value)
    assert demo.client(deadline=None).call("profiles/list", db_id=demo.db_id, limit=1)["data"]
    assert DEFAULT_DEADLINE == 300


# -- 2. The service's words never carry the token out -----------------------------------


def _assert_nothing_leaks(
    exc: BaseException, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    assert leaks(everything_said(exc)) == []
    for record in caplog.records:
        assert leaks(record.getMessage()) == []
        assert leaks(repr(record.args)) == []
    out, err = capsys.readouterr()
    assert leaks(out + err) == []


ECHOES: dict[str, dict[str, Any]] = {
    "status": {"kind": "status", "status": 400, "text": TEXT},
    "status-503": {"kind": "status", "status": 503, "text": TEXT},
    "api_error": {"kind": "api_error", "code": 400, "text": TEXT},
    "html": {"kind": "html", "status": 502, "text": TEXT},
    "raw-json-200": {"kind": "raw", "text": json.dumps({"error": 403, "error_text": TEXT})},
    "raw-json-500": {"kind": "raw", "status": 500, "text": json.dumps({"error_text": TEXT})},
    "raw-body": {"kind": "raw", "status": 502, "text": TEXT},
    "raw-200-body": {"kind": "raw", "text": TEXT},
}


@pytest.mark.parametrize("case", sorted(ECHOES))
@pytest.mark.parametrize("route", ["call", "read_profiles"])
def test_service_text_echoing_the_token_is_scrubbed(
    svc3: DemoService,
    case: str,
    route: str,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = dict(ECHOES[case])
    svc3.add_fault("profiles/list", spec.pop("kind"), times=None, **spec)
    caplog.set_level(logging.DEBUG)
    client = fast(svc3, retry=1)
    read = (
        partial(client.call, "profiles/list", db_id=svc3.db_id)
        if route == "call"
        else partial(sn.read_profiles, client, svc3.db_id, limit=5, progress=True)
    )
    with pytest.raises(sn.StoplistError) as info:
        read()
    _assert_nothing_leaks(info.value, caplog, capsys)
    if isinstance(info.value, sn.APIError) and case not in ("html", "raw-body"):
        assert "bad token ***" in info.value.text  # the rest of the text is kept


def _task_reply(status: str, **result: object) -> str:
    return json.dumps({"error": 0, "data": {"status": status, "progress": 10, "result": result}})


@pytest.mark.timeout(30)
def test_failed_task_reason_is_scrubbed(
    svc3: DemoService, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    svc3.add_fault(
        "suppresses/export",
        "raw",
        text=json.dumps({"error": 0, "data": {"task_id": f"task-{TOKEN}"}}),
    )
    svc3.add_fault("tasks/status", "raw", text=_task_reply("failed", error=TEXT))
    with pytest.raises(sn.TaskFailed) as info:
        sn.read_suppression_list(fast(svc3), svc3.suppress_id, poll_interval=0.01, progress=True)
    assert "bad token ***" in str(info.value)
    assert leaks(info.value.status) == []
    _assert_nothing_leaks(info.value, caplog, capsys)


@pytest.mark.timeout(30)
def test_running_status_word_is_scrubbed_from_bar_and_timeout(
    svc3: DemoService, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    svc3.add_fault("tasks/status", "raw", text=_task_reply(f"busy {TOKEN}"), times=None)
    with pytest.raises(sn.TaskTimeout) as info:
        sn.wait_for_task(fast(svc3), "t-1", poll_interval=0.01, task_timeout=0.2, progress=True)
    assert "still busy ***" in str(info.value)
    _assert_nothing_leaks(info.value, caplog, capsys)


@pytest.mark.timeout(30)
def test_file_name_echoing_the_token_is_scrubbed_from_the_bar(
    svc3: DemoService,
    tmp_path: pathlib.Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    name = quote(TOKEN, safe="")  # the token has a "/": its quoted form fits in one segment
    svc3.plan_next_export(steps=0, hashed_file=f"suppress/x/{name}.md5.zip")
    with pytest.raises(sn.StoplistError) as info:  # the service serves no such file
        sn.read_suppression_list(
            fast(svc3),
            svc3.suppress_id,
            poll_interval=0.01,
            progress=True,
            dest=tmp_path,
            task_timeout=0.3,  # a file the task names and the service never serves
        )
    _assert_nothing_leaks(info.value, caplog, capsys)


# -- 3. Redirects never carry the token to another origin -------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_call_redirected_to_another_origin_is_refused(
    demo: DemoService, elsewhere: DemoService, status: int
) -> None:
    elsewhere.requests.clear()
    target = f"{elsewhere.base_url}/api/v1.1/profiles/list?token={demo.token}&x=1"
    demo.add_fault("profiles/list", "raw", status=status, headers={"Location": target})
    with pytest.raises(sn.InvalidReply, match="another origin") as info:
        fast(demo).call("profiles/list", db_id=demo.db_id)
    assert f"{elsewhere.base_url}/api/v1.1/profiles/list;" in str(info.value)
    assert "?" not in str(info.value)  # the query is not shown
    assert demo.token not in everything_said(info.value)
    assert elsewhere.requests == []


def test_download_redirected_to_another_origin_is_refused(
    demo: DemoService, elsewhere: DemoService, tmp_path: pathlib.Path
) -> None:
    client = fast(demo)
    path = finished_export(client, demo)
    elsewhere.requests.clear()
    target = f"{elsewhere.base_url}/api/download/{quote(path)}"
    demo.add_fault("download", "raw", status=302, headers={"Location": target})
    with pytest.raises(sn.InvalidReply, match="another origin"):
        client.download(path, tmp_path, progress=False)
    assert elsewhere.requests == []
    assert list(tmp_path.iterdir()) == []


def test_scheme_change_is_another_origin(demo: DemoService) -> None:
    https = demo.base_url.replace("http://", "https://") + "/api/v1.1/profiles/list"
    demo.add_fault("profiles/list", "raw", status=308, headers={"Location": https})
    with pytest.raises(sn.InvalidReply, match="use it as base_url"):
        fast(demo).call("profiles/list", db_id=demo.db_id)


def test_same_origin_redirects_are_followed(demo: DemoService, tmp_path: pathlib.Path) -> None:
    client = fast(demo)
    demo.add_fault(
        "profiles/list", "raw", status=307, headers={"Location": "/api/v1.1/profiles/list"}
    )
    assert client.call("profiles/list", db_id=demo.db_id, limit=2)["data"]
    assert sum(r.method == "profiles/list" for r in demo.requests) == 2
    path = finished_export(client, demo)
    direct = client.download(path, tmp_path / "direct.zip", progress=False).read_bytes()
    demo.add_fault(
        "download", "raw", status=302, headers={"Location": f"/api/download/{quote(path)}"}
    )
    moved = client.download(path, tmp_path / "moved.zip", progress=False).read_bytes()
    assert moved == direct


def test_same_origin_post_redirect_to_get_is_refused(demo: DemoService) -> None:
    demo.add_fault("profiles/list", "raw", status=302, headers={"Location": "/elsewhere"})
    with pytest.raises(sn.InvalidReply, match="GET"):
        fast(demo).call("profiles/list", db_id=demo.db_id)


def test_redirect_loop_is_cut(demo: DemoService) -> None:
    loop = {"Location": "/api/v1.1/profiles/list"}
    demo.add_fault("profiles/list", "raw", status=307, headers=loop, times=None)
    with pytest.raises(sn.InvalidReply, match=f"more than {MAX_REDIRECTS} redirects"):
        fast(demo).call("profiles/list", db_id=demo.db_id)
    assert sum(r.method == "profiles/list" for r in demo.requests) == MAX_REDIRECTS + 1


# -- 4. The download size cap --------------------------------------------------------------


def test_download_over_max_bytes_by_content_length(
    demo: DemoService, tmp_path: pathlib.Path
) -> None:
    client = fast(demo)
    path = finished_export(client, demo)
    with pytest.raises(sn.ArchiveTooLarge, match=r"max_bytes=100\b.*larger max_bytes"):
        client.download(path, tmp_path, progress=False, max_bytes=100)
    assert list(tmp_path.iterdir()) == []
    size = client.download(path, tmp_path, progress=False).stat().st_size
    assert client.download(path, tmp_path / "b.zip", progress=False, max_bytes=size).is_file()


def test_download_over_max_bytes_while_streaming(demo: DemoService, tmp_path: pathlib.Path) -> None:
    # An unknown content coding hides the length: only the bytes themselves can be counted.
    demo.add_fault(
        "download", "raw", body=b"x" * 300_000, headers={"Content-Encoding": "x-unknown"}
    )
    with pytest.raises(sn.ArchiveTooLarge, match=r"more than \d+ bytes, over max_bytes=100000"):
        fast(demo).download("suppress/a/b.zip", tmp_path, progress=False, max_bytes=100_000)
    assert list(tmp_path.iterdir()) == []


def test_max_bytes_is_checked(demo: DemoService) -> None:
    with pytest.raises(sn.InvalidInput, match="max_bytes"):
        fast(demo).download("suppress/a/b.zip", max_bytes=-1)


# -- 5. The stoplist_nb logger --------------------------------------------------------------


@pytest.mark.slow
def test_logger_is_silent_unless_configured() -> None:
    # A fresh interpreter: pytest puts handlers of its own on the root logger.
    probe = (
        "import logging, stoplist_nb\n"
        "ours = logging.getLogger('stoplist_nb')\n"
        "print([type(h).__name__ for h in ours.handlers], ours.level,"
        " len(logging.getLogger().handlers))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["['NullHandler']", str(logging.NOTSET), "0"]


@pytest.mark.timeout(60)
def test_debug_records_of_a_whole_flow(
    svc3: DemoService, caplog: pytest.LogCaptureFixture, tmp_path: pathlib.Path
) -> None:
    caplog.set_level(logging.DEBUG)
    client = fast(svc3)
    svc3.add_fault("profiles/list", "status", status=503)  # one retry, seen in the record
    sn.read_profiles(client, svc3.db_id, limit=25, progress=False)
    sn.read_suppression_list(
        client, svc3.suppress_id, poll_interval=0.01, progress=False, dest=tmp_path
    )
    ours = [r for r in caplog.records if r.name == "stoplist_nb"]
    by_method: dict[str, list[logging.LogRecord]] = {}
    for record in ours:
        by_method.setdefault(record.api_method, []).append(record)  # type: ignore[attr-defined]
    assert {"profiles/list", "suppresses/export", "tasks/status", "download"} <= set(by_method)
    for record in ours:
        assert record.levelno == logging.DEBUG
        assert record.http_status == 200  # type: ignore[attr-defined]
        assert record.nbytes > 0  # type: ignore[attr-defined]
        assert record.elapsed >= 0  # type: ignore[attr-defined]
        assert f"-> HTTP 200, {record.nbytes} bytes in " in record.getMessage()  # type: ignore[attr-defined]
    attempts = [r.attempts for r in by_method["profiles/list"]]  # type: ignore[attr-defined]
    assert attempts[0] == 2
    assert set(attempts[1:]) == {1}
    assert len(by_method["profiles/list"]) == 3  # 40 profiles in pages of 25, and the empty one
    for record in caplog.records:  # urllib3's too
        assert leaks(record.getMessage()) == []
        assert leaks(repr(record.args)) == []
