"""Canonical forms, hashing (scalar and vectorized) and flag_suppressed."""

from __future__ import annotations

import doctest
import hashlib
import random
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from stoplist_nb.errors import InvalidInput
from stoplist_nb.suppression import flagging, hashing, matching
from stoplist_nb.suppression.flagging import flag_suppressed
from stoplist_nb.suppression.hashing import (
    canonical_email,
    canonical_phone,
    hash_email,
    hash_emails,
    hash_phone,
    hash_phones,
)

STR = pd.StringDtype("pyarrow")
NAN = float("nan")


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


@pytest.mark.parametrize("module", [hashing, flagging])
def test_doctests(module: Any) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("  Alice@Example.COM ", "alice@example.com"),
        ("\tBOB@x.org\r\n", "bob@x.org"),
        ("\x1c\u00a0\u2003eve@x.org\u3000", "eve@x.org"),
        ("ΟΔΟΣ@X.GR", "οδος@x.gr"),
        ("Straße@X.de", "straße@x.de"),
        ("İnci@x.tr", "i̇nci@x.tr"),
        ("ПОЧТА@Пример.РФ", "почта@пример.рф"),
        ("a\u200b@x.org", "a\u200b@x.org"),
        (b"Bytes@X.org", "bytes@x.org"),
        (12345, "12345"),
        ("", None),
        ("   ", None),
        (None, None),
        (NAN, None),
        (np.nan, None),
        (pd.NA, None),
        (pd.NaT, None),
    ],
)
def test_canonical_email(value: Any, expected: str | None) -> None:
    assert canonical_email(value) == expected
    assert hash_email(value) == (md5(expected) if expected else None)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("8 (900) 123-45-67", "+89001234567"),
        ("+7 900 123 45 67", "+79001234567"),
        ("+7\u00a0(900)\u2011123", "+7900123"),
        ("tel: 007-900", "+007900"),
        (79001234567, "+79001234567"),
        (np.int64(79001234567), "+79001234567"),
        (79001234567.0, "+79001234567"),
        (np.float64(79001234567.0), "+79001234567"),
        (1.5, "+15"),
        ("٧٩٠٠", None),
        ("no digits", None),
        ("", None),
        (None, None),
        (NAN, None),
        (pd.NA, None),
    ],
)
def test_canonical_phone(value: Any, expected: str | None) -> None:
    assert canonical_phone(value) == expected
    assert hash_phone(value) == (md5(expected) if expected else None)


MIXED: list[Any] = [
    "  Alice@Example.COM ",
    None,
    "ΟΔΟΣ@X.GR",
    NAN,
    "\x1c\x1fpad@x.org\x1e",
    "\u00a0nbsp@x.org\u2003",
    pd.NA,
    "",
    "  ",
    "İnci@x.tr",
    "8 (900) 123-45-67",
    "+7 900 123 45 67",
    "Straße@X.de",
    "плохой номер",
]


def mixed_series(values: list[Any], dtype: Any) -> pd.Series:
    index = [f"row{i}" for i in range(len(values))]
    if dtype is object:
        return pd.Series(values, index=index, dtype=object, name="contact")
    clean = [None if v is None or v is pd.NA or v != v else v for v in values]
    return pd.Series(clean, index=index, dtype=dtype, name="contact")


@pytest.mark.parametrize("dtype", [object, STR, "string", "category"])
@pytest.mark.parametrize(
    ("vector", "scalar"), [(hash_emails, hash_email), (hash_phones, hash_phone)]
)
def test_vectorized_equals_scalar(dtype: Any, vector: Any, scalar: Any) -> None:
    series = mixed_series(MIXED, dtype)
    out = vector(series)
    assert out.dtype == STR
    assert out.index.equals(series.index)
    assert out.name == "contact"
    expected = [scalar(v) for v in series]
    assert [None if v is pd.NA else v for v in out.tolist()] == expected


@pytest.mark.parametrize(
    "values",
    [
        [79001234567, 89001234567, 7],
        [79001234567.0, NAN, 8.9e10],
        [True, 12, "x@y.z", None, b"B@x.org", 3.25],
    ],
)
def test_vectorized_numbers_and_mixed_objects(values: list[Any]) -> None:
    series = pd.Series(values)
    for vector, scalar in ((hash_emails, hash_email), (hash_phones, hash_phone)):
        assert [None if v is pd.NA else v for v in vector(series)] == [scalar(v) for v in values]


def test_vectorized_all_missing_and_empty() -> None:
    assert hash_emails(pd.Series([None, None], dtype=object)).isna().all()
    empty = hash_phones(pd.Series([], dtype=STR))
    assert len(empty) == 0
    assert empty.dtype == STR


def test_vectorized_on_many_ascii_values_matches_hashlib() -> None:
    emails = [f" User{i}@Example.ORG" for i in range(20_000)]
    out = hash_emails(pd.Series(emails, dtype=STR))
    assert out.tolist() == [md5(e.strip().lower()) for e in emails]


def gmail(value: Any) -> str | None:
    text = canonical_email(value)
    if text is None or not text.endswith("@gmail.com"):
        return text
    local = text.split("@")[0].split("+")[0].replace(".", "")
    return local + "@gmail.com" if local else None


def test_custom_canonical() -> None:
    series = pd.Series(["J.Doe+news@Gmail.com", "jdoe@gmail.com", None, ".+x@gmail.com", "a@x.org"])
    out = hash_emails(series, canonical=gmail)
    assert out.tolist()[:2] == [md5("jdoe@gmail.com")] * 2
    assert out.isna().tolist() == [False, False, True, True, False]
    assert out.tolist() == [
        pd.NA if (h := hash_email(v, canonical=gmail)) is None else h for v in series
    ]
    digits_only = hash_phones(series.iloc[:1], canonical=lambda v: "79001234567")
    assert digits_only.tolist() == [md5("79001234567")]
    assert hash_phones(pd.Series(["1"]), canonical=lambda v: "").isna().all()


def test_hash_of_a_non_series_is_refused() -> None:
    with pytest.raises(InvalidInput, match="Series"):
        hash_emails(["a@x.org"])  # type: ignore[arg-type]


# --- flag_suppressed ---------------------------------------------------------


@pytest.fixture
def contacts() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "name": ["ann", "bob", "cid", "dan", "eve", "fay"],
            "email": ["Ann@X.org ", None, "cid@x.org", "dan@x.org", NAN, "fay@x.org"],
            "phone": ["+7 900 000-00-01", "8 900 000 00 02", None, "+7 900 000 00 04", "", 5],
        },
        index=["r6", "r5", "r4", "r3", "r2", "r1"],
    )


@pytest.fixture
def listed() -> list[str]:
    """ann's e-mail, bob's and dan's phones, fay's phone (a number), and noise."""
    return [
        md5("ann@x.org"),
        md5("+89000000002").upper(),
        md5("+79000000004"),
        md5("+5"),
        md5("nobody@x.org"),
    ]


def verdicts(out: pd.DataFrame) -> list[bool | None]:
    """``suppressed`` with ``<NA>`` (nothing to check) as None, which compares."""
    return [None if v is pd.NA else bool(v) for v in out["suppressed"]]


def flags(out: pd.DataFrame) -> list[tuple[bool | None, Any]]:
    return list(zip(verdicts(out), out["suppressed_by"].tolist(), strict=True))


NA = (None, pd.NA)  # a row with nothing to check: neither suppressed nor safe


def test_email_only(contacts: pd.DataFrame, listed: list[str]) -> None:
    out = flag_suppressed(contacts, listed, email="email")
    no = (False, pd.NA)
    assert flags(out) == [(True, "email"), NA, no, no, NA, no]


def test_phone_only(contacts: pd.DataFrame, listed: list[str]) -> None:
    out = flag_suppressed(contacts, listed, phone="phone")
    no = (False, pd.NA)
    assert flags(out) == [no, (True, "phone"), NA, (True, "phone"), NA, (True, "phone")]


def test_both_columns_email_wins(contacts: pd.DataFrame, listed: list[str]) -> None:
    listed.append(md5("+79000000001"))  # ann matches on both columns
    listed.append(md5("dan@x.org"))  # so does dan
    before = contacts.copy(deep=True)
    out = flag_suppressed(contacts, listed, email="email", phone="phone")
    no = (False, pd.NA)
    assert flags(out) == [
        (True, "email"),
        (True, "phone"),
        no,
        (True, "email"),
        NA,  # eve: no e-mail, a blank phone
        (True, "phone"),
    ]
    assert out["suppressed"].dtype == "boolean"
    assert out["suppressed_by"].dtype == STR
    assert out.index.tolist() == ["r6", "r5", "r4", "r3", "r2", "r1"]
    pd.testing.assert_frame_equal(out.drop(columns=["suppressed", "suppressed_by"]), before)
    pd.testing.assert_frame_equal(contacts, before)


@pytest.mark.parametrize("kind", ["frame", "series", "list", "set", "tuple", "generator", "upper"])
def test_suppressed_given_in_many_forms(
    contacts: pd.DataFrame, listed: list[str], kind: str
) -> None:
    given: Any = {
        "frame": pd.DataFrame({"md5": pd.array(listed, dtype=STR), "type": "x"}),
        "series": pd.Series(listed, index=range(10, 10 + len(listed))),
        "list": listed,
        "set": set(listed),
        "tuple": tuple(listed),
        "generator": (h for h in listed),
        "upper": pd.Series([h.upper() for h in listed], dtype=STR),
    }[kind]
    out = flag_suppressed(contacts, given, email="email", phone="phone")
    assert verdicts(out) == [True, True, False, True, None, True]


def test_suppressed_from_read_hashed_csv(contacts: pd.DataFrame, listed: list[str]) -> None:
    import io
    import zipfile

    from stoplist_nb.suppression.archive import read_hashed_csv

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("l.csv", "".join(f"email,{h}\n" for h in listed))
    out = flag_suppressed(contacts, read_hashed_csv(buf.getvalue()), email="email", phone="phone")
    assert out["suppressed"].sum() == 4


def test_hashed_columns(listed: list[str]) -> None:
    frame = pd.DataFrame(
        {
            "email_md5": [listed[0].upper(), f"  {listed[4]} ", None, md5("other")],
            "phone_md5": [None, None, listed[2], "not-a-hash"],
        }
    )
    with pytest.warns(UserWarning, match="1 values of column 'phone_md5' are not 32-hex"):
        out = flag_suppressed(frame, listed, email="email_md5", phone="phone_md5", hashed=True)
    assert flags(out) == [(True, "email"), (True, "email"), (True, "phone"), (False, pd.NA)]
    assert out.attrs["checked"] == ["email", "phone"]


def test_list_values_that_are_not_md5_are_reported(contacts: pd.DataFrame) -> None:
    with pytest.warns(UserWarning, match="2 values of the suppression list are not 32-hex"):
        out = flag_suppressed(contacts, ["ann@x.org", "dan@x.org", None], email="email")
    assert not out["suppressed"].any()


def test_no_warning_for_a_clean_call(contacts: pd.DataFrame, listed: list[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flag_suppressed(contacts, [*listed, None], email="email", phone="phone")


def test_missing_values_never_match() -> None:
    frame = pd.DataFrame({"email": [None, "", "  ", NAN, pd.NA]}, dtype=object)
    blank = [md5(""), md5(" "), md5("nan"), md5("None"), md5("<NA>"), md5("+")]
    out = flag_suppressed(frame, blank, email="email")
    assert verdicts(out) == [None] * 5
    assert out["suppressed_by"].isna().all()


def test_empty_inputs(contacts: pd.DataFrame, listed: list[str]) -> None:
    out = flag_suppressed(contacts.iloc[:0], listed, email="email", phone="phone")
    assert list(out.columns) == ["name", "email", "phone", "suppressed", "suppressed_by"]
    assert len(out) == 0
    out = flag_suppressed(contacts, [], email="email")
    assert not out["suppressed"].any()


def test_existing_result_columns_are_replaced(contacts: pd.DataFrame, listed: list[str]) -> None:
    first = flag_suppressed(contacts, listed, email="email")
    again = flag_suppressed(first, [], email="email")
    assert list(again.columns) == list(first.columns)
    assert not again["suppressed"].any()


def consumed_generator() -> Iterator[str]:
    raise AssertionError("suppressed was read before the arguments were checked")
    yield ""  # pragma: no cover


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "name a column to check"),
        ({"email": "email", "domains": "email"}, "domains must be True or False"),
        ({"domain": "site"}, "domain='site' is not a column"),
        ({"email": "mail"}, "email='mail' is not a column"),
        ({"phone": "tel"}, "phone='tel' is not a column"),
        ({"email": ["email"]}, "is not a column"),
        ({"email": "dup"}, "more than one column"),
        ({"email": "email", "email_canonical": str.lower, "hashed": True}, "hashed=True"),
        ({"phone": "phone", "phone_canonical": "digits"}, "must be callable"),
    ],
)
def test_bad_arguments_are_refused_before_any_work(
    contacts: pd.DataFrame, kwargs: dict[str, Any], match: str
) -> None:
    frame = contacts.assign(dup=1).rename(columns={"name": "dup"})
    with pytest.raises(InvalidInput, match=match):
        flag_suppressed(frame, consumed_generator(), **kwargs)


@pytest.mark.parametrize(
    ("suppressed", "match"),
    [
        ("0cc175b9c0f1b6a831c399e269772661", "collection of MD5"),
        (b"0cc175b9c0f1b6a831c399e269772661", "collection of MD5"),
        (42, "collection of MD5"),
        (pd.DataFrame({"hash": ["x"]}), "'md5' column"),
    ],
)
def test_bad_suppressed(contacts: pd.DataFrame, suppressed: Any, match: str) -> None:
    with pytest.raises(InvalidInput, match=match):
        flag_suppressed(contacts, suppressed, email="email")


def test_contacts_must_be_a_frame() -> None:
    with pytest.raises(InvalidInput, match="DataFrame"):
        flag_suppressed(pd.Series(["a@x.org"]), [], email="email")  # type: ignore[arg-type]


@pytest.mark.parametrize(("n_contacts", "n_list"), [(3_000, 60_000), (60_000, 3_000)])
def test_matches_a_plain_set_lookup(n_contacts: int, n_list: int) -> None:
    rng = random.Random(n_contacts)
    listed = [md5(f"user{i}@x.org") for i in range(n_list)]
    emails = [f"USER{rng.randrange(2 * n_list)}@x.org" for _ in range(n_contacts)]
    out = flag_suppressed(pd.DataFrame({"email": emails}), listed, email="email")
    members = set(listed)
    expected = [md5(e.lower()) in members for e in emails]
    assert out["suppressed"].tolist() == expected
    assert 0 < sum(expected) < n_contacts


def test_match_compares_all_128_bits() -> None:
    queries = np.array([[1, 2], [1, 3], [5, 6]], dtype=np.uint64)
    lookup = np.array([[1, 3], [7, 2]] + [[i, i] for i in range(100, 200)], dtype=np.uint64)
    assert matching.match(queries, lookup).tolist() == [False, True, False]
    assert matching.match(queries[:0], lookup).tolist() == []
    assert matching.match(queries, lookup[:0]).tolist() == [False] * 3


def test_lookup_keeps_every_entry_a_query_may_match() -> None:
    listed = [md5(str(i)) for i in range(50_000)]
    text = hashing.arrow_text(pd.Series([*listed, "junk", None], dtype=STR))
    queries, _ = matching.md5_digests(hashing.arrow_text(pd.Series(listed[::1000])))
    lookup, rows, invalid = matching.lookup(text, queries)
    assert invalid == 1
    assert len(queries) <= len(lookup) < len(listed) // 4
    assert matching.match(queries, lookup).all()
    assert [bytes(d).hex() for d in lookup] == [listed[i] for i in rows]


def test_canonical_must_return_text() -> None:
    with pytest.raises(InvalidInput, match="str or None"):
        hash_emails(pd.Series(["a@x.org"]), canonical=lambda v: 12)
