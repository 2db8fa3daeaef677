"""MD5 hashes of contacts, and contacts flagged against a suppression list.

How the service normalises a contact before hashing is not documented. The
canonical forms used here are below; if a list was built another way, pass
your own ``canonical`` function (value -> ``str`` or ``None``) instead.

* **e-mail** (:func:`canonical_email`): ``str.strip()`` then ``str.lower()``,
  with Python's Unicode rules (``"ΟΔΟΣ@X"`` -> ``"οδος@x"``, final sigma).
* **phone** (:func:`canonical_phone`): ``"+"`` followed by the ASCII digits
  ``0-9`` of the value, everything else dropped. No country code is added or
  rewritten: ``"8 (900) 123-45-67"`` -> ``"+89001234567"``, not ``"+7..."``.
* **domain** (:func:`canonical_domain`): the part after the last ``"@"`` (all
  of it without one, so ``"@x.org"`` -> ``"x.org"``), stripped and lowercased
  like an e-mail. The domain of an e-mail is taken from its canonical form,
  and only when it has an ``"@"``.
* Numbers are read as their digits (``79001234567.0`` -> ``"79001234567"``).
  ``None``, ``NaN``, ``pd.NA`` and an empty canonical form mean no value: no
  hash, and never a match.

The hash is the lowercase hex MD5 of the UTF-8 bytes of the canonical form.
The vectorized functions give the same results as the scalar ones: ASCII
values go through pyarrow.compute, the rare others through the scalar rule.

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

import binascii
import functools
import hashlib
import importlib
import re
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeGuard, cast, overload

import idna
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb.errors import InvalidInput
from stoplist_nb.suppression.matching import (
    KINDS,
    check_args,
    match_kinds,
    md5_digests,
    suppressed_text,
)
from stoplist_nb.suppression.text import arrow_text, as_text

if TYPE_CHECKING:
    import dask.dataframe as dd

__all__ = [
    "canonical_domain",
    "canonical_email",
    "canonical_phone",
    "flag_suppressed",
    "hash_email",
    "hash_emails",
    "hash_phone",
    "hash_phones",
]

Canonical = Callable[[Any], "str | None"]

#: What ``str.strip()`` removes among ASCII characters (``\x1c``-``\x1f`` too).
_PY_ASCII_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
_NON_DIGITS = re.compile(r"[^0-9]+")


def _md5_constructor() -> Callable[[bytes], Any]:
    # CPython's own MD5 costs less per call than OpenSSL's on short inputs (about
    # 1.6x on e-mails), and the per-value loop is what bounds the hashing speed.
    try:
        fast: Callable[[bytes], Any] = importlib.import_module("_md5").md5
        if fast(b"abc").hexdigest() == "900150983cd24fb0d6963f7d28e17f72":
            return fast
    except (ImportError, AttributeError, ValueError):
        pass
    return functools.partial(hashlib.md5, usedforsecurity=False)


_MD5 = _md5_constructor()


def canonical_email(value: Any) -> str | None:
    """Return an e-mail address stripped and lowercased; ``None`` if missing or blank.

    >>> canonical_email("  Alice@Example.COM ")
    'alice@example.com'
    """
    text = as_text(value)
    return (text.strip().lower() or None) if text is not None else None


def canonical_phone(value: Any) -> str | None:
    """Return ``"+"`` and the ASCII digits of a phone number; ``None`` if it has none.

    >>> canonical_phone("8 (900) 123-45-67"), canonical_phone(79001234567.0)
    ('+89001234567', '+79001234567')
    """
    text = as_text(value)
    digits = _NON_DIGITS.sub("", text) if text is not None else ""
    return "+" + digits if digits else None


def canonical_domain(value: Any) -> str | None:
    """Return the domain of a value: after its last ``"@"``, stripped and lowercased.

    A value without ``"@"`` is taken as a domain whole; ``None`` if missing or blank.

    >>> canonical_domain(" Ann@Example.COM "), canonical_domain("@Пример.РФ")
    ('example.com', 'пример.рф')
    """
    text = as_text(value)
    return (text.rpartition("@")[2].strip().lower() or None) if text is not None else None


def hash_email(value: Any, *, canonical: Canonical = canonical_email) -> str | None:
    """Return the lowercase hex MD5 of an e-mail's canonical form, or ``None``.

    Args:
        value: An e-mail address.
        canonical: The rule turning ``value`` into the text to hash.

    >>> hash_email(" Alice@Example.com")
    'c160f8cc69a4f0bf2b0362752353d060'
    """
    text = canonical(value)
    return str(_MD5(text.encode()).hexdigest()) if text else None


def hash_phone(value: Any, *, canonical: Canonical = canonical_phone) -> str | None:
    """Return the lowercase hex MD5 of a phone number's canonical form, or ``None``.

    Args:
        value: A phone number, as text or as a number.
        canonical: The rule turning ``value`` into the text to hash.

    >>> hash_phone("+7 900 123 45 67")
    'a45a50145b6b87621417b4440b22d715'
    """
    text = canonical(value)
    return str(_MD5(text.encode()).hexdigest()) if text else None


def _blank_to_null(arr: Any) -> Any:
    return pc.if_else(pc.equal(arr, ""), pa.scalar(None, arr.type), arr)


def _strip_lower(text: Any) -> Any:
    """``str.strip().lower()`` of every value, as one Array; blank ones null."""
    if isinstance(text, pa.Array):
        text = pa.chunked_array([text], text.type)
    out = pc.ascii_lower(pc.utf8_trim(text, characters=_PY_ASCII_SPACE)).combine_chunks()
    other = pc.invert(pc.fill_null(pc.string_is_ascii(text), True)).combine_chunks()
    if pc.any(other).as_py():
        # Python's case mapping differs from Arrow's outside ASCII (final sigma,
        # dotted I), so the few non-ASCII values take the scalar rule.
        fixed = [canonical_email(v) for v in pc.filter(text, other).to_pylist()]
        out = pc.replace_with_mask(out, other, pa.array(fixed, out.type))
    return _blank_to_null(out)


def _canonical_forms(series: pd.Series, canonical: Canonical | None, kind: str) -> Any:
    if not isinstance(series, pd.Series):
        raise InvalidInput(f"expected a pandas Series, got {type(series).__name__}")
    default = canonical_email if kind == "email" else canonical_phone
    if canonical is not None and canonical is not default:
        forms = [canonical(v) for v in series]
        try:
            return _blank_to_null(pa.array(forms, pa.large_string()))
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            raise InvalidInput("a canonical function must return a str or None") from None
    text = arrow_text(series)
    if kind == "phone":
        digits = _blank_to_null(pc.replace_substring_regex(text, _NON_DIGITS.pattern, ""))
        plus, nothing = pa.scalar("+", digits.type), pa.scalar("", digits.type)
        return pc.binary_join_element_wise(plus, digits, nothing)
    return _strip_lower(text)


def _after_at(text: Any, *, need_at: bool) -> Any:
    """The part of each value after its last ``"@"``; null without one when ``need_at``."""
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    # split_pattern then the last piece through the offsets: about 3x faster than a regex.
    parts = pc.split_pattern(text, "@", max_splits=1, reverse=True)
    ends = np.asarray(parts.offsets, dtype=np.int64)
    pieces = np.diff(ends)
    keep = pieces == 2 if need_at else pieces > 0
    return pc.take(parts.values, pa.array(ends[1:] - 1, mask=~keep))


def _idna_forms(domain: str) -> set[str]:
    """The other spellings of an internationalized domain: IDNA (``xn--``) and Unicode."""
    try:
        mapped = idna.uts46_remap(domain, std3_rules=False, transitional=False)
    except (idna.IDNAError, UnicodeError, ValueError):
        mapped = domain
    ascii_labels, unicode_labels = [], []
    for label in mapped.split("."):
        ascii_label = unicode_label = label
        try:
            if not label.isascii():
                ascii_label = idna.alabel(label).decode("ascii")
            elif label.startswith("xn--"):
                unicode_label = idna.ulabel(label)
        except (idna.IDNAError, UnicodeError, ValueError):
            pass  # this label keeps its one spelling; the others still convert
        ascii_labels.append(ascii_label)
        unicode_labels.append(unicode_label)
    return {".".join(ascii_labels), ".".join(unicode_labels), mapped} - {domain}


def _domain_digests(sources: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digests of the distinct canonical domains and their IDNA spellings.

    Returns the digests, the distinct domain each one spells, and for every
    value of ``sources`` (one row per source) its distinct domain, or the
    count of them where it has none.
    """
    raw = sources[0] if len(sources) == 1 else pa.concat_arrays(sources)
    # Domains repeat (a few providers hold most addresses): the hashing and the
    # IDNA conversion run once per distinct value.
    encoded = pc.dictionary_encode(raw)
    canon = _strip_lower(encoded.dictionary)
    distinct = len(canon)
    rows = np.asarray(encoded.indices.fill_null(distinct), dtype=np.intp)
    maybe_idn = pc.or_(pc.invert(pc.string_is_ascii(canon)), pc.match_substring(canon, "xn--"))
    picked = np.flatnonzero(np.asarray(pc.fill_null(maybe_idn, False), dtype=bool))
    texts, owners = [], []
    for i, domain in zip(picked, pc.take(canon, pa.array(picked)).to_pylist(), strict=True):
        for form in sorted(_idna_forms(domain)):
            texts.append(form)
            owners.append(i)
    forms = pa.concat_arrays([canon, pa.array(texts, canon.type)])
    digests, valid = _digests(forms)
    owner = np.concatenate([np.arange(distinct), np.asarray(owners, dtype=np.intp)])
    return digests[valid], owner[valid], rows.reshape(len(sources), -1)


def _digests(forms: Any) -> tuple[np.ndarray, np.ndarray]:
    """MD5 digests of the canonical forms as ``(n, 2)`` uint64, and which rows have one."""
    valid = np.asarray(pc.is_valid(forms), dtype=bool)
    md5 = _MD5
    raw = b"".join([md5(s.encode()).digest() for s in forms.drop_null().to_pylist()])
    out = np.zeros((len(valid), 2), dtype=np.uint64)
    out[valid] = np.frombuffer(raw, dtype=np.uint64).reshape(-1, 2)
    return out, valid


def _hashes(series: pd.Series, canonical: Canonical | None, kind: str) -> pd.Series:
    digests, valid = _digests(_canonical_forms(series, canonical, kind))
    n = len(valid)
    data = pa.py_buffer(binascii.b2a_hex(digests.tobytes()))
    offsets = pa.py_buffer(np.arange(0, 32 * n + 1, 32, dtype=np.int64))
    validity = None if valid.all() else pa.array(valid).buffers()[1]
    arr = pa.Array.from_buffers(pa.large_string(), n, [validity, offsets, data])
    values = pd.arrays.ArrowStringArray(pa.chunked_array([arr]))
    return pd.Series(values, index=series.index, name=series.name, copy=False)


def hash_emails(series: pd.Series, *, canonical: Canonical | None = None) -> pd.Series:
    """Return the hex MD5 of every e-mail in a Series (same index, ``string[pyarrow]``).

    Args:
        series: E-mail addresses of any dtype; missing values give ``<NA>``.
        canonical: A per-value rule replacing :func:`canonical_email`
            (slower: it is called once per value).

    >>> import pandas as pd
    >>> hash_emails(pd.Series(["Alice@Example.com ", None])).tolist()
    ['c160f8cc69a4f0bf2b0362752353d060', <NA>]
    """
    return _hashes(series, canonical, "email")


def hash_phones(series: pd.Series, *, canonical: Canonical | None = None) -> pd.Series:
    """Return the hex MD5 of every phone number in a Series (same index, ``string[pyarrow]``).

    Args:
        series: Phone numbers as text or numbers; missing values give ``<NA>``.
        canonical: A per-value rule replacing :func:`canonical_phone`.

    >>> import pandas as pd
    >>> hash_phones(pd.Series(["+7 900 123-45-67", "n/a"])).tolist()
    ['a45a50145b6b87621417b4440b22d715', <NA>]
    """
    return _hashes(series, canonical, "phone")


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
    return np.asarray(pc.is_valid(_strip_lower(values)), dtype=bool)


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

    The named columns are hashed (see the canonical forms and the matching
    rules above) and looked up, case-insensitively, among the list's MD5
    values; so is the domain of every e-mail, unless ``domains=False``.
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
    """:func:`flag_suppressed` on one pandas frame whose arguments were checked.

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
        The flagged copy, as :func:`flag_suppressed` describes it.
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
            sources.append(_after_at(arrow_text(contacts[name]), need_at=False))
            checkable |= _present(sources[-1])
            continue
        else:
            forms = _canonical_forms(contacts[name], rules[kind], kind)
            digests, valid = _digests(forms)
            checkable |= valid
            if kind == "email" and domains:
                sources.append(_after_at(forms, need_at=True))
        checks.append((kind, digests[valid], functools.partial(_spread_rows, valid)))
    if sources:
        digests, owner, rows = _domain_digests(sources)
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
