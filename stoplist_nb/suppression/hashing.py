"""MD5 hashes of contacts: the lowercase hex MD5 of their canonical forms (docs/suppression.md).

The vectorized functions agree with the scalar ones (non-ASCII values take the scalar rule).
"""

from __future__ import annotations

import binascii
import contextlib
import functools
import hashlib
import importlib
import math
import numbers
import re
from collections.abc import Callable
from typing import Any

import idna
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb.errors import InvalidInput

__all__ = [
    "canonical_domain", "canonical_email", "canonical_phone", "hash_email", "hash_emails",
    "hash_phone", "hash_phones"
]  # fmt: skip

Canonical = Callable[[Any], "str | None"]

#: What ``str.strip()`` removes among ASCII characters (``\x1c``-``\x1f`` too).
_PY_ASCII_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
_NON_DIGITS = re.compile(r"[^0-9]+")


_MD5: Callable[[bytes], Any]
try:
    # CPython's own MD5 costs less per call than OpenSSL's on short inputs (1.6x on e-mails).
    _MD5 = importlib.import_module("_md5").md5
except (ImportError, AttributeError):
    _MD5 = functools.partial(hashlib.md5, usedforsecurity=False)


def as_text(value: Any) -> str | None:
    """Return ``value`` as text, or ``None`` when it is missing."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        n = float(value)
        return None if math.isnan(n) else str(int(n)) if n.is_integer() else repr(n)
    if pd.api.types.is_scalar(value) and pd.isna(value):
        return None
    return str(value)


def _is_text(dtype: Any) -> bool:
    view = getattr(pa.types, "is_string_view", lambda _: False)
    return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or view(dtype))


def arrow_text(values: pd.Series) -> Any:
    """The values as a ``large_string`` ChunkedArray, null where missing (as :func:`as_text`)."""
    arr: Any = None
    with contextlib.suppress(AttributeError, TypeError, NotImplementedError, pa.ArrowException):
        arr = values.array.__arrow_array__()
    if arr is None or not _is_text(arr.type):
        try:
            arr = pa.array(values.to_numpy(dtype=object), from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arr = None
    if arr is None or not (_is_text(arr.type) or pa.types.is_null(arr.type)):
        arr = pa.array([as_text(v) for v in values], pa.large_string())
    if isinstance(arr, pa.Array):
        arr = pa.chunked_array([arr])
    return arr.cast(pa.large_string())


def canonical_email(value: Any) -> str | None:
    """Return an e-mail address stripped and lowercased (Python's Unicode rules); ``None`` if blank.

    >>> canonical_email("  Alice@Example.COM ")
    'alice@example.com'
    """
    text = as_text(value)
    return (text.strip().lower() or None) if text is not None else None


def canonical_phone(value: Any) -> str | None:
    """Return ``"+"`` and the ASCII digits of a phone number (no country code added); or ``None``.

    >>> canonical_phone("8 (900) 123-45-67"), canonical_phone(79001234567.0)
    ('+89001234567', '+79001234567')
    """
    text = as_text(value)
    digits = _NON_DIGITS.sub("", text) if text is not None else ""
    return "+" + digits if digits else None


def canonical_domain(value: Any) -> str | None:
    """Return the domain of a value: after its last ``"@"`` (all of it without one), as an e-mail.

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

    Returns:
        32 hex digits, or ``None`` when ``value`` holds no address.

    >>> hash_email(" Alice@Example.com")
    'c160f8cc69a4f0bf2b0362752353d060'
    """
    text = canonical(value)
    return str(_MD5(text.encode()).hexdigest()) if text else None


def hash_phone(value: Any, *, canonical: Canonical = canonical_phone) -> str | None:
    """Same as :func:`hash_email`, for a phone number (text or a number).

    >>> hash_phone("+7 900 123 45 67")
    'a45a50145b6b87621417b4440b22d715'
    """
    return hash_email(value, canonical=canonical)


def blank_to_null(arr: Any) -> Any:
    return pc.if_else(pc.equal(arr, ""), pa.scalar(None, arr.type), arr)


def strip_lower(text: Any) -> Any:
    """``str.strip().lower()`` of every value, as one Array; blank ones null."""
    if isinstance(text, pa.Array):
        text = pa.chunked_array([text], text.type)
    out = pc.ascii_lower(pc.utf8_trim(text, characters=_PY_ASCII_SPACE)).combine_chunks()
    other = pc.invert(pc.fill_null(pc.string_is_ascii(text), True)).combine_chunks()
    if pc.any(other).as_py():
        # Python's case mapping differs from Arrow's outside ASCII (final sigma, dotted I).
        fixed = [canonical_email(v) for v in pc.filter(text, other).to_pylist()]
        out = pc.replace_with_mask(out, other, pa.array(fixed, out.type))
    return blank_to_null(out)


def canonical_forms(series: pd.Series, canonical: Canonical | None, kind: str) -> Any:
    """The canonical form of every e-mail or phone (``kind``) of a Series; null where none."""
    if not isinstance(series, pd.Series):
        raise InvalidInput(f"expected a pandas Series, got {type(series).__name__}")
    default = canonical_email if kind == "email" else canonical_phone
    if canonical is not None and canonical is not default:
        forms = [canonical(v) for v in series]
        try:
            return blank_to_null(pa.array(forms, pa.large_string()))
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            raise InvalidInput("a canonical function must return a str or None") from None
    text = arrow_text(series)
    if kind == "phone":
        digits = blank_to_null(pc.replace_substring_regex(text, _NON_DIGITS.pattern, ""))
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
    """Same as :func:`hash_emails`, for phones (``canonical`` replaces :func:`canonical_phone`).

    >>> import pandas as pd
    >>> hash_phones(pd.Series(["+7 900 123-45-67", "n/a"])).tolist()
    ['a45a50145b6b87621417b4440b22d715', <NA>]
    """
    return _hashes(series, canonical, "phone")


def after_at(text: Any, *, need_at: bool) -> Any:
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
    mapped = domain
    with contextlib.suppress(idna.IDNAError, UnicodeError, ValueError):
        mapped = idna.uts46_remap(domain, std3_rules=False, transitional=False)
    ascii_labels, unicode_labels = [], []
    for label in mapped.split("."):
        ascii_label = unicode_label = label
        # A label that fails keeps its one spelling; the others still convert.
        with contextlib.suppress(idna.IDNAError, UnicodeError, ValueError):
            if not label.isascii():
                ascii_label = idna.alabel(label).decode("ascii")
            elif label.startswith("xn--"):
                unicode_label = idna.ulabel(label)
        ascii_labels.append(ascii_label)
        unicode_labels.append(unicode_label)
    return {".".join(ascii_labels), ".".join(unicode_labels), mapped} - {domain}


def domain_digests(sources: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digests of the distinct domains and their IDNA spellings, the domain each spells, and
    each source value's domain (a row per source; the count of domains where it has none)."""
    raw = sources[0] if len(sources) == 1 else pa.concat_arrays(sources)
    # Domains repeat (a few providers hold most addresses): each distinct one is done once.
    encoded = pc.dictionary_encode(raw)
    canon = strip_lower(encoded.dictionary)
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
    digests, valid = form_digests(forms)
    owner = np.concatenate([np.arange(distinct), np.asarray(owners, dtype=np.intp)])
    return digests[valid], owner[valid], rows.reshape(len(sources), -1)
