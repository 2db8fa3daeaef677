"""The charts of :mod:`stoplist_nb.plots` (each counts first, then draws)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
from stoplist_nb.suppression.contacts import KINDS

_PERIODS = {
    "s": "second", "min": "minute", "h": "hour", "D": "day", "B": "business day", "W": "week",
    **dict.fromkeys(["M", "ME", "MS", "BME", "BMS", "SME", "SMS"], "month"),
    **dict.fromkeys(["Q", "QE", "QS", "BQE", "BQS"], "quarter"),
    **dict.fromkeys(["A", "Y", "YE", "YS", "AS", "BYE", "BYS"], "year"),
}  # fmt: skip
#: A legend beside the axes, not over the bars.
_OUTSIDE: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "frameon": False}


def plot_channels(df: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Draw subscriptions per channel (rows with a ``channel``) as bars labelled with counts.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = plot_channels(pd.DataFrame({"channel": ["sms", "email", "sms", None]}))
    >>> [int(b.get_height()) for b in ax.patches], ax.get_title()
    ([2, 1], 'Subscriptions per channel')
    """
    df = _check_frame(df, ["channel"], "plot_channels")
    ax = _axes_for(ax, "Subscriptions per channel", "channel", "subscriptions")
    counts = _ranked(df["channel"])
    if not counts:
        return _note(ax, "no subscriptions")
    names, heights = zip(*counts, strict=True)
    _label_bars(ax, ax.bar(names, heights, color="C0"), [f"{h:,}" for h in heights])
    return ax


def plot_statuses(df: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Draw subscription statuses per channel as stacked bars, the total on top.

    One series (``ax.containers``) per status; a null one is ``"(no status)"``.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> df = pd.DataFrame({"channel": ["email", "email", "sms"],
    ...                    "status": ["subscribed", "unsubscribed", "subscribed"]})
    >>> ax = plot_statuses(df)
    >>> {c.get_label(): [int(b.get_height()) for b in c] for c in ax.containers}
    {'subscribed': [1, 1], 'unsubscribed': [1, 0]}
    """
    df = _check_frame(df, ["channel", "status"], "plot_statuses")
    ax = _axes_for(ax, "Subscription statuses per channel", "channel", "subscriptions")
    rows = df.loc[_mask(df["channel"].notna()), ["channel", "status"]]
    channel = rows["channel"].astype(str)
    status = rows["status"].astype("string").fillna("(no status)").astype(str)
    index, columns = ([n for n, _ in _ranked(s)] for s in (channel, status))
    table = pd.crosstab(channel.to_numpy(), status.to_numpy())
    table = table.reindex(index=index, columns=columns, fill_value=0).astype("int64")
    if table.empty:
        return _note(ax, "no subscriptions")
    bottom = np.zeros(len(table), dtype="int64")
    for name in table.columns:
        bars = ax.bar(table.index.tolist(), table[name].to_numpy(), bottom=bottom, label=name)
        bottom = bottom + table[name].to_numpy()
    # The last series ends at the top of each stack, so its labels are the totals.
    _label_bars(ax, bars, [f"{t:,}" for t in bottom])
    ax.legend(title="status", **_OUTSIDE)
    return ax


def plot_registrations(
    df: pd.DataFrame, freq: str = "MS", *, by_channel: bool = True, ax: Axes | None = None
) -> Axes:
    """Draw new subscriptions per ``freq`` period (by ``reg_date``), stacked by channel.

    One filled step band (a ``StepPatch``) per channel, or one with
    ``by_channel=False``. ``freq`` is a pandas offset alias (``"W"``: weeks
    from Sunday), in UTC; ``reg_date`` must hold datetimes (naive: UTC).

    >>> import matplotlib; matplotlib.use("Agg")
    >>> df = pd.DataFrame({"channel": ["email", "email", "sms"], "reg_date": pd.to_datetime(
    ...     ["2024-01-01", "2024-03-16", "2024-01-02"], utc=True)})
    >>> ax = plot_registrations(df)
    >>> {p.get_label(): (p.get_data().values - p.get_data().baseline).tolist() for p in ax.patches}
    {'email': [1, 0, 1], 'sms': [1, 0, 0]}
    """
    func = "plot_registrations"
    df = _check_frame(df, ["reg_date", "channel"] if by_channel else ["reg_date"], func)
    try:
        offset = pd.tseries.frequencies.to_offset(freq)
    except (TypeError, ValueError):
        offset = None
    if offset is None:  # to_offset(None) is None, not an error
        raise InvalidInput(
            f"{func}: freq must be a pandas offset alias like 'MS' or 'W', not {freq!r}"
        )
    name = _PERIODS.get(offset.rule_code.split("-")[0])
    period = f"{offset.n} {name}s" if offset.n != 1 else name
    period = f"period ({offset.freqstr})" if name is None else period
    dates = df["reg_date"]
    if not pd.api.types.is_datetime64_any_dtype(dates.dtype):
        raise InvalidInput(f"{func} needs 'reg_date' to hold datetimes, not {dates.dtype}")
    index = pd.DatetimeIndex(dates)
    index = index.tz_convert("UTC") if index.tz is not None else index.tz_localize("UTC")
    keep = _mask(dates.notna())
    if by_channel:
        keep &= _mask(df["channel"].notna())
        channel = df.loc[keep, "channel"].astype(str)
        marks = {n: _mask(channel == n).astype("int64") for n, _ in _ranked(channel)}
    else:
        marks = {"all channels": np.ones(int(keep.sum()), dtype="int64")}
    # One resample of every column together; each period is [start, start + offset).
    frame = pd.DataFrame(marks, index=index[keep])
    counts = frame.resample(offset, closed="left", label="left").sum()
    title = "New subscriptions" + (" per channel" if by_channel else "")
    ax = _axes_for(ax, title, "registration date (UTC)", f"subscriptions per {period}")
    if counts.empty:
        return _note(ax, "no registrations")
    # Naive UTC values: matplotlib's date axis reads them as UTC, its default zone.
    starts = pd.DatetimeIndex(counts.index).tz_localize(None)
    ends = [*starts.to_pydatetime(), (starts[-1] + offset).to_pydatetime()]
    edges = mdates.date2num(ends)  # type: ignore[no-untyped-call]
    # One filled step band per channel, stacked: one patch each however many periods.
    bottom = np.zeros(len(counts), dtype="int64")
    for label in counts.columns:
        top = bottom + counts[label].to_numpy()
        ax.stairs(top, edges, baseline=bottom, fill=True, label=label)
        bottom = top
    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if by_channel:
        handles, labels = ax.get_legend_handles_labels()
        ax.legend(handles[::-1], labels[::-1], title="channel", **_OUTSIDE)
    return ax


def plot_top_domains(df: pd.DataFrame, n: int = 10, *, ax: Axes | None = None) -> Axes:
    """Draw the ``n`` e-mail domains with the most distinct addresses, as horizontal bars.

    Addresses and domains are compared stripped and lowercased.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> df = pd.DataFrame({"email": ["a@x.org", "A@x.org", "b@x.org", "c@y.org"],
    ...                    "email_domain": ["x.org", "x.org", "x.org", "y.org"]})
    >>> ax = plot_top_domains(df, n=1)
    >>> [int(b.get_width()) for b in ax.patches], ax.get_title()
    ([2], 'Top 1 of 2 e-mail domains')
    """
    df = _check_frame(df, ["email", "email_domain"], "plot_top_domains")
    check_int("n", n, minimum=1)
    text = df[["email_domain", "email"]].astype(pd.StringDtype("pyarrow"))
    text = text.apply(lambda c: c.str.strip().str.lower())
    counts = _ranked(text.mask(text == "").dropna().drop_duplicates()["email_domain"])
    shown = counts[:n]
    top = f"Top {n} of {len(counts)}" if len(counts) > n else "Top"
    ax = _axes_for(ax, f"{top} e-mail domains", "distinct e-mail addresses", "domain")
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

    Kinds that matched or are in ``flagged.attrs["checked"]``, in the order of
    :func:`~stoplist_nb.flag_suppressed`, then ``"not suppressed"``. Rows with
    a null ``suppressed`` had nothing to check: the x label counts them.

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
    df = _check_frame(flagged, ["suppressed", "suppressed_by"], func)
    checked = df.attrs.get("checked")
    checked = [] if checked is None else checked
    if not isinstance(checked, list | tuple) or not all(isinstance(k, str) for k in checked):
        raise InvalidInput(f"{func}: attrs['checked'] must list kind names, not {checked!r}")
    flags = df["suppressed"].astype("boolean")
    hit = _mask(flags.fillna(False))
    by = dict(_ranked(df.loc[hit, "suppressed_by"].astype("string").fillna("(kind unknown)")))
    shown = [k for k in KINDS if k in by or k in checked]
    shown += [k for k in dict.fromkeys(checked) if k not in shown]
    suppressed, total = int(hit.sum()), int(flags.notna().sum())
    counts = [(k, by.pop(k, 0)) for k in shown] + sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))
    counts.append(("not suppressed", total - suppressed))
    unchecked = len(df) - total
    share = suppressed / max(total, 1)
    title = f"Suppressed: {suppressed:,} of {total:,} contacts checked ({share:.1%})"
    rows = f"{unchecked:,} row" + ("" if unchecked == 1 else "s")
    xlabel = "matched by" + (f" (not counted: {rows} with nothing to check)" if unchecked else "")
    ax = _axes_for(ax, title if total else "Suppressed contacts", xlabel, "contacts")
    if not total:
        return _note(ax, "no contacts checked" if unchecked else "no contacts")
    names, heights = zip(*counts, strict=True)
    # Suppressed in red, the rest in grey: the eye goes to what is blocked.
    bars = ax.bar(names, heights, color=["C3"] * (len(counts) - 1) + ["0.6"])
    _label_bars(ax, bars, [f"{h:,} ({h / total:.1%})" for h in heights])
    return ax


def _check_frame(df: object, columns: Iterable[str], func: str) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise InvalidInput(f"{func} needs a pandas DataFrame, not {type(df).__name__}")
    if missing := [c for c in columns if c not in df.columns]:
        has = ", ".join(map(str, df.columns[:12])) + (", ..." if len(df.columns) > 12 else "")
        names = "column" + ("s" if len(missing) > 1 else "") + " " + ", ".join(map(repr, missing))
        raise InvalidInput(
            f"{func} needs {names}, which the frame does not have"
            f" (its {len(df.columns)} columns: {has or 'none'})"
        )
    return df


def _ranked(values: pd.Series) -> list[tuple[str, int]]:
    """The non-null values counted: largest count first, ties by value (the same on every run)."""
    counts = values.dropna().astype(str).value_counts(sort=False)
    return sorted(((str(k), int(v)) for k, v in counts.items()), key=lambda kv: (-kv[1], kv[0]))


def _mask(series: pd.Series) -> np.ndarray[Any, np.dtype[np.bool_]]:
    # A writable plain-bool copy: masks from Arrow-backed columns can be read-only.
    return np.array(series, dtype=bool)


def _axes_for(ax: Axes | None, title: str, xlabel: str, ylabel: str) -> Axes:
    if ax is None:
        import matplotlib.pyplot as plt

        # Constrained layout keeps long tick labels and an outside legend in the figure.
        _, ax = plt.subplots(layout="constrained")
    elif not isinstance(ax, Axes):
        raise InvalidInput(f"ax must be a matplotlib Axes or None, not {type(ax).__name__}")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    return ax


def _note(ax: Axes, text: str) -> Axes:
    """Write ``text`` in the middle of an empty chart (without ticks: its scale means nothing)."""
    ax.set(xticks=[], yticks=[])
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.45")
    return ax


def _label_bars(ax: Axes, bars: BarContainer, labels: list[str], horizontal: bool = False) -> None:
    """Write ``labels`` at the end of ``bars``, and keep the count axis in whole numbers."""
    ax.bar_label(bars, labels=labels, padding=2)
    (ax.xaxis if horizontal else ax.yaxis).set_major_locator(MaxNLocator(integer=True))
    ax.margins(*((0.15, None) if horizontal else (None, 0.1)))  # room for the longest label
