"""Contacts flagged against a suppression list (the rules: docs/suppression.md).

A Dask DataFrame is flagged partition by partition by the code that flags a pandas
frame, the list decoded once into one task every partition's task depends on.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb._checks import check_flag
from stoplist_nb.errors import InvalidInput
from stoplist_nb.suppression.contacts import KINDS
from stoplist_nb.suppression.hashing import (
    Canonical,
    after_at,
    arrow_text,
    canonical_forms,
    domain_digests,
    form_digests,
    strip_lower,
)
from stoplist_nb.suppression.matching import hashed_list, match_kinds, md5_digests, suppressed_text

if TYPE_CHECKING:
    import dask.dataframe as dd

__all__ = ["flag_suppressed"]

_Frame = TypeVar("_Frame", pd.DataFrame, "dd.DataFrame")


def flag_suppressed(
    contacts: _Frame,
    suppressed: Any,
    *,
    email: str | None = None,
    phone: str | None = None,
    domain: str | None = None,
    domains: bool = True,
    email_canonical: Canonical | None = None,
    phone_canonical: Canonical | None = None,
    hashed: bool = False,
) -> _Frame:
    """Return a copy of ``contacts`` flagging the rows found in a suppression list.

    The named columns are hashed and looked up among the list's MD5 values; a
    listed domain suppresses every e-mail at it, and with a kind column each
    contact is matched only against rows of its kind (or of no known kind). A
    Dask DataFrame (``pip install 'stoplist_nb[dask]'``) gives a lazy Dask
    DataFrame of the same partitions, columns and dtypes.

    Args:
        contacts: The contacts, one per row: a pandas or a Dask DataFrame.
        suppressed: A frame of :func:`~stoplist_nb.suppression.archive.read_hashed_csv`,
            a Series or any collection of MD5 hex strings.
        email: The column of e-mail addresses.
        phone: The column of phone numbers.
        domain: A column of domains, checked on their own (a leading ``@`` dropped).
        domains: Also check the domain of every e-mail (not with ``hashed=True``).
        email_canonical: A per-value rule replacing :func:`canonical_email`.
        phone_canonical: A per-value rule replacing :func:`canonical_phone`.
        hashed: The named columns already hold MD5 hex values.

    Returns:
        A copy (same rows, order, index) with ``suppressed`` (``boolean``;
        ``<NA>`` for a row with nothing to check) and ``suppressed_by``
        (``"email"``, ``"phone"`` or ``"domain"``, in that precedence, else
        ``<NA>``); ``attrs["checked"]`` lists the kinds checked.

    Raises:
        InvalidInput: No column named, a name that is not one column, or a bad argument.

    Warns:
        UserWarning: Values that are not MD5 hex strings, as they can never match.

    >>> import pandas as pd
    >>> contacts = pd.DataFrame({"email": ["a@x.org", " B@x.org", "c@Spam.example", None]})
    >>> listed = ["434B761914B3B547158C96A93C20B0C5", "c40bd7503cf8ca2195084b1e8838bd04"]
    >>> flag_suppressed(contacts, listed, email="email")["suppressed_by"].tolist()
    [<NA>, 'email', 'domain', <NA>]
    """
    columns = {"email": email, "phone": phone, "domain": domain}
    rules = {"email": email_canonical, "phone": phone_canonical}
    frame: Any = contacts
    # A Dask frame can exist only once dask.dataframe is imported: no import needed to tell.
    dask = sys.modules.get("dask.dataframe")
    if dask is not None and isinstance(frame, dask.DataFrame):
        frame = flag_partitions(frame, suppressed, columns, rules, domains=domains, hashed=hashed)
    else:
        check_args(frame, columns, rules, hashed, domains)
        text, words = suppressed_text(suppressed)
        frame = flag_frame(frame, text, words, columns, rules, domains=domains, hashed=hashed)
    return cast(_Frame, frame)


def check_args(
    contacts: Any, columns: Mapping[str, Any], rules: Mapping[str, Any], hashed: bool, domains: Any
) -> None:
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
    """:func:`flag_suppressed` on a checked pandas frame; ``text``, ``words`` as ``match_kinds``."""
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
    return np.asarray(pc.is_valid(strip_lower(values)), dtype=bool)


def flag_partitions(
    contacts: dd.DataFrame,
    suppressed: Any,
    columns: Mapping[str, str | None],
    rules: Mapping[str, Canonical | None],
    *,
    domains: bool,
    hashed: bool,
) -> dd.DataFrame:
    """:func:`flag_suppressed` for a Dask DataFrame (a Dask ``suppressed`` is computed first)."""
    from dask.base import is_dask_collection, tokenize
    from dask.delayed import delayed

    # The meta is an empty pandas frame: the pandas code checks it and gives the dtypes.
    check_args(contacts._meta, columns, rules, hashed, domains)
    if is_dask_collection(suppressed):
        suppressed = suppressed.compute()
    listed = hashed_list(suppressed)
    bad = listed.invalid
    warn_not_md5([f"{bad:,} values of the suppression list" if bad else ""], stacklevel=4)
    flag = functools.partial(
        flag_frame, columns=columns, rules=rules, domains=domains, hashed=hashed
    )
    meta = flag(contacts._meta, listed, None)
    # One task, not scatter: that needs a client now and copies the list to every worker.
    # Lowercase: dask.optimize rebuilds the frame from the first of its sorted keys.
    name = f"suppression-list-{tokenize(listed)}"
    shared = delayed(listed, name=name, pure=True, traverse=False)
    out: dd.DataFrame = contacts.map_partitions(flag, shared, None, meta=meta)  # type: ignore[no-untyped-call]
    return out
