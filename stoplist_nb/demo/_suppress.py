"""The demo suppression list: its contacts, their canonical forms and their MD5 hashes.

The list is drawn from the demo profiles so that matching profiles against it finds a
real overlap, and padded with about as many contacts that belong to no profile. Like
the profiles, it comes from a private ``random.Random``: the same seed and profiles
always give the same list.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from stoplist_nb.demo._words import WORDS

__all__ = [
    "DEFAULT_SUPPRESS_ID",
    "DEFAULT_SUPPRESS_NAME",
    "EXPORT_TYPES",
    "KINDS",
    "build_suppressed",
    "canonical",
    "canonicalize",
    "hashed_rows",
    "md5_hex",
]

DEFAULT_SUPPRESS_ID = 7
# Spaces, Cyrillic and parentheses on purpose: the download path must be URL-quoted.
DEFAULT_SUPPRESS_NAME = "Стоп-лист 2024 (main)"

KINDS: tuple[str, ...] = ("emails", "phones", "domains")
EXPORT_TYPES: tuple[str, ...] = (*KINDS, "all")
# The singular word a row of each kind carries in the layouts that name it.
ROW_TYPE = {"emails": "email", "phones": "phone", "domains": "domain"}

# Shares of the profiles' contacts copied into the list.
_EMAIL_SHARE = 0.15
_PHONE_SHARE = 0.15
_DOMAIN_SHARE = 0.10
_EXTRA_PHONE_PREFIXES = ("+7", "+7", "+49", "+33", "+1", "+380")
_EXTRA_TLDS = (".example", ".test", ".invalid")


def canonical(kind: str, value: str) -> str:
    """The form of ``value`` that is hashed: what both sides must agree on.

    E-mails are stripped and lower-cased, phones become ``+`` and their ASCII digits,
    domains are stripped and lower-cased.

    Args:
        kind: ``"emails"``, ``"phones"`` or ``"domains"``.
        value: The contact as written anywhere.

    Returns:
        The canonical form.

    Raises:
        ValueError: If the value is empty once canonical, or ``kind`` is unknown.

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


def md5_hex(value: str) -> str:
    """Lower-case hex MD5 of the UTF-8 bytes of ``value``."""
    return hashlib.md5(value.encode("utf-8")).hexdigest()


def canonicalize(suppressed: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """Validate a user-given list: canonical forms, sorted, without duplicates.

    Args:
        suppressed: Any of the keys ``"emails"``, ``"phones"``, ``"domains"``, each
            an iterable of strings; a missing key is an empty list.

    Returns:
        A dict with all three keys.

    Raises:
        ValueError: On an unknown key, a value that is not a string, or an empty value.
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
        if not isinstance(subscriptions, list):
            continue
        for sub in subscriptions:
            if not isinstance(sub, Mapping):
                continue
            for block, key, kind in (
                ("email_data", "email", "emails"),
                ("phone_data", "phone", "phones"),
            ):
                data = sub.get(block)
                value = data.get(key) if isinstance(data, Mapping) else None
                if isinstance(value, str):
                    try:
                        yield kind, canonical(kind, value)
                    except ValueError:
                        continue


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
    """The demo suppression list for ``profiles``, as canonical values per kind.

    About 15% of the subscription e-mails and phones and 10% of the e-mail domains
    (from the less used half) of the profiles, plus as many e-mails, phones and domains
    again that no profile has.

    Args:
        profiles: The data set of the service.
        seed: Seed of the draw; the same seed and profiles give the same list.

    Returns:
        ``{"emails": [...], "phones": [...], "domains": [...]}``, each sorted.
    """
    rng = random.Random(f"stoplist-nb-demo/suppress/{seed}")
    emails: set[str] = set()
    phones: set[str] = set()
    for kind, value in _profile_contacts(profiles):
        (emails if kind == "emails" else phones).add(value)
    used = Counter(email.rsplit("@", 1)[1] for email in emails if "@" in email)
    domains = set(used)
    own_emails = rng.sample(sorted(emails), _share(len(emails), _EMAIL_SHARE))
    own_phones = rng.sample(sorted(phones), _share(len(phones), _PHONE_SHARE))
    # From the less used half: a blocked gmail.com would flag a third of the profiles
    # and drown the e-mail and phone matches.
    rare = sorted(domains, key=lambda d: (used[d], d))[: max(1, (len(domains) + 1) // 2)]
    own_domains = rng.sample(rare, min(len(rare), _share(len(domains), _DOMAIN_SHARE)))

    def new_domain() -> str:
        return f"{rng.choice(WORDS)}-{rng.randint(1, 99)}{rng.choice(_EXTRA_TLDS)}"

    def new_email() -> str:
        # Half at domains the profiles use, so a domain alone never decides a match.
        pool = sorted(domains) if domains and rng.random() < 0.5 else None
        domain = rng.choice(pool) if pool else new_domain()
        return f"{rng.choice(WORDS)}.{rng.choice(WORDS)}{rng.randint(1, 9999)}@{domain}"

    def new_phone() -> str:
        return rng.choice(_EXTRA_PHONE_PREFIXES) + "".join(
            str(rng.randrange(10)) for _ in range(10)
        )

    extra_domains = _fresh(new_domain, set(domains), len(own_domains))
    extra_emails = _fresh(new_email, set(emails), len(own_emails))
    extra_phones = _fresh(new_phone, set(phones), len(own_phones))
    return {
        "emails": sorted({*own_emails, *extra_emails}),
        "phones": sorted({*own_phones, *extra_phones}),
        "domains": sorted({*own_domains, *extra_domains}),
    }


def hashed_rows(suppressed: Mapping[str, Sequence[str]], type_: str) -> list[tuple[str, str]]:
    """(row type, md5) of every contact an export of ``type_`` holds, in list order.

    Args:
        suppressed: Canonical values per kind.
        type_: ``"emails"``, ``"phones"``, ``"domains"`` or ``"all"``.

    Returns:
        Pairs such as ``("email", "<32 hex>")``.
    """
    kinds = KINDS if type_ == "all" else (type_,)
    return [(ROW_TYPE[kind], md5_hex(value)) for kind in kinds for value in suppressed[kind]]
