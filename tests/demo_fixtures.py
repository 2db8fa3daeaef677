"""The fixtures of a demo service that each test finds clean, for conftest and test modules.

A module of its own, not conftest.py: two conftest modules (tests/ and notebooks/)
share that name, so ``from conftest import ...`` would find either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from stoplist_nb.demo import DemoService, serve


def served_and_cleared(
    name: str, *, reset: Callable[[DemoService], object] | None = None, **options: Any
) -> tuple[Any, Any]:
    """A demo service for one test module, and the same service made clean for each test.

    The first fixture, called ``name``, is ``serve(**options)`` once for the module.
    The second gives that service with no faults queued and an empty request log,
    and drops any fault left after the test; ``reset``, when given, is called on the
    service before the test and after it. Bind both at a module's top level; the
    second takes the name it is bound to::

        service, fresh = served_and_cleared("service", profiles=100, seed=3)
    """

    @pytest.fixture(scope="module", name=name)
    def served() -> Iterator[DemoService]:
        with serve(**options) as service:
            yield service

    @pytest.fixture
    def cleared(request: pytest.FixtureRequest) -> Iterator[DemoService]:
        service: DemoService = request.getfixturevalue(name)
        service.clear_faults()
        service.requests.clear()
        if reset is not None:
            reset(service)
        yield service
        service.clear_faults()
        if reset is not None:
            reset(service)

    return served, cleared
