"""``python -m stoplist_nb.demo``: serve the demo in the foreground until Ctrl-C or SIGTERM.

Prints its URL, token and database id, then the lines that point the command line at it.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from collections.abc import Sequence

from stoplist_nb.demo._server import DEFAULT_PROFILES, DemoService

# The names of the client's variables, written out: the demo imports nothing of it.
_URL, _TOKEN = "STOPLIST_NB_URL", "STOPLIST_NB_TOKEN"


def paste_lines(base_url: str, token: str) -> list[str]:
    """What to paste into another terminal: a POSIX shell, PowerShell, then cmd.

    >>> print("\\n".join(paste_lines("http://127.0.0.1:8000", "t0k")))
    export STOPLIST_NB_URL=http://127.0.0.1:8000 STOPLIST_NB_TOKEN=t0k
    $env:STOPLIST_NB_URL = 'http://127.0.0.1:8000'; $env:STOPLIST_NB_TOKEN = 't0k'
    set STOPLIST_NB_URL=http://127.0.0.1:8000& set STOPLIST_NB_TOKEN=t0k
    """
    quoted = {name: value.replace("'", "''") for name, value in ((_URL, base_url), (_TOKEN, token))}
    return [
        f"export {_URL}={shlex.quote(base_url)} {_TOKEN}={shlex.quote(token)}",
        f"$env:{_URL} = '{quoted[_URL]}'; $env:{_TOKEN} = '{quoted[_TOKEN]}'",
        f"set {_URL}={base_url}& set {_TOKEN}={token}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m stoplist_nb.demo",
        description="Serve a local demo of the Altcraft Platform API v1.1 with generated "
        f"profiles and a suppression list; it prints the {_URL} and {_TOKEN} lines "
        "that point stoplist-nb profiles and export at it from another terminal.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--host", default="127.0.0.1", metavar="ADDRESS", help="address to listen on")
    add("--port", type=int, default=8000, metavar="N", help="port to listen on, 0 for any free one")
    add("--profiles", type=int, default=DEFAULT_PROFILES, metavar="N", help="number of profiles")
    add("--seed", type=int, default=0, metavar="N", help="seed of the generated data")
    # SUPPRESS: no "(default: None)", a random one is drawn.
    add("--token", default=argparse.SUPPRESS, help="API token to accept (default: a random one)")
    add("--db-id", type=int, default=1, metavar="N", help="database id")
    add("--suppress-id", type=int, default=7, metavar="N", help="suppression list id")
    args = parser.parse_args(argv)
    if args.profiles < 0:
        print("--profiles must not be negative", file=sys.stderr)
        return 2
    options = {"token": None, **vars(args)}
    try:
        service = DemoService(options.pop("profiles"), options.pop("seed"), **options).start()
    except (OSError, ValueError) as exc:
        print(f"cannot start the demo service: {exc}", file=sys.stderr)
        return 1
    # Treat SIGTERM (docker stop, kill) like Ctrl-C, so the port is released cleanly.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        sh, powershell, cmd = paste_lines(service.base_url, service.token)
        # The list's name is not printed: it is not ASCII, and stdout may not be UTF-8.
        print(
            f"base_url: {service.base_url}\ntoken:    {service.token}\ndb_id:    {service.db_id}\n"
            f"Serving {len(service.profiles)} profiles and suppression list "
            f"{service.suppress_id}; press Ctrl-C to stop.\n\nTo read it with stoplist-nb, "
            f"paste one of these into another terminal:\n\n  {sh}\n  # PowerShell\n"
            f"  {powershell}\n  # cmd.exe\n  {cmd}\n\nthen, for instance:\n\n"
            f"  stoplist-nb profiles --db-id {service.db_id} --out profiles.parquet\n"
            f"  stoplist-nb export --list-id {service.suppress_id} --out stop.parquet\n",
            flush=True,
        )
        threading.Event().wait()
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        service.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
