"""Contacts in a Dask DataFrame, flagged partition by partition.

:func:`~stoplist_nb.flag_suppressed` hands a Dask DataFrame to this module.

Needs the ``dask`` extra (``pip install 'stoplist_nb[dask]'``); this module
imports Dask, and :func:`~stoplist_nb.flag_suppressed` imports it only when it
is given a Dask DataFrame.

The list is decoded once, on the caller's side, into a
:class:`~stoplist_nb.suppression.matching.HashedList` (16 bytes a value, and
one for its kind), and enters the graph as one task that every partition's
task depends on: on a ``dask.distributed`` cluster it travels to a worker
once and from there to each other worker that needs it, once, however many
partitions that worker flags. Each partition is flagged by
:func:`~stoplist_nb.suppression.frames.flag_frame`, the code that flags a
pandas frame.
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

from stoplist_nb.suppression.frames import check_args, flag_frame, warn_not_md5
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

    Args:
        contacts: The contacts, in any number of partitions.
        suppressed: The list, as :func:`~stoplist_nb.flag_suppressed` takes
            it; a Dask DataFrame or Series is computed first, since every
            partition is matched against all of it.
        columns: The column named for each kind (``email``, ``phone``,
            ``domain``), or ``None``.
        rules: The canonical rule for ``email`` and ``phone``, or ``None``.
        domains: Also check the domain of every e-mail.
        hashed: The named columns already hold MD5 hex values.

    Returns:
        A Dask DataFrame with the partitions and divisions of ``contacts``,
        and the ``suppressed`` and ``suppressed_by`` columns (and dtypes) of
        the pandas result; nothing is matched until it is computed.

    Raises:
        InvalidInput: As :func:`~stoplist_nb.flag_suppressed`, at once.

    Warns:
        UserWarning: List values that are not MD5, here; with ``hashed=True``,
            column values that are not MD5, where each partition is flagged.

    The public entry point is :func:`~stoplist_nb.flag_suppressed`, whose
    example shows a Dask DataFrame.
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
