"""Contacts flagged against a suppression list: :func:`flag_suppressed`.

The contacts are hashed as :mod:`~stoplist_nb.suppression.hashing` says (the
canonical forms are there), and a pandas frame is flagged by
:mod:`~stoplist_nb.suppression.frames`.

What :func:`flag_suppressed` matches:

* Each e-mail, phone and domain by the hash of its canonical form; with
  ``domains=True`` (the default) each e-mail's domain too, so a listed domain
  suppresses every address at it.
* An internationalized domain in both spellings: Unicode (``пример.рф``) and
  IDNA (``xn--e1afmkfd.xn--p1ai``, UTS 46 mapping, IDNA 2008), label by label;
  either one listed is a match. A label that cannot be converted is kept as it is.
* Kinds: when the list frame has a column named ``type`` or ``kind`` (any
  case), its words say what each row holds: ``email``/``emails``,
  ``phone``/``phones``/``sms``, ``domain``/``domains`` (any case). An e-mail
  is then matched only against e-mail rows, a phone against phone rows, a
  domain against domain rows; a row whose word is missing or unknown is
  matched against every kind, since a missed suppression costs more than a
  contact left out. Without such a column, or for a plain collection of
  hashes, every kind is matched against every row.
* ``suppressed_by`` names the kind that matched, the most specific first:
  ``"email"``, then ``"phone"``, then ``"domain"``.

Contacts in a Dask DataFrame are flagged partition by partition
(:mod:`~stoplist_nb.suppression.partitions`), by the same code.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TypeGuard, cast, overload

import pandas as pd

from stoplist_nb.suppression.frames import check_args, flag_frame
from stoplist_nb.suppression.hashing import Canonical
from stoplist_nb.suppression.matching import suppressed_text

if TYPE_CHECKING:
    import dask.dataframe as dd

__all__ = ["flag_suppressed"]


def _is_dask_frame(obj: Any) -> TypeGuard[dd.DataFrame]:
    # A Dask frame can exist only once dask.dataframe is imported: no import needed to tell.
    module = sys.modules.get("dask.dataframe")
    return module is not None and isinstance(obj, module.DataFrame)


@overload
def flag_suppressed(
    contacts: pd.DataFrame,
    suppressed: Any,
    *,
    email: str | None = None,
    phone: str | None = None,
    domain: str | None = None,
    domains: bool = True,
    email_canonical: Canonical | None = None,
    phone_canonical: Canonical | None = None,
    hashed: bool = False,
) -> pd.DataFrame: ...


@overload
def flag_suppressed(
    contacts: dd.DataFrame,
    suppressed: Any,
    *,
    email: str | None = None,
    phone: str | None = None,
    domain: str | None = None,
    domains: bool = True,
    email_canonical: Canonical | None = None,
    phone_canonical: Canonical | None = None,
    hashed: bool = False,
) -> dd.DataFrame: ...


def flag_suppressed(
    contacts: pd.DataFrame | dd.DataFrame,
    suppressed: Any,
    *,
    email: str | None = None,
    phone: str | None = None,
    domain: str | None = None,
    domains: bool = True,
    email_canonical: Canonical | None = None,
    phone_canonical: Canonical | None = None,
    hashed: bool = False,
) -> pd.DataFrame | dd.DataFrame:
    """Return a copy of ``contacts`` flagging the rows found in a suppression list.

    The named columns are hashed (see the canonical forms of
    :mod:`~stoplist_nb.suppression.hashing` and the matching rules above) and
    looked up, case-insensitively, among the list's MD5 values; so is the
    domain of every e-mail, unless ``domains=False``.
    Missing values never match. A row with nothing to check (every named
    column null or blank there, or without a canonical form, such as a phone
    without digits) is neither suppressed nor safe: its ``suppressed`` is
    ``<NA>``.

    ``contacts`` may be a Dask DataFrame (``pip install 'stoplist_nb[dask]'``):
    the list is then decoded once, here, and the result is a lazy Dask
    DataFrame of the same columns and dtypes, each partition flagged on its
    own by the same code (see :func:`~stoplist_nb.suppression.partitions.flag_partitions`).

    Args:
        contacts: The contacts, one per row: a pandas or a Dask DataFrame.
        suppressed: A DataFrame from :func:`~stoplist_nb.suppression.archive.read_hashed_csv`
            (its ``md5`` column, and its ``type`` or ``kind`` column if any), a
            Series or any collection of MD5 hex strings.
        email: The column of e-mail addresses.
        phone: The column of phone numbers.
        domain: A column of domains, checked on their own (a leading ``@`` is
            dropped); ``domains=False`` does not turn it off.
        domains: Also check the domain of every e-mail. With ``hashed=True``
            the domain of a hashed e-mail is unknown, so it is not checked.
        email_canonical: A per-value rule replacing :func:`canonical_email`;
            the e-mail's domain is taken from its result.
        phone_canonical: A per-value rule replacing :func:`canonical_phone`.
        hashed: The named columns already hold MD5 hex values.

    Returns:
        A copy (same rows, order, index) with ``suppressed`` (``boolean``:
        True, False, or ``<NA>`` for a row with nothing to check) and
        ``suppressed_by`` (``string[pyarrow]``: the kind that matched,
        ``"email"``, ``"phone"`` or ``"domain"`` in that precedence, else
        ``<NA>``), replacing any columns of those names. ``attrs["checked"]``
        lists the kinds checked, in that order. For a Dask DataFrame, the
        same as a lazy Dask DataFrame.

    Raises:
        InvalidInput: No column named, a name that is not one column, a canonical
            rule with ``hashed=True``, a ``domains`` that is not a bool, or a
            ``suppressed`` of another kind.

    Warns:
        UserWarning: List values (or, with ``hashed=True``, column values) that
            are not MD5 hex strings, as they can never match. For a Dask
            DataFrame, the list's are reported here and the columns' where each
            partition is flagged.

    >>> import pandas as pd
    >>> emails = ["a@x.org", " B@x.org", "c@Spam.example", None]
    >>> contacts = pd.DataFrame({"email": emails}, index=["r1", "r2", "r3", "r4"])
    >>> listed = ["434B761914B3B547158C96A93C20B0C5", "c40bd7503cf8ca2195084b1e8838bd04"]
    >>> out = flag_suppressed(contacts, listed, email="email")  # b@x.org and spam.example
    >>> out[["suppressed", "suppressed_by"]]
        suppressed suppressed_by
    r1       False          <NA>
    r2        True         email
    r3        True        domain
    r4        <NA>          <NA>
    >>> out.attrs["checked"]
    ['email', 'domain']

    The same contacts in a Dask DataFrame of two partitions:

    >>> import dask.dataframe as dd
    >>> lazy = flag_suppressed(dd.from_pandas(contacts, npartitions=2), listed, email="email")
    >>> lazy.npartitions, lazy["suppressed"].dtype
    (2, BooleanDtype)
    >>> lazy.compute()["suppressed_by"].tolist()
    [<NA>, 'email', 'domain', <NA>]
    """
    columns = {"email": email, "phone": phone, "domain": domain}
    rules = {"email": email_canonical, "phone": phone_canonical}
    if _is_dask_frame(contacts):
        from stoplist_nb.suppression.partitions import flag_partitions

        return flag_partitions(contacts, suppressed, columns, rules, domains=domains, hashed=hashed)
    check_args(contacts, columns, rules, hashed, domains)
    frame = cast(pd.DataFrame, contacts)  # check_args lets only a pandas DataFrame through
    text, words = suppressed_text(suppressed)
    return flag_frame(frame, text, words, columns, rules, domains=domains, hashed=hashed)
