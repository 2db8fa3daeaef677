"""``stoplist-nb`` (also ``python -m stoplist_nb``): profiles and suppression lists to files.

The commands and exit codes are in ``stoplist-nb --help`` and docs/cli.md; the token is
never printed. A signal that stops a run is handled like Ctrl-C: the library's cleanup
runs, the command says what was kept and how to go on, and exits with 128 + the
signal's number; a second signal does not cut that cleanup short.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any

from stoplist_nb import errors
from stoplist_nb._connect import ENV_TOKEN
from stoplist_nb._redact import exception_chain, redact
from stoplist_nb._threads import STOPPING, join, leave_signals_to_main
from stoplist_nb.cli import output
from stoplist_nb.cli.output import EXIT_USAGE, PROG, CliError
from stoplist_nb.cli.parser import build_parser

__all__ = ["build_parser", "exit_code", "main"]


def exit_code(exc: BaseException) -> int:
    """The exit code for an exception."""
    if isinstance(exc, CliError):
        return exc.code
    if isinstance(exc, KeyboardInterrupt):
        return output.EXIT_INTERRUPTED
    if isinstance(exc, errors.AuthError):
        return output.EXIT_AUTH
    if isinstance(exc, errors.TransportError | errors.ServerError | errors.RateLimited):
        return output.EXIT_NETWORK
    # UnsafePath is an InvalidInput, but the bad path came from the service, not the user.
    if isinstance(exc, errors.InvalidInput) and not isinstance(exc, errors.UnsafePath):
        return EXIT_USAGE
    return output.EXIT_ERROR


def _show_warning(message: Warning | str, *_: Any, **__: Any) -> None:
    # A warning may quote the service's file (rows that are no MD5): scrubbed as all it says.
    print(f"{PROG}: warning: {redact(str(message))}", file=sys.stderr)


@contextlib.contextmanager
def _signals() -> Iterator[dict[str, Any]]:
    """SIGTERM and SIGHUP raise ``KeyboardInterrupt`` for a run; ignored ones (nohup) stay so."""
    state: dict[str, Any] = {"received": None, "over": threading.Event()}

    def again() -> None:  # to stop(), or to a close() holding it, until the run is over
        leave_signals_to_main()
        while not state["over"].wait(0.5):
            _thread.interrupt_main(state["received"])

    repeat = threading.Thread(target=again, name="stoplist_nb-stop", daemon=True)

    def stop(signum: int, frame: FrameType | None) -> None:
        chain = exception_chain(sys.exc_info()[1])  # on its way, or over: let its words end
        if state["over"].is_set() or any(isinstance(exc, KeyboardInterrupt) for exc in chain):
            return
        if state["received"] is None:  # raised again until handled: a library may swallow it
            state["received"] = signum
            repeat.start()
        raise KeyboardInterrupt

    saved = {}
    if threading.current_thread() is threading.main_thread():  # the only one to set handlers
        for signum in STOPPING:
            if signal.getsignal(signum) not in (signal.SIG_IGN, None):
                saved[signum] = signal.signal(signum, stop)
    try:
        yield state
    finally:  # the handlers found go back: main may run inside a Python process
        state["over"].set()
        join(repeat)
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``); return the exit code.

    >>> main(["profiles", "--db-id", "1", "--out", "x.txt"])  # doctest: +SKIP
    2
    """
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and argparse's errors (2)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    args.argv = argv  # for the commands' hints: the command to run next, whole
    progress = args.progress if args.progress is not None else sys.stderr.isatty()
    ui = output.Ui(progress=progress and not args.quiet, quiet=args.quiet)
    with warnings.catch_warnings(), _signals() as signals:
        warnings.showwarning = _show_warning
        try:
            try:
                code: int = args.run(args, ui)
            finally:
                signals["over"].set()
        except KeyboardInterrupt as exc:
            received = signals["received"]
            by = "" if received in (None, signal.SIGINT) else f" by {signal.Signals(received).name}"
            print(f"{PROG}: interrupted{by}", file=sys.stderr)
            for line in getattr(exc, "stoplist_nb_said", []):  # what was kept, how to go on
                print(f"{PROG}: {redact(line)}", file=sys.stderr)
            return output.EXIT_INTERRUPTED if received is None else 128 + received
        except BrokenPipeError:
            # Whoever read stdout has gone (| head); point stdout at nothing, so the
            # interpreter's own flush at exit does not fail a second time.
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return output.EXIT_ERROR
        except (errors.StoplistError, CliError) as exc:
            # The library's words for an output that output.appeared name its keyword.
            error = output.appeared(exc.path) if isinstance(exc, errors.OutputExists) else exc
            # Exception.__str__ leaves out StoplistError's hint and resume suffixes, which
            # name Python attributes; the hint gets a line of its own.
            print(f"{PROG}: error: {redact(Exception.__str__(error))}", file=sys.stderr)
            hint = error.hint
            if not hint and isinstance(error, errors.AuthError):
                hint = f"check {ENV_TOKEN}, and that the token may use this database or list"
            if hint:
                print(f"{PROG}: hint: {redact(hint)}", file=sys.stderr)
            return exit_code(error)
        except OSError as exc:  # the commands name their outputs; this is in case one did not
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            where = f"cannot write {os.fsdecode(exc.filename)}: " if exc.filename else ""
            print(f"{PROG}: error: {where}{reason}", file=sys.stderr)
            return output.EXIT_ERROR
    return code
