"""stoplist_nb.plots: what is drawn equals what is in the frame, on real and tiny data.

Expected counts are computed here with plain pandas, not with the module's helpers.
"""

from __future__ import annotations

import doctest
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no window, and the same pixels everywhere

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib import dates as mdates
from matplotlib.axes import Axes

import stoplist_nb as sn
from stoplist_nb import plots
from stoplist_nb.demo import DemoService
from stoplist_nb.errors import InvalidInput
from stoplist_nb.plots import charts

STR = pd.StringDtype("pyarrow")
PROFILE_PLOTS: list[Callable[..., Axes]] = [
    plots.plot_channels,
    plots.plot_statuses,
    plots.plot_registrations,
    plots.plot_top_domains,
]


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def frame(svc: DemoService) -> pd.DataFrame:
    """The demo service's profiles, as read_profiles returns them."""
    with svc.client() as client:
        return sn.read_profiles(client, svc.db_id, progress=False)


@pytest.fixture(scope="module")
def flagged(svc: DemoService, frame: pd.DataFrame) -> pd.DataFrame:
    """The demo profiles flagged against the demo suppression list."""
    with svc.client() as client:
        stop = sn.read_suppression_list(client, svc.suppress_id, progress=False)
    return sn.flag_suppressed(frame, stop, email="email", phone="phone")


def ranked(counts: pd.Series) -> list[tuple[str, int]]:
    return sorted(((str(k), int(v)) for k, v in counts.items()), key=lambda kv: (-kv[1], kv[0]))


def heights(ax: Axes) -> list[int]:
    return [int(p.get_height()) for p in ax.patches]  # type: ignore[attr-defined]


def ticks(labels: list[Any]) -> list[str]:
    return [t.get_text() for t in labels]


def texts(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.texts]


@pytest.mark.parametrize("module", [plots, charts])
def test_doctests(module: Any) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.slow
def test_importing_plots_leaves_the_backend_alone() -> None:
    code = (
        "import sys, stoplist_nb; assert 'matplotlib' not in sys.modules;"
        "import stoplist_nb.plots; assert 'matplotlib.pyplot' not in sys.modules"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_channels_are_the_subscription_counts(frame: pd.DataFrame) -> None:
    expected = ranked(frame["channel"].dropna().value_counts())
    ax = plots.plot_channels(frame)
    assert ticks(ax.get_xticklabels()) == [name for name, _ in expected]
    assert heights(ax) == [n for _, n in expected]
    assert texts(ax) == [f"{n:,}" for _, n in expected]
    assert sum(heights(ax)) == int(frame["channel"].notna().sum()) < len(frame)
    assert ax.get_title() == "Subscriptions per channel"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("channel", "subscriptions")


def test_channels_ties_go_by_name_and_na_is_not_counted() -> None:
    channel = pd.array(["sms", "viber", pd.NA, "email", "sms", "email", "push"], dtype=STR)
    ax = plots.plot_channels(pd.DataFrame({"channel": channel}))
    assert ticks(ax.get_xticklabels()) == ["email", "sms", "push", "viber"]
    assert heights(ax) == [2, 2, 1, 1]


def test_statuses_stack_the_counts_per_channel(frame: pd.DataFrame) -> None:
    subs = frame.dropna(subset=["channel"])
    table = pd.crosstab(subs["channel"].astype(str), subs["status"].astype(str))
    channels = [name for name, _ in ranked(subs["channel"].value_counts())]
    statuses = [name for name, _ in ranked(subs["status"].value_counts())]
    ax = plots.plot_statuses(frame)
    assert ticks(ax.get_xticklabels()) == channels
    assert [c.get_label() for c in ax.containers] == statuses
    for container in ax.containers:
        column = table[container.get_label()].reindex(channels, fill_value=0)
        assert [int(b.get_height()) for b in container] == column.tolist()
    tops = [b.get_y() + b.get_height() for b in ax.containers[-1]]
    assert tops == table.loc[channels].sum(axis=1).tolist()
    assert texts(ax) == [str(int(t)) for t in tops]
    legend = ax.get_legend()
    assert legend is not None
    assert ticks(legend.get_texts()) == statuses
    assert legend.get_title().get_text() == "status"
    assert ax.get_title() == "Subscription statuses per channel"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("channel", "subscriptions")


def test_statuses_count_a_missing_status() -> None:
    df = pd.DataFrame(
        {
            "channel": pd.array(["email", "email", "sms", pd.NA], dtype=STR),
            "status": pd.array(["subscribed", pd.NA, pd.NA, "subscribed"], dtype=STR),
        }
    )
    ax = plots.plot_statuses(df)
    drawn = {c.get_label(): [int(b.get_height()) for b in c] for c in ax.containers}
    assert drawn == {"(no status)": [1, 1], "subscribed": [1, 0]}


def weekly(dates: pd.Series) -> dict[pd.Timestamp, int]:
    """Registrations per week from Sunday 00:00 (UTC), keyed by that Sunday."""
    naive = dates.dropna().dt.tz_convert("UTC").dt.tz_localize(None)
    sundays = naive.dt.to_period("W-SAT").dt.start_time
    return {pd.Timestamp(day): int(n) for day, n in sundays.value_counts().items()}


def drawn_bands(ax: Axes) -> dict[str, tuple[pd.DatetimeIndex, list[int]]]:
    """Each band's period starts and heights (its top less its base), by label."""
    bands = {}
    for patch in ax.patches:
        values, edges, baseline = patch.get_data()
        starts = pd.DatetimeIndex(mdates.num2date(edges[:-1])).tz_localize(None)
        bands[str(patch.get_label())] = (starts, np.rint(values - baseline).astype(int).tolist())
    return bands


def test_registrations_are_weekly_counts_stacked_by_channel(frame: pd.DataFrame) -> None:
    ax = plots.plot_registrations(frame, "W")
    bands = drawn_bands(ax)
    channels = [name for name, _ in ranked(frame["channel"].value_counts())]
    assert list(bands) == channels  # the largest at the bottom of the stack
    legend = ax.get_legend()
    assert legend is not None
    assert ticks(legend.get_texts()) == channels[::-1]  # read top down, as the stack is
    every = weekly(frame["reg_date"])
    tops = np.zeros(len(next(iter(bands.values()))[1]))
    for patch, (name, (x, y)) in zip(ax.patches, bands.items(), strict=True):
        # every band runs over the same unbroken weeks, a week without registrations at 0
        assert x[0] == min(every)
        assert x[-1] == max(every)
        assert set(x[1:] - x[:-1]) == {pd.Timedelta(days=7)}
        assert {day: n for day, n in zip(x, y, strict=True) if n} == weekly(
            frame.loc[frame["channel"] == name, "reg_date"]
        )
        # each band sits on the one below it
        assert np.array_equal(patch.get_data().baseline, tops)
        tops = patch.get_data().values
    assert sum(every.values()) == int(tops.sum())
    assert ax.get_title() == "New subscriptions per channel"
    assert ax.get_xlabel() == "registration date (UTC)"
    assert ax.get_ylabel() == "subscriptions per week"


def test_registrations_in_total(frame: pd.DataFrame) -> None:
    ax = plots.plot_registrations(frame.drop(columns="channel"), "W", by_channel=False)
    [(x, y)] = drawn_bands(ax).values()
    assert {day: n for day, n in zip(x, y, strict=True) if n} == weekly(frame["reg_date"])
    assert sum(y) == int(frame["reg_date"].notna().sum())
    assert ax.get_legend() is None
    assert ax.get_title() == "New subscriptions"


def test_registrations_are_monthly_in_utc_by_default() -> None:
    moscow = pd.to_datetime(
        ["2024-02-01 01:00", "2024-02-10 00:00", "2024-04-03 00:00"]
    ).tz_localize("Europe/Moscow")
    df = pd.DataFrame({"channel": ["email"] * 3, "reg_date": moscow})
    ax = plots.plot_registrations(df)
    [(x, y)] = drawn_bands(ax).values()
    # 2024-02-01 01:00 in Moscow is still January in UTC
    assert x.strftime("%Y-%m-%d").tolist() == [
        "2024-01-01",
        "2024-02-01",
        "2024-03-01",
        "2024-04-01",
    ]
    assert y == [1, 1, 0, 1]
    # the last band ends where the next month starts
    assert mdates.num2date(ax.patches[0].get_data().edges[-1]).strftime("%Y-%m-%d") == "2024-05-01"
    assert ax.get_ylabel() == "subscriptions per month"


def test_registrations_at_a_period_start_count_in_that_period() -> None:
    df = pd.DataFrame(
        {
            "channel": ["sms", "sms"],
            "reg_date": pd.to_datetime(["2024-03-01 00:00", "2024-02-29 23:59"], utc=True),
        }
    )
    [(x, y)] = drawn_bands(plots.plot_registrations(df)).values()
    assert dict(zip(x.strftime("%Y-%m").tolist(), y, strict=True)) == {"2024-02": 1, "2024-03": 1}


@pytest.mark.parametrize("freq", ["fortnight", 7, None])
def test_registrations_refuse_a_bad_freq(frame: pd.DataFrame, freq: Any) -> None:
    with pytest.raises(InvalidInput, match="freq"):
        plots.plot_registrations(frame, freq)


def test_registrations_need_datetimes() -> None:
    df = pd.DataFrame({"channel": ["email"], "reg_date": ["2024-01-01"]})
    with pytest.raises(InvalidInput, match="reg_date"):
        plots.plot_registrations(df)


def distinct_emails(df: pd.DataFrame) -> pd.Series:
    both = df.dropna(subset=["email", "email_domain"])
    return both.groupby(both["email_domain"].astype(str))["email"].agg(
        lambda s: s.str.strip().str.lower().nunique()
    )


@pytest.mark.parametrize("n", [1, 3, 10, 50])
def test_top_domains_are_the_largest_n(frame: pd.DataFrame, n: int) -> None:
    every = ranked(distinct_emails(frame))
    expected = every[:n]
    ax = plots.plot_top_domains(frame, n)
    assert ticks(ax.get_yticklabels()) == [name for name, _ in expected]
    assert [int(p.get_width()) for p in ax.patches] == [c for _, c in expected]  # type: ignore[attr-defined]
    assert texts(ax) == [str(c) for _, c in expected]
    top = ax.patches[0].get_y()  # type: ignore[attr-defined]
    assert all(p.get_y() > top for p in ax.patches[1:])  # type: ignore[attr-defined]
    assert ax.yaxis_inverted()  # so the first, largest bar is on top
    cut = f"Top {n} of {len(every)}" if n < len(every) else "Top"
    assert ax.get_title() == f"{cut} e-mail domains"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("distinct e-mail addresses", "domain")


def test_top_domains_count_distinct_addresses() -> None:
    df = pd.DataFrame(
        {
            "email": pd.array(["a@x.org", " A@X.org", "b@x.org", "c@y.org", "d@y.org", pd.NA], STR),
            "email_domain": pd.array(["x.org", "x.org", "x.org", "y.org", "Y.org", "z.org"], STR),
        }
    )
    ax = plots.plot_top_domains(df)
    assert ticks(ax.get_yticklabels()) == ["x.org", "y.org"]
    assert [int(p.get_width()) for p in ax.patches] == [2, 2]  # type: ignore[attr-defined]


@pytest.mark.parametrize("n", [0, -1, True, 2.0])
def test_top_domains_refuse_a_bad_n(frame: pd.DataFrame, n: Any) -> None:
    with pytest.raises(InvalidInput, match="n must be an int"):
        plots.plot_top_domains(frame, n)


KINDS = ("email", "phone", "domain")


def overlap_expected(flagged: pd.DataFrame) -> list[tuple[str, int]]:
    """The bars, counted with plain Python: matched kinds and checked ones, then the rest.

    A row whose ``suppressed`` is null had nothing to check: it is on no bar.
    """
    flags = [None if v is pd.NA else bool(v) for v in flagged["suppressed"]]
    by = [str(v) for v, h in zip(flagged["suppressed_by"], flags, strict=True) if h]
    checked = flagged.attrs.get("checked", [])
    bars = [(k, by.count(k)) for k in KINDS if k in by or k in checked]
    return [*bars, ("not suppressed", flags.count(False))]


@pytest.mark.slow
def test_overlap_real_data(flagged: pd.DataFrame) -> None:
    hit = int(flagged["suppressed"].fillna(False).sum())
    expected = overlap_expected(flagged)
    assert {"email", "phone"} <= {name for name, n in expected if n}  # the demo list has both
    ax = plots.plot_suppression_overlap(flagged)
    assert ticks(ax.get_xticklabels()) == [name for name, _ in expected]
    assert heights(ax) == [n for _, n in expected]
    total = int(flagged["suppressed"].notna().sum())
    unchecked = len(flagged) - total
    assert unchecked > 0  # profiles without subscriptions: nothing to check
    assert sum(heights(ax)) == total
    assert texts(ax) == [f"{n:,} ({n / total:.1%})" for _, n in expected]
    assert ax.get_title() == (
        f"Suppressed: {hit:,} of {total:,} contacts checked ({hit / total:.1%})"
    )
    assert ax.get_xlabel() == f"matched by (not counted: {unchecked:,} rows with nothing to check)"
    assert ax.get_ylabel() == "contacts"


@pytest.mark.slow
def test_overlap_shows_a_domain_match(svc: DemoService, frame: pd.DataFrame) -> None:
    # The addresses at a listed domain that are not listed themselves: found by domain only.
    domains = set(svc.suppressed["domains"])
    emails = set(svc.suppressed["emails"])
    address = frame["email"].str.strip().str.lower()
    at = address.str.rsplit("@", n=1).str[-1]
    only_domain = int((at.isin(domains) & ~address.isin(emails)).sum())
    assert only_domain > 0
    with svc.client() as client:
        stop = sn.read_suppression_list(client, svc.suppress_id, type="domains", progress=False)
    flagged = sn.flag_suppressed(frame, stop, email="email", phone="phone")
    ax = plots.plot_suppression_overlap(flagged)
    # The list holds domains only: e-mail and phone were checked, and found nothing.
    assert ticks(ax.get_xticklabels()) == ["email", "phone", "domain", "not suppressed"]
    matched = int(at.isin(domains).sum())
    assert matched >= only_domain
    checked = int((frame["email"].notna() | frame["phone"].notna()).sum())
    assert heights(ax) == [0, 0, matched, checked - matched]
    assert texts(ax)[:2] == ["0 (0.0%)", "0 (0.0%)"]


def test_overlap_draws_a_zero_bar_for_a_kind_checked_and_never_matched() -> None:
    flagged = pd.DataFrame(
        {
            "suppressed": pd.array([True, False, True, True, False], dtype="boolean"),
            "suppressed_by": pd.array(["domain", pd.NA, "email", "domain", pd.NA], dtype=STR),
        }
    )
    flagged.attrs["checked"] = ["email", "phone", "domain"]
    expected = overlap_expected(flagged)
    assert expected == [("email", 1), ("phone", 0), ("domain", 2), ("not suppressed", 2)]
    ax = plots.plot_suppression_overlap(flagged)
    assert ticks(ax.get_xticklabels()) == [name for name, _ in expected]
    assert heights(ax) == [n for _, n in expected]
    assert texts(ax) == ["1 (20.0%)", "0 (0.0%)", "2 (40.0%)", "2 (40.0%)"]
    assert ax.get_title() == "Suppressed: 3 of 5 contacts checked (60.0%)"
    # Without the record of what was checked: only the kinds that matched, same order.
    flagged.attrs.clear()
    ax = plots.plot_suppression_overlap(flagged)
    assert ticks(ax.get_xticklabels()) == ["email", "domain", "not suppressed"]
    assert heights(ax) == [1, 2, 2]


def test_overlap_keeps_the_kinds_in_precedence_order() -> None:
    # More phone matches than e-mail ones: the order stays email, phone, domain.
    flagged = pd.DataFrame(
        {
            "suppressed": [True, True, True, True, False],
            "suppressed_by": ["phone", "domain", "phone", "email", None],
        }
    )
    ax = plots.plot_suppression_overlap(flagged)
    assert ticks(ax.get_xticklabels()) == ["email", "phone", "domain", "not suppressed"]
    assert heights(ax) == [1, 2, 1, 1]


def test_overlap_leaves_out_rows_with_nothing_to_check() -> None:
    flagged = pd.DataFrame(
        {
            "suppressed": pd.array([True, pd.NA, True, False, True], dtype="boolean"),
            "suppressed_by": pd.array(["phone", pd.NA, pd.NA, pd.NA, "phone"], dtype=STR),
        }
    )
    ax = plots.plot_suppression_overlap(flagged)
    assert ticks(ax.get_xticklabels()) == ["phone", "(kind unknown)", "not suppressed"]
    assert heights(ax) == [2, 1, 1]
    assert texts(ax) == ["2 (50.0%)", "1 (25.0%)", "1 (25.0%)"]
    assert ax.get_title() == "Suppressed: 3 of 4 contacts checked (75.0%)"
    assert ax.get_xlabel() == "matched by (not counted: 1 row with nothing to check)"


@pytest.mark.parametrize("checked", ["email", [1, 2], {"email": 1}])
def test_overlap_refuses_a_bad_record_of_kinds(checked: Any) -> None:
    flagged = pd.DataFrame({"suppressed": [True], "suppressed_by": ["email"]})
    flagged.attrs["checked"] = checked
    with pytest.raises(InvalidInput, match=r"attrs\['checked'\]"):
        plots.plot_suppression_overlap(flagged)
    assert not plt.get_fignums()


@pytest.mark.slow
@pytest.mark.parametrize("func", [*PROFILE_PLOTS, plots.plot_suppression_overlap])
def test_draws_on_the_axes_given(
    func: Callable[..., Axes], frame: pd.DataFrame, flagged: pd.DataFrame
) -> None:
    fig, ax = plt.subplots()
    df = flagged if func is plots.plot_suppression_overlap else frame
    assert func(df, ax=ax) is ax
    assert plt.get_fignums() == [fig.number]
    assert ax.patches or ax.lines
    other = func(df)
    assert other is not ax
    assert len(plt.get_fignums()) == 2


NO_ROWS: list[dict[str, Any]] = []
NO_SUBSCRIPTIONS = [{"id": "p1"}, {"id": "p2", "subscriptions": []}]


@pytest.mark.parametrize(
    ("func", "words", "records"),
    [
        (plots.plot_channels, "no subscriptions", NO_ROWS),
        (plots.plot_channels, "no subscriptions", NO_SUBSCRIPTIONS),
        (plots.plot_statuses, "no subscriptions", NO_ROWS),
        (plots.plot_statuses, "no subscriptions", NO_SUBSCRIPTIONS),
        (plots.plot_registrations, "no registrations", NO_ROWS),
        (plots.plot_registrations, "no registrations", NO_SUBSCRIPTIONS),
        (plots.plot_top_domains, "no e-mail addresses", NO_ROWS),
        (plots.plot_top_domains, "no e-mail addresses", NO_SUBSCRIPTIONS),
        (plots.plot_suppression_overlap, "no contacts", NO_ROWS),
    ],
)
def test_an_empty_frame_gives_an_empty_chart(
    func: Callable[..., Axes], words: str, records: list[dict[str, Any]]
) -> None:
    df = sn.normalize_profiles(records)
    if func is plots.plot_suppression_overlap:
        df = sn.flag_suppressed(df, pd.DataFrame({"md5": pd.array([], dtype=STR)}), email="email")
    ax = func(df)
    assert texts(ax) == [words]
    assert not ax.patches
    assert not ax.lines
    assert ax.get_title()
    assert ax.get_xlabel()
    assert ax.get_ylabel()


def test_profiles_without_contacts_are_not_counted() -> None:
    df = sn.normalize_profiles(NO_SUBSCRIPTIONS)
    flagged = sn.flag_suppressed(df, pd.DataFrame({"md5": pd.array([], dtype=STR)}), email="email")
    assert flagged["suppressed"].isna().all()  # no e-mail: neither suppressed nor safe
    ax = plots.plot_suppression_overlap(flagged)
    assert texts(ax) == ["no contacts checked"]
    assert not ax.patches
    assert ax.get_title() == "Suppressed contacts"
    assert ax.get_xlabel() == "matched by (not counted: 2 rows with nothing to check)"


@pytest.mark.parametrize(
    ("func", "column"),
    [
        (plots.plot_channels, "channel"),
        (plots.plot_statuses, "status"),
        (plots.plot_registrations, "reg_date"),
        (plots.plot_registrations, "channel"),
        (plots.plot_top_domains, "email_domain"),
        (plots.plot_top_domains, "email"),
        (plots.plot_suppression_overlap, "suppressed_by"),
    ],
)
def test_a_missing_column_is_named(
    func: Callable[..., Axes], column: str, frame: pd.DataFrame, flagged: pd.DataFrame
) -> None:
    df = flagged if func is plots.plot_suppression_overlap else frame
    with pytest.raises(InvalidInput, match=f"needs column '{column}'") as caught:
        func(df.drop(columns=column))
    assert isinstance(caught.value, ValueError)
    assert func.__name__ in str(caught.value)
    assert not plt.get_fignums()  # checked before a figure is made


def test_the_missing_columns_are_all_named() -> None:
    with pytest.raises(InvalidInput, match="needs columns 'channel', 'status'"):
        plots.plot_statuses(pd.DataFrame({"profile_id": ["p1"]}))


@pytest.mark.parametrize("func", [*PROFILE_PLOTS, plots.plot_suppression_overlap])
def test_refuses_what_is_not_a_frame_or_axes(
    func: Callable[..., Axes], frame: pd.DataFrame, flagged: pd.DataFrame
) -> None:
    df = flagged if func is plots.plot_suppression_overlap else frame
    with pytest.raises(InvalidInput, match="needs a pandas DataFrame, not list"):
        func(df.to_dict("records"))
    with pytest.raises(InvalidInput, match="ax must be a matplotlib Axes or None, not str"):
        func(df.head(0), ax="left")
