"""What each chart of :mod:`stoplist_nb.plots` counts, and the checks on its frame.

Counting is kept apart from drawing (no matplotlib here), and every count is
ordered largest first, ties by name, so a chart comes out the same on every run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from stoplist_nb.errors import InvalidInput
from stoplist_nb.suppression.contacts import KINDS

__all__ = [
    "NOT_SUPPRESSED",
    "NO_STATUS",
    "UNKNOWN_KIND",
    "check_frame",
    "checked_kinds",
    "domain_counts",
    "overlap_counts",
    "period_name",
    "ranked",
    "registration_counts",
    "status_table",
]

NO_STATUS = "(no status)"
NOT_SUPPRESSED = "not suppressed"
UNKNOWN_KIND = "(kind unknown)"

_PERIODS = {
    "s": "second",
    "min": "minute",
    "h": "hour",
    "D": "day",
    "B": "business day",
    "W": "week",
    **dict.fromkeys(["M", "ME", "MS", "BME", "BMS", "SME", "SMS"], "month"),
    **dict.fromkeys(["Q", "QE", "QS", "BQE", "BQS"], "quarter"),
    **dict.fromkeys(["A", "Y", "YE", "YS", "AS", "BYE", "BYS"], "year"),
}


def check_frame(df: object, columns: Iterable[str], func: str) -> pd.DataFrame:
    """Return ``df`` if it is a DataFrame with every one of ``columns``; else raise InvalidInput."""
    if not isinstance(df, pd.DataFrame):
        raise InvalidInput(f"{func} needs a pandas DataFrame, not {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        has = ", ".join(map(str, df.columns[:12])) + (", ..." if len(df.columns) > 12 else "")
        names = "column" + ("s" if len(missing) > 1 else "") + " " + ", ".join(map(repr, missing))
        raise InvalidInput(
            f"{func} needs {names}, which the frame does not have"
            f" (its {len(df.columns)} columns: {has or 'none'})"
        )
    return df


def ranked(values: pd.Series) -> list[tuple[str, int]]:
    """Count the non-null values: largest count first, ties by value."""
    counts = values.dropna().astype(str).value_counts(sort=False)
    return sorted(((str(k), int(v)) for k, v in counts.items()), key=lambda kv: (-kv[1], kv[0]))


def _mask(series: pd.Series) -> np.ndarray[Any, np.dtype[np.bool_]]:
    # A writable plain-bool copy: masks from Arrow-backed columns can be read-only.
    return np.array(series, dtype=bool)


def _text(series: pd.Series) -> pd.Series:
    text = series.astype(pd.StringDtype("pyarrow")).str.strip().str.lower()
    return text.mask(text.str.len() == 0)


def status_table(df: pd.DataFrame) -> pd.DataFrame:
    """Subscriptions per channel (rows) and status (columns), both ranked by total."""
    rows = df.loc[_mask(df["channel"].notna()), ["channel", "status"]]
    channel = rows["channel"].astype(str)
    status = rows["status"].astype("string").fillna(NO_STATUS).astype(str)
    table = pd.crosstab(channel.to_numpy(), status.to_numpy())
    return table.reindex(
        index=[name for name, _ in ranked(channel)],
        columns=[name for name, _ in ranked(status)],
        fill_value=0,
    ).astype("int64")


def period_name(freq: object, func: str) -> tuple[pd.DateOffset, str]:
    """Return the offset of a resampling rule and its name for a label ("week", "2 days")."""
    bad = InvalidInput(f"{func}: freq must be a pandas offset alias like 'W' or 'MS', not {freq!r}")
    if freq is None:  # to_offset(None) is None, not an error
        raise bad
    try:
        offset = pd.tseries.frequencies.to_offset(freq)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise bad from None
    name = _PERIODS.get(offset.rule_code.split("-")[0])
    if name is None:
        return offset, f"period ({offset.freqstr})"
    return offset, (name if offset.n == 1 else f"{offset.n} {name}s")


def registration_counts(
    df: pd.DataFrame, offset: pd.DateOffset, *, by_channel: bool, func: str
) -> pd.DataFrame:
    """Rows with a ``reg_date`` per period (UTC), one column per channel or ``all channels``.

    Every column shares the same contiguous periods; a period without rows is 0.
    """
    dates = df["reg_date"]
    if not pd.api.types.is_datetime64_any_dtype(dates.dtype):
        raise InvalidInput(f"{func} needs 'reg_date' to hold datetimes, not {dates.dtype}")
    index = pd.DatetimeIndex(dates)
    index = index.tz_convert("UTC") if index.tz is not None else index.tz_localize("UTC")
    keep = _mask(dates.notna())
    if by_channel:
        keep &= _mask(df["channel"].notna())
        channel = df.loc[keep, "channel"].astype(str)
        marks = {n: _mask(channel == n).astype("int64") for n, _ in ranked(channel)}
    else:
        marks = {"all channels": np.ones(int(keep.sum()), dtype="int64")}
    # One resample of every column together, so all lines share the same periods.
    return pd.DataFrame(marks, index=index[keep]).resample(offset).sum()


def domain_counts(df: pd.DataFrame) -> list[tuple[str, int]]:
    """Distinct e-mail addresses per domain, both compared stripped and lowercased."""
    pairs = pd.DataFrame({"domain": _text(df["email_domain"]), "email": _text(df["email"])})
    return ranked(pairs.dropna().drop_duplicates()["domain"])


def checked_kinds(df: pd.DataFrame, func: str) -> list[str]:
    """The kinds ``flag_suppressed`` checked (``attrs["checked"]``), or ``[]`` when not recorded."""
    checked = df.attrs.get("checked")
    if checked is None:
        return []
    if isinstance(checked, str) or not isinstance(checked, list | tuple):
        raise InvalidInput(
            f"{func}: attrs['checked'] must be a list of kinds, not {type(checked).__name__}"
        )
    if not all(isinstance(kind, str) for kind in checked):
        raise InvalidInput(f"{func}: attrs['checked'] must hold kind names, not {checked!r}")
    return list(dict.fromkeys(checked))


def overlap_counts(
    df: pd.DataFrame, checked: Sequence[str] = ()
) -> tuple[list[tuple[str, int]], int, int]:
    """Suppressed rows per matched kind, then ``not suppressed``; the suppressed and checked totals.

    Only rows with a ``suppressed`` of True or False count: a null one had
    nothing to check, so it is neither. The kinds of
    :data:`~stoplist_nb.suppression.contacts.KINDS` (what ``suppressed_by`` holds) come
    first, in that order (the precedence of ``flag_suppressed``), each checked
    one even with no match; any other value of ``suppressed_by`` (a frame
    flagged otherwise) follows, ranked.
    """
    flags = df["suppressed"].astype("boolean")
    hit = _mask(flags.fillna(False))
    by = df.loc[hit, "suppressed_by"].astype("string").fillna(UNKNOWN_KIND)
    counts = dict(ranked(by))
    shown = [k for k in KINDS if k in counts or k in checked]
    shown += [k for k in checked if k not in shown]
    known = [(k, counts.pop(k, 0)) for k in shown]
    suppressed = int(hit.sum())
    looked = int(flags.notna().sum())
    rest = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [*known, *rest, (NOT_SUPPRESSED, looked - suppressed)], suppressed, looked
