"""Run the demo service in the foreground: ``python -m stoplist_nb.demo``.

Prints the base URL, the token and the database id, then serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from stoplist_nb.demo._service import DemoService


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m stoplist_nb.demo",
        description="Serve a local demo of the Altcraft Platform API v1.1 "
        "(profiles/list, databases/fields_get, suppresses/export, tasks/status and "
        "the download) with generated profiles and a suppression list.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port", type=int, default=8000, help="port to listen on, 0 for any free one"
    )
    parser.add_argument("--profiles", type=int, default=300, help="number of profiles")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    parser.add_argument("--token", default=None, help="API token to accept (default: random)")
    parser.add_argument("--db-id", type=int, default=1, help="database id (default: 1)")
    parser.add_argument(
        "--suppress-id", type=int, default=7, help="suppression list id (default: 7)"
    )
    return parser


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    args = _parser().parse_args(argv)
    if args.profiles < 0:
        print("--profiles must not be negative", file=sys.stderr)
        return 2
    try:
        service = DemoService(
            args.profiles,
            args.seed,
            token=args.token,
            host=args.host,
            port=args.port,
            db_id=args.db_id,
            suppress_id=args.suppress_id,
        )
        service.start()
    except (OSError, ValueError) as exc:
        print(f"cannot start the demo service: {exc}", file=sys.stderr)
        return 1
    # Treat SIGTERM (docker stop, kill) like Ctrl-C, so the port is released cleanly.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        print(f"base_url: {service.base_url}")
        print(f"token:    {service.token}")
        print(f"db_id:    {service.db_id}")
        # The list's name is not printed: it is not ASCII, and stdout may not be UTF-8.
        print(
            f"Serving {len(service.profiles)} profiles and suppression list "
            f"{service.suppress_id}; press Ctrl-C to stop.",
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
