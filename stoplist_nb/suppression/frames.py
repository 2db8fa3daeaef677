"""Contacts in one pandas DataFrame, flagged against a suppression list.

The code behind :func:`~stoplist_nb.flag_suppressed` for a pandas frame, and
for each partition of a Dask frame (:mod:`~stoplist_nb.suppression.partitions`):
the checks on its arguments, the named columns hashed
(:mod:`~stoplist_nb.suppression.hashing`, the domains in each spelling by
:mod:`~stoplist_nb.suppression.domains`), looked up in the list
(:mod:`~stoplist_nb.suppression.matching`), and the flags set.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb._checks import check_flag
from stoplist_nb.errors import InvalidInput
from stoplist_nb.suppression.contacts import KINDS
from stoplist_nb.suppression.domains import after_at, domain_digests
from stoplist_nb.suppression.hashing import Canonical, canonical_forms, form_digests, strip_lower
from stoplist_nb.suppression.matching import match_kinds, md5_digests
from stoplist_nb.suppression.text import arrow_text


def check_args(
    contacts: Any, columns: Mapping[str, Any], rules: Mapping[str, Any], hashed: bool, domains: Any
) -> None:
    """Raise ``InvalidInput`` unless the columns and canonical rules fit ``contacts``."""
    if not isinstance(contacts, pd.DataFrame):
        raise InvalidInput(f"contacts must be a DataFrame, not {type(contacts).__name__}")
    if all(name is None for name in columns.values()):
        raise InvalidInput(
            "name a column to check: e-mails (email=...), phones (phone=...) "
            "or domains (domain=...)"
        )
    check_flag("domains", domains)
    for role, name in columns.items():
        try:
            unique = name is None or isinstance(contacts.columns.get_loc(name), int)
        except (KeyError, TypeError, pd.errors.InvalidIndexError):
            raise InvalidInput(f"{role}={name!r} is not a column of contacts") from None
        if not unique:
            raise InvalidInput(f"{role}={name!r} names more than one column of contacts")
        rule = rules.get(role)
        if rule is not None and (hashed or not callable(rule)):
            why = "does not apply with hashed=True" if hashed else "must be callable"
            raise InvalidInput(f"{role}_canonical {why}")


def flag_frame(
    contacts: pd.DataFrame,
    text: Any,
    words: Any,
    columns: Mapping[str, str | None],
    rules: Mapping[str, Canonical | None],
    *,
    domains: bool,
    hashed: bool,
    stacklevel: int = 3,
) -> pd.DataFrame:
    """:func:`~stoplist_nb.flag_suppressed` on one pandas frame whose arguments were checked.

    Args:
        contacts: The contacts (one frame, or one partition of a Dask frame).
        text: The list as :func:`~stoplist_nb.suppression.matching.match_kinds`
            takes it: its MD5 strings, or a
            :class:`~stoplist_nb.suppression.matching.HashedList`.
        words: The list's kind words, or ``None``.
        columns: The column named for each kind (``email``, ``phone``,
            ``domain``), or ``None``.
        rules: The canonical rule for ``email`` and ``phone``, or ``None``.
        domains: Also check the domain of every e-mail.
        hashed: The named columns already hold MD5 hex values.
        stacklevel: Where the warning about values not MD5 points.

    Returns:
        The flagged copy, as :func:`~stoplist_nb.flag_suppressed` describes it.
    """
    n = len(contacts)
    checks: list[tuple[str, np.ndarray, Callable[[np.ndarray], np.ndarray]]] = []
    notes, sources = [], []
    # Rows with something to look up: the others are unknown (<NA>), not "safe".
    checkable = np.zeros(n, dtype=bool)
    for kind, name in columns.items():
        if name is None:
            continue
        if hashed:
            values = arrow_text(contacts[name])
            digests, valid = md5_digests(values)
            checkable |= _present(values)
            bad = len(valid) - int(valid.sum()) - values.null_count
            notes.append(f"{bad:,} values of column {name!r}" if bad else "")
        elif kind == "domain":
            sources.append(after_at(arrow_text(contacts[name]), need_at=False))
            checkable |= _present(sources[-1])
            continue
        else:
            forms = canonical_forms(contacts[name], rules[kind], kind)
            digests, valid = form_digests(forms)
            checkable |= valid
            if kind == "email" and domains:
                sources.append(after_at(forms, need_at=True))
        checks.append((kind, digests[valid], functools.partial(_spread_rows, valid)))
    if sources:
        digests, owner, rows = domain_digests(sources)
        checks.append(("domain", digests, functools.partial(_spread_domains, owner, rows)))
    found, bad = match_kinds(text, words, [(KINDS.index(kind), d) for kind, d, _ in checks])
    notes.insert(0, f"{bad:,} values of the suppression list" if bad else "")

    hits = {kind: np.zeros(n, dtype=bool) for kind in KINDS if kind in {c[0] for c in checks}}
    for (kind, _, spread), hit in zip(checks, found, strict=True):
        hits[kind] |= spread(hit)
    checked = list(hits)
    chosen = np.full(n, -1, dtype=np.int64)
    for position in reversed(range(len(checked))):
        chosen[hits[checked[position]]] = position
    by = pc.take(pa.array(checked, pa.large_string()), pa.array(chosen, mask=chosen < 0))
    out = contacts.copy()
    out["suppressed"] = pd.arrays.BooleanArray(chosen >= 0, ~checkable)
    out["suppressed_by"] = pd.arrays.ArrowStringArray(pa.chunked_array([by], pa.large_string()))
    out.attrs["checked"] = checked
    warn_not_md5(notes, stacklevel=stacklevel + 1)
    return out


def warn_not_md5(notes: list[str], *, stacklevel: int) -> None:
    """Warn that the values counted in ``notes`` (blank ones left out) can never match.

    ``stacklevel`` counts from this function, as :func:`warnings.warn`'s does.
    """
    if message := " and ".join(note for note in notes if note):
        warnings.warn(
            f"{message} are not 32-hex MD5 values and can never match", stacklevel=stacklevel
        )


def _spread_rows(valid: np.ndarray, found: np.ndarray) -> np.ndarray:
    flags = np.zeros(len(valid), dtype=bool)
    flags[valid] = found
    return flags


def _spread_domains(owner: np.ndarray, rows: np.ndarray, found: np.ndarray) -> np.ndarray:
    listed = np.zeros(rows.max(initial=0) + 1, dtype=bool)
    listed[owner[found]] = True
    # A contact's domains (from its e-mail, from the domain column) are rows of `rows`.
    return np.asarray(listed[rows].any(axis=0), dtype=bool)


def _present(values: Any) -> np.ndarray:
    """Which values hold some text: not null, not blank."""
    return np.asarray(pc.is_valid(strip_lower(values)), dtype=bool)
