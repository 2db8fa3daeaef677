"""The guide's Python examples run as written, one script per page.

Each page's ```python blocks, in order, make one script that runs from a fresh
interpreter in an empty directory against the embedded demo service (the
environment names no account, so a page's ``sn.connect(demo=True)`` is what it
reads). A block preceded by ``<!-- not run: reason -->`` is left out and
counted; a comment ``<!-- run first: ... -->`` holds code that runs before the
next block without being shown (files the example reads, say).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.docs]

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md"))

# A fence opens at any indentation (inside a list item too) and closes at the same.
_BLOCK = re.compile(r"(?m)^(?P<indent>[ ]*)```python\n(?P<code>.*?)^(?P=indent)```[ ]*$", re.S)
_MARK = re.compile(r"<!--\s*(not run|run first):\s*(.*?)\s*-->\s*$", re.S)
TIMEOUT = 180


@dataclass
class Script:
    code: list[str] = field(default_factory=list)
    blocks: int = 0
    not_run: list[str] = field(default_factory=list)


def script(page: pathlib.Path) -> Script:
    """The code a page's examples make, in order, and the blocks left out with why."""
    text = page.read_text(encoding="utf-8")
    out = Script()
    for match in _BLOCK.finditer(text):
        out.blocks += 1
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip()
        mark = _MARK.search(before[before.rfind("<!--") :]) if "<!--" in before else None
        code = textwrap.dedent(match["code"])
        if mark and mark[1] == "not run" and before.endswith("-->"):
            out.not_run.append(f"{page.name}:{line}: {mark[2]}")
            continue
        if mark and mark[1] == "run first" and before.endswith("-->"):
            out.code.append(
                f"# {page.name}, hidden, before line {line}\n{textwrap.dedent(mark[2])}\n"
            )
        out.code.append(f"# {page.name}, line {line}\n{code}")
    return out


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPLIST_NB_")}
    env["MPLBACKEND"] = "Agg"  # the plots draw, with no window
    env["PYTHONPATH"] = str(ROOT)
    return env


def test_marks_are_rare_and_say_why() -> None:
    not_run = [reason for page in PAGES for reason in script(page).not_run]
    blocks = sum(script(page).blocks for page in PAGES)
    print(f"{blocks} python blocks, {len(not_run)} not run:", *not_run, sep="\n  ")
    assert all(r.split(": ", 1)[1] for r in not_run)
    assert len(not_run) <= blocks // 5


RUN = [p for p in PAGES if script(p).code]


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, tuple[str, subprocess.Popen[str]]]]:
    """Every page's script started at once (each in a directory of its own), by page name."""
    started = {}
    for page in RUN:
        where = tmp_path_factory.mktemp(page.stem)
        source = "\n".join(script(page).code)
        (where / "example.py").write_text(source, encoding="utf-8")
        process = subprocess.Popen(
            [sys.executable, "example.py"],
            cwd=where,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started[page.name] = (source, process)
    yield started
    for _, process in started.values():
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.parametrize("page", RUN, ids=lambda p: p.name)
def test_page_examples_run_as_one_script(
    page: pathlib.Path, runs: dict[str, tuple[str, subprocess.Popen[str]]]
) -> None:
    source, process = runs[page.name]
    try:
        output, _ = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    numbered = "\n".join(f"{i:4} {line}" for i, line in enumerate(source.splitlines(), 1))
    assert process.returncode == 0, f"{numbered}\n\n{output}"
