"""Suppression lists: export them from the service, read the archive, match contacts.

:mod:`~stoplist_nb.suppression.download` runs the export up to its ZIP (start,
wait on the task in :mod:`~stoplist_nb.suppression.tasks`, download) and
:mod:`~stoplist_nb.suppression.export` reads it into a frame or a Parquet file;
:mod:`~stoplist_nb.suppression.archive` reads the downloaded ZIP of hashed CSV
(members checked in :mod:`~stoplist_nb.suppression.zipmembers`, their layout
guessed in :mod:`~stoplist_nb.suppression.csvlayout`);
:mod:`~stoplist_nb.suppression.flagging` flags the contacts found on a list: a
pandas frame in :mod:`~stoplist_nb.suppression.frames`, a Dask one partition by
partition in :mod:`~stoplist_nb.suppression.partitions`, their values hashed in
:mod:`~stoplist_nb.suppression.hashing` (domains in each spelling in
:mod:`~stoplist_nb.suppression.domains`) and looked up in
:mod:`~stoplist_nb.suppression.matching`; the kinds of contact, and the words a
list uses for them, are :mod:`~stoplist_nb.suppression.contacts`.
"""
