"""The package's own checks: lint, types, import hygiene, doctests."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_check() -> None:
    result = run(sys.executable, "-m", "ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_pulls_no_optional_packages() -> None:
    code = (
        "import sys, stoplist_nb;"
        "bad = [m for m in ('ipywidgets', 'matplotlib', 'mongomock', 'stoplist_nb.demo')"
        " if m in sys.modules]; print(bad); sys.exit(bool(bad))"
    )
    result = run(sys.executable, "-c", code)
    assert result.returncode == 0, result.stdout + result.stderr


def test_public_surface_is_sorted_and_real() -> None:
    import stoplist_nb

    assert stoplist_nb.__all__ == sorted(stoplist_nb.__all__)
    for name in stoplist_nb.__all__:
        assert getattr(stoplist_nb, name) is not None


@pytest.mark.parametrize(
    "module",
    [
        "stoplist_nb.query.parse",
        "stoplist_nb.query.model",
        "stoplist_nb.profiles.normalize",
        "stoplist_nb._http.retry",
        "stoplist_nb._paging",
        "stoplist_nb.client",
        "stoplist_nb.suppression.hashing",
        "stoplist_nb.suppression.archive",
        "stoplist_nb.widgets",
    ],
)
def test_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "module", ["stoplist_nb", "stoplist_nb.plots", "stoplist_nb.widgets", "stoplist_nb.demo"]
)
def test_readme_names_every_public_name(module: str) -> None:
    names = importlib.import_module(module).__all__
    missing = [n for n in names if f"`{n}" not in README and f" {n}(" not in README]
    assert missing == []


def test_documented_import_paths_resolve() -> None:
    # A module that moves keeps its documented path working through an alias.
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    docs += sorted((ROOT / "notebooks").glob("*.ipynb"))
    paths = set()
    for doc in docs:
        paths.update(re.findall(r"stoplist_nb(?:\.[A-Za-z_]\w*)+", doc.read_text(encoding="utf-8")))
    assert {"stoplist_nb.export.read_export_files", "stoplist_nb.plots"} <= paths
    for path in sorted(paths):
        parts = path.split(".")
        for size in range(len(parts), 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:size]))
            except ModuleNotFoundError:
                continue
            break
        for name in parts[size:]:
            assert hasattr(found, name), path
            found = getattr(found, name)


def test_readme_links_resolve() -> None:
    targets = re.findall(r"\]\(((?!https?://|#)[^)\s]+)\)", README)
    assert "docs/overview.png" in targets
    assert len([t for t in targets if t.startswith("notebooks/")]) == 3
    for target in targets:
        assert (ROOT / target).exists(), target
    badge = re.search(r"mybinder\.org/v2/gh/[^)\s]+labpath=notebooks%2F([^)\s&]+)", README)
    assert badge
    assert (ROOT / "notebooks" / badge[1]).exists()


def test_readme_set_up_commands_are_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci in README
    assert '&& pip install -e ".[demo,plots]" && stoplist-nb demo' in README
