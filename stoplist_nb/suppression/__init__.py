"""Suppression lists: export them from the service, read the archive, match contacts.

:mod:`~stoplist_nb.suppression.export` runs the export (start, wait on the task
in :mod:`~stoplist_nb.suppression.tasks`, download, read);
:mod:`~stoplist_nb.suppression.archive` reads the downloaded ZIP of hashed CSV
(members checked in :mod:`~stoplist_nb.suppression.zipmembers`, their layout
guessed in :mod:`~stoplist_nb.suppression.csvlayout`);
:mod:`~stoplist_nb.suppression.hashing` hashes contacts and flags those on a list
(lookups in :mod:`~stoplist_nb.suppression.matching`).
"""
