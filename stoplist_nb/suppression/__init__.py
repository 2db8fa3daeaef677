"""Suppression lists: export them (:mod:`~stoplist_nb.suppression.download`,
:mod:`~stoplist_nb.suppression.export`), read the archive
(:mod:`~stoplist_nb.suppression.archive`) and flag contacts found on a list
(:mod:`~stoplist_nb.suppression.flagging`).
"""
