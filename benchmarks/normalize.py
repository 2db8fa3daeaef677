"""Benchmark: profiles/list pages (raw bytes) -> flat DataFrame.

For each size it generates synthetic reply pages, then measures, each in its
own subprocess so that memory peaks do not mix:

* floor: ``pyarrow.json.read_json`` of every page (parse only, with the
  options ``read_reply`` uses: one block per page, no threads), in two ways:
  each table dropped at once ("discard"), or all tables kept in a list as any
  real use would ("kept"; it pays for fresh memory like ours does);
* ours: ``read_reply`` + ``flatten_profiles`` per page, then one
  ``frame_from_tables``;
* json_normalize: ``json.loads`` per page, then one
  ``pandas.json_normalize(records, record_path="subscriptions", meta=[...],
  errors="ignore")`` (profiles without the key get ``[]`` first, or it raises).

The floors and ours are timed alternately in one process (best of
``--repeat``), so that all see the same machine load. Memory is the peak RSS
(``ru_maxrss``) of a fresh process running ours (or json_normalize) once,
minus its RSS once the input pages are loaded; ours also reports the peak of
Arrow's memory pool (``pa.default_memory_pool().max_memory()``).

``--dates`` adds a date-like profile field (``_bdate``, ``"1990-05-01"``) to
half the profiles: pyarrow.json turns such strings into timestamps, so
``read_reply`` parses those pages twice to keep the text.

    python benchmarks/normalize.py --sizes 100000 1000000 --page 1000
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FIRST = ["Анна", "Иван", "Мария", "Пётр", "Olga", "José", "Zoë", "Łukasz", "Sören", "Ayşe"]
LAST = ["Иванова", "Петров", "Smith", "Müller", "García", "Nowak", "Öztürk", "Dupont", "Соколов"]
CITIES = ["Москва", "Санкт-Петербург", "Berlin", "São Paulo", "Kraków", "İstanbul", None]
DOMAINS = [("gmail.com", "gmail"), ("mail.ru", "mailru"), ("yandex.ru", "yandex"), ("ex.org", "")]
STATUSES = ["subscribed"] * 6 + ["unsubscribed", "complained", "hardbounced", "unconfirmed"]
CATS = ["news", "promo", "digest", "акции", "events"]
CF_KEYS = ["_browser_name", "_device_type", "source", "utm_campaign", "score", "optin"]
CHANNELS = ("email", "sms", "push", "telegram_bot", "viber")
PROFILE_FIELDS = ["id", "_fname", "_lname", "_city", "age", "vip", "_bdate"]


def _subscription(rng: random.Random, i: int, j: int) -> dict[str, Any]:
    channel = rng.choice(CHANNELS)
    r = rng.getrandbits
    sub: dict[str, Any] = {
        "channel": channel,
        "hash_id": f"{r(128):032x}",
        "is_delete": rng.random() < 0.05,
        "priority": rng.randint(0, 5),
        "resource_id": rng.randint(1, 20),
        "status": rng.choice(STATUSES),
        "reg_info": {
            "date": f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}."
            f"{rng.randint(0, 999):03d}Z",
            "ip": f"{rng.randint(1, 254)}.{r(8)}.{r(8)}.{rng.randint(1, 254)}",
        },
    }
    if channel == "email":
        domain, group = rng.choice(DOMAINS)
        sub["email_data"] = {
            "domain": domain,
            "domain_group": group,
            "email": f"user{i}.{j}@{domain}",
            "md5": f"{r(128):032x}",
        }
    elif channel in ("sms", "viber"):
        sub["phone_data"] = {"phone": f"+7{r(33):010d}", "md5": f"{r(128):032x}"}
    elif channel == "push":
        provider = rng.choice(("fcm", "apns", "webpush"))
        sub["push_data"] = {"provider": provider, "subscription_id": f"{r(256):064x}"}
    else:
        sub["cc_data"] = {"id": r(40)}
    if rng.random() < 0.4:
        keys = rng.sample(CF_KEYS, rng.randint(1, 3))
        sub["custom_fields"] = {
            k: rng.randint(0, 100)
            if k == "score"
            else rng.random() < 0.5
            if k == "optin"
            else f"v{rng.randint(0, 50)}"
            for k in keys
        }
    if rng.random() < 0.3:
        sub["cats"] = rng.sample(CATS, rng.randint(0, 3))
    return sub


def make_pages(profiles: int, page: int, seed: int = 1, dates: bool = False) -> list[bytes]:
    """Deterministic reply pages of ``page`` profiles each (0-4 subscriptions)."""
    rng = random.Random(seed)
    pages = []
    for start in range(0, profiles, page):
        data = []
        for i in range(start, min(start + page, profiles)):
            record: dict[str, Any] = {
                "id": f"{(i * 0x9E3779B97F4A7C15) % (1 << 96):024x}",
                "_fname": rng.choice(FIRST),
                "_lname": rng.choice(LAST),
                "_city": rng.choice(CITIES),
            }
            if rng.random() < 0.3:
                record["age"] = rng.randint(16, 90)
            if rng.random() < 0.1:
                record["vip"] = rng.random() < 0.5
            if dates and rng.random() < 0.5:
                record["_bdate"] = f"{rng.randint(1940, 2010)}-{rng.randint(1, 12):02d}-01"
            subs = [_subscription(rng, i, j) for j in range(rng.randint(0, 4))]
            roll = rng.random()
            if roll >= 0.03:
                record["subscriptions"] = subs
            elif roll >= 0.01:
                record["subscriptions"] = None  # and below 0.01: no key at all
            data.append(record)
        body = {
            "data": data,
            "error": 0,
            "error_text": "Successful operation",
            "next_from_id": f"{start + page:024x}",
        }
        pages.append(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
    return pages


# --- measurements (each runs in a child process) ------------------------------------


def _parse(content: bytes) -> Any:
    import pyarrow as pa
    import pyarrow.json as pa_json

    options = pa_json.ReadOptions(block_size=len(content) + 64, use_threads=False)
    return pa_json.read_json(pa.BufferReader(content), read_options=options)


def _floor_discard(pages: list[bytes]) -> None:
    for content in pages:
        _parse(content)


def _floor_kept(pages: list[bytes]) -> list[Any]:
    return [_parse(content) for content in pages]


def _ours(pages: list[bytes]) -> Any:
    from stoplist_nb._arrowjson import read_reply
    from stoplist_nb.normalize import flatten_profiles, frame_from_tables

    tables = []
    for content in pages:
        data = read_reply(content).data
        if data is not None:
            tables.append(flatten_profiles(data))
    return frame_from_tables(tables)


def _json_normalize(pages: list[bytes]) -> Any:
    import pandas as pd

    records: list[dict[str, Any]] = []
    for content in pages:
        records.extend(json.loads(content)["data"])
    records = [r if "subscriptions" in r else {**r, "subscriptions": []} for r in records]
    return pd.json_normalize(
        records, record_path="subscriptions", meta=PROFILE_FIELDS, errors="ignore"
    )


def _load(path: str) -> list[bytes]:
    blob = Path(path).read_bytes()
    sizes = json.loads(Path(path + ".json").read_text())
    pages, at = [], 0
    for size in sizes:
        pages.append(blob[at : at + size])
        at += size
    return pages


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _child(what: str, path: str, repeat: int) -> dict[str, Any]:
    import pandas  # noqa: F401  (imports are not part of the peak)
    import pyarrow.json

    import stoplist_nb.normalize  # noqa: F401

    pages = _load(path)
    gc.collect()
    base = _rss_kb()
    out: dict[str, Any] = {"base_rss_mb": base / 1024}
    if what == "timing":  # the floors and ours alternately, best of each
        runs = {"discard": _floor_discard, "kept": _floor_kept, "ours": _ours}
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(repeat):
            for name, fn in runs.items():
                gc.collect()
                t = time.perf_counter()
                result = fn(pages)
                best[name] = min(best[name], time.perf_counter() - t)
                del result
        out.update(best)
        return out
    import pyarrow as pa

    fn = _ours if what == "ours" else _json_normalize
    best_time = float("inf")
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        frame = fn(pages)
        best_time = min(best_time, time.perf_counter() - t)
        rows = len(frame)
        del frame
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    out.update(
        seconds=best_time,
        rows=rows,
        peak_rss_mb=peak / 1024,
        extra_rss_mb=(peak - base) / 1024,
        arrow_pool_peak_mb=pa.default_memory_pool().max_memory() / 2**20,
    )
    return out


def _run_child(what: str, path: str, repeat: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", what, "--pages-file", path, "--repeat", str(repeat)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _machine() -> str:
    import numpy
    import pandas
    import pyarrow

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{cpu}, {os.cpu_count()} cores, {ram:.0f} GiB RAM; Python {platform.python_version()}, "
        f"pandas {pandas.__version__}, pyarrow {pyarrow.__version__}, numpy {numpy.__version__}; "
        f"{dt.date.today().isoformat()}"
    )


def _report(size: int, total: int, timing: dict[str, Any], ours: dict[str, Any]) -> None:
    print(
        f"  floor {timing['discard']:.3f} s (tables dropped) / {timing['kept']:.3f} s (kept), "
        f"ours {timing['ours']:.3f} s = {timing['ours'] / timing['discard']:.2f}x / "
        f"{timing['ours'] / timing['kept']:.2f}x floor; {ours['rows']:,} rows, "
        f"peak RSS +{ours['extra_rss_mb']:.0f} MiB, Arrow pool peak "
        f"{ours['arrow_pool_peak_mb']:.0f} MiB",
        flush=True,
    )


def _table(rows: list[tuple[int, int, dict[str, Any], dict[str, Any], Any]]) -> None:
    print(
        "\n| profiles | JSON MiB | floor s: dropped / kept | ours s | ours / floor "
        "| json_normalize s | json_normalize / ours | ours peak RSS +MiB (Arrow pool) "
        "| json_normalize peak RSS +MiB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, total, timing, ours, jn in rows:
        jn_s = f"{jn['seconds']:.2f}" if jn else "skipped"
        jn_x = f"{jn['seconds'] / timing['ours']:.1f}x" if jn else "-"
        jn_m = f"{jn['extra_rss_mb']:.0f}" if jn else "-"
        print(
            f"| {size:,} | {total / 2**20:.0f} | {timing['discard']:.3f} / {timing['kept']:.3f} "
            f"| {timing['ours']:.3f} | {timing['ours'] / timing['discard']:.2f}x / "
            f"{timing['ours'] / timing['kept']:.2f}x | {jn_s} | {jn_x} "
            f"| {ours['extra_rss_mb']:.0f} ({ours['arrow_pool_peak_mb']:.0f}) | {jn_m} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--page", type=int, default=1000, help="profiles per page")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions below 200k profiles")
    parser.add_argument("--repeat-large", type=int, default=3, help="repetitions from 200k up")
    parser.add_argument("--skip-json-normalize-above", type=int, default=None, metavar="N")
    parser.add_argument("--dates", action="store_true", help="add a date-like profile field")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--pages-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.pages_file, args.repeat)))
        return

    print(_machine() + ("; with a date-like profile field" if args.dates else ""))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            t = time.perf_counter()
            pages = make_pages(size, args.page, args.seed, args.dates)
            path = str(Path(tmp) / f"pages-{size}.bin")
            Path(path).write_bytes(b"".join(pages))
            Path(path + ".json").write_text(json.dumps([len(p) for p in pages]))
            total = sum(len(p) for p in pages)
            del pages
            print(
                f"\n{size:,} profiles: {total / 2**20:.1f} MiB of JSON in pages of "
                f"{args.page} (generated in {time.perf_counter() - t:.1f} s)",
                flush=True,
            )
            repeat = args.repeat if size < 200_000 else args.repeat_large
            timing = _run_child("timing", path, repeat)
            ours = _run_child("ours", path, 1)
            _report(size, total, timing, ours)
            skip = args.skip_json_normalize_above
            jn = None
            if skip is None or size <= skip:
                jn = _run_child("json_normalize", path, 2 if size < 200_000 else 1)
                print(
                    f"  json_normalize {jn['seconds']:.2f} s "
                    f"({jn['seconds'] / timing['ours']:.1f}x ours), {jn['rows']:,} rows, "
                    f"peak RSS +{jn['extra_rss_mb']:.0f} MiB",
                    flush=True,
                )
            rows.append((size, total, timing, ours, jn))
    _table(rows)


if __name__ == "__main__":
    main()
