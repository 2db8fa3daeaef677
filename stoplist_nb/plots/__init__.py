"""matplotlib charts of profile frames and suppression checks, for a notebook.

Import it on its own (``pip install "stoplist_nb[plots]"``); ``import
stoplist_nb`` does not load matplotlib, and this package does not choose a
backend: ``matplotlib.pyplot`` is imported only when a chart needs a new figure.

Every function takes a frame from :func:`~stoplist_nb.read_profiles` or
:func:`~stoplist_nb.normalize_profiles` (one row per subscription; a profile
without subscriptions is a row with a null ``channel``), or one from
:func:`~stoplist_nb.flag_suppressed`, and an optional ``ax`` to draw on. Each
returns the Axes, with a title and axis labels. An empty frame, or one with
nothing to count, gives an empty chart with a note ("no subscriptions")
instead of an error; a missing column raises ``InvalidInput`` naming it.
Categories are ordered by count, largest first, then by name, so a notebook
draws the same chart on every run.

>>> import matplotlib; matplotlib.use("Agg")
>>> import pandas as pd
>>> from stoplist_nb import plots
>>> df = pd.DataFrame({"channel": ["email", "sms", "email", None]})
>>> ax = plots.plot_channels(df)
>>> [t.get_text() for t in ax.get_xticklabels()], [int(b.get_height()) for b in ax.patches]
(['email', 'sms'], [2, 1])
"""

from stoplist_nb.plots.charts import (
    plot_channels,
    plot_registrations,
    plot_statuses,
    plot_suppression_overlap,
    plot_top_domains,
)

__all__ = [
    "plot_channels",
    "plot_registrations",
    "plot_statuses",
    "plot_suppression_overlap",
    "plot_top_domains",
]
