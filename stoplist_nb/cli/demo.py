"""The ``demo`` command: the whole job, on the embedded demo service.

Reads the profiles, exports the suppression list's e-mails, phones and
domains, flags the profiles' contacts found in it (an e-mail also by its
domain), and writes the frames and the plots to a directory. It goes through
the real client, so paging, retries, the export task and the download all run
over loopback HTTP.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Callable
from typing import Any

import pandas as pd

from stoplist_nb.cli.output import EXIT_ERROR, EXIT_USAGE, CliError, Ui, write_frame
from stoplist_nb.client import Client
from stoplist_nb.profiles import read_profiles
from stoplist_nb.profiles.normalize import split_channels
from stoplist_nb.suppression.export import read_suppression_list
from stoplist_nb.suppression.flagging import flag_suppressed
from stoplist_nb.suppression.kinds import KINDS

__all__ = [
    "CONTACT_COLUMNS",
    "DEMO_FILES",
    "PLOT_FILES",
    "SUPPRESSION_TYPES",
    "run_demo",
]

#: The list's kinds exported: the ones a profile's contacts can be matched against.
SUPPRESSION_TYPES = ("emails", "phones", "domains")
#: The columns of the flagged contacts, before ``suppressed`` and ``suppressed_by``.
CONTACT_COLUMNS = ["profile_id", "channel", "status", "email", "phone"]
#: The frames written, each as ``<name>.parquet`` and ``<name>.csv``.
DEMO_FILES = ("profiles", "suppression_list", "flagged_contacts")
#: The plots written, as ``<name>.png``.
PLOT_FILES = ("channels", "statuses", "registrations", "top_domains", "suppression_overlap")
# The demo's export task moves one step per poll, so polling fast costs nothing.
_POLL_INTERVAL = 0.05
_DPI = 120


def _serve() -> Callable[..., Any]:
    try:
        from stoplist_nb.demo import serve
    except ImportError as exc:
        # The demo package re-raises a missing mongomock as a plain ImportError, with no name.
        missing = getattr(exc, "name", None) or "mongomock"
        raise CliError(
            f"the embedded demo service needs {missing}, which is not installed",
            code=EXIT_USAGE,
            hint="pip install 'stoplist_nb[demo]'",
        ) from None
    return serve


def _suppression_list(client: Client, list_id: int, ui: Ui) -> pd.DataFrame:
    frames = []
    for kind in SUPPRESSION_TYPES:
        frame = read_suppression_list(
            client, list_id, type=kind, progress=ui.progress, poll_interval=_POLL_INTERVAL
        )
        frame["type"] = pd.array([kind] * len(frame), dtype=pd.StringDtype("pyarrow"))
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    kinds = {t.removesuffix("s"): len(f) for t, f in zip(SUPPRESSION_TYPES, frames, strict=True)}
    out.attrs = {"list_id": list_id, "types": list(SUPPRESSION_TYPES), "kinds": kinds}
    return out


def contacts_of(profiles: pd.DataFrame) -> pd.DataFrame:
    """The subscriptions that carry an e-mail or a phone: the "own contacts" to check."""
    has_contact = profiles["email"].notna() | profiles["phone"].notna()
    return profiles.loc[has_contact, CONTACT_COLUMNS].reset_index(drop=True)


def _plots(profiles: pd.DataFrame, flagged: pd.DataFrame, out: pathlib.Path, ui: Ui) -> list[str]:
    try:
        import matplotlib
    except ModuleNotFoundError:
        ui.note("plots skipped: matplotlib is not installed (pip install 'stoplist_nb[plots]')")
        return []
    # Headless: no window, no display needed. Left alone if pyplot is already in use
    # (main() called from a notebook), so its backend is not switched under it.
    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from stoplist_nb import plots

    charts: dict[str, Callable[..., Any]] = {
        "channels": lambda ax: plots.plot_channels(profiles, ax=ax),
        "statuses": lambda ax: plots.plot_statuses(profiles, ax=ax),
        "registrations": lambda ax: plots.plot_registrations(profiles, freq="W", ax=ax),
        "top_domains": lambda ax: plots.plot_top_domains(profiles, n=10, ax=ax),
        "suppression_overlap": lambda ax: plots.plot_suppression_overlap(flagged, ax=ax),
    }
    written = []
    for name, draw in charts.items():
        fig, ax = plt.subplots(figsize=(8, 4.5))
        try:
            drawn = draw(ax)
            path = out / f"{name}.png"
            drawn.figure.savefig(path, dpi=_DPI, bbox_inches="tight")
        except OSError as exc:
            raise CliError(f"cannot write {out / name}.png: {exc.strerror or exc}") from None
        finally:
            plt.close(fig)
        written.append(path.name)
    return written


def matches_per_kind(flagged: pd.DataFrame) -> dict[str, int]:
    """Suppressed rows per kind that matched, with 0 for a kind checked that never did."""
    by = flagged.loc[flagged["suppressed"].fillna(False).astype(bool), "suppressed_by"]
    counts = {str(k): int(v) for k, v in by.value_counts().items()}
    checked = flagged.attrs.get("checked", [])
    per_kind = {k: counts.pop(k, 0) for k in KINDS if k in counts or k in checked}
    per_kind.update(counts)  # anything else, after the kinds
    return per_kind


def _summary(
    profiles: pd.DataFrame, stop: pd.DataFrame, flagged: pd.DataFrame, list_id: int
) -> list[str]:
    subs = profiles[profiles["channel"].notna()]
    sizes = stop["type"].value_counts()
    hits = flagged[flagged["suppressed"].fillna(False).astype(bool)]
    # <NA>: a row with no usable e-mail or phone, neither suppressed nor safe.
    checked = int(flagged["suppressed"].notna().sum())
    by = matches_per_kind(flagged)
    return [
        f"{profiles['profile_id'].nunique()} profiles, {len(subs)} subscriptions",
        "",
        "subscriptions by channel and status:",
        pd.crosstab(subs["channel"], subs["status"], margins=True).to_string(),
        "",
        "columns per channel: "
        + ", ".join(f"{k} {v.shape[1]}" for k, v in split_channels(profiles).items()),
        "",
        f"suppression list {list_id}: {len(stop)} hashes ("
        + ", ".join(f"{sizes.get(k, 0)} {k}" for k in SUPPRESSION_TYPES)
        + ")",
        f"contacts checked: {checked} (the e-mails, their domains, and the phones"
        " of the subscriptions)",
        f"found in the list: {len(hits)}"
        + (" (" + ", ".join(f"{n} by {k}" for k, n in by.items()) + ")" if by else "")
        + f", of {hits['profile_id'].nunique()} profiles",
    ]


def run_demo(args: argparse.Namespace, ui: Ui) -> int:
    """``stoplist-nb demo``: read, export, match, and write it all to ``--out``."""
    out: pathlib.Path = args.out
    if out.exists() and not out.is_dir():
        raise CliError(
            f"--out {out} is a file, not a directory",
            code=EXIT_USAGE,
            hint="name a directory (created if missing) for the files of the demo",
        )
    serve = _serve()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create {out}: {exc.strerror or exc}", code=EXIT_ERROR) from None
    with serve(profiles=args.profiles, seed=args.seed) as svc, svc.client() as client:
        ui.say(
            f"demo service at {svc.base_url} (demo data: {len(svc.profiles)} generated "
            f"profiles, database {svc.db_id}, suppression list {svc.suppress_id})"
        )
        profiles = read_profiles(client, svc.db_id, limit=args.limit, progress=ui.progress)
        stop = _suppression_list(client, svc.suppress_id, ui)
        list_id = svc.suppress_id
    flagged = flag_suppressed(contacts_of(profiles), stop, email="email", phone="phone")
    written = []
    for name, frame in zip(DEMO_FILES, (profiles, stop, flagged), strict=True):
        for suffix in (".parquet", ".csv"):
            write_frame(frame, out / f"{name}{suffix}")
            written.append(f"{name}{suffix}")
    if args.plots:
        written += _plots(profiles, flagged, out, ui)
    ui.say("\n".join(_summary(profiles, stop, flagged, list_id)))
    ui.say(f"\nwrote {len(written)} files to {out}: {', '.join(written)}")
    return 0
