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


@pytest.mark.slow
@pytest.mark.lint
def test_ruff_check() -> None:
    result = run(sys.executable, "-m", "ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.lint
def test_ruff_format() -> None:
    result = run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.lint
def test_mypy_strict() -> None:
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_import_pulls_no_optional_packages() -> None:
    code = (
        "import sys, stoplist_nb;"
        "bad = [m for m in ('ipywidgets', 'anywidget', 'matplotlib', 'mongomock',"
        " 'stoplist_nb.demo', 'dask', 'distributed', 'duckdb')"
        " if m in sys.modules]; print(bad); sys.exit(bool(bad))"
    )
    result = run(sys.executable, "-c", code)
    assert result.returncode == 0, result.stdout + result.stderr


def test_public_surface_is_sorted_and_real() -> None:
    import stoplist_nb

    assert stoplist_nb.__all__ == sorted(stoplist_nb.__all__)
    for name in stoplist_nb.__all__:
        assert getattr(stoplist_nb, name) is not None


def doctest_modules() -> list[str]:
    """Every module under stoplist_nb/ whose source holds a ``>>>`` example."""
    names = []
    for path in sorted((ROOT / "stoplist_nb").rglob("*.py")):
        if ">>>" in path.read_text(encoding="utf-8"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_doctests_are_found_in_every_package() -> None:
    found = doctest_modules()
    assert len(found) >= 30
    assert {"stoplist_nb", "stoplist_nb.client", "stoplist_nb.demo", "stoplist_nb.plots"} <= set(
        found
    )


# Examples that need a live account stay marked ``# doctest: +SKIP``; every
# other example runs, so a module whose examples are all skipped runs none.
@pytest.mark.parametrize("module", doctest_modules())
def test_doctests(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPLBACKEND", "Agg")
    mod = importlib.import_module(module)
    examples = sum(len(t.examples) for t in doctest.DocTestFinder().find(mod))
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert examples > 0  # a ``>>>`` outside a docstring would not run
    assert result.failed == 0


README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").rglob("*.md"))
REPO_URL = "https://github.com/stoplist-nb/stoplist_nb/"
RAW_URL = "https://raw.githubusercontent.com/stoplist-nb/stoplist_nb/main/"


def resolve(path: str) -> object:
    """The object a dotted path names: a module, then attributes."""
    parts = path.split(".")
    for size in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:size]))
        except ModuleNotFoundError:
            continue
        break
    for name in parts[size:]:
        found = getattr(found, name)
    return found


def test_api_reference_has_a_block_for_every_public_name() -> None:
    # Each `::: path` block renders one object's docstring on the site; the
    # site's build (tests/test_docs.py) fails on a path that does not resolve.
    blocks = set()
    for page in sorted((ROOT / "docs" / "reference").glob("*.md")):
        blocks.update(re.findall(r"(?m)^::: ([\w.]+)$", page.read_text(encoding="utf-8")))
    documented = {id(resolve(path)) for path in blocks}
    missing = []
    for module in ("stoplist_nb", "stoplist_nb.plots", "stoplist_nb.widgets", "stoplist_nb.demo"):
        mod = importlib.import_module(module)
        missing += [f"{module}.{n}" for n in mod.__all__ if id(getattr(mod, n)) not in documented]
    assert missing == []


def test_documented_import_paths_resolve() -> None:
    # Every dotted path the guide, the README and the notebooks name resolves.
    docs = [ROOT / "README.md", *DOCS]
    docs += sorted((ROOT / "notebooks").glob("*.ipynb"))
    paths = set()
    for doc in docs:
        paths.update(re.findall(r"stoplist_nb(?:\.[A-Za-z_]\w*)+", doc.read_text(encoding="utf-8")))
    assert {"stoplist_nb.suppression.export.read_export_files", "stoplist_nb.plots"} <= paths
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


def sdist_files() -> set[str]:
    """The repository's files that MANIFEST.in ships in the sdist (tracked or not)."""
    shipped = set()
    for line in (ROOT / "MANIFEST.in").read_text(encoding="utf-8").splitlines():
        words = line.split()
        if words and words[0] == "include":
            shipped.update(words[1:])
        elif words and words[0] == "graft":
            shipped.update(p.relative_to(ROOT).as_posix() for p in (ROOT / words[1]).rglob("*"))
    return shipped


def test_readme_links_work_on_the_package_index() -> None:
    # The index shows README.md alone: a relative link must name a file the
    # sdist ships; anything else is an absolute link into the repository.
    targets = re.findall(r"\]\(([^)\s]+)\)", README)
    relative = [t for t in targets if not t.startswith(("https://", "http://", "#"))]
    shipped = sdist_files()
    assert [t for t in relative if t.rstrip("/") not in shipped] == []
    in_repo = [t.removeprefix(RAW_URL) for t in targets if t.startswith(RAW_URL)]
    in_repo += [
        t.removeprefix(REPO_URL).split("/", 2)[2]
        for t in targets
        if t.startswith((REPO_URL + "blob/main/", REPO_URL + "tree/main/"))
    ]
    assert "docs/overview.png" in in_repo
    assert len([t for t in in_repo if t.startswith("notebooks/")]) == 3
    assert "docs/reference/index.md" in in_repo
    for target in in_repo:
        assert (ROOT / target.split("#")[0]).exists(), target
    badge = re.search(r"mybinder\.org/v2/gh/[^)\s]+labpath=notebooks%2F([^)\s&]+)", README)
    assert badge
    assert (ROOT / "notebooks" / badge[1]).exists()


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_docs_links_resolve(page: pathlib.Path) -> None:
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(((?!https?://|#)[^)\s]+)\)", text):
        assert (page.parent / target.split("#")[0]).exists(), target
    for target in re.findall(rf"{re.escape(REPO_URL)}(?:blob|tree)/main/([^)\s#]+)", text):
        assert (ROOT / target).exists(), target


def test_readme_set_up_commands_are_what_ci_runs() -> None:
    steps = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert steps[-2:] == [steps[-2], ".ci/tiers"]
    assert "python -m pytest" in steps[-2]
    assert steps[-2] in README
    assert '&& pip install -e ".[demo,plots]" && stoplist-nb demo' in README


def test_the_classifiers_name_the_pythons_that_are_tested() -> None:
    tiers = (ROOT / ".ci" / "tiers").read_text(encoding="utf-8")
    table = tiers.split('TIERS="', 1)[1].split('"', 1)[0]
    tested = {line.split()[1] for line in table.splitlines()}
    # The test command's own environment: binder/'s runtime, CI's python3.
    tested.add((ROOT / "binder" / "runtime.txt").read_text(encoding="utf-8").strip()[7:])
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    named = set(re.findall(r'"Programming Language :: Python :: (3\.\d+)"', pyproject))
    assert named == tested
    floor = re.search(r'^requires-python = ">=(3\.\d+)"$', pyproject, re.MULTILINE)
    assert floor
    assert floor[1] == min(tested, key=lambda v: tuple(map(int, v.split("."))))
