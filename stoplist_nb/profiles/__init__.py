"""Subscriber profiles of a database as pandas DataFrames (``profiles/list``).

A request is :class:`~stoplist_nb.profiles.reading.ProfilesRequest`, read as
pages, tables, frames, files or a dataset; ``read_profiles`` is its
``to_frame`` in one call.
"""

from __future__ import annotations

from stoplist_nb.profiles.reading import ProfilesRequest, read_profiles

__all__ = ["ProfilesRequest", "read_profiles"]
