"""The command line's parser: every argument's type checks it before anything is sent.

What is wrong is an ``argparse.ArgumentTypeError``: usage, message, exit 2.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import textwrap
from collections.abc import Callable
from typing import Any, NamedTuple

from stoplist_nb import __version__, errors
from stoplist_nb.cli.commands import run_export, run_profiles
from stoplist_nb.cli.demo import run_demo
from stoplist_nb.cli.output import FRAME_SUFFIXES, PROG
from stoplist_nb.profiles.dataset import (
    DEFAULT_COMMIT_BYTES,
    DEFAULT_COMMIT_SECONDS,
    DEFAULT_PROFILES_PER_PART,
)
from stoplist_nb.query import loads_query
from stoplist_nb.suppression.download import EXPORT_TYPES

_EPILOG = """\
exit codes: 0 done; 1 error reported by the service or the library, or a file
that cannot be written; 2 bad arguments or configuration, or an output that
exists without --overwrite (nothing sent); 3 token refused; 4 network failure or
the service still failing after every retry; 130 interrupted (Ctrl-C), 143
terminated (SIGTERM), 129 hung up (SIGHUP): what was kept is said, and how to
go on.

environment (profiles, export): STOPLIST_NB_URL, STOPLIST_NB_TOKEN."""

_TRY = """\
to try profiles and export without an account, run the demo service in another
terminal and paste the lines it prints:
  python -m stoplist_nb.demo          # prints export STOPLIST_NB_URL=... lines
  stoplist-nb profiles --db-id 1 --out profiles.parquet
  stoplist-nb export --list-id 7 --out stop.parquet"""


def _command(sub: Any, name: str, help: str, about: str, epilog: str) -> argparse.ArgumentParser:
    """A command taking the options every command takes, its description wrapped."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=textwrap.fill(about, 79),  # the raw formatter keeps the epilogs' lines
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument_group("output").add_argument
    add("--overwrite", action="store_true", help="replace what is at --out (default: refuse)")
    on = "progress bars on stderr (default: when it is a terminal)"
    add("--progress", action=argparse.BooleanOptionalAction, help=on)
    add("-q", "--quiet", action="store_true", help="print only errors and warnings, no progress")
    return parser


def _connection(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument_group("connection (STOPLIST_NB_URL, STOPLIST_NB_TOKEN)").add_argument
    retries = "retries of a failed request (default: 5, with exponential backoff)"
    add("--retries", type=lambda text: positive_int(text, 0), metavar="N", help=retries)
    timeout = "seconds to wait for each reply (default: 10 to connect, 120 to read)"
    add("--timeout", type=seconds, metavar="SECONDS", help=timeout)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser (``prog`` is ``stoplist-nb`` however it is started)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Altcraft Platform API v1.1 profiles and suppression lists, to files.",
        epilog=_TRY + "\n\n" + _EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = _command(
        sub,
        "demo",
        "the whole job on the embedded demo service, written to a directory",
        "Start the embedded demo service, read its profiles, export its suppression list, "
        "flag the profiles' e-mails, domains and phones found in it, and write to DIR, all "
        "together at the end: "
        "profiles, suppression_list and flagged_contacts as .parquet and .csv, and "
        "channels, statuses, registrations, top_domains and suppression_overlap as .png.",
        "CSV files hold list cells (cats, phones) as JSON text.\n\n" + _EPILOG,
    )
    add = demo.add_argument
    out = "directory to write to, created if missing (default: ./%(default)s)"
    add("--out", type=pathlib.Path, default=pathlib.Path("stoplist-demo"), metavar="DIR", help=out)
    size = "size of the demo data set (default: %(default)s)"
    add("--profiles", type=positive_int, default=2000, metavar="N", help=size)
    add("--seed", type=int, default=0, metavar="N", help="seed of the demo data (default: 0)")
    limit = "profiles per request (default: %(default)s)"
    add("--limit", type=positive_int, default=250, metavar="N", help=limit)
    plots = "write the PNG plots (default: yes, with matplotlib)"
    add("--plots", action=argparse.BooleanOptionalAction, default=True, help=plots)
    demo.set_defaults(run=run_demo)

    profiles = _command(
        sub,
        "profiles",
        "read a database's profiles into a Parquet or CSV file, or a Parquet dataset",
        "Read a database's profiles (every page) into a file by the suffix of --out, one row "
        "per subscription, about one page in memory; --out DIR/ writes a Parquet dataset "
        "that --resume carries on after a failure.",
        "Parquet keeps list columns (cats) as lists; CSV (UTF-8, no index) holds them as\n"
        'JSON text, e.g. ["promo", "news"]. A column that first holds a value on a later\n'
        "page is empty in the rows before.\n\n"
        "examples:\n"
        '  stoplist-nb profiles --db-id 1 --query \'{"_city": "Kazan"}\' --out kazan.csv\n'
        "  stoplist-nb profiles --db-id 1 --out profiles/ --resume   # a dataset, carried on\n\n"
        + _TRY
        + "\n\n"
        + _EPILOG,
    )
    add = profiles.add_argument
    add("--db-id", type=int, required=True, metavar="N", help="database id")
    add("--query", type=query, metavar="JSON|@FILE", help="MongoDB filter, JSON or @FILE")
    add("--fields", type=fields, metavar="A,B", help="fields, comma-separated (_id: the id)")
    add("--limit", type=positive_int, default=1000, metavar="N", help=limit)
    add("--max-profiles", type=positive_int, metavar="N", help="stop after N profiles")
    add("--from-id", metavar="CURSOR", help="start after this cursor (a next_from_id)")
    out_type, out = out_file(*FRAME_SUFFIXES, dataset=True), "FILE.parquet, FILE.csv, or DIR/"
    add("--out", type=out_type, required=True, metavar="FILE|DIR/", help=out + " (a dataset)")
    add = profiles.add_argument_group(
        "a dataset (--out DIR/)",
        "A stopped pull keeps its parts, and the part being written as far as it was committed.",
    ).add_argument
    add("--resume", action="store_true", help="carry on the unfinished dataset there")
    repair = "carry on past a damaged file (changed, cut short, missing) and the ones after it"
    add("--repair", action="store_true", help=repair)
    per_part = f"profiles per part file (default: {DEFAULT_PROFILES_PER_PART})"
    add("--profiles-per-part", type=positive_int, metavar="N", help=per_part)
    every = f"commit the part written this often, 0 each page (default: {DEFAULT_COMMIT_SECONDS:g})"
    add("--commit-seconds", type=lambda t: seconds(t, zero=True), metavar="SECONDS", help=every)
    size = f"or once they hold N bytes, whichever first (default: {DEFAULT_COMMIT_BYTES}, 16 MiB)"
    add("--commit-bytes", type=positive_int, metavar="N", help=size)
    _connection(profiles)
    profiles.set_defaults(run=run_profiles)

    export = _command(
        sub,
        "export",
        "export a suppression list (MD5 hashes) into a ZIP, CSV or Parquet file",
        "Export a suppression list: start the export task, wait for it, download its file. "
        "FILE.zip keeps the service's archive; FILE.csv and FILE.parquet hold its hashes "
        "(md5, then the file's other columns), Parquet in bounded memory.",
        "examples:\n"
        "  stoplist-nb export --list-id 7 --type emails --out stop.parquet\n"
        "  stoplist-nb export --task-id exp-1f0c --out stop.parquet   # a task started before"
        "\n\n" + _TRY + "\n\n" + _EPILOG,
    )
    which = export.add_mutually_exclusive_group(required=True).add_argument
    which("--list-id", type=int, metavar="N", help="suppression list id")
    which("--task-id", metavar="ID", help="wait for an export task already started instead")
    add = export.add_argument
    add("--type", choices=EXPORT_TYPES, default="all", help="contacts to export (default: all)")
    out = "FILE.zip, FILE.csv or FILE.parquet"
    add("--out", type=out_file(".zip", *FRAME_SUFFIXES), required=True, metavar="FILE", help=out)
    poll = "seconds between status polls, growing by half each time (default: 1)"
    add("--poll-interval", type=seconds, default=1.0, metavar="SECONDS", help=poll)
    wait = "seconds to wait for the export task (default: 600)"
    add("--task-timeout", type=seconds, default=600.0, metavar="SECONDS", help=wait)
    _connection(export)
    export.set_defaults(run=run_export)
    return parser


def positive_int(text: str, minimum: int = 1) -> int:
    """A whole number of at least ``minimum`` (``--limit``; ``--retries`` takes 0)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
    return value


def seconds(text: str, zero: bool = False) -> float:
    """A finite number of seconds above 0 (``--timeout``), or 0 too if ``zero``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (value > 0 or (zero and value == 0)) or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value or 0.0  # not -0.0


def query(text: str) -> dict[str, Any]:
    """``--query``: JSON text, or ``@path`` to a JSON file; checked before anything is sent."""
    where = "the query"
    if text.startswith("@"):
        where = text[1:]
        try:
            text = pathlib.Path(where).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise argparse.ArgumentTypeError(f"cannot read {where}: {reason}") from None
    try:
        return loads_query(text, where)
    except errors.InvalidQuery as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def fields(text: str) -> list[str]:
    """``--fields``: names separated by commas, blanks around them dropped."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one field, e.g. _fname,_city")
    return names


class Out(NamedTuple):
    """Where ``profiles --out`` writes: a file, or the directory of a dataset."""

    path: pathlib.Path
    dataset: bool


def out_file(*suffixes: str, dataset: bool = False) -> Callable[[str], Any]:
    """``--out``: a file ending in one of ``suffixes``; with ``dataset`` an :class:`Out` (DIR/)."""

    def check(text: str) -> Any:
        path = pathlib.Path(text)
        if dataset and (text.endswith(("/", os.sep)) or path.is_dir()):
            if path.exists() and not path.is_dir():
                raise argparse.ArgumentTypeError(f"{text!r} is a file, not a directory")
            return Out(path, dataset=True)
        if path.suffix.lower() not in suffixes:
            raise argparse.ArgumentTypeError(
                f"{text!r}: the file name must end in {' or '.join(suffixes)}"
                + (" (or end the path in / for a directory of Parquet files)" if dataset else "")
            )
        if path.is_dir():
            raise argparse.ArgumentTypeError(f"{text!r} is a directory")
        if not path.parent.is_dir():
            raise argparse.ArgumentTypeError(f"{text!r}: no directory {str(path.parent)!r}")
        return Out(path, dataset=False) if dataset else path

    return check
