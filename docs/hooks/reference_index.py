"""MkDocs hook: the table of docs/reference/index.md, built from ``__all__``.

Every name of ``stoplist_nb.__all__`` (and of the widgets', plots' and demo
service's ``__all__``) is listed under the reference page whose ``:::`` block
renders it, linked to its entry. The names are read statically with Griffe, so
building the site needs neither the package's optional dependencies nor an
import of it. A public name with no ``:::`` block fails the build.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

import griffe
from mkdocs.exceptions import PluginError

#: The packages whose ``__all__`` the reference covers, each with its prefix.
PUBLIC = ("stoplist_nb", "stoplist_nb.widgets", "stoplist_nb.plots", "stoplist_nb.demo")
MARKER = "<!-- reference-index -->"
ROOT = pathlib.Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"(?m)^::: ([\w.]+)$")


def public_names() -> list[str]:
    """The dotted path of every public name, in the order of ``PUBLIC`` and ``__all__``."""
    package = griffe.load("stoplist_nb", search_paths=[str(ROOT)], resolve_aliases=False)
    names = []
    for path in PUBLIC:
        module = package if path == "stoplist_nb" else package[path.removeprefix("stoplist_nb.")]
        names += [f"{path}.{name}" for name in (module.exports or [])]
    return names


def blocks(reference: pathlib.Path, order: list[str]) -> dict[str, list[str]]:
    """Each reference page (file name) with the paths of its ``:::`` blocks, in order.

    The pages come in ``order`` (the navigation's), then any other page by name.
    """
    files = sorted(p.name for p in reference.glob("*.md") if p.name != "index.md")
    files = [f for f in order if f in files] + [f for f in files if f not in order]
    return {f: _BLOCK.findall((reference / f).read_text(encoding="utf-8")) for f in files}


def table(reference: pathlib.Path, order: list[str]) -> str:
    """The Markdown table of every public name under the page that renders it."""
    names = public_names()
    pages = blocks(reference, order)
    where = {path: page for page, paths in pages.items() for path in paths}
    missing = [n for n in names if n not in where]
    if missing:
        raise PluginError(f"public names with no ::: block in docs/reference/: {missing}")
    rows = ["| page | names |", "|---|---|"]
    for page, paths in pages.items():
        # A module's own block (``::: stoplist_nb.demo``) is the page's text, not a name.
        links = [f"[`{_short(p)}`][{p}]" for p in paths if p not in PUBLIC]
        if links:
            rows.append(f"| [{_title(reference / page)}]({page}) | {', '.join(links)} |")
    return "\n".join(rows)


def _short(path: str) -> str:
    """``stoplist_nb.read_profiles`` as ``read_profiles``; other packages' names in full."""
    return path.removeprefix("stoplist_nb.") if path.count(".") == 1 else path


def _title(page: pathlib.Path) -> str:
    first = page.read_text(encoding="utf-8").splitlines()[0]
    return first.removeprefix("# ").strip()


def _nav_files(nav: Any) -> list[str]:
    """The file names under reference/ in the navigation, in its order."""
    if isinstance(nav, str):
        return [nav.removeprefix("reference/")] if nav.startswith("reference/") else []
    items = nav.values() if isinstance(nav, dict) else nav or []
    return [f for item in items for f in _nav_files(item)]


def on_page_markdown(markdown: str, *, page: Any, config: Any, **kwargs: Any) -> str:
    """Put the table where docs/reference/index.md has its marker."""
    if page.file.src_uri != "reference/index.md":
        return markdown
    if MARKER not in markdown:
        raise PluginError(f"docs/reference/index.md lost its {MARKER} line")
    reference = pathlib.Path(page.file.abs_src_path).parent
    return markdown.replace(MARKER, table(reference, _nav_files(config["nav"])))
