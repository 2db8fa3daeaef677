"""Benchmark: reading a hashed suppression list, hashing contacts, flagging them.

One run measures, best of ``--repeat`` (ours and the reference alternate, so
both see the same machine load):

1. ``read_hashed_csv`` on a ``--rows`` hashed ZIP (one md5 per line, no
   header; built once and cached under ``--cache-dir``) against the bare
   route: ``ZipFile.read`` of the member, then ``pyarrow.csv.read_csv`` of
   those bytes (one string column). Both include the decompression. Then the
   same without it: ``read_hashed_csv`` of the member's bytes as a bare CSV
   against ``read_csv`` of the same bytes (already in memory for both).
2. ``--contacts`` e-mails (``--hit`` of them in the list, in mixed case with
   stray spaces) flagged against that list: ``flag_suppressed(...,
   domains=False)`` (the e-mails alone) and ``domains=True`` (the default:
   their domains too), and the ratio of the two; the matching step alone,
   ``flag_suppressed(..., hashed=True)`` on the contacts' md5 strings; and
   ``pyarrow.compute.is_in`` of the same md5 strings against the list's md5
   column, combined into one array beforehand (its best case) and, once, as
   read (chunked). Then the domain check's worst case: the same e-mails, each
   at a domain of its own (``user<k>@d<i>.example.org``), without and with it.
3. ``hash_emails`` on the same e-mails.

Peak RSS is ``ru_maxrss`` of this process after each part.

    python benchmarks/hashes.py --rows 10000000 --contacts 1000000
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import platform
import random
import resource
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from stoplist_nb.suppression.archive import read_hashed_csv
from stoplist_nb.suppression.flagging import flag_suppressed
from stoplist_nb.suppression.hashing import _MD5, hash_emails

MEMBER = "list.csv"


def email(i: int) -> str:
    return f"user{i}@example.org"


def build_list(path: Path, rows: int) -> None:
    """A ZIP of ``rows`` md5 lines, no header, streamed so memory stays small."""
    tmp = path.with_suffix(".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf, zf.open(MEMBER, "w") as out:
        step = 1_000_000
        for start in range(0, rows, step):
            digests = [
                _MD5(email(i).encode()).hexdigest() for i in range(start, min(rows, start + step))
            ]
            out.write(("\n".join(digests) + "\n").encode())
    tmp.replace(path)


def contacts_frame(n: int, rows: int, hit: float, seed: int) -> tuple[pd.DataFrame, int]:
    rng = random.Random(seed)
    emails, hits = [], 0
    for _ in range(n):
        inside = rng.random() < hit
        hits += inside
        text = email(rng.randrange(rows) if inside else rows + rng.randrange(10 * rows))
        if rng.random() < 0.5:
            text = text.capitalize().replace("example", "Example")
        emails.append(text + (" " if rng.random() < 0.1 else ""))
    return pd.DataFrame({"email": pd.array(emails, dtype=pd.StringDtype("pyarrow"))}), hits


def best(repeat: int, *fns: Callable[[], Any]) -> list[float]:
    """Best time of each function over ``repeat`` alternating rounds."""
    times = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            gc.collect()
            start = time.perf_counter()
            fn()
            times[k] = min(times[k], time.perf_counter() - start)
    return times


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--contacts", type=int, default=1_000_000)
    parser.add_argument("--hit", type=float, default=0.10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/stoplist_nb_bench"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    print(f"date {dt.date.today()}; {platform.platform()}; {os.cpu_count()} CPUs")
    print(
        f"Python {platform.python_version()}, pandas {pd.__version__}, "
        f"pyarrow {pa.__version__}, numpy {np.__version__}"
    )
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    path = args.cache_dir / f"list_{args.rows}.md5.zip"
    if not path.exists():
        start = time.perf_counter()
        build_list(path, args.rows)
        print(f"built {path} in {time.perf_counter() - start:.1f} s")
    size = path.stat().st_size
    print(f"list: {args.rows:,} rows, {size / 2**20:,.1f} MiB zipped")
    baseline_rss = peak_mib()

    # 1. Reading the list.
    options = {
        "read_options": pcsv.ReadOptions(column_names=["md5"]),
        "convert_options": pcsv.ConvertOptions(column_types={"md5": pa.string()}),
    }

    def bare_zip() -> Any:
        with zipfile.ZipFile(path) as zf:
            data = zf.read(MEMBER)
        return pcsv.read_csv(pa.BufferReader(data), **options)

    t_ours, t_bare = best(args.repeat, lambda: read_hashed_csv(path), bare_zip)
    print(
        f"\n1. read, with decompression: read_hashed_csv {t_ours:.3f} s, "
        f"ZipFile.read + read_csv {t_bare:.3f} s, ratio {t_ours / t_bare:.2f}x"
    )
    with zipfile.ZipFile(path) as zf:
        member = zf.read(MEMBER)
    t_ours_mem, t_bare_mem = best(
        args.repeat,
        lambda: read_hashed_csv(member),
        lambda: pcsv.read_csv(pa.BufferReader(member), **options),
    )
    print(
        f"   read, member bytes in memory: read_hashed_csv {t_ours_mem:.3f} s, "
        f"read_csv {t_bare_mem:.3f} s, ratio {t_ours_mem / t_bare_mem:.2f}x"
    )
    member = b""  # free it before the next part
    listed = read_hashed_csv(path)
    assert len(listed) == args.rows
    print(
        f"   peak RSS {peak_mib():,.0f} MiB (after loading Python and the libraries: "
        f"{baseline_rss:,.0f} MiB)"
    )

    # 2. Flagging contacts.
    contacts, hits = contacts_frame(args.contacts, args.rows, args.hit, args.seed)
    hashed = pd.DataFrame({"md5": hash_emails(contacts["email"])})
    queries = pa.chunked_array(hashed["md5"].array.__arrow_array__()).combine_chunks()
    value_set = pa.chunked_array(listed["md5"].array.__arrow_array__()).combine_chunks()
    chunked = listed["md5"].array.__arrow_array__()
    t_flag, t_domains, t_match, t_combined, t_chunked = best(
        args.repeat,
        lambda: flag_suppressed(contacts, listed, email="email", domains=False),
        lambda: flag_suppressed(contacts, listed, email="email", domains=True),
        lambda: flag_suppressed(hashed, listed, email="md5", hashed=True),
        lambda: pc.is_in(queries, value_set=value_set),
        lambda: pc.is_in(queries, value_set=chunked),
    )
    t_isin = min(t_combined, t_chunked)
    flagged = flag_suppressed(contacts, listed, email="email")
    found = int(flagged["suppressed"].sum())
    assert found == hits == int(pc.sum(pc.is_in(queries, value_set=value_set)).as_py())
    assert flagged.attrs["checked"] == ["email", "domain"]
    n = args.contacts
    print(f"\n2. flag {n:,} contacts ({found:,} listed) against {args.rows:,}:")
    rows = [
        ("flag_suppressed, domains=False", t_flag),
        ("flag_suppressed, domains=True", t_domains),
        ("matching alone (hashed=True)", t_match),
        ("pc.is_in, combined value_set", t_combined),
        (f"pc.is_in, value_set as read ({chunked.num_chunks} chunks)", t_chunked),
    ]
    for label, seconds in rows:
        print(
            f"   {label:<42} {seconds:.3f} s  {n / seconds:>12,.0f} contacts/s  "
            f"{seconds / t_isin:.2f}x the faster pc.is_in"
        )
    print(f"   domain check: domains=True / domains=False = {t_domains / t_flag:.2f}x")
    spread = [text.replace("@", f"@d{i}.", 1) for i, text in enumerate(contacts["email"])]
    own = pd.DataFrame({"email": pd.array(spread, dtype=pd.StringDtype("pyarrow"))})
    t_own_off, t_own_on = best(
        args.repeat,
        lambda: flag_suppressed(own, listed, email="email", domains=False),
        lambda: flag_suppressed(own, listed, email="email", domains=True),
    )
    print(
        f"   worst case, every e-mail at its own domain: domains=False {t_own_off:.3f} s, "
        f"domains=True {t_own_on:.3f} s, ratio {t_own_on / t_own_off:.2f}x"
    )
    print(f"   peak RSS {peak_mib():,.0f} MiB")

    # 3. Hashing.
    (t_hash,) = best(args.repeat, lambda: hash_emails(contacts["email"]))
    print(f"\n3. hash_emails on {n:,} e-mails: {t_hash:.3f} s, {n / t_hash:,.0f} e-mails/s")
    print(f"   peak RSS {peak_mib():,.0f} MiB")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
