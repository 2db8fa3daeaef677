"""The package's progress bar: ``tqdm.auto``'s, without tqdm's monitor thread.

tqdm starts a monitor thread with its first bar and keeps it to the end of
the process; it only makes a bar that is updated rarely redraw sooner. The
package updates its bars itself, at each page, chunk or poll, so a closed
read leaves no thread of its bar behind.
"""

from __future__ import annotations

from tqdm.auto import tqdm

__all__ = ["Bar"]


class Bar(tqdm):  # type: ignore[misc]
    """A ``tqdm.auto`` bar (a widget in Jupyter, text elsewhere) that starts no thread."""

    monitor_interval = 0
