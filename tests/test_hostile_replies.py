"""Replies a broken or hostile service can send: read exactly, or refused with a typed error.

Every read here goes through the demo service on loopback. Reads that could
crash the interpreter if a guard failed run in a child process, so that a
crash fails the test instead of ending the run.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap
import threading
from contextlib import closing
from typing import Any

import children
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stoplist_nb as sn
from stoplist_nb._json.nesting import MAX_DEPTH, depth_bound, text_depth
from stoplist_nb._json.records import records_to_arrow
from stoplist_nb.demo import DemoService
from stoplist_nb.errors import InvalidInput
from stoplist_nb.profiles.normalize import normalize_profiles

PARSE_THREAD = "stoplist_nb-parse"


def ids(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["profile_id"]))


def page(rows: list[dict[str, Any]], **envelope: Any) -> str:
    return json.dumps({"error": 0, "error_text": "ok", "data": rows, **envelope})


def run_child(script: str, timeout: float = 240) -> dict[str, Any]:
    """Run ``script`` in a fresh interpreter; it prints one JSON object last."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=pathlib.Path(__file__).parent,
    )
    assert done.returncode >= 0, f"the interpreter crashed with signal {-done.returncode}"
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --- nesting ---------------------------------------------------------------------------

# JSON texts that nest `depth` levels; strings full of brackets and escaped quotes come
# first, so that a scan that does not know strings is misled about the depth.
DEEP_SHAPES = {
    "objects": lambda depth: '{"a":' * depth + "1" + "}" * depth,
    "lists": lambda depth: "[" * depth + "]" * depth,
    "misleading strings": lambda depth: (
        '{"s":"]]]}}}\\"]]]\\\\","v":' + '[{"k":"]\\"}",' * depth + '"x":1' + "}]" * depth + "}"
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("lookahead", [0, 2])
@pytest.mark.parametrize("shape", sorted(DEEP_SHAPES))
def test_deep_nesting_is_refused_keeping_what_was_read(shape: str, lookahead: int) -> None:
    # ~5000 levels crash pyarrow on an ordinary stack, and take it seconds to minutes.
    result = run_child(
        f"""
        import json
        import pandas as pd
        import stoplist_nb as sn
        from stoplist_nb.demo import serve
        from test_hostile_replies import DEEP_SHAPES, ids, page

        report = {{}}
        with serve(profiles=40, seed=3) as svc, svc.client(retry=False) as client:
            full = sn.read_profiles(client, svc.db_id, limit=5, progress=False)
            for depth in (300, 5000, 50000):
                deep = DEEP_SHAPES[{shape!r}](depth)
                rows = json.dumps(svc.profiles[10:15])[:-2] + ', "deep": ' + deep + "}}]"
                body = (
                    '{{"error":0,"data":' + rows + ',"next_from_id":'
                    + json.dumps(svc.profiles[14]["id"]) + "}}"
                )
                svc.add_fault("profiles/list", "raw", text=body, after=2)
                try:
                    sn.read_profiles(
                        client, svc.db_id, limit=5, progress=False, lookahead={lookahead}
                    )
                except sn.InvalidReply as exc:
                    rest = sn.read_profiles(
                        client, svc.db_id, limit=5, progress=False, from_id=exc.resume_from
                    )
                    joined = pd.concat([exc.partial, rest], ignore_index=True)
                    report[depth] = {{
                        "message": str(exc),
                        "partial": ids(exc.partial),
                        "resume_from": exc.resume_from,
                        "exact": joined.equals(full),
                    }}
                svc.clear_faults()
            print(json.dumps({{"report": report, "ids": [p["id"] for p in svc.profiles]}}))
        """
    )
    every = result["ids"]
    assert sorted(result["report"]) == ["300", "5000", "50000"]
    for depth, seen in result["report"].items():
        assert f"more than {MAX_DEPTH} levels deep" in seen["message"], depth
        assert seen["partial"] == every[:10]
        assert seen["resume_from"] == every[9]
        assert seen["exact"], depth


def test_deep_nesting_within_the_limit_is_read(client: sn.Client, demo: DemoService) -> None:
    # A profile field nested 100 levels (what MongoDB stores at most) reads as it is.
    value: Any = 1
    for _ in range(100):
        value = {"a": value}
    rows = [{**demo.profiles[0], "deep": value}]
    demo.add_fault("profiles/list", "raw", text=page(rows, next_from_id=rows[0]["id"]))
    demo.add_fault("profiles/list", "raw", text=page([]))
    df = sn.read_profiles(client, demo.db_id, progress=False)
    assert ids(df) == [rows[0]["id"]]
    assert df["deep"].iloc[0] == value


def test_deep_reply_to_a_call_or_an_error_is_typed(client: sn.Client, demo: DemoService) -> None:
    deep = '{"error":0,"data":' + "[" * 100_000 + "]" * 100_000 + "}"
    demo.add_fault("tasks/status", "raw", text=deep)
    with pytest.raises(sn.InvalidReply, match="not a JSON object"):
        client.call("tasks/status", task_id="1")
    demo.add_fault("tasks/status", "raw", status=500, text=deep)
    with pytest.raises(sn.ServerError):
        sn.Client(demo.base_url, demo.token, retry=False).call("tasks/status", task_id="1")


@pytest.mark.slow
def test_deep_values_are_refused_on_any_thread() -> None:
    # The reader may be called on a thread with a small stack: it measures, then refuses.
    result = run_child(
        """
        import json, threading
        import pyarrow as pa
        from stoplist_nb._json.reader import read_reply
        from stoplist_nb.errors import InvalidInput
        from stoplist_nb.profiles.normalize import normalize_profiles

        said = []
        def attempt():
            body = ('{"data":[{"id":"a","x":' + "[" * 60000 + "]" * 60000 + "}]}").encode()
            try:
                read_reply(body)
            except ValueError as exc:
                said.append(str(exc))
            deep = 1
            for _ in range(60000):
                deep = {"a": deep}
            looped = {"id": "b"}
            looped["self"] = looped
            for rows in ([{"id": "a", "x": deep}], [looped]):
                try:
                    normalize_profiles(rows)
                except InvalidInput as exc:
                    said.append(str(exc))
        threading.stack_size(512 * 1024)
        worker = threading.Thread(target=attempt)
        worker.start()
        worker.join()
        attempt()  # and on the main thread
        print(json.dumps(said))
        """
    )
    messages: Any = result
    assert len(messages) == 6
    assert all("levels deep" in message for message in messages)


def nested_json() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab:,')
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.text(alphabet='[]{}"\\k', max_size=3), inner, max_size=3)
        ),
        max_leaves=30,
    )


def reference_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(reference_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(reference_depth, value), default=0)
    return 0


@given(value=nested_json(), ascii_only=st.booleans(), pad=st.integers(0, 300))
def test_text_depth_is_the_depth_of_the_parsed_value(
    value: Any, ascii_only: bool, pad: int
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert text_depth(text) == reference_depth(value)
    padded = b" " * pad + text  # blocks of 256 bytes start anywhere in the text
    assert depth_bound(padded) >= text_depth(padded) == text_depth(text)


def test_records_are_read_to_max_depth_levels_the_list_of_them_counted() -> None:
    def nest(levels: int) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for _ in range(levels - 2):
            value = {"x": value}
        return value

    assert len(records_to_arrow([{"id": "a"}, nest(MAX_DEPTH)])) == 2
    looped: list[Any] = []
    looped.append(looped)
    for records in ([nest(MAX_DEPTH + 1)], [{"a": looped}]):
        with pytest.raises(InvalidInput, match=f"more than {MAX_DEPTH} levels deep"):
            records_to_arrow(records)


def test_depth_bound_reads_each_text_alone_after_a_longer_one() -> None:
    # The scratch arrays outlive a call: what a longer text left there must not count.
    long = b"[" * 100 + b'"' + b"[" * 3000 + b'"' + b"]" * 100
    assert depth_bound(long) >= 100
    assert depth_bound(b"[[1]]") == 2
    assert depth_bound(b'"[[[[' + b"[" * 300) >= text_depth(b'"[[[[' + b"[" * 300) == 0
    huge = b" " * (5 << 20) + b"[" * 200 + b"]" * 200  # past the scratch size
    assert depth_bound(huge) >= text_depth(huge) == 200


# --- data that is not a list -----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("lookahead", [0, 2])
@pytest.mark.parametrize(
    ("data", "kind"),
    [({"id": "x"}, "an object"), ("rows", "a string"), (42, "a number"), (True, "a boolean")],
)
def test_data_that_is_not_a_list_is_an_error_keeping_what_was_read(
    client: sn.Client, demo: DemoService, data: Any, kind: str, lookahead: int
) -> None:
    full = sn.read_profiles(client, demo.db_id, limit=5, progress=False)
    cursor = demo.profiles[14]["id"]
    reply = json.dumps({"error": 0, "data": data, "next_from_id": cursor})
    demo.add_fault("profiles/list", "raw", text=reply, after=2)
    with pytest.raises(sn.InvalidReply, match=f"'data' is {kind}, not a list") as info:
        sn.read_profiles(client, demo.db_id, limit=5, progress=False, lookahead=lookahead)
    exc = info.value
    assert ids(exc.partial) == [p["id"] for p in demo.profiles[:10]]
    assert exc.resume_from == demo.profiles[9]["id"]
    rest = sn.read_profiles(client, demo.db_id, limit=5, progress=False, from_id=exc.resume_from)
    pd.testing.assert_frame_equal(pd.concat([exc.partial, rest], ignore_index=True), full)


@pytest.mark.parametrize("reply", [{"data": None}, {}], ids=["null", "absent"])
def test_data_null_or_absent_is_the_end(
    client: sn.Client, demo: DemoService, reply: dict[str, Any]
) -> None:
    # As an empty list: services that omit empty lists (or write nil ones) end so.
    demo.add_fault("profiles/list", "raw", text=json.dumps({"error": 0, **reply}), after=2)
    df = sn.read_profiles(client, demo.db_id, limit=5, progress=False)
    assert ids(df) == [p["id"] for p in demo.profiles[:10]]
    assert len(demo.requests) == 3


def test_data_of_an_error_reply_does_not_hide_the_error(
    client: sn.Client, demo: DemoService
) -> None:
    demo.add_fault("profiles/list", "raw", text='{"error":400,"error_text":"bad","data":{}}')
    with pytest.raises(sn.BadRequest, match="bad"):
        sn.read_profiles(client, demo.db_id, progress=False)


# --- numbers ---------------------------------------------------------------------------

HUGE = [9223372036854775809, -9223372036854775809, 2**70, 9223372036854775807]


@pytest.mark.parametrize("route", ["arrow", "records"])
def test_huge_integers_in_a_field_are_kept_exactly(
    client: sn.Client, demo: DemoService, route: str
) -> None:
    rows = [dict(demo.profiles[i], n=value) for i, value in enumerate(HUGE)]
    rows[0]["mixed"], rows[1]["mixed"] = 1.5, 9007199254740993  # no float64 holds both
    if route == "records":  # a value whose type changes: pyarrow.json cannot take the page
        rows[0]["drift"], rows[1]["drift"] = 1, "one"
    body = page(rows, next_from_id=rows[-1]["id"])
    demo.add_fault("profiles/list", "raw", text=body)
    demo.add_fault("profiles/list", "raw", text=page([]))
    df = sn.read_profiles(client, demo.db_id, progress=False).drop_duplicates("profile_id")
    assert list(df["n"]) == [str(v) for v in HUGE]
    assert list(df["mixed"].iloc[:2]) == ["1.5", "9007199254740993"]


def test_ordinary_numbers_keep_their_dtypes(client: sn.Client, demo: DemoService) -> None:
    rows = [dict(demo.profiles[0], n=2**53, f=0.5), dict(demo.profiles[1], n=-3, f=2)]
    demo.add_fault("profiles/list", "raw", text=page(rows, next_from_id=rows[-1]["id"]))
    demo.add_fault("profiles/list", "raw", text=page([]))
    df = sn.read_profiles(client, demo.db_id, progress=False).drop_duplicates("profile_id")
    assert str(df["n"].dtype) == "Int64"
    assert str(df["f"].dtype) == "Float64"
    assert list(df["n"]) == [2**53, -3]


def test_normalize_profiles_keeps_huge_integers() -> None:
    df = normalize_profiles([{"id": "a", "n": 2**64}, {"id": "b", "n": 1.5, "m": 2**60}])
    assert list(df["n"]) == [str(2**64), "1.5"]
    assert df["m"].iloc[1] == 2**60


@pytest.mark.parametrize("lookahead", [0, 2])
def test_huge_numeric_cursor_goes_back_exactly(
    client: sn.Client, demo: DemoService, lookahead: int
) -> None:
    first, second = 123456789012345678901234567890, 2**64 + 1
    profiles = demo.profiles
    demo.add_fault("profiles/list", "raw", text=page(profiles[:2], next_from_id=first))
    demo.add_fault("profiles/list", "raw", text=page(profiles[2:4], next_from_id=second))
    demo.add_fault("profiles/list", "raw", text=page([], next_from_id=second))
    df = sn.read_profiles(client, demo.db_id, limit=2, progress=False, lookahead=lookahead)
    assert ids(df) == [p["id"] for p in profiles[:4]]
    sent = [r.params.get("from_id") for r in demo.requests]
    # Exactly one request a page: the guess from the bytes and the parsed cursor agree.
    assert sent == [None, str(first), str(second)]
    assert df.attrs["next_from_id"] == str(second)


# --- resuming after a stalled or missing cursor ----------------------------------------


@pytest.mark.parametrize("lookahead", [0, 2])
def test_resume_after_a_stalled_cursor_reads_exactly_the_rest(
    client: sn.Client, demo: DemoService, lookahead: int
) -> None:
    full = sn.read_profiles(client, demo.db_id, limit=7, progress=False)
    demo.requests.clear()
    demo.add_fault("profiles/list", "stall", after=3)
    with pytest.raises(sn.CursorStalled) as info:
        sn.read_profiles(client, demo.db_id, limit=7, progress=False, lookahead=lookahead)
    exc = info.value
    assert ids(exc.partial) == [p["id"] for p in demo.profiles[:21]]
    assert exc.resume_from == demo.profiles[20]["id"]
    assert f"resume with from_id={exc.resume_from!r}" in str(exc)
    rest = sn.read_profiles(client, demo.db_id, limit=7, progress=False, from_id=exc.resume_from)
    pd.testing.assert_frame_equal(pd.concat([exc.partial, rest], ignore_index=True), full)


@pytest.mark.parametrize("lookahead", [0, 2])
def test_a_full_page_without_a_cursor_mid_read_loses_nothing(
    client: sn.Client, demo: DemoService, lookahead: int
) -> None:
    full = sn.read_profiles(client, demo.db_id, limit=7, progress=False)
    demo.requests.clear()
    demo.add_fault("profiles/list", "raw", text=page(demo.profiles[21:28]), after=3)
    got = sn.read_profiles(client, demo.db_id, limit=7, progress=False, lookahead=lookahead)
    pd.testing.assert_frame_equal(got, full)
    assert demo.profiles[27]["id"] in [r.params.get("from_id") for r in demo.requests]


def test_an_empty_cursor_on_the_first_page_goes_on_from_its_last_profile(
    client: sn.Client, demo: DemoService
) -> None:
    # A "stall" on the first page repeats its from_id, "": no cursor at all.
    demo.add_fault("profiles/list", "stall")
    df = sn.read_profiles(client, demo.db_id, limit=7, progress=False)
    assert ids(df) == [p["id"] for p in demo.profiles]
    assert demo.requests[1].params["from_id"] == demo.profiles[6]["id"]


def test_resume_from_pages_reads_exactly_the_rest(client: sn.Client, demo: DemoService) -> None:
    demo.add_fault("profiles/list", "stall", after=2)
    got: list[str] = []

    def read(from_id: str | None) -> None:
        for each in sn.ProfilesRequest(client, demo.db_id, limit=9, from_id=from_id).pages():
            got.extend(r["id"] for r in each.records)

    with pytest.raises(sn.CursorStalled) as info:
        read(None)
    read(info.value.resume_from)
    assert got == [p["id"] for p in demo.profiles]


# --- interrupting ----------------------------------------------------------------------


def parse_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(PARSE_THREAD)]


def settle(client: sn.Client, before: set[threading.Thread]) -> list[threading.Thread]:
    """Close ``client``, wait for every thread started since ``before``: those still running.

    Requests leave from the caller's thread, the parse workers are threads, and the
    service's handler threads end with the client's connections: once every one of
    them is over, nothing is left that could send a request, and the log is final.
    """
    client.close()
    # tqdm's monitor, once started, lives as long as the process; it sends nothing.
    while running := [
        t for t in threading.enumerate() if t not in before and t.name != "tqdm_monitor"
    ]:
        for thread in running:
            thread.join(timeout=10)
        if any(t.is_alive() for t in running):
            return running
    return []


def posts_started(client: sn.Client, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """One item for every request the client begins to send, from any thread."""
    started: list[object] = []
    post = client._transport.post

    def counted(method: str, params: Any) -> bytes:
        started.append(method)
        return post(method, params)

    monkeypatch.setattr(client._transport, "post", counted)
    return started


@pytest.mark.parametrize("stop", [KeyboardInterrupt, sn.InvalidReply])
def test_interrupt_leaves_nothing_running(
    client: sn.Client, demo: DemoService, monkeypatch: pytest.MonkeyPatch, stop: type
) -> None:
    # Ctrl-C lands in the caller's code between pages; a service fault inside the walk.
    import stoplist_nb.profiles.stream as stream

    before = set(threading.enumerate())

    flatten, calls = stream.flatten_profiles, []

    def interrupted(data: Any, records: Any = None) -> Any:
        calls.append(1)
        if len(calls) == 3 and stop is KeyboardInterrupt:
            raise KeyboardInterrupt
        return flatten(data, records)

    monkeypatch.setattr(stream, "flatten_profiles", interrupted)
    posts = posts_started(client, monkeypatch)
    if stop is not KeyboardInterrupt:
        demo.add_fault("profiles/list", "malformed", after=2)
    with pytest.raises(stop) as info:
        sn.read_profiles(client, demo.db_id, limit=5, progress=False, lookahead=2, workers=2)
    # While the exception (and its traceback, as IPython keeps it) is still alive:
    assert info.value is not None
    assert parse_threads() == []
    sent = len(posts)
    assert settle(client, before) == []
    # No request begun after the exception; the service saw no other (one cut on the
    # wire by the close may have reached it only in part, and not be in its log).
    assert len(posts) == sent
    # The two pages taken, and at most lookahead + workers in flight after them.
    assert len(demo.requests) <= sent <= 2 + 2 + 2


def test_interrupt_of_pages_closes_it(
    client: sn.Client, demo: DemoService, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = set(threading.enumerate())
    posts = posts_started(client, monkeypatch)
    with closing(sn.ProfilesRequest(client, demo.db_id, limit=5, lookahead=2).pages()) as pages:
        next(pages)
        assert parse_threads()
    assert parse_threads() == []
    sent = len(posts)
    assert settle(client, before) == []
    assert len(posts) == sent  # nothing begun after the close
    assert len(demo.requests) <= sent


# --- fuzzing the reply reader ----------------------------------------------------------


def json_values() -> st.SearchStrategy[Any]:
    numbers = st.integers() | st.integers(-(2**80), 2**80) | st.floats(allow_nan=False)
    text = st.text(alphabet='[]{}"\\ab:,é\x00', max_size=6)
    return st.recursive(
        st.none() | st.booleans() | numbers | text,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["id", "a", "email_data", "x"]) | text, inner, max_size=3
            )
        ),
        max_leaves=25,
    )


def profile_rows() -> st.SearchStrategy[Any]:
    subscription = st.dictionaries(
        st.sampled_from(["channel", "status", "email_data", "reg_info", "custom_fields", "cats"]),
        json_values(),
        max_size=4,
    )
    profile = st.fixed_dictionaries(
        {"id": st.text(max_size=4) | st.integers()},
        optional={
            "subscriptions": st.lists(subscription, max_size=3) | json_values(),
            "_fname": json_values(),
            "n": json_values(),
        },
    )
    return st.lists(profile | json_values(), max_size=5)


def read_page(content: bytes) -> None:
    """What read_profiles does with one reply; only the package's own errors may leave."""
    from stoplist_nb.client import _parse_page
    from stoplist_nb.profiles.normalize import flatten_profiles, frame_from_tables

    try:
        reply = _parse_page("profiles/list", content)
        if reply.data is not None:
            frame_from_tables([flatten_profiles(reply.data)])
    except sn.StoplistError:
        pass


def fuzz_profiles() -> None:
    @settings(database=None)
    @given(rows=profile_rows(), ascii_only=st.booleans())
    def run(rows: Any, ascii_only: bool) -> None:
        read_page(json.dumps({"error": 0, "data": rows}, ensure_ascii=ascii_only).encode())

    run()


def fuzz_bytes() -> None:
    valid = json.dumps({"error": 0, "data": [{"id": "a", "n": 1, "s": [{"channel": "email"}]}]})

    @settings(database=None)
    @given(data=st.binary(max_size=200), cut=st.integers(0, len(valid)), junk=st.binary(max_size=4))
    def run(data: bytes, cut: int, junk: bytes) -> None:
        read_page(data)
        read_page(valid.encode()[:cut] + junk + valid.encode()[cut:])

    run()


@pytest.mark.slow
def test_fuzzed_replies_raise_only_the_package_s_own_errors() -> None:
    done = children.fuzz(__file__, "fuzz_profiles", "fuzz_bytes", timeout=600)
    assert done.returncode >= 0, f"the reader crashed with signal {-done.returncode}"
    assert done.returncode == 0, done.stderr[-4000:]
