"""``python -m stoplist_nb``: the ``stoplist-nb`` command line (see :mod:`stoplist_nb.cli`)."""

from __future__ import annotations

import sys

from stoplist_nb.cli import main

if __name__ == "__main__":
    sys.exit(main())
