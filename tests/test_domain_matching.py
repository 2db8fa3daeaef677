"""Suppression by domain and by kind, end to end: demo export -> read -> flag_suppressed."""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from demo_fixtures import served_and_cleared
from hypothesis import given
from hypothesis import strategies as st

import stoplist_nb as sn
from stoplist_nb.demo import DemoService
from stoplist_nb.suppression.hashing import canonical_domain, canonical_email

STR = pd.StringDtype("pyarrow")
NO = (False, pd.NA)
NA = (None, pd.NA)  # nothing to check in that row: neither suppressed nor safe

# Every entry is there for one case below; the demo hashes their canonical forms.
SUPPRESSED = {
    "emails": [
        "ann@corp.example",
        "+79000000009",  # a phone's canonical text, listed as an e-mail
        "fake-domain.example",  # a domain's text, listed as an e-mail
    ],
    "phones": ["+7 900 000-00-01"],
    "domains": ["Spam.Example", "пример.рф", "xn--80akhbyknj4f.xn--p1ai"],  # испытание.рф
}

# (e-mail, phone) of each contact, by what it shows.
CONTACTS = {
    "listed_address": ("ann@corp.example", None),
    "listed_domain": ("bob@spam.example", None),
    "mixed_case_address": ("  Ann@CORP.Example ", None),
    "mixed_case_domain": ("\tBob@SPAM.example ", None),
    "listed_phone": (None, "+7 (900) 000-00-01"),
    "nothing_to_check": (None, None),
    "idn_listed_unicode_contact_idna": ("ivan@xn--e1afmkfd.xn--p1ai", None),
    "idn_listed_idna_contact_unicode": ("Olga@ИСПЫТАНИЕ.РФ", None),
    "phone_listed_as_email": (None, "+7 900 000 00 09"),
    "domain_listed_as_email": ("dan@fake-domain.example", None),
    "email_beats_phone": ("ann@corp.example", "+79000000001"),
    "phone_beats_domain": ("carl@spam.example", "+79000000001"),
    "clean": ("zoe@ok.example", "+79000000077"),
}

# What each contact matches against the whole list ("all") when every kind is
# matched against every row (no kind column).
EVERY_ROW = {
    "listed_address": (True, "email"),
    "listed_domain": (True, "domain"),
    "mixed_case_address": (True, "email"),
    "mixed_case_domain": (True, "domain"),
    "listed_phone": (True, "phone"),
    "nothing_to_check": NA,
    "idn_listed_unicode_contact_idna": (True, "domain"),
    "idn_listed_idna_contact_unicode": (True, "domain"),
    "phone_listed_as_email": (True, "phone"),
    "domain_listed_as_email": (True, "domain"),
    "email_beats_phone": (True, "email"),
    "phone_beats_domain": (True, "phone"),
    "clean": NO,
}
# With a kind column, a phone is not matched against e-mail rows, nor a domain.
BY_KIND = EVERY_ROW | {"phone_listed_as_email": NO, "domain_listed_as_email": NO}


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


listed_svc, service = served_and_cleared("listed_svc", profiles=3, seed=1, suppressed=SUPPRESSED)


@pytest.fixture
def api(service: DemoService) -> Iterator[sn.Client]:
    with service.client() as c:
        yield c


@pytest.fixture
def contacts() -> pd.DataFrame:
    emails, phones = zip(*CONTACTS.values(), strict=True)
    return pd.DataFrame({"email": emails, "phone": phones}, index=list(CONTACTS))


def export(api: sn.Client, svc: DemoService, type: str, layout: Any = "plain") -> pd.DataFrame:
    svc.plan_next_export(steps=0, csv_layout=layout)
    return sn.read_suppression_list(
        api, svc.suppress_id, type=type, poll_interval=0.01, progress=False
    )


def verdicts(out: pd.DataFrame) -> list[bool | None]:
    """``suppressed`` with ``<NA>`` (nothing to check) as None, which compares."""
    return [None if v is pd.NA else bool(v) for v in out["suppressed"]]


def flags(out: pd.DataFrame) -> dict[Any, tuple[bool | None, Any]]:
    pairs = zip(verdicts(out), out["suppressed_by"].tolist(), strict=True)
    return dict(zip(out.index, pairs, strict=True))


def test_all_list_without_kind_column_matches_every_kind_against_every_row(
    api: sn.Client, service: DemoService, contacts: pd.DataFrame
) -> None:
    stop = export(api, service, "all")
    assert list(stop.columns) == ["md5"]
    assert "kinds" not in stop.attrs
    out = sn.flag_suppressed(contacts, stop, email="email", phone="phone")
    assert flags(out) == EVERY_ROW
    assert out.attrs["checked"] == ["email", "phone", "domain"]
    assert out["suppressed"].dtype == "boolean"
    assert out["suppressed_by"].dtype == STR


@pytest.mark.parametrize("layout", ["semicolon", "two_columns"])
def test_all_list_with_kind_column_matches_each_kind_against_its_rows(
    api: sn.Client, service: DemoService, contacts: pd.DataFrame, layout: str
) -> None:
    stop = export(api, service, "all", layout)
    assert set(stop.columns) == {"md5", "type"}
    assert stop.attrs["kinds"] == {"email": 3, "phone": 1, "domain": 3}
    out = sn.flag_suppressed(contacts, stop, email="email", phone="phone")
    assert flags(out) == BY_KIND
    assert out.attrs["checked"] == ["email", "phone", "domain"]


def test_a_phone_whose_hash_is_listed_as_an_email_is_matched_only_without_kinds(
    api: sn.Client, service: DemoService
) -> None:
    phone = pd.DataFrame({"phone": ["+7 900 000 00 09"]})
    typed = export(api, service, "emails", "semicolon")
    assert typed.attrs["kinds"] == {"email": 3}
    assert md5("+79000000009") in set(typed["md5"])
    assert flags(sn.flag_suppressed(phone, typed, phone="phone")) == {0: NO}
    plain = export(api, service, "emails")
    assert flags(sn.flag_suppressed(phone, plain, phone="phone")) == {0: (True, "phone")}


@pytest.mark.parametrize("layout", ["plain", "semicolon"])
def test_domains_list_alone_suppresses_every_address_at_a_listed_domain(
    api: sn.Client, service: DemoService, contacts: pd.DataFrame, layout: str
) -> None:
    stop = export(api, service, "domains", layout)
    assert len(stop) == 3
    out = sn.flag_suppressed(contacts, stop, email="email", phone="phone")
    domain_rows = {
        "listed_domain",
        "mixed_case_domain",
        "idn_listed_unicode_contact_idna",
        "idn_listed_idna_contact_unicode",
        "phone_beats_domain",  # its phone is not in a domains list
    }
    assert flags(out) == {
        name: (True, "domain") if name in domain_rows else NA if name == "nothing_to_check" else NO
        for name in CONTACTS
    }


def test_internationalized_domains_match_in_both_spellings(
    api: sn.Client, service: DemoService
) -> None:
    stop = export(api, service, "domains")
    assert md5("пример.рф") in set(stop["md5"])
    assert md5("xn--e1afmkfd.xn--p1ai") not in set(stop["md5"])
    assert md5("xn--80akhbyknj4f.xn--p1ai") in set(stop["md5"])
    emails = [
        "ivan@xn--e1afmkfd.xn--p1ai",  # listed in Unicode, written in IDNA
        "IVAN@XN--E1AFMKFD.XN--P1AI",
        "ivan@ПРИМЕР.РФ",
        "olga@испытание.рф",  # listed in IDNA, written in Unicode
        "olga@sub.испытание.рф",  # a subdomain is another domain
        "olga@xn--e1afmkfd.example",  # one label converts, not the whole domain
    ]
    out = sn.flag_suppressed(pd.DataFrame({"email": emails}), stop, email="email")
    assert out["suppressed"].tolist() == [True, True, True, True, False, False]
    sites = pd.DataFrame({"site": ["@Пример.рф", "xn--80akhbyknj4f.xn--p1ai", "испытание.рф"]})
    assert sn.flag_suppressed(sites, stop, domain="site")["suppressed"].all()


def test_domains_false_checks_only_the_addresses(
    api: sn.Client, service: DemoService, contacts: pd.DataFrame
) -> None:
    stop = export(api, service, "all")
    out = sn.flag_suppressed(contacts, stop, email="email", phone="phone", domains=False)
    expected = {name: NO if pair == (True, "domain") else pair for name, pair in EVERY_ROW.items()}
    assert flags(out) == expected
    assert out.attrs["checked"] == ["email", "phone"]


def test_domain_column_alone(api: sn.Client, service: DemoService) -> None:
    stop = export(api, service, "all", "semicolon")
    sites = pd.DataFrame(
        {"site": ["Spam.Example", " @spam.example ", "ok.example", None, "", "SPAM.example\n"]}
    )
    out = sn.flag_suppressed(sites, stop, domain="site")
    assert verdicts(out) == [True, True, False, None, None, True]
    assert out["suppressed_by"].dropna().unique().tolist() == ["domain"]
    assert out.attrs["checked"] == ["domain"]
    # domains=False concerns the domains of e-mails, not a named domain column.
    again = sn.flag_suppressed(sites, stop, domain="site", domains=False)
    assert verdicts(again) == verdicts(out)


def test_domain_column_and_email_domains_together(api: sn.Client, service: DemoService) -> None:
    stop = export(api, service, "all", "two_columns")
    frame = pd.DataFrame(
        {
            "email": ["bob@spam.example", "bob@ok.example", "bob@ok.example", None],
            "site": [None, "spam.example", "ok.example", "пример.рф"],
        }
    )
    out = sn.flag_suppressed(frame, stop, email="email", domain="site")
    assert flags(out) == {0: (True, "domain"), 1: (True, "domain"), 2: NO, 3: (True, "domain")}
    assert out.attrs["checked"] == ["email", "domain"]


def test_hashed_emails_get_no_domain_check(
    api: sn.Client, service: DemoService, contacts: pd.DataFrame
) -> None:
    stop = export(api, service, "all")
    hashed = pd.DataFrame({"email_md5": sn.hash_emails(contacts["email"])}, index=contacts.index)
    out = sn.flag_suppressed(hashed, stop, email="email_md5", hashed=True)
    email = (True, "email")
    expected = {
        name: email if pair == email else NO if CONTACTS[name][0] else NA
        for name, pair in EVERY_ROW.items()
    }
    assert flags(out) == expected
    assert out.attrs["checked"] == ["email"]
    sites = pd.DataFrame({"site_md5": [md5("spam.example"), md5("ok.example")]})
    assert flags(sn.flag_suppressed(sites, stop, domain="site_md5", hashed=True)) == {
        0: (True, "domain"),
        1: NO,
    }


def test_rows_of_unknown_or_missing_kind_match_every_kind() -> None:
    words: list[Any] = ["banana", None, "", "EMAILS", " Phones ", "sms", "Domains"]
    hashes = [md5("a@x.org"), md5("+71"), md5("y.org"), md5("b@x.org"), md5("+72")]
    hashes += [md5("+73"), md5("z.org")]
    stop = pd.DataFrame({"md5": hashes, "Kind": words})
    contacts = pd.DataFrame(
        {
            "email": ["a@x.org", "q@x.org", "q@y.org", "b@x.org", "q@x.org", "q@x.org", "q@z.org"],
            "phone": [None, "+71", None, None, "+72", "+73", None],
        }
    )
    out = sn.flag_suppressed(contacts, stop, email="email", phone="phone")
    assert flags(out) == {
        0: (True, "email"),
        1: (True, "phone"),
        2: (True, "domain"),
        3: (True, "email"),
        4: (True, "phone"),
        5: (True, "phone"),
        6: (True, "domain"),
    }
    # The same hashes under the wrong kinds: only the rows of unknown kind still match.
    shifted = stop.assign(Kind=[*words[:3], "phone", "domain", "email", "email"])
    out = sn.flag_suppressed(contacts, shifted, email="email", phone="phone")
    assert out["suppressed"].tolist() == [True, True, True, False, False, False, False]


def test_kinds_are_summed_over_the_files_of_one_export(
    api: sn.Client, service: DemoService
) -> None:
    paths = []
    for kind in ("emails", "domains"):
        service.plan_next_export(steps=0, csv_layout="two_columns")
        task_id = sn.start_suppression_export(api, service.suppress_id, type=kind)
        status = sn.wait_for_task(api, task_id, poll_interval=0.01, progress=False)
        paths.append(status.hashed_files[0])
    reply = {"status": "completed", "progress": 100, "result": {"hashed_file": paths, "total": 6}}
    service.add_fault("tasks/status", "raw", text=json.dumps({"error": 0, "data": reply}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stop = sn.read_suppression_list(
            api, service.suppress_id, poll_interval=0.01, progress=False
        )
    assert len(stop) == 6
    assert stop.attrs["kinds"] == {"email": 3, "domain": 3}


def test_an_idna_conversion_that_fails_keeps_the_lowercased_text() -> None:
    domains = ["xn--zz--not-punycode.example", "☃.Example", "a_b.пример.рф"]
    stop = [md5("xn--zz--not-punycode.example"), md5("☃.example"), md5("a_b.xn--e1afmkfd.xn--p1ai")]
    out = sn.flag_suppressed(pd.DataFrame({"site": domains}), stop, domain="site")
    assert out["suppressed"].tolist() == [True, True, True]


@given(st.lists(st.text(st.sampled_from("aZ@.-_ \t\u00a0éΣς0İ"), max_size=12), max_size=8))
def test_domains_are_canonical_as_the_scalar_rule(values: list[str]) -> None:
    frame = pd.DataFrame({"site": values, "email": values}, dtype=object)
    sites = [canonical_domain(v) for v in values]
    stop = [md5(site) for site in sites if site]
    out = sn.flag_suppressed(frame, stop, domain="site")
    assert verdicts(out) == [None if site is None else True for site in sites]
    # From an e-mail, only with an "@" in its canonical form (a listed domain never
    # holds one, so no row with an "@" matches as an e-mail).
    emails = [canonical_email(v) for v in values]
    owned = [canonical_domain(e) if e and "@" in e else None for e in emails]
    out = sn.flag_suppressed(frame, [md5(d) for d in owned if d], email="email")
    assert out["suppressed_by"].eq("domain").fillna(False).tolist() == [
        d is not None for d in owned
    ]
