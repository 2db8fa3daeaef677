"""The documentation site: mkdocs.yml, the pages under docs/ and the docstrings."""

from __future__ import annotations

import html.parser
import importlib
import importlib.util
import pathlib
import re
import subprocess
import sys
from types import ModuleType

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.docs]

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


class _Rendered(html.parser.HTMLParser):
    """What a built page shows: paragraphs' text, Returns rows, object headings."""

    def __init__(self) -> None:
        super().__init__()
        self.paragraphs: list[str] = []  # the text of each <p>, with its line breaks
        self.sections: list[tuple[str, str, int]] = []  # (object id, "Returns", rows)
        self.headings: dict[str, str] = {}  # object id: its heading's text
        self._p: list[str] | None = None
        self._heading: str | None = None
        self._object = ""
        self._title: list[str] | None = None
        self._section = ""
        self._rows: int | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "p":
            self._p = []
        elif tag in {"h2", "h3", "h4"} and (attr.get("id") or "").startswith("stoplist_nb"):
            self._object = self._heading = attr["id"] or ""
            self.headings[self._object] = ""
        elif tag == "span" and attr.get("class") == "doc-section-title":
            self._title = []
        elif tag == "table" and self._section:
            self._rows = 0
        elif tag == "tr" and self._rows is not None and attr.get("class") == "doc-section-item":
            self._rows += 1

    def handle_data(self, data: str) -> None:
        if self._p is not None:
            self._p.append(data)
        if self._heading is not None:
            self.headings[self._heading] += data
        if self._title is not None:
            self._title.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "p" and self._p is not None:
            self.paragraphs.append("".join(self._p))
            self._p = None
        elif tag in {"h2", "h3", "h4"}:
            self._heading = None
        elif tag == "span" and self._title is not None:
            self._section = "".join(self._title).strip().rstrip(":")
            self._title = None
        elif tag == "table" and self._rows is not None:
            self.sections.append((self._object, self._section, self._rows))
            self._rows = None
            self._section = ""


def rendered(page: pathlib.Path) -> _Rendered:
    parser = _Rendered()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def test_no_list_is_run_into_a_paragraph(site: pathlib.Path) -> None:
    # A list that Markdown did not see (after a code block indented too little
    # in a list item, say) comes out as one paragraph with literal dashes.
    run_on = []
    for page in sorted(site.rglob("*.html")):
        for text in rendered(page).paragraphs:
            if re.search(r"(?m)^\s*[-*] \S", text):
                run_on.append(f"{page.relative_to(site)}: {text[:80]!r}")
    assert run_on == []


def test_a_returned_value_is_one_row(site: pathlib.Path) -> None:
    # Every function returns (or yields) one value, so each Returns table has
    # one row, however many lines its description takes.
    sections = []
    for page in sorted((site / "reference").rglob("*.html")):
        sections += rendered(page).sections
    returns = [s for s in sections if s[1] in {"Returns", "Yields"}]
    assert len(returns) > 20
    assert [s for s in returns if s[2] != 1] == []


def test_signatures_are_code_under_a_short_heading(site: pathlib.Path) -> None:
    headings: dict[str, str] = {}
    html = ""
    for page in sorted((site / "reference").rglob("*.html")):
        headings |= rendered(page).headings
        html += page.read_text(encoding="utf-8")
    # The heading is the name; the signature is a code block below it, with
    # the value of a default that names a constant (lookahead: int = 2).
    assert headings["stoplist_nb.read_profiles"].split() == ["read_profiles", "¶"]
    assert [i for i, text in headings.items() if "(" in text] == []
    assert html.count('class="doc-signature highlight"') >= 50
    assert re.findall(r"DEFAULT_\w+", html) == []
    signature = html[html.index('id="stoplist_nb.read_profiles"') :]
    signature = re.sub(r"<[^>]+>", "", signature[: signature.index("</code>")])
    assert "lookahead: int = 2," in signature
    assert max(len(line) for line in signature.splitlines()) <= 80


@pytest.mark.parametrize("module", PUBLIC)
def test_reference_index_lists_every_public_name(site: pathlib.Path, module: str) -> None:
    html = (site / "reference" / "index.html").read_text(encoding="utf-8")
    names = importlib.import_module(module).__all__
    missing = [n for n in names if not re.search(rf'href="[^"]*#{re.escape(module)}\.{n}"', html)]
    assert missing == []


def test_reference_index_refuses_a_public_name_without_a_block(tmp_path: pathlib.Path) -> None:
    hook = _hook("reference_index")
    for page in (ROOT / "docs" / "reference").glob("*.md"):
        text = page.read_text(encoding="utf-8")
        (tmp_path / page.name).write_text(text.replace("::: stoplist_nb.hash_phones\n", ""))
    with pytest.raises(Exception, match=r"stoplist_nb\.hash_phones"):
        hook.table(tmp_path, ["client.md"])


def _hook(name: str) -> ModuleType:
    path = ROOT / "docs" / "hooks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_doctests_are_fenced_without_cutting_a_section_from_its_body() -> None:
    fence = _hook("doctest_fences").fence_doctests
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
