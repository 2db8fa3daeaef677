"""The kinds of contact: ``email``, ``phone``, ``domain``, and the words a list uses for them.

One vocabulary for the list's rows, :func:`~stoplist_nb.flag_suppressed`'s
``suppressed_by``, the charts and the command line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: The kinds of contact a list row can hold, most specific first (the precedence).
KINDS = ("email", "phone", "domain")
#: A row whose kind word is unknown or missing: it may be any kind.
ANY_KIND = len(KINDS)
#: The names a column of kind words goes by (any case).
KIND_COLUMNS = ("type", "kind")
_WORDS = {word: kind for kind in KINDS for word in (kind, kind + "s")} | {"sms": "phone"}
_CODES = np.array([KINDS.index(kind) for kind in _WORDS.values()] + [ANY_KIND], dtype=np.int8)


def kind_column(columns: Iterable[Any]) -> Any:
    """The first of ``columns`` named ``type`` or ``kind`` (any case), else ``None``."""
    return next((c for c in columns if str(c).strip().lower() in KIND_COLUMNS), None)


def kind_counts(words: Any) -> dict[str, int]:
    """Rows per kind word: the kinds first, then other words as written (missing ones as ``""``)."""
    counts: dict[str, int] = {}
    for row in words.value_counts().to_pylist():
        word = row["values"] or ""
        kind = _WORDS.get(word.strip().lower(), word)
        counts[kind] = counts.get(kind, 0) + int(row["counts"])
    return add_counts([counts])


def add_counts(parts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The sum of several :func:`kind_counts`, in their order."""
    total: dict[str, int] = {}
    for part in parts:
        for word, count in part.items():
            total[word] = total.get(word, 0) + count
    known = {kind: total.pop(kind) for kind in KINDS if kind in total}
    return known | dict(sorted(total.items()))


def kind_codes(words: Any) -> np.ndarray:
    """Each word's index in :data:`KINDS`, or :data:`ANY_KIND` for an unknown or missing one."""
    found = pc.index_in(pc.utf8_lower(pc.utf8_trim_whitespace(words)), pa.array(list(_WORDS)))
    return _CODES[np.asarray(pc.fill_null(found, len(_WORDS)), dtype=np.intp)]
