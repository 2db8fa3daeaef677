"""Alias of :mod:`stoplist_nb.suppression.export`, where the code lives."""

# The star import follows that module's __all__, so the alias cannot drift from it.
from stoplist_nb.suppression.export import *  # noqa: F403
from stoplist_nb.suppression.export import __all__ as __all__
