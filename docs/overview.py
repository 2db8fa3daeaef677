"""Draw docs/overview.png, the README's picture, from the demo service's data.

python docs/overview.py
"""

from __future__ import annotations

import pathlib

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

import stoplist_nb as sn
from stoplist_nb import plots
from stoplist_nb.demo import serve

OUT = pathlib.Path(__file__).with_name("overview.png")


def main() -> None:
    with serve(profiles=2000, seed=0) as svc, svc.client() as client:
        df = sn.read_profiles(client, svc.db_id, progress=False)
        stop = sn.read_suppression_list(client, svc.suppress_id, progress=False, poll_interval=0.1)
    flagged = sn.flag_suppressed(df, stop, email="email", phone="phone")
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8), layout="constrained")
    plots.plot_statuses(df, ax=axes[0])
    plots.plot_top_domains(df, n=8, ax=axes[1])
    plots.plot_suppression_overlap(flagged[flagged["channel"].notna()], ax=axes[2])
    axes[2].set_title("Subscriptions on the suppression list")
    fig.savefig(OUT, dpi=80)
    print(OUT)


if __name__ == "__main__":
    main()
