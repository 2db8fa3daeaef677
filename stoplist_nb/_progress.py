"""The package's progress bar: ``tqdm.auto``'s, without tqdm's monitor thread."""

from __future__ import annotations

from tqdm.auto import tqdm


class Bar(tqdm):  # type: ignore[misc]
    """A ``tqdm.auto`` bar (a widget in Jupyter, text elsewhere): a closed read leaves no thread."""

    monitor_interval = 0
