"""MD5 hashes of contacts, from their canonical forms.

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

Contacts are flagged against a suppression list by
:func:`~stoplist_nb.suppression.flagging.flag_suppressed`, with these hashes.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import importlib
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb.errors import InvalidInput
from stoplist_nb.suppression.text import arrow_text, as_text

__all__ = [
    "canonical_domain",
    "canonical_email",
    "canonical_phone",
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


def strip_lower(text: Any) -> Any:
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


def canonical_forms(series: pd.Series, canonical: Canonical | None, kind: str) -> Any:
    """The canonical form of every e-mail or phone (``kind``) of a Series; null where none."""
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
    return strip_lower(text)


def form_digests(forms: Any) -> tuple[np.ndarray, np.ndarray]:
    """MD5 digests of the canonical forms as ``(n, 2)`` uint64, and which rows have one."""
    valid = np.asarray(pc.is_valid(forms), dtype=bool)
    md5 = _MD5
    raw = b"".join([md5(s.encode()).digest() for s in forms.drop_null().to_pylist()])
    out = np.zeros((len(valid), 2), dtype=np.uint64)
    out[valid] = np.frombuffer(raw, dtype=np.uint64).reshape(-1, 2)
    return out, valid


def _hashes(series: pd.Series, canonical: Canonical | None, kind: str) -> pd.Series:
    digests, valid = form_digests(canonical_forms(series, canonical, kind))
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
