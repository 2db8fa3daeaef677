"""The domain of a contact, in each of its spellings, hashed once per distinct domain.

An internationalized domain is matched in both spellings: Unicode
(``пример.рф``) and IDNA (``xn--e1afmkfd.xn--p1ai``, UTS 46 mapping, IDNA 2008),
label by label; a label that cannot be converted is kept as it is. The domain
of an e-mail is the part after its last ``"@"``, taken from its canonical form.
"""

from __future__ import annotations

from typing import Any

import idna
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stoplist_nb.suppression.hashing import form_digests, strip_lower


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


def domain_digests(sources: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Digests of the distinct canonical domains and their IDNA spellings.

    Returns the digests, the distinct domain each one spells, and for every
    value of ``sources`` (one row per source) its distinct domain, or the
    count of them where it has none.
    """
    raw = sources[0] if len(sources) == 1 else pa.concat_arrays(sources)
    # Domains repeat (a few providers hold most addresses): the hashing and the
    # IDNA conversion run once per distinct value.
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
