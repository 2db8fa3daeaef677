"""The documentation site: mkdocs.yml, the pages under docs/ and the docstrings."""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
import subprocess
import sys
from types import ModuleType

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PUBLIC = ("stoplist_nb", "stoplist_nb.plots", "stoplist_nb.widgets", "stoplist_nb.demo")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("site")
    # --strict turns every warning into a failure: a broken link or anchor, a
    # `:::` name that does not resolve, a docstring parameter not in the signature.
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_site_builds_with_warnings_as_errors(site: pathlib.Path) -> None:
    pages = {p.relative_to(site).parent.as_posix() for p in site.rglob("index.html")}
    expected = {"getting-started", "profiles", "suppression", "query-builder", "cli", "faults"}
    expected |= {"errors", "assumptions", "demo", "connecting", "plots", "reference"}
    assert expected <= pages


@pytest.mark.parametrize("module", PUBLIC)
def test_api_reference_renders_every_public_name(site: pathlib.Path, module: str) -> None:
    html = "".join(p.read_text(encoding="utf-8") for p in (site / "reference").rglob("*.html"))
    names = importlib.import_module(module).__all__
    # mkdocstrings gives each rendered object a heading whose id is its path.
    missing = [n for n in names if f'id="{module}.{n}"' not in html]
    assert missing == []


def test_api_reference_shows_docstring_examples_as_code(site: pathlib.Path) -> None:
    html = (site / "reference" / "demo" / "index.html").read_text(encoding="utf-8")
    assert "&gt;&gt;&gt; </span>" in html  # a highlighted doctest prompt
    assert "<blockquote>" not in html
    assert "doctest:" not in (site / "reference" / "client" / "index.html").read_text("utf-8")


def _fences() -> ModuleType:
    path = ROOT / "docs" / "hooks" / "doctest_fences.py"
    spec = importlib.util.spec_from_file_location("doctest_fences", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_doctests_are_fenced_without_cutting_a_section_from_its_body() -> None:
    fence = _fences().fence_doctests
    text = "Intro, see :func:`~stoplist_nb.client.Client`.\n>>> 1 + 1  # doctest: +SKIP\n2\n\n"
    text += "Example:\n    >>> x = [1]\n    >>> x[0]\n    1\n\n    Then.\n"
    assert fence(text).splitlines() == [
        "Intro, see `Client`.",
        "",
        "```pycon",
        ">>> 1 + 1",
        "2",
        "```",
        "",
        "Example:",
        "    ```pycon",
        "    >>> x = [1]",
        "    >>> x[0]",
        "    1",
        "    ```",
        "",
        "    Then.",
    ]
