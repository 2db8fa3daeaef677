"""Contacts in a Dask DataFrame, flagged partition by partition (the ``dask`` extra).

The list is decoded once, here, and enters the graph as one task every
partition's task depends on (see docs/suppression.md).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

try:
    import dask.dataframe as dd
    from dask.base import is_dask_collection, tokenize
    from dask.delayed import delayed
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "stoplist_nb.suppression.partitions needs dask: pip install 'stoplist_nb[dask]'"
    ) from exc

from stoplist_nb.suppression.flagging import check_args, flag_frame, warn_not_md5
from stoplist_nb.suppression.hashing import Canonical
from stoplist_nb.suppression.matching import hashed_list

__all__ = ["flag_partitions"]


def flag_partitions(
    contacts: dd.DataFrame,
    suppressed: Any,
    columns: Mapping[str, str | None],
    rules: Mapping[str, Canonical | None],
    *,
    domains: bool,
    hashed: bool,
) -> dd.DataFrame:
    """:func:`~stoplist_nb.flag_suppressed` for a Dask DataFrame: a lazy flagged copy.

    Arguments as :func:`~stoplist_nb.suppression.flagging.flag_frame`; a Dask
    ``suppressed`` is computed first, since every partition is matched against
    all of it. The result has the partitions and divisions of ``contacts``.
    """
    # The frame's meta is an empty pandas frame: the argument checks and the result's
    # dtypes come from the pandas code itself, run on it.
    check_args(contacts._meta, columns, rules, hashed, domains)
    if is_dask_collection(suppressed):
        suppressed = suppressed.compute()
    listed = hashed_list(suppressed)
    warn_not_md5(
        [f"{listed.invalid:,} values of the suppression list" if listed.invalid else ""],
        stacklevel=4,
    )
    flag = functools.partial(
        flag_frame, columns=columns, rules=rules, domains=domains, hashed=hashed
    )
    meta = flag(contacts._meta, listed, None)
    # One task holds the list: scatter(broadcast=True) would need a client at this call,
    # tie the lazy result to it and copy the list to every worker, used or not. The key is
    # lowercase since dask.optimize rebuilds a frame from the first keys of its sorted
    # graph, and the default one (the class name) sorts before the partitions' keys.
    name = f"suppression-list-{tokenize(listed)}"
    shared = delayed(listed, name=name, pure=True, traverse=False)
    out: dd.DataFrame = contacts.map_partitions(flag, shared, None, meta=meta)  # type: ignore[no-untyped-call]
    return out
