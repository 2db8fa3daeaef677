"""Subscriber profiles of a database as pandas DataFrames (``profiles/list``).

The pages come from :meth:`stoplist_nb.Client.pages`; they become one flat frame
in :mod:`~stoplist_nb.profiles.normalize` (rows in
:mod:`~stoplist_nb.profiles.rows`, columns and dtypes in
:mod:`~stoplist_nb.profiles.columns`). What a query can filter on is
:mod:`~stoplist_nb.profiles.fields`.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any

import pandas as pd

from stoplist_nb._paging import DEFAULT_LOOKAHEAD
from stoplist_nb.client import Client, Page
from stoplist_nb.profiles import request
from stoplist_nb.profiles.normalize import FlatPage, frame_from_tables
from stoplist_nb.profiles.stream import cast_frame, collect, flat_pages
from stoplist_nb.query import Query

__all__ = ["iter_profile_pages", "read_profiles"]


def iter_profile_pages(
    client: Client,
    db_id: int,
    *,
    query: Mapping[str, Any] | Query | None = None,
    fields: Sequence[str] | None = None,
    limit: int = 1000,
    from_id: str | None = None,
    max_profiles: int | None = None,
    lookahead: int = DEFAULT_LOOKAHEAD,
) -> Generator[Page, None, None]:
    """Yield the raw pages of ``profiles/list``, one request each.

    Each :class:`~stoplist_nb.client.Page` has ``records`` (the profiles as
    dicts), ``data`` (the same as an Arrow array), ``from_id`` (the cursor it
    was asked with) and ``next_from_id``. Paging stops at the first page
    without rows. Arguments are checked before the first request. Requests
    sent ahead and the parse threads end when the iterator is exhausted or
    closed: leaving a loop early, wrap it in :func:`contextlib.closing`.

    Args:
        client: The API client.
        db_id: The database id.
        query: A MongoDB filter on profile fields: a dict, or a query built
            with :mod:`stoplist_nb.query` (``F("_city") == "Moscow"``,
            ``And(...)``, ...), sent as its ``to_mongo()``.
        fields: The profile fields to return (``_id`` names the id).
        limit: Profiles per page.
        from_id: The cursor to start from, e.g. a previous ``next_from_id``.
        max_profiles: Stop after this many profiles; the last request asks
            for only what is missing, so the last page's ``next_from_id`` is
            exactly where a later read resumes (a page past it, from a
            service that ignores ``limit``: see
            :meth:`~stoplist_nb.client.Client.pages`).
        lookahead: Requests sent while earlier pages are still being parsed
            (see :meth:`~stoplist_nb.client.Client.pages`); ``0`` for none.

    Raises:
        InvalidInput: An argument is wrong (nothing was sent).
        CursorStalled: Rows keep coming but ``next_from_id`` does not move.

    >>>     >>> with closing(iter_profile_pages(client, 1, limit=500)) as pages:  # doctest: +SKIP
    ...     for page in pages:
    ...         print(len(page), page.next_from_id)
    """
    params = request.params(client, db_id, query, fields, limit, from_id, max_profiles)
    # Client.pages says max_rows: it walks any cursor endpoint, where a row need not be a profile.
    return client.pages(
        request.METHOD, params, from_id=from_id, max_rows=max_profiles, lookahead=lookahead
    )


def read_profiles(
    client: Client,
    db_id: int,
    *,
    query: Mapping[str, Any] | Query | None = None,
    fields: Sequence[str] | None = None,
    limit: int = 1000,
    from_id: str | None = None,
    max_profiles: int | None = None,
    dtype_backend: str | None = None,
    dtypes: Mapping[str, Any] | None = None,
    progress: bool = True,
    lookahead: int = DEFAULT_LOOKAHEAD,
) -> pd.DataFrame:
    """Read a database's profiles into a DataFrame, one row per subscription.

    Pages through ``profiles/list`` until a page comes back empty (or
    ``max_profiles`` are read) and normalizes the profiles: see
    :func:`~stoplist_nb.profiles.normalize.normalize_profiles` for the columns.
    The whole result is held in memory: for more profiles than fit, see
    :func:`~stoplist_nb.profiles.stream.iter_profile_frames` and
    :func:`~stoplist_nb.profiles.dataset.write_profiles_parquet`.

    Args:
        client: The API client.
        db_id: The database id.
        query: A MongoDB filter, e.g. ``{"_city": {"$in": ["Moscow", "Kazan"]}}``,
            or the same built with :mod:`stoplist_nb.query`:
            ``F("_city").isin(["Moscow", "Kazan"])`` (sent as its ``to_mongo()``).
        fields: Profile fields to return, e.g. ``["_fname", "subscriptions"]``.
        limit: Profiles per request.
        from_id: Resume from this cursor (``df.attrs["next_from_id"]`` of an
            earlier read, or ``exc.resume_from`` of a failed one).
        max_profiles: Stop after this many profiles (more only where a service
            ignores ``limit`` and its cursor is no profile id: see
            :meth:`~stoplist_nb.client.Client.pages`).
        dtype_backend: As in ``pandas.read_parquet``: ``None`` (the default)
            or ``"numpy_nullable"`` for nullable NumPy-backed dtypes
            (``Int64``, ``boolean``, ``string[pyarrow]``, lists and objects as
            Python values); ``"pyarrow"`` for ``pd.ArrowDtype`` columns only.
        dtypes: ``{column: dtype}`` overrides, as in pandas-gbq; a column
            named here and absent from the result is added, all NA.
        progress: Show a progress bar counting profiles.
        lookahead: Requests sent while earlier pages are still being parsed,
            so that parsing runs beside the network and on several cores;
            ``0`` sends each request only once the previous page is parsed.
            Requests still go out one at a time (see
            :meth:`~stoplist_nb.client.Client.pages`).

    Returns:
        The frame; ``attrs["next_from_id"]`` is where a later read resumes and
        ``attrs["profiles"]`` the number of profiles read.

    Raises:
        InvalidInput: An argument is wrong (nothing was sent).
        StoplistError: A request failed after its retries. ``exc.partial``
            holds the rows read so far and ``exc.resume_from`` the cursor to
            pass as ``from_id`` to carry on.

    >>> df = read_profiles(client, 1, query={"_city": "Moscow"})  # doctest: +SKIP
    >>> df[["profile_id", "channel", "email"]].head()  # doctest: +SKIP
    """
    params = request.params(client, db_id, query, fields, limit, from_id, max_profiles)
    declared = request.check_dtypes(dtypes, dtype_backend)

    def frame(pages: list[FlatPage], cursor: str, count: int) -> pd.DataFrame:
        df = cast_frame(frame_from_tables(pages, dtype_backend=dtype_backend), declared)
        df.attrs.update(db_id=db_id, next_from_id=cursor, profiles=count)
        return df

    # Client.pages checks lookahead now; its requests start with the iteration below.
    pages = flat_pages(
        client, params, from_id=from_id, max_profiles=max_profiles, progress=progress,
        lookahead=lookahead,
    )  # fmt: skip
    return collect(pages, from_id, frame)
