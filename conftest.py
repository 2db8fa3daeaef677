"""How a run spreads over pytest-xdist's workers (``-n auto`` in pyproject's addopts).

Each test is a unit of work of its own, so that the long ones spread, but for
the modules whose tests share one costly fixture and the notebooks, whose
cells share one kernel and run in order: each of those goes whole to one
worker, first (xdist hands out the units with the most tests first).
"""

from __future__ import annotations

from typing import Any

import pytest

#: The modules whose tests share a fixture that costs seconds to make.
SHARED = {
    "tests/test_browser.py",  # JupyterLab and Chromium
    "tests/test_distribution.py",  # the wheel and the sdist, built
    "tests/test_docs.py",  # the site, built
    "tests/test_docs_examples.py",  # every page's script, started at once
}


def unit_of(nodeid: str) -> str:
    """The unit of work ``nodeid`` belongs to: its module when shared, else the test itself."""
    module = nodeid.split("::", 1)[0]
    return module if module in SHARED or module.endswith(".ipynb") else nodeid


@pytest.hookimpl(optionalhook=True)  # a run without pytest-xdist has no such hook
def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return Scheduling(config, log)
