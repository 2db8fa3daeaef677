"""Subscriber profiles of a database (``profiles/list``) as DataFrames, files or a dataset."""

from __future__ import annotations

from stoplist_nb.profiles.reading import ProfilesRequest, read_profiles

__all__ = ["ProfilesRequest", "read_profiles"]
