"""Profiles of any number into a Parquet dataset on disk, page by page, resumable.

:func:`write_profiles_parquet` writes a directory that ``pd.read_parquet``,
``pyarrow.dataset``, DuckDB (``read_parquet('dir/*.parquet')``) and Dask read
as one table::

    part-00000.parquet   part-00001.parquet   ...   _common_metadata   _checkpoint.json

Memory holds about one page: each page of
:func:`~stoplist_nb.profiles.reading.iter_profile_tables` goes through a
:class:`pyarrow.parquet.ParquetWriter` as one row group. A part is closed at
``profiles_per_part`` profiles, or when a column joins the stream (a Parquet
file has one schema). A part is written under a hidden name
(``.part-00003.parquet.tmp``) and renamed when whole; only then does the
checkpoint move on to it. The checkpoint (``_checkpoint.json``, replaced
atomically) holds what the pull is (database, query, fields, dtypes), how far
it went (the cursor after the last committed part, profiles, rows, the parts,
and the cursors of the committed pages, one a page, so that a resumed pull
catches a cursor that goes back to one of them) and the stream's
:class:`~stoplist_nb.profiles.schema.StreamSchema`, so that a pull that
stopped, however it stopped, carries on where its last part ends and gives the
same files as one that never stopped.

When the stream ends the dataset is sealed: the parts written before a column
joined are rewritten with it (all null), so that every part has the final
schema, and ``_common_metadata`` holds that schema. Files whose names start
with ``_`` or ``.`` are ignored by pyarrow, DuckDB's ``*.parquet`` and Dask.

The writing itself is :mod:`~stoplist_nb.profiles.parts`;
``ProfilesRequest.to_parquet`` of a directory writes the same dataset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from stoplist_nb._paging import DEFAULT_LOOKAHEAD
from stoplist_nb.client import Client
from stoplist_nb.profiles.parts import (
    CHECKPOINT,
    DEFAULT_PROFILES_PER_PART,
    DatasetSummary,
    conform_to,
    parquet_schema,
)
from stoplist_nb.profiles.reading import ProfilesRequest
from stoplist_nb.query import Query

__all__ = [
    "CHECKPOINT",
    "DEFAULT_PROFILES_PER_PART",
    "DatasetSummary",
    "conform_to",
    "parquet_schema",
    "write_profiles_parquet",
]


def write_profiles_parquet(
    client: Client,
    db_id: int,
    path: str | os.PathLike[str],
    *,
    query: Mapping[str, Any] | Query | None = None,
    fields: Sequence[str] | None = None,
    limit: int = 1000,
    dtypes: Mapping[str, Any] | None = None,
    resume: bool = True,
    overwrite: bool = False,
    progress: bool = True,
    lookahead: int = DEFAULT_LOOKAHEAD,
    profiles_per_part: int = DEFAULT_PROFILES_PER_PART,
) -> DatasetSummary:
    """Read a database's profiles into a Parquet dataset (a directory), holding one page at a time.

    The columns are those of :func:`~stoplist_nb.profiles.reading.iter_profile_tables`
    (a column joins on the first page where it has a value; objects and arrays
    as their JSON text); each file carries pandas' metadata, so that
    ``pd.read_parquet(path)`` gives the dtypes of ``read_profiles``. Parts
    read in name order hold the profiles in the service's order.

    A pull that stopped (an error, Ctrl-C, a killed process) leaves the parts
    it finished and a checkpoint: calling again with the same arguments (and
    ``resume=True``, the default) carries on after the last finished part,
    and the result is the dataset an uninterrupted pull gives, each row once.
    A part that was being written is dropped and its pages read again. Called
    on a complete dataset of the same pull, it returns its summary and sends
    nothing. One process at a time may write to a directory. The same as
    :meth:`ProfilesRequest.to_parquet <stoplist_nb.profiles.reading.ProfilesRequest.to_parquet>`
    of a directory.

    Args:
        client: The API client.
        db_id: The database id.
        path: The directory, created if missing. It must hold nothing but the
            dataset (files whose names start with ``.`` or ``_`` aside).
        query: A MongoDB filter (a dict or a :mod:`stoplist_nb.query` object).
        fields: Profile fields to return.
        limit: Profiles per request, and so per row group.
        dtypes: ``{column: dtype}`` (pandas dtypes, their names, or pyarrow
            types): those columns are in every part, in that type.
        resume: Carry on from the checkpoint of an unfinished pull in ``path``.
            With ``False`` a directory that holds a dataset is refused.
        overwrite: Remove the dataset in ``path`` first and start again
            (whatever ``resume`` says). Files that are not the dataset's are
            never removed: their presence is refused.
        progress: Show a progress bar counting profiles (of this call).
        lookahead: Requests sent while earlier pages are being parsed.
        profiles_per_part: A part is closed once it holds this many profiles
            (whole pages: it may hold up to a page more).

    Returns:
        The summary of the dataset; ``complete`` is true.

    Raises:
        InvalidInput: An argument is wrong (nothing was sent or written).
        DatasetMismatch: ``path`` holds the checkpoint of another pull (another
            ``db_id``, ``query``, ``fields`` or ``dtypes``), a dataset while
            ``resume`` and ``overwrite`` are false, or files not of a dataset.
        StoplistError: A request failed. The finished parts and the checkpoint
            stay; ``exc.partial`` is the :class:`DatasetSummary` so far (its
            ``next_from_id`` is where the checkpoint carries on) and the
            message says to call again with ``resume=True``.

    >>> summary = write_profiles_parquet(client, 1, "profiles/")  # doctest: +SKIP
    >>> summary.profiles, summary.parts  # doctest: +SKIP
    (250000, 3)
    >>> pd.read_parquet("profiles/").groupby("channel").size()  # doctest: +SKIP
    """
    request = ProfilesRequest(
        client,
        db_id,
        query=query,
        fields=fields,
        limit=limit,
        lookahead=lookahead,
        progress=progress,
    )
    return request.to_parquet(
        path,
        dtypes=dtypes,
        dataset=True,
        resume=resume,
        overwrite=overwrite,
        profiles_per_part=profiles_per_part,
    )
