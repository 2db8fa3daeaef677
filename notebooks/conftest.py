"""The notebooks' checked outputs are those of the demo service's seeded data.

Their kernels inherit this process's environment: no account, and
``STOPLIST_NB_DEMO=1`` (as binder/start sets it on Binder), so their
``sn.connect()`` reads the demo service. The demo variable is set only while a
notebook's cells run (these hooks apply to the items under notebooks/): the
tests under tests/ see the environment without it.
"""

import os
import pathlib

import pytest

for name in ("STOPLIST_NB_URL", "STOPLIST_NB_TOKEN"):
    os.environ.pop(name, None)

_env = pytest.MonkeyPatch()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the cells of the notebooks (nbval's items, under this folder) notebooks and slow."""
    here = pathlib.Path(__file__).parent
    for item in items:
        if item.path.parent == here:
            item.add_marker(pytest.mark.notebooks)
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before the notebook's kernel starts (in the setup of its first cell).
    _env.setenv("STOPLIST_NB_DEMO", "1")


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    _env.undo()
