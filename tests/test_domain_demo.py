"""The demo's default data set shows a contact suppressed by its domain alone.

A listed domain suppresses every address at it, listed or not; the notebooks and
``stoplist-nb demo`` rely on the default data holding such an address to show it.
"""

from __future__ import annotations

import inspect
from typing import Any

import stoplist_nb as sn
from stoplist_nb.cli import build_parser
from stoplist_nb.demo import DemoService
from stoplist_nb.demo._data import generate_profiles


def addresses(profiles: list[dict[str, Any]]) -> set[str]:
    """The canonical e-mail of every subscription, as the demo service holds them."""
    return {
        email.strip().lower()
        for profile in profiles
        for sub in profile.get("subscriptions") or []
        if isinstance(email := (sub.get("email_data") or {}).get("email"), str)
    }


def test_the_defaults_are_the_ones_checked() -> None:
    params = inspect.signature(sn.connect).parameters
    assert (params["profiles"].default, params["seed"].default) == (2000, 0)
    args = build_parser().parse_args(["demo"])
    assert (args.profiles, args.seed) == (2000, 0)


def test_default_data_has_an_address_listed_by_its_domain_only() -> None:
    held = generate_profiles(2000, 0)
    listed = DemoService(held, 0).suppressed  # the same list the service exports, never started
    domains, emails = set(listed["domains"]), set(listed["emails"])
    mine = addresses(held)
    by_domain_only = {a for a in mine if a.rsplit("@", 1)[1] in domains and a not in emails}
    assert by_domain_only
    # Listed domains are ones the profiles use, and not the largest: no flood of matches.
    assert len(by_domain_only) < len(mine) // 10
    # And the e-mail matches stay: a listed domain does not hide listed addresses.
    assert mine & emails
