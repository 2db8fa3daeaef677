"""matplotlib charts of profile frames and suppression checks, for a notebook.

``pip install "stoplist_nb[plots]"``. Each function takes a frame of
:func:`~stoplist_nb.read_profiles` or :func:`~stoplist_nb.flag_suppressed` and an optional ``ax``
(default: a new figure), and returns the Axes. A missing column raises ``InvalidInput``; nothing to
count gives an empty chart with a note. Categories go largest first, then by name.

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
    "plot_channels", "plot_registrations", "plot_statuses", "plot_suppression_overlap",
    "plot_top_domains"
]  # fmt: skip
