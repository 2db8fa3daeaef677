"""``python -m stoplist_nb``: the ``stoplist-nb`` command line (see :mod:`stoplist_nb.cli`)."""

from stoplist_nb.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
