"""The demo suppression list: its contacts, their canonical forms and their MD5 hashes.

The list is drawn from the demo profiles, so that matching them against it finds a real
overlap, and padded with about as many contacts that belong to no profile.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from stoplist_nb.demo._data import WORDS

__all__ = [
    "DEFAULT_SUPPRESS_ID",
    "DEFAULT_SUPPRESS_NAME",
    "EXPORT_TYPES",
    "build_suppressed",
    "canonicalize",
    "hashed_rows",
]

DEFAULT_SUPPRESS_ID = 7
# Spaces, Cyrillic and parentheses on purpose: the download path must be URL-quoted.
DEFAULT_SUPPRESS_NAME = "Стоп-лист 2024 (main)"

KINDS: tuple[str, ...] = ("emails", "phones", "domains")
EXPORT_TYPES: tuple[str, ...] = (*KINDS, "all")


def canonical(kind: str, value: str) -> str:
    """The form of ``value`` that is hashed: what both sides must agree on.

    E-mails and domains are stripped and lower-cased, phones become ``+`` and their
    ASCII digits. A value empty once canonical, or an unknown ``kind``, is a
    ``ValueError``.

    >>> canonical("phones", " +7 (912) 000-11-22 ")
    '+79120001122'
    >>> canonical("emails", "  Ann.Lee@Example.COM ")
    'ann.lee@example.com'
    """
    if kind == "phones":
        digits = "".join(ch for ch in value if "0" <= ch <= "9")
        if not digits:
            raise ValueError(f"a phone needs digits, got {value!r}")
        return "+" + digits
    if kind not in ("emails", "domains"):
        raise ValueError(f"unknown contact kind {kind!r}; use one of {list(KINDS)}")
    text = value.strip().lower()
    if not text:
        raise ValueError(f"empty {kind[:-1]} in the suppression list")
    return text


def canonicalize(suppressed: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """A given list checked, as canonical forms per kind, sorted, without duplicates.

    A missing kind is empty; an unknown key or a value that is not a string is a
    ``ValueError``.
    """
    unknown = set(suppressed) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown suppressed keys {sorted(unknown)}; use {list(KINDS)}")
    result: dict[str, list[str]] = {}
    for kind in KINDS:
        values = suppressed.get(kind, ())
        if isinstance(values, str):
            raise ValueError(f"suppressed[{kind!r}] must be a list of strings, not a string")
        forms: set[str] = set()
        for value in values:
            if not isinstance(value, str):
                raise ValueError(f"suppressed[{kind!r}] holds a non-string: {value!r}")
            forms.add(canonical(kind, value))
        result[kind] = sorted(forms)
    return result


def _profile_contacts(profiles: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, str]]:
    """(kind, canonical value) of every subscription e-mail and phone."""
    # Profiles may come from the caller, so no field is trusted to have its usual shape.
    for profile in profiles:
        subscriptions = profile.get("subscriptions")
        for sub in subscriptions if isinstance(subscriptions, list) else ():
            for block, key, kind in (
                ("email_data", "email", "emails"),
                ("phone_data", "phone", "phones"),
            ):
                data = sub.get(block) if isinstance(sub, Mapping) else None
                value = data.get(key) if isinstance(data, Mapping) else None
                if isinstance(value, str):
                    with contextlib.suppress(ValueError):
                        yield kind, canonical(kind, value)


def _share(count: int, fraction: float) -> int:
    # At least one whenever there is anything, so a small data set still overlaps.
    return 0 if count == 0 else max(1, round(count * fraction))


def _fresh(make: Callable[[], str], taken: set[str], count: int) -> list[str]:
    """``count`` new values from ``make()`` that are not in ``taken`` (which grows)."""
    values: list[str] = []
    while len(values) < count:
        value = make()
        if value not in taken:
            taken.add(value)
            values.append(value)
    return values


def build_suppressed(profiles: Sequence[Mapping[str, Any]], seed: int) -> dict[str, list[str]]:
    """The demo suppression list for ``profiles``, as sorted canonical values per kind.

    About 15% of the subscription e-mails and phones and 10% of the e-mail domains
    (from the less used half) of the profiles, plus as many e-mails, phones and domains
    again that no profile has; the same seed and profiles give the same list.
    """
    rng = random.Random(f"stoplist-nb-demo/suppress/{seed}")
    emails: set[str] = set()
    phones: set[str] = set()
    for kind, value in _profile_contacts(profiles):
        (emails if kind == "emails" else phones).add(value)
    used = Counter(email.rsplit("@", 1)[1] for email in emails if "@" in email)
    domains = set(used)
    own_emails = rng.sample(sorted(emails), _share(len(emails), 0.15))
    own_phones = rng.sample(sorted(phones), _share(len(phones), 0.15))
    # From the less used half: a blocked gmail.com would flag a third of the profiles
    # and drown the e-mail and phone matches.
    rare = sorted(domains, key=lambda d: (used[d], d))[: max(1, (len(domains) + 1) // 2)]
    own_domains = rng.sample(rare, min(len(rare), _share(len(domains), 0.10)))

    def new_domain() -> str:
        name = f"{rng.choice(WORDS)}-{rng.randint(1, 99)}"
        return name + rng.choice((".example", ".test", ".invalid"))

    def new_email() -> str:
        # Half at domains the profiles use, so a domain alone never decides a match.
        pool = sorted(domains) if domains and rng.random() < 0.5 else None
        domain = rng.choice(pool) if pool else new_domain()
        return f"{rng.choice(WORDS)}.{rng.choice(WORDS)}{rng.randint(1, 9999)}@{domain}"

    def new_phone() -> str:
        prefix = rng.choice(("+7", "+7", "+49", "+33", "+1", "+380"))
        return prefix + "".join(str(rng.randrange(10)) for _ in range(10))

    extra_domains = _fresh(new_domain, set(domains), len(own_domains))
    extra_emails = _fresh(new_email, set(emails), len(own_emails))
    extra_phones = _fresh(new_phone, set(phones), len(own_phones))
    return {
        "emails": sorted({*own_emails, *extra_emails}),
        "phones": sorted({*own_phones, *extra_phones}),
        "domains": sorted({*own_domains, *extra_domains}),
    }


def hashed_rows(suppressed: Mapping[str, Sequence[str]], type_: str) -> list[tuple[str, str]]:
    """(row type, md5) of every contact an export of ``type_`` holds, in list order."""
    kinds = KINDS if type_ == "all" else (type_,)
    rows = [(kind[:-1], value) for kind in kinds for value in suppressed[kind]]
    return [(row, hashlib.md5(value.encode("utf-8")).hexdigest()) for row, value in rows]
