"""The package's progress bar: ``tqdm.auto``'s, without tqdm's monitor thread.

The package updates its bars itself, so a closed read leaves no thread behind.
"""

from __future__ import annotations

from tqdm.auto import tqdm


class Bar(tqdm):  # type: ignore[misc]
    """A ``tqdm.auto`` bar (a widget in Jupyter, text elsewhere) that starts no thread."""

    monitor_interval = 0
