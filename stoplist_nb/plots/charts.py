"""The charts of :mod:`stoplist_nb.plots`: each draws what :mod:`~stoplist_nb.plots.counts` counts.

Needs matplotlib; ``matplotlib.pyplot`` is imported only when a chart needs a
new figure, so no backend is chosen here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

try:
    from matplotlib import dates as mdates
    from matplotlib.axes import Axes
    from matplotlib.container import BarContainer
    from matplotlib.ticker import MaxNLocator
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "stoplist_nb.plots needs matplotlib: pip install 'stoplist_nb[plots]'"
    ) from exc

from stoplist_nb._checks import check_int
from stoplist_nb.errors import InvalidInput
from stoplist_nb.plots import counts as ct


def plot_channels(df: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Draw subscriptions per channel as bars, each labelled with its count.

    A subscription is a row with a ``channel``; rows with a null ``channel``
    (profiles without subscriptions) are not counted. Bars go from the most
    subscriptions to the fewest, ties by channel name.

    Args:
        df: Profiles, one row per subscription; needs ``channel``.
        ax: The Axes to draw on; default: a new figure.

    Returns:
        The Axes drawn on.

    Raises:
        InvalidInput: ``df`` has no ``channel`` column.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = plot_channels(pd.DataFrame({"channel": ["sms", "email", "sms", None]}))
    >>> [int(b.get_height()) for b in ax.patches], ax.get_title()
    ([2, 1], 'Subscriptions per channel')
    """
    df = ct.check_frame(df, ["channel"], "plot_channels")
    ax = _axes_for(ax)
    _label_axes(ax, title="Subscriptions per channel", xlabel="channel", ylabel="subscriptions")
    counts = ct.ranked(df["channel"])
    if not counts:
        return _note(ax, "no subscriptions")
    names, heights = zip(*counts, strict=True)
    bars = ax.bar(names, heights, color="C0")
    _label_bars(ax, bars, [f"{h:,}" for h in heights], horizontal=False)
    return ax


def plot_statuses(df: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Draw subscription statuses per channel as stacked bars, the total on top.

    One bar per channel, in :func:`plot_channels` order; one stacked series
    (``ax.containers``) and legend entry per status, the most frequent at the
    bottom, ties by name. A subscription with a null ``status`` counts as
    ``"(no status)"``, so a bar's total is its channel's count; rows with a
    null ``channel`` are not counted.

    Args:
        df: Profiles, one row per subscription; needs ``channel`` and ``status``.
        ax: The Axes to draw on; default: a new figure.

    Returns:
        The Axes drawn on.

    Raises:
        InvalidInput: ``df`` lacks ``channel`` or ``status``.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> df = pd.DataFrame({"channel": ["email", "email", "sms"],
    ...                    "status": ["subscribed", "unsubscribed", "subscribed"]})
    >>> ax = plot_statuses(df)
    >>> {c.get_label(): [int(b.get_height()) for b in c] for c in ax.containers}
    {'subscribed': [1, 1], 'unsubscribed': [1, 0]}
    """
    df = ct.check_frame(df, ["channel", "status"], "plot_statuses")
    ax = _axes_for(ax)
    _label_axes(
        ax, title="Subscription statuses per channel", xlabel="channel", ylabel="subscriptions"
    )
    table = ct.status_table(df)
    if table.empty:
        return _note(ax, "no subscriptions")
    channels = table.index.tolist()
    bottom = np.zeros(len(channels), dtype="int64")
    for status in table.columns:
        bars = ax.bar(channels, table[status].to_numpy(), bottom=bottom, label=status)
        bottom = bottom + table[status].to_numpy()
    # The last series ends at the top of each stack, so its labels are the totals.
    _label_bars(ax, bars, [f"{t:,}" for t in bottom], horizontal=False)
    ax.legend(title="status", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


def plot_registrations(
    df: pd.DataFrame, freq: str = "W", *, by_channel: bool = True, ax: Axes | None = None
) -> Axes:
    """Draw new subscriptions over time: rows counted by ``reg_date`` per ``freq`` period.

    With ``by_channel`` (the default), one line per channel, in
    :func:`plot_channels` order; otherwise one line for every row with a
    ``reg_date``. Periods are in UTC, contiguous and shared by all lines: one
    without registrations counts 0, so a gap shows as a drop instead of being
    bridged. Each point sits where ``DataFrame.resample`` labels its period
    (for ``"W"``, the Sunday that ends the week). Rows without a ``reg_date``
    (or, by channel, a ``channel``) cannot be placed and are left out.

    Args:
        df: Profiles, one row per subscription; needs ``reg_date`` (datetimes,
            naive ones read as UTC) and, by channel, ``channel``.
        freq: A pandas offset alias: ``"D"``, ``"W"``, ``"MS"``, ``"QS"``, ...
        by_channel: One line per channel rather than one for all rows.
        ax: The Axes to draw on; default: a new figure.

    Returns:
        The Axes drawn on; the counts are the y-data of ``ax.lines``.

    Raises:
        InvalidInput: A needed column is missing, ``reg_date`` does not hold
            datetimes, or ``freq`` is not an offset alias.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> df = pd.DataFrame({"channel": ["email", "email", "sms"], "reg_date": pd.to_datetime(
    ...     ["2024-01-01", "2024-01-16", "2024-01-02"], utc=True)})
    >>> ax = plot_registrations(df, "W")
    >>> {line.get_label(): line.get_ydata().tolist() for line in ax.lines}
    {'email': [1, 0, 1], 'sms': [1, 0, 0]}
    """
    func = "plot_registrations"
    df = ct.check_frame(df, ["reg_date", "channel"] if by_channel else ["reg_date"], func)
    offset, period = ct.period_name(freq, func)
    counts = ct.registration_counts(df, offset, by_channel=by_channel, func=func)
    ax = _axes_for(ax)
    _label_axes(
        ax,
        title="New subscriptions" + (" per channel" if by_channel else ""),
        xlabel="registration date (UTC)",
        ylabel=f"subscriptions per {period}",
    )
    if counts.empty:
        return _note(ax, "no registrations")
    # Naive UTC values: matplotlib's date axis reads them as UTC, its default zone.
    x = pd.DatetimeIndex(counts.index).tz_localize(None).to_numpy()
    dots = len(counts) <= 60  # a marker per point, while they do not crowd each other
    for name in counts.columns:
        ax.plot(x, counts[name].to_numpy(), label=name, marker="o" if dots else "", markersize=3)
    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if by_channel:
        ax.legend(title="channel", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


def plot_top_domains(df: pd.DataFrame, n: int = 10, *, ax: Axes | None = None) -> Axes:
    """Draw the ``n`` e-mail domains with the most distinct addresses, as horizontal bars.

    Counted are distinct e-mail addresses (compared stripped and lowercased),
    not subscriptions: an address in two profiles counts once. Rows without an
    ``email`` or an ``email_domain`` are left out. The largest domain is on
    top, ties by domain name; when some domains are cut off, the title says
    how many there are in all.

    Args:
        df: Profiles, one row per subscription; needs ``email`` and ``email_domain``.
        n: How many domains to show, at least 1.
        ax: The Axes to draw on; default: a new figure.

    Returns:
        The Axes drawn on; ``ax.patches`` go from the top bar down.

    Raises:
        InvalidInput: A column is missing, or ``n`` is not an int of at least 1.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> df = pd.DataFrame({"email": ["a@x.org", "A@x.org", "b@x.org", "c@y.org"],
    ...                    "email_domain": ["x.org", "x.org", "x.org", "y.org"]})
    >>> ax = plot_top_domains(df, n=1)
    >>> [int(b.get_width()) for b in ax.patches], ax.get_title()
    ([2], 'Top 1 of 2 e-mail domains')
    """
    df = ct.check_frame(df, ["email", "email_domain"], "plot_top_domains")
    check_int("n", n, minimum=1)
    counts = ct.domain_counts(df)
    shown = counts[:n]
    ax = _axes_for(ax)
    top = f"Top {n} of {len(counts)}" if len(counts) > n else "Top"
    _label_axes(
        ax, title=f"{top} e-mail domains", xlabel="distinct e-mail addresses", ylabel="domain"
    )
    if not shown:
        return _note(ax, "no e-mail addresses")
    names, widths = zip(*shown, strict=True)
    bars = ax.barh(range(len(shown)), widths, color="C0")
    ax.set_yticks(range(len(shown)), labels=names)
    ax.invert_yaxis()  # the first bar, the largest, on top
    _label_bars(ax, bars, [f"{w:,}" for w in widths], horizontal=True)
    return ax


def plot_suppression_overlap(flagged: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Draw how many rows are suppressed, per kind of match, and how many are not.

    One bar per kind that matched (the values of ``suppressed_by``):
    ``"email"``, ``"phone"``, ``"domain"``, in that order (the precedence of
    :func:`~stoplist_nb.flag_suppressed`), then ``"not suppressed"``. A kind
    listed in ``flagged.attrs["checked"]`` that never matched gets a bar of 0,
    so "checked, nothing found" shows apart from "not checked"; a frame
    without that record shows only the kinds that matched. Only the rows
    that had something to check count: a null ``suppressed`` (no e-mail, phone
    or domain in that row) is left out of every bar and share, and the x label
    says how many rows were left out. Each bar is labelled with its count and
    share of the contacts checked, and the title gives the suppressed total
    "of N contacts checked". Rows count as they are: one per contact you
    flagged, one per subscription for a :func:`~stoplist_nb.read_profiles`
    frame. A suppressed row without ``suppressed_by`` counts as
    ``"(kind unknown)"``; any other value of
    ``suppressed_by`` gets its own bar after the three kinds, most matches first.

    Args:
        flagged: The result of :func:`~stoplist_nb.flag_suppressed`; needs
            ``suppressed`` and ``suppressed_by``.
        ax: The Axes to draw on; default: a new figure.

    Returns:
        The Axes drawn on.

    Raises:
        InvalidInput: ``flagged`` lacks ``suppressed`` or ``suppressed_by``, or
            its ``attrs["checked"]`` is not a list of kind names.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> flagged = pd.DataFrame({"suppressed": [True, False, True, False, None],
    ...                         "suppressed_by": ["phone", None, "email", None, None]})
    >>> flagged.attrs["checked"] = ["email", "phone", "domain"]
    >>> ax = plot_suppression_overlap(flagged)
    >>> [t.get_text() for t in ax.get_xticklabels()], [int(b.get_height()) for b in ax.patches]
    (['email', 'phone', 'domain', 'not suppressed'], [1, 1, 0, 2])
    >>> ax.get_title()
    'Suppressed: 2 of 4 contacts checked (50.0%)'
    """
    func = "plot_suppression_overlap"
    df = ct.check_frame(flagged, ["suppressed", "suppressed_by"], func)
    counts, suppressed, total = ct.overlap_counts(df, ct.checked_kinds(df, func))
    unchecked = len(df) - total
    ax = _axes_for(ax)
    title = "Suppressed contacts"
    if total:
        share = f"{suppressed:,} of {total:,} contacts checked ({suppressed / total:.1%})"
        title = f"Suppressed: {share}"
    xlabel = "matched by"
    if unchecked:
        rows = "row" if unchecked == 1 else "rows"
        xlabel += f" (not counted: {unchecked:,} {rows} with nothing to check)"
    _label_axes(ax, title=title, xlabel=xlabel, ylabel="contacts")
    if not total:
        return _note(ax, "no contacts checked" if unchecked else "no contacts")
    names, heights = zip(*counts, strict=True)
    # Suppressed in red, the rest in grey: the eye goes to what is blocked.
    bars = ax.bar(names, heights, color=["C3"] * (len(counts) - 1) + ["0.6"])
    _label_bars(ax, bars, [f"{h:,} ({h / total:.1%})" for h in heights], horizontal=False)
    return ax


def _axes_for(ax: Axes | None) -> Axes:
    """Return ``ax``, or the Axes of a new figure when it is ``None``."""
    if ax is None:
        import matplotlib.pyplot as plt

        # Constrained layout keeps long tick labels and an outside legend in the figure.
        _, new = plt.subplots(layout="constrained")
        return new
    if not isinstance(ax, Axes):
        raise InvalidInput(f"ax must be a matplotlib Axes or None, not {type(ax).__name__}")
    return ax


def _label_axes(ax: Axes, *, title: str, xlabel: str, ylabel: str) -> None:
    """Set the title and both axis labels."""
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def _note(ax: Axes, text: str) -> Axes:
    """Write ``text`` in the middle of an empty chart (without ticks: its scale means nothing)."""
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.45")
    return ax


def _label_bars(ax: Axes, bars: BarContainer, labels: Sequence[str], *, horizontal: bool) -> None:
    """Write ``labels`` at the end of ``bars``, and keep the count axis in whole numbers."""
    ax.bar_label(bars, labels=list(labels), padding=2)
    axis = ax.xaxis if horizontal else ax.yaxis
    axis.set_major_locator(MaxNLocator(integer=True))
    # Room past the longest bar, so its label stays inside the axes.
    if horizontal:
        ax.margins(x=0.15)
    else:
        ax.margins(y=0.1)
