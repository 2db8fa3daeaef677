"""The ``demo`` command: the whole job, through the real client, on the embedded demo service.

The files are written into a hidden directory inside ``--out`` and go in place together
once all are written: a run that fails or is stopped leaves ``--out`` as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import pathlib
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from stoplist_nb.cli import output
from stoplist_nb.cli.output import CliError, Ui, plural
from stoplist_nb.client import Client
from stoplist_nb.profiles import read_profiles
from stoplist_nb.profiles.normalize import split_channels
from stoplist_nb.suppression.contacts import KINDS
from stoplist_nb.suppression.export import read_suppression_list
from stoplist_nb.suppression.flagging import flag_suppressed

#: The list's kinds exported: those a profile's contacts can match.
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


def _plots(profiles: pd.DataFrame, flagged: pd.DataFrame, into: pathlib.Path, ui: Ui) -> list[str]:
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
        "registrations": lambda ax: plots.plot_registrations(profiles, freq="MS", ax=ax),
        "top_domains": lambda ax: plots.plot_top_domains(profiles, n=10, ax=ax),
        "suppression_overlap": lambda ax: plots.plot_suppression_overlap(flagged, ax=ax),
    }
    for name, draw in charts.items():
        fig, ax = plt.subplots(figsize=(8, 4.5))
        try:
            draw(ax).figure.savefig(into / f"{name}.png", dpi=_DPI, bbox_inches="tight")
        except OSError as exc:
            raise output.cannot_write(into / f"{name}.png", exc) from None
        finally:
            plt.close(fig)
    return [f"{name}.png" for name in charts]


def _summary(
    profiles: pd.DataFrame, stop: pd.DataFrame, flagged: pd.DataFrame, list_id: int
) -> list[str]:
    # A profile without a subscription is one row too, its subscription columns empty.
    subs = profiles[profiles["channel"].notna()]
    people = profiles["profile_id"].nunique()
    sizes = stop["type"].value_counts()
    hits = flagged[flagged["suppressed"].fillna(False).astype(bool)]
    # <NA>: a row with no usable e-mail or phone, neither suppressed nor safe.
    checked = int(flagged["suppressed"].notna().sum())
    # Per kind that matched, with 0 for a kind checked that never did, then any other.
    counts = {str(k): int(v) for k, v in hits["suppressed_by"].value_counts().items()}
    looked = flagged.attrs.get("checked", [])
    by = {k: counts.pop(k, 0) for k in KINDS if k in counts or k in looked}
    by.update(counts)
    return [
        f"{plural(people, 'profile')} ({people - subs['profile_id'].nunique()} without a "
        f"subscription), {plural(len(subs), 'subscription')}: {plural(len(profiles), 'row')}, "
        "one per subscription and one per profile without any",
        "",
        "subscriptions by channel and status:",
        pd.crosstab(subs["channel"], subs["status"], margins=True).to_string(),
        "",
        "columns per channel: "
        + ", ".join(f"{k} {v.shape[1]}" for k, v in split_channels(profiles).items()),
        "",
        f"suppression list {list_id}: {plural(len(stop), 'hash', 'hashes')} ("
        + ", ".join(plural(int(sizes.get(k, 0)), k.removesuffix("s")) for k in SUPPRESSION_TYPES)
        + ")",
        f"contacts checked: {checked} (the e-mails, their domains, and the phones"
        " of the subscriptions)",
        f"found in the list: {len(hits)}"
        + (" (" + ", ".join(f"{n} by {k}" for k, n in by.items()) + ")" if by else "")
        + f", of {plural(hits['profile_id'].nunique(), 'profile')}",
    ]


def _put_in_place(
    staging: pathlib.Path, out: pathlib.Path, names: Sequence[str], overwrite: bool
) -> None:
    """Move the written files into ``out``: all, or none (a file that appeared is not replaced)."""
    placed: list[pathlib.Path] = []
    try:
        for name in names:
            target = out / name
            if overwrite:
                os.replace(staging / name, target)
                continue
            try:
                os.link(staging / name, target)
            except FileExistsError:
                raise output.appeared(target) from None
            except OSError:  # no hard links here: a look just before has to do
                if target.exists() or target.is_symlink():
                    raise output.appeared(target) from None
                os.replace(staging / name, target)
            placed.append(target)
    except BaseException as exc:
        for target in placed:
            target.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise output.cannot_write(out / name, exc) from None
        raise


def run_demo(args: argparse.Namespace, ui: Ui) -> int:
    """``stoplist-nb demo``: read, export, match, and write it all to ``--out``."""
    out: pathlib.Path = args.out
    if out.exists() and not out.is_dir():
        raise CliError(
            f"--out {out} is a file, not a directory",
            code=output.EXIT_USAGE,
            hint="name a directory (created if missing) for the files of the demo",
        )
    names = [f"{name}{suffix}" for name in DEMO_FILES for suffix in (".parquet", ".csv")]
    plotting = args.plots and importlib.util.find_spec("matplotlib") is not None
    output.refuse_existing(
        [out / name for name in names + [f"{p}.png" for p in PLOT_FILES if plotting]],
        overwrite=args.overwrite,
    )
    try:
        from stoplist_nb.demo import serve
    except ImportError as exc:
        # The demo package re-raises a missing mongomock as a plain ImportError, with no name.
        raise CliError(
            f"the embedded demo service needs {getattr(exc, 'name', None) or 'mongomock'}, "
            "which is not installed",
            code=output.EXIT_USAGE,
            hint="pip install 'stoplist_nb[demo]'",
        ) from None
    created = not out.exists()
    staging = out / f".stoplist-demo-{os.getpid()}.tmp"
    try:
        try:
            out.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(staging, ignore_errors=True)  # left by a killed run of the same pid
            staging.mkdir()
        except OSError as exc:
            raise output.cannot_write(f"{out}/", exc) from None
        with serve(profiles=args.profiles, seed=args.seed) as svc, svc.client() as client:
            # Not its URL: the service ends with the command.
            ui.say(
                f"demo data: {plural(len(svc.profiles), 'generated profile')} of the embedded "
                f"demo service, database {svc.db_id}, suppression list {svc.suppress_id}"
            )
            profiles = read_profiles(client, svc.db_id, limit=args.limit, progress=ui.progress)
            stop = _suppression_list(client, svc.suppress_id, ui)
            list_id = svc.suppress_id
        # The subscriptions that carry an e-mail or a phone are the contacts to check.
        has_contact = profiles["email"].notna() | profiles["phone"].notna()
        contacts = profiles.loc[has_contact, CONTACT_COLUMNS].reset_index(drop=True)
        flagged = flag_suppressed(contacts, stop, email="email", phone="phone")
        frames = dict(zip(DEMO_FILES, (profiles, stop, flagged), strict=True))
        try:
            for name in names:
                output.write_frame(frames[name.split(".")[0]], staging / name)
            if args.plots:
                names += _plots(profiles, flagged, staging, ui)
        except CliError as exc:  # it names the hidden file; say the one it stands for
            raise CliError(str(exc).replace(str(staging), str(out)), code=exc.code) from None
        _put_in_place(staging, out, names, args.overwrite)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if created:  # made for this run, and now empty: as it was, not there
            with contextlib.suppress(OSError):
                out.rmdir()
        if isinstance(exc, KeyboardInterrupt):
            kept = f"no {out}" if created else f"{out} was left as it was"
            output.said_on_interrupt(exc, kept, "hint: the same command runs the demo again")
        raise
    shutil.rmtree(staging, ignore_errors=True)
    ui.say("\n".join(_summary(profiles, stop, flagged, list_id)))
    ui.say(f"\nwrote {plural(len(names), 'file')} to {out}: {', '.join(names)}")
    return 0
