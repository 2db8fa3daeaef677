"""Every profiles reader gives one answer: what the service sent, in the column one rule names.

The readers: ``read_profiles`` (one DataFrame), ``ProfilesRequest.to_arrow`` (one
Arrow table), its ``frames`` and ``tables`` (page by
page, concatenated here row by row), its ``to_dataset`` (a dataset
read back with ``pd.read_parquet``, ``pq.read_table`` and ``pyarrow.dataset``)
and ``ProfilesRequest.to_parquet`` (one file, read back with ``pd.read_parquet``);
a file's text must come back in the frames' string storage, whatever the pandas.
Small pages (``limit`` 1-3) make the JSON type of a field drift from page to
page. The oracle (tests/one_truth_oracle.py) says where each sent value must
be found and what counts as equal; a property test throws drifting profiles at
it (without shrinking: ONE_TRUTH_SHRINK=1 turns it on, for minutes), one
example test per known trap spells the values out, and two tests show that the
oracle itself refuses a changed value.
"""

from __future__ import annotations

import itertools
import json
import os
import pathlib
import tempfile
from collections.abc import Callable
from typing import Any

import pandas as pd
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from one_truth_oracle import (
    check_arrow_types,
    check_frame_dtypes,
    check_stream,
    disagreements,
    frame_rows,
    matches,
    resolve,
    same,
    table_rows,
)

import stoplist_nb as sn
from stoplist_nb._json.records import json_text
from stoplist_nb.demo import serve

Rows = list[dict[str, Any]]

# The readers whose frames hold lists and objects as Python values.
FRAMES_OF_VALUES = ("read_profiles", "read_profiles:lookahead=0", "frames")

READERS = (
    "read_profiles",
    "read_profiles:lookahead=0",
    "to_arrow",
    "frames",
    "tables",
    "parquet:pd.read_parquet",
    "parquet:pq.read_table",
    "parquet:pyarrow.dataset",
    "file:pd.read_parquet",
)


def read_every_way(
    profiles: list[dict[str, Any]], *, limit: int, per_part: int = 2
) -> tuple[dict[str, Rows], list[str]]:
    """Serve ``profiles`` and read them with every reader, ``limit`` profiles a page.

    Returns:
        Each reader's rows (plain Python values, see the oracle), and what went
        wrong: a reader that raised, or gave a dtype or type its docs rule out,
        or whose pages lost a column or changed its type.
    """
    got: dict[str, Rows] = {}
    problems: list[str] = []
    with (
        serve(profiles=profiles) as service,
        service.client() as client,
        tempfile.TemporaryDirectory() as tmp,
    ):
        db = service.db_id
        opts: dict[str, Any] = {"limit": limit, "progress": False}

        def read_profiles() -> Rows:
            frame = sn.read_profiles(client, db, **opts)
            check_frame_dtypes("read_profiles", frame, objects_as_values=True)
            return frame_rows(frame)

        def read_profiles_in_one_thread() -> Rows:
            # No walk's workers: each page is fitted while the frame is built.
            frame = sn.read_profiles(client, db, lookahead=0, **opts)
            check_frame_dtypes("read_profiles:lookahead=0", frame, objects_as_values=True)
            return frame_rows(frame)

        def to_arrow() -> Rows:
            table = sn.ProfilesRequest(client, db, **opts).to_arrow()
            check_arrow_types("to_arrow", table.schema)
            return table_rows(table)

        def frames() -> Rows:
            frames = list(sn.ProfilesRequest(client, db, **opts).frames())
            for frame in frames:
                check_frame_dtypes("frames", frame, objects_as_values=True)
            dtypes = ({str(n): str(t) for n, t in f.dtypes.items()} for f in frames)
            check_stream("frames", dtypes)
            return [row for frame in frames for row in frame_rows(frame)]

        def tables() -> Rows:
            tables = list(sn.ProfilesRequest(client, db, **opts).tables())
            for table in tables:
                check_arrow_types("tables", table.schema)
            types = ({f.name: str(f.type) for f in t.schema} for t in tables)
            check_stream("tables", types)
            return [row for table in tables for row in table_rows(table)]

        path = pathlib.Path(tmp) / "profiles"
        written: list[str] = []

        def write() -> None:
            sn.ProfilesRequest(client, db, **opts).to_dataset(path, profiles_per_part=per_part)
            written.append(str(path))

        def pandas_parquet(name: str, where: str) -> Rows:
            frame = pd.read_parquet(where)
            check_frame_dtypes(name, frame, objects_as_values=False)
            # Its text is the frames' string[pyarrow] on every pandas (pandas 2 would
            # read a bare "string" with its default storage, python).
            for column, dtype in frame.dtypes.items():
                stored = isinstance(dtype, pd.StringDtype) and dtype.na_value is pd.NA
                if stored and dtype.storage != "pyarrow":
                    problems.append(f"{name}: {column!r} is {dtype!r}")
            return frame_rows(frame)

        file = pathlib.Path(tmp) / "profiles.parquet"

        def write_file() -> None:
            sn.ProfilesRequest(client, db, **opts).to_parquet(file)

        def arrow_parquet() -> Rows:
            table = pq.read_table(written[0])
            check_arrow_types("parquet:pq.read_table", table.schema)
            return table_rows(table)

        def dataset_parquet() -> Rows:
            table = pads.dataset(written[0], format="parquet").to_table()
            check_arrow_types("parquet:pyarrow.dataset", table.schema)
            return table_rows(table)

        def attempt(name: str, read: Callable[[], Any]) -> None:
            try:
                rows = read()
            except Exception as exc:  # a crash is one more disagreement, reported with the rest
                problems.append(f"{name}: {type(exc).__name__}: {exc}")
            else:
                if rows is not None:
                    got[name] = rows

        attempt("read_profiles", read_profiles)
        attempt("read_profiles:lookahead=0", read_profiles_in_one_thread)
        attempt("to_arrow", to_arrow)
        attempt("frames", frames)
        attempt("tables", tables)
        attempt("to_dataset", write)
        if written:
            attempt(
                "parquet:pd.read_parquet",
                lambda: pandas_parquet("parquet:pd.read_parquet", written[0]),
            )
            attempt("parquet:pq.read_table", arrow_parquet)
            attempt("parquet:pyarrow.dataset", dataset_parquet)
        attempt("ProfilesRequest.to_parquet", write_file)
        if file.exists():
            attempt(
                "file:pd.read_parquet", lambda: pandas_parquet("file:pd.read_parquet", str(file))
            )
    return got, problems


def texts(rows: Rows, column: str) -> list[str | None]:
    """The exact text of each row's value of ``column`` (or of its companion where it is null)."""
    return [None if (v := resolve(row, column)) is None else json_text(v) for row in rows]


def decoded(rows: Rows, column: str) -> list[Any]:
    """Each row's value of ``column`` (or its companion's), JSON text decoded."""
    out = []
    for row in rows:
        value = resolve(row, column)
        out.append(json.loads(value) if isinstance(value, str) else value)
    return out


def expect(
    got: dict[str, Rows], problems: list[str], check: Callable[[str, Rows], list[str]]
) -> None:
    """Run ``check(reader, rows)`` on every reader's rows; one assertion for all that fail."""
    for reader in READERS:
        if reader in got:
            problems.extend(f"{reader}: {p}" for p in check(reader, got[reader]))
    assert not problems, "\n".join(problems)


def person(i: int, subs: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    """Profile ``p<i>`` (zero-padded, so the service's order is ``i``'s)."""
    profile: dict[str, Any] = {"id": f"p{i:03d}", **fields}
    if subs is not None:
        profile["subscriptions"] = subs
    return profile


# ---------------------------------------------------------------- the oracle itself


def test_the_oracle_tells_a_value_kept_from_a_value_changed() -> None:
    keeps = [(42, "42"), (True, "true"), (3.0, 3), ("1e+300", 1e300), ("[true,1]", [True, 1])]
    keeps += [(["promo"], "promo"), (pd.Timestamp("2024-05-31", tz="UTC"), "2024-05-31")]
    for cell, sent in keeps:
        assert matches(cell, sent, "cats" if sent == "promo" else ""), (cell, sent)
    changes = [(10025, "010025"), (42, " 42"), (True, "yes"), (1, True), ("1", True)]
    changes += [(float(2**53), 2**53 + 1), ("[1,1]", [True, 1]), ({"a": 1, "k": None}, {"a": 1})]
    changes += [("promo", "promo"), (None, 0), ("", None), (pd.Timestamp(0, tz="UTC"), "no date")]
    for cell, sent in changes:
        assert not matches(cell, sent, "cats" if sent == "promo" else ""), (cell, sent)


def test_the_oracle_finds_a_changed_row() -> None:
    sub = {"channel": "whatsapp", "cc_data": {"phone": "+79001112233"}, "cats": "promo"}
    profiles = [person(0, [sub], code="007", **{"cf.x": 1})]
    right: dict[str, Any] = {"profile_id": "p000", "code": None, "code__text": "007"}
    right["profile.cf.x"] = 1
    right |= {"channel": "whatsapp", "phone": "+79001112233", "cats": ["promo"]}
    assert disagreements("by hand", [right], profiles) == []
    wrong: list[dict[str, Any]] = [
        {"code__text": "7"},
        {"code": 7, "code__text": None},
        {"phone": None, "cc_data.phone": "+79001112233"},
        {"cats": "promo"},
        {"profile.cf.x": None, "cf.x": 1},
        {"profile.cf.x": True},
        {"profile_id": "p001"},
        {"status": "subscribed"},
    ]
    for change in wrong:
        assert disagreements("by hand", [right | change], profiles), change
    assert disagreements("by hand", [right, right], profiles)  # one row too many


# ---------------------------------------------------------------- the property


PROFILE_KEYS = (
    *("age", "code", "flag", "note", "when"),
    *("x", "x__text", "x__text_", "cf.x", "email", "channel"),
)
BIG_INTS = (2**53, 2**53 + 1, 2**63 - 1, 2**63 + 5, -(2**63) - 1)
FLOATS = (2.5, 1e300, 0.1, 3.0)
NUMBER_TEXTS = ("010025", "007", " 42", "+5", "-0", "42")
BOOL_WORDS = ("yes", "n", "true", "false")
DATES = ("2024-05-31", "2024-05-31T10:00:00.000Z")
DICTS: tuple[Any, ...] = ({"a": 1}, {"k": [1, "b"]}, {"a": "x", "b": [1]})
LISTS: tuple[Any, ...] = (["a", "b"], [1, 2], [True, 1], [{"a": 1}, "x"], [{"a": 1}, {"b": 2}])

#: The kinds of value a drifting field takes (None is a JSON null).
VALUE_KINDS: tuple[st.SearchStrategy[Any], ...] = (
    st.integers(-3, 120),
    st.sampled_from(BIG_INTS),
    st.sampled_from(FLOATS),
    st.sampled_from(NUMBER_TEXTS),
    st.sampled_from(BOOL_WORDS),
    st.booleans(),
    st.sampled_from(DATES),
    st.sampled_from(DICTS),
    st.sampled_from(LISTS),
    st.none(),
)
#: Every pair and triple of value kinds, drawn alike (a list strategy favours short, early ones).
KIND_MIXES = [
    *itertools.combinations(range(len(VALUE_KINDS)), 2),
    *itertools.combinations(range(len(VALUE_KINDS)), 3),
]
phones = st.one_of(st.sampled_from(["+79001234567", "+79990000001"]), st.just(79001234567))


@st.composite
def palette(draw: st.DrawFn) -> list[Any]:
    """The values of one field in one example: 2-3 kinds, one of them twice,
    so that the same few JSON types meet, on one page and across pages."""
    kinds = draw(st.sampled_from(KIND_MIXES))
    again = draw(st.sampled_from(kinds))  # and one more of a kind: two objects meet too
    return [draw(VALUE_KINDS[kind]) for kind in (*kinds, again)]


@st.composite
def subscription(draw: st.DrawFn, custom: list[Any]) -> dict[str, Any]:
    """One subscription; ``custom`` is the palette of its custom field ``x``."""
    channel = draw(
        st.sampled_from(["email", "sms", "push", "viber", "whatsapp", "notify", "telegram_bot"])
    )
    sub: dict[str, Any] = {
        "channel": channel,
        "status": draw(st.sampled_from(["subscribed", "unsubscribed", "suspended"])),
    }
    if channel == "email":
        sub["email_data"] = {"email": draw(st.sampled_from(["a@ex.org", "B@Ex.org"]))}
    elif channel == "sms":
        sub["phone_data"] = {"phone": draw(phones)}
    elif channel == "push":
        sub["push_data"] = {"provider": "fcm", "subscription_id": "sub-1"}
    elif channel == "telegram_bot":
        sub["cc_data"] = {"id": draw(st.sampled_from([123, 4567890123, "abc"]))}
    else:  # whatsapp, viber, notify: the number is in cc_data
        sub["cc_data"] = {"phone": draw(phones)}
    optional: dict[str, st.SearchStrategy[Any]] = {
        "priority": st.one_of(st.integers(0, 9), st.sampled_from(["2", " 2", "abc"])),
        "is_delete": st.one_of(st.booleans(), st.sampled_from(["yes", 1])),
        "reg_info": st.fixed_dictionaries(
            {"date": st.sampled_from(["2024-05-31T10:00:00.000Z", "2023-01-02", "not a date"])}
        ),
        "cats": st.one_of(
            st.lists(st.sampled_from(["promo", "news", "sale"]), max_size=3),
            st.just("promo"),
            st.none(),
        ),
        "custom_fields": st.fixed_dictionaries({"x": st.sampled_from(custom)}),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            sub[key] = draw(strategy)
    return sub


@st.composite
def profile_pages(
    draw: st.DrawFn, *, fields: bool = True, subscriptions: bool = True
) -> list[dict[str, Any]]:
    """1-10 profiles whose fields drift in JSON type from one to the next.

    Args:
        fields: Give the profiles their own fields (else only an id).
        subscriptions: Give them 0-3 subscriptions each (else none at all).
    """
    palettes = {key: draw(palette()) for key in PROFILE_KEYS} if fields else {}
    custom = draw(palette())
    profiles = []
    for i in range(draw(st.integers(1, 10))):
        profile = person(i)
        for key, values in palettes.items():
            if draw(st.integers(0, 3)):  # present three times in four
                profile[key] = draw(st.sampled_from(values))
        if subscriptions:
            subs = draw(
                st.one_of(
                    st.sampled_from([None, [], "absent"]),
                    st.lists(subscription(custom), min_size=1, max_size=3),
                )
            )
            if subs != "absent":
                profile["subscriptions"] = subs
        profiles.append(profile)
    return profiles


#: Without shrinking a failure is the first example found (each names the
#: profile, column and values at fault); ONE_TRUTH_SHRINK=1 shrinks it, which
#: takes minutes: every try serves and reads the profiles seven ways.
PHASES = [Phase.explicit, Phase.generate] + (
    [Phase.shrink] if os.environ.get("ONE_TRUTH_SHRINK") else []
)
PROPERTY = settings(
    # Each example serves its profiles and reads them every way (about a second): a
    # tenth of the profile's examples (tests/conftest.py).
    max_examples=max(1, settings.default.max_examples // 10),
    database=None,
    phases=PHASES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def read_and_judge(profiles: list[dict[str, Any]], limit: int, per_part: int) -> None:
    """Every reader's rows held to the oracle; one assertion for every disagreement."""
    got, problems = read_every_way(profiles, limit=limit, per_part=per_part)
    for reader in READERS:
        if reader in got:
            problems.extend(disagreements(reader, got[reader], profiles))
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@PROPERTY
@given(profiles=profile_pages(), limit=st.integers(1, 3), per_part=st.integers(1, 3))
def test_every_reader_gives_what_was_sent(
    profiles: list[dict[str, Any]], limit: int, per_part: int
) -> None:
    read_and_judge(profiles, limit, per_part)


@pytest.mark.slow
@PROPERTY
@given(profiles=profile_pages(subscriptions=False), limit=st.integers(1, 3))
def test_drifting_profile_fields_read_back_as_sent(
    profiles: list[dict[str, Any]], limit: int
) -> None:
    read_and_judge(profiles, limit, 2)


@pytest.mark.slow
@PROPERTY
@given(profiles=profile_pages(fields=False), limit=st.integers(1, 3))
def test_drifting_subscription_fields_read_back_as_sent(
    profiles: list[dict[str, Any]], limit: int
) -> None:
    read_and_judge(profiles, limit, 2)


# ---------------------------------------------------------------- one test per trap


def test_number_text_after_an_int_page_stays_exact() -> None:
    sent: list[Any] = [10025, "010025", "007", " 42", "+5", "-0", "42", 7]
    got, problems = read_every_way([person(i, code=v) for i, v in enumerate(sent)], limit=1)

    def check(reader: str, rows: Rows) -> list[str]:
        want = ["10025", "010025", "007", " 42", "+5", "-0", "42", "7"]
        return [] if texts(rows, "code") == want else [f"code {texts(rows, 'code')}"]

    expect(got, problems, check)


def test_bool_words_after_a_bool_page_stay_words() -> None:
    sent: list[Any] = [True, False, "yes", "n", "true", "false"]
    got, problems = read_every_way([person(i, flag=v) for i, v in enumerate(sent)], limit=2)

    def check(reader: str, rows: Rows) -> list[str]:
        want = ["true", "false", "yes", "n", "true", "false"]
        return [] if texts(rows, "flag") == want else [f"flag {texts(rows, 'flag')}"]

    expect(got, problems, check)


def test_an_int_past_2_53_after_a_float_page_is_exact() -> None:
    sent: list[Any] = [2.5, 2**53 + 1, 2**63 + 5, -(2**63) - 1, 0.1]
    got, problems = read_every_way([person(i, score=v) for i, v in enumerate(sent)], limit=1)

    def check(reader: str, rows: Rows) -> list[str]:
        want = ["2.5", "9007199254740993", "9223372036854775813", "-9223372036854775809", "0.1"]
        return [] if texts(rows, "score") == want else [f"score {texts(rows, 'score')}"]

    expect(got, problems, check)


@pytest.mark.parametrize("limit", [48, 5])
def test_one_bare_string_cats_keeps_the_lists_beside_it(limit: int) -> None:
    cats: list[Any] = [["promo", f"c{i}"] if i % 2 else ["news"] for i in range(48)]
    cats[20] = "promo"
    subs = [
        [{"channel": "email", "email_data": {"email": f"u{i}@ex.org"}, "cats": c}]
        for i, c in enumerate(cats)
    ]
    got, problems = read_every_way([person(i, s) for i, s in enumerate(subs)], limit=limit)

    def check(reader: str, rows: Rows) -> list[str]:
        want = [["promo"] if isinstance(c, str) else c for c in cats]
        read = [row.get("cats") for row in rows]
        bad = [(i, r) for i, (r, w) in enumerate(zip(read, want, strict=True)) if r != w]
        return [f"cats differ at {bad[:3]} ({len(bad)} rows)"] if bad else []

    expect(got, problems, check)


@pytest.mark.parametrize("limit", [1, 3])
def test_mixed_lists_and_objects_stay_intact(limit: int) -> None:
    sent: list[dict[str, Any]] = [
        {"a": [True, 1], "b": [{"a": 1}, "x"], "c": {"k": [1, "b"]}},
        {"a": [False, 2], "b": ["y", {"b": 2}], "c": {"k": ["c", 2]}},
        {"a": [True, 1], "b": [{"a": 1}, "x"], "c": {"k": [1, "b"]}},
    ]
    got, problems = read_every_way([person(i, **f) for i, f in enumerate(sent)], limit=limit)

    def check(reader: str, rows: Rows) -> list[str]:
        out = []
        for key in "abc":
            want = [f[key] for f in sent]
            read = decoded(rows, key)
            if not all(same(r, w) for r, w in zip(read, want, strict=True)):
                out.append(f"{key} read {read}, sent {want}")
            if reader in FRAMES_OF_VALUES:
                cells = [row.get(key) for row in rows]
                if not all(isinstance(v, list | dict) for v in cells):
                    out.append(f"{key} not Python values: {cells}")
        return out

    expect(got, problems, check)


def test_a_real_x__text_field_is_not_the_companion_of_x() -> None:
    profiles = [
        person(0, x=1, x__text=5),
        person(1, x="abc", x__text=7),
        person(2, x=2.5),
    ]
    got, problems = read_every_way(profiles, limit=1)

    def check(reader: str, rows: Rows) -> list[str]:
        out = []
        if texts(rows, "x") != ["1", "abc", "2.5"]:
            out.append(f"x {texts(rows, 'x')}")
        real = [row.get("x__text_") for row in rows]
        if not same(real, [5, 7, None]):
            out.append(f"x__text_ {real}")
        if rows[0].get("x__text") is not None:  # x = 1 fits x: nothing in its companion
            out.append(f"x__text holds {rows[0].get('x__text')!r} in row 0")
        return out

    expect(got, problems, check)


def test_a_profile_field_named_cf_x_is_not_the_custom_field_x() -> None:
    def sub(value: Any) -> list[dict[str, Any]]:
        email = {"email": "a@ex.org"}
        return [{"channel": "email", "email_data": email, "custom_fields": {"x": value}}]

    profiles = [
        person(0, sub(1), **{"cf.x": "a"}),
        person(1, None, **{"cf.x": "b"}),
        person(2, sub(3)),
    ]
    got, problems = read_every_way(profiles, limit=1)

    def check(reader: str, rows: Rows) -> list[str]:
        out = []
        if texts(rows, "profile.cf.x") != ["a", "b", None]:
            out.append(f"profile.cf.x {texts(rows, 'profile.cf.x')}")
        if [row.get("cf.x") for row in rows] != [1, None, 3]:
            out.append(f"cf.x {[row.get('cf.x') for row in rows]}")
        return out

    expect(got, problems, check)


def test_whatsapp_viber_and_notify_numbers_are_in_phone() -> None:
    subs = [
        {"channel": "whatsapp", "cc_data": {"phone": "+79001112233"}},
        {"channel": "viber", "cc_data": {"phone": "+79002223344"}},
        {"channel": "notify", "cc_data": {"phone": "+79003334455"}},
        {"channel": "sms", "phone_data": {"phone": "+79004445566"}},
        {"channel": "telegram_bot", "cc_data": {"id": 123}},
    ]
    got, problems = read_every_way([person(0, subs[:3]), person(1, subs[3:])], limit=1)

    def check(reader: str, rows: Rows) -> list[str]:
        out = []
        want = ["+79001112233", "+79002223344", "+79003334455", "+79004445566", None]
        if [row.get("phone") for row in rows] != want:
            out.append(f"phone {[row.get('phone') for row in rows]}")
        if [row.get("cc_data.id") for row in rows] != [None, None, None, None, 123]:
            out.append(f"cc_data.id {[row.get('cc_data.id') for row in rows]}")
        if any("cc_data.phone" in row for row in rows):
            out.append("a column cc_data.phone beside phone")
        return out

    expect(got, problems, check)


# ------------------------------------------------ traps the property test found


@pytest.mark.parametrize("limit", [1, 3])
def test_a_boolean_beside_a_float_stays_a_boolean(limit: int) -> None:
    subs = [
        {"channel": "email", "email_data": {"email": "a@ex.org"}, "custom_fields": {"x": 2.5}},
        {"channel": "email", "email_data": {"email": "b@ex.org"}, "custom_fields": {"x": False}},
    ]
    profiles = [person(0, subs, age=2.5), person(1, age=False), person(2, age=True)]
    got, problems = read_every_way(profiles, limit=limit)

    def check(reader: str, rows: Rows) -> list[str]:
        out = []
        if texts(rows, "age") != ["2.5", "2.5", "false", "true"]:
            out.append(f"age {texts(rows, 'age')}")
        if texts(rows, "cf.x") != ["2.5", "false", None, None]:
            out.append(f"cf.x {texts(rows, 'cf.x')}")
        return out

    expect(got, problems, check)


@pytest.mark.parametrize("limit", [1, 3])
def test_objects_keep_their_own_keys(limit: int) -> None:
    # Objects of other keys in one column (on one page when limit=3), and in one list.
    profiles = [
        person(0, note={"a": 1}),
        person(1, note={"k": [1, "b"]}),
        person(2, when=[{"a": 1}, {"b": 2}]),
    ]
    got, problems = read_every_way(profiles, limit=limit)

    def check(reader: str, rows: Rows) -> list[str]:
        out = []
        for key in ("note", "when"):
            want = [p.get(key) for p in profiles]
            read = decoded(rows, key)
            if not all(same(r, w) for r, w in zip(read, want, strict=True)):
                out.append(f"{key} read {read}, sent {want}")
        return out

    expect(got, problems, check)
