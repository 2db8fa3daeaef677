"""The notebooks' checked outputs are those of the demo service's seeded data.

Their kernels inherit this process's environment: no account, and
``STOPLIST_NB_DEMO=1`` (as binder/start sets it on Binder), so their
``sn.connect()`` reads the demo service. The demo variable is set only while a
notebook's cells run (these hooks apply to the items under notebooks/): the
tests under tests/ see the environment without it.
"""

import os

import pytest

for name in ("STOPLIST_NB_URL", "STOPLIST_NB_TOKEN"):
    os.environ.pop(name, None)

_env = pytest.MonkeyPatch()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before the notebook's kernel starts (in the setup of its first cell).
    _env.setenv("STOPLIST_NB_DEMO", "1")


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    _env.undo()
