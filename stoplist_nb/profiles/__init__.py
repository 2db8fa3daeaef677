"""Subscriber profiles of a database as pandas DataFrames (``profiles/list``).

A request is :class:`~stoplist_nb.profiles.reading.ProfilesRequest`, checked
once and read as pages, tables, frames, files or a dataset;
``read_profiles`` is its ``to_frame`` in one call
(:mod:`~stoplist_nb.profiles.reading`). The pages come from
:meth:`stoplist_nb.Client.pages` through :mod:`~stoplist_nb.profiles.stream`;
they become one flat frame in :mod:`~stoplist_nb.profiles.normalize` (rows in
:mod:`~stoplist_nb.profiles.rows`, columns and dtypes in
:mod:`~stoplist_nb.profiles.columns`), files in
:mod:`~stoplist_nb.profiles.files` and a Parquet dataset in
:mod:`~stoplist_nb.profiles.dataset`. What a query can filter on is
:mod:`~stoplist_nb.profiles.fields`.
"""

from __future__ import annotations

from stoplist_nb.profiles.reading import ProfilesRequest, read_profiles

__all__ = ["ProfilesRequest", "read_profiles"]
