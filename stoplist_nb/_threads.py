"""The threads the package starts: they leave the stopping signals to the main thread,
and are waited for in bounded time.

The kernel hands a signal sent to the process to any thread that does not
block it, and CPython runs the Python handler (Ctrl-C's KeyboardInterrupt,
the command line's SIGTERM) in the main thread only: a signal that lands in
one of our threads reaches the handler only once the main thread runs Python
again, which a main thread blocked in a socket read may not do until the
read's timeout. So every thread of ours blocks them, and the kernel gives
them to a thread that takes them (the main thread, unless another library
started threads of its own). A thread is told to stop before it is joined,
and the join waits at most :data:`JOIN_SECONDS`: closing never hangs a cell.
"""

from __future__ import annotations

import signal
import threading

__all__ = ["JOIN_SECONDS", "STOPPING", "join", "leave_signals_to_main"]

JOIN_SECONDS = 5.0
"""The most :func:`join` waits for a thread to end (it was told to stop first)."""

#: The signals that stop a run as Ctrl-C does (Windows has no SIGHUP).
STOPPING: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def leave_signals_to_main() -> None:
    """Block SIGINT, SIGTERM and SIGHUP in the calling thread (a no-op without pthreads).

    Call it first in a thread the package starts (or as a pool's initializer).
    """
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)


def join(thread: threading.Thread | None) -> None:
    """Wait for ``thread`` to end, at most :data:`JOIN_SECONDS` (never for the calling thread)."""
    if thread is not None and thread is not threading.current_thread() and thread.ident:
        thread.join(JOIN_SECONDS)
