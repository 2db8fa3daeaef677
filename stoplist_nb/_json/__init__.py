"""The service's JSON as Arrow, without loss or a crash (pure: no I/O).

:mod:`~stoplist_nb._json.reader` turns a reply's bytes into Arrow columns;
:mod:`~stoplist_nb._json.records` does the same for Python values, exactly
(a leaf whose values change kind in :mod:`~stoplist_nb._json.mixed`);
:mod:`~stoplist_nb._json.nesting` bounds how deep either may go.
"""

from stoplist_nb._json.reader import Reply, read_reply

__all__ = ["Reply", "read_reply"]
