"""The package's threads leave the stopping signals to the main thread; joins are bounded.

CPython runs a signal's Python handler in the main thread only; one the
kernel hands to our thread would wait for the main thread to run Python
again, so our threads block them. A join waits at most :data:`JOIN_SECONDS`.
Progress bars start no thread at all.
"""

from __future__ import annotations

import signal
import threading

from tqdm.auto import tqdm

JOIN_SECONDS = 5.0

#: The signals that stop a run as Ctrl-C does (Windows has no SIGHUP).
STOPPING: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def leave_signals_to_main() -> None:
    """Block SIGINT, SIGTERM and SIGHUP in the calling thread (call it first in each thread)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)


def join(thread: threading.Thread | None) -> None:
    """Wait for ``thread`` to end, at most :data:`JOIN_SECONDS` (never for the calling thread)."""
    if thread is not None and thread is not threading.current_thread() and thread.ident:
        thread.join(JOIN_SECONDS)


class Bar(tqdm):  # type: ignore[misc]
    """A ``tqdm.auto`` bar (a widget in Jupyter, text elsewhere) without tqdm's monitor thread."""

    monitor_interval = 0
