"""The threads the package starts leave the stopping signals to the main thread.

The kernel hands a signal sent to the process to any thread that does not
block it, and CPython runs the Python handler (Ctrl-C's KeyboardInterrupt,
the command line's SIGTERM) in the main thread only: a signal that lands in
one of our threads reaches the handler only once the main thread runs Python
again, which a main thread blocked in a socket read may not do until the
read's timeout. So every thread of ours blocks them, and the kernel gives
them to a thread that takes them (the main thread, unless another library
started threads of its own).
"""

from __future__ import annotations

import signal

__all__ = ["STOPPING", "leave_signals_to_main"]

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
