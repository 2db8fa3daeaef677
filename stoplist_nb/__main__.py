"""``python -m stoplist_nb demo``: the main job, on the embedded demo service.

Starts the demo service on loopback, reads every profile through the real
client (paging, retries, normalization) and prints a summary.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import pandas as pd

from stoplist_nb.normalize import split_channels
from stoplist_nb.profiles import read_profiles


def _summary(df: pd.DataFrame) -> str:
    subs = df[df["channel"].notna()]
    lines = [
        f"{df['profile_id'].nunique()} profiles, {len(subs)} subscriptions, "
        f"{len(df.columns)} columns",
        "",
        "subscriptions by channel and status:",
        pd.crosstab(subs["channel"], subs["status"], margins=True).to_string(),
        "",
        "columns per channel: "
        + ", ".join(f"{k} {v.shape[1]}" for k, v in split_channels(df).items()),
    ]
    if "_city" in df.columns:
        cities = df.drop_duplicates("profile_id")["_city"].value_counts().head(5)
        lines += ["", "top cities:", cities.to_string()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stoplist_nb",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="read the embedded demo service's profiles")
    demo.add_argument("--profiles", type=int, default=2000, help="size of the demo data set")
    demo.add_argument("--limit", type=int, default=250, help="profiles per request")
    demo.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from stoplist_nb.demo import serve

    with serve(profiles=args.profiles, seed=args.seed) as svc, svc.client() as client:
        print(f"demo service at {svc.base_url} (demo data, database {svc.db_id})")
        df = read_profiles(client, svc.db_id, limit=args.limit)
    print(_summary(df))
    return 0


if __name__ == "__main__":
    sys.exit(main())
