"""The notebooks as saved: what nbval checks, and that a changed number fails it.

The notebooks themselves run under nbval in the same test command (``notebooks/``
is a test path, with ``--nbval-lax``): every cell runs, and the cells marked
``# NBVAL_CHECK_OUTPUT`` must print exactly what is saved. They read the demo
service because their run asks for it (``STOPLIST_NB_DEMO=1``, as on Binder):
without an account or that variable, their ``sn.connect()`` refuses.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MARK = "# NBVAL_CHECK_OUTPUT"
WIDGET = "application/vnd.jupyter.widget-view+json"


def cells(path: pathlib.Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8"))["cells"])


def source(cell: dict[str, Any]) -> str:
    return "".join(cell["source"])


def test_the_three_notebooks_are_there() -> None:
    names = [p.name for p in NOTEBOOKS]
    assert names == [
        "01-quickstart.ipynb",
        "02-query-builder.ipynb",
        "03-suppression-export.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_checked_cells_have_saved_outputs(path: pathlib.Path) -> None:
    checked = [c for c in cells(path) if c["cell_type"] == "code" and MARK in source(c)]
    assert len(checked) >= 4
    for cell in checked:
        assert cell["outputs"], source(cell)
        for output in cell["outputs"]:
            assert output.get("name") != "stderr", source(cell)  # progress bars: never checked


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_saved_without_widget_state_or_errors(path: pathlib.Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert "widgets" not in raw["metadata"]
    for cell in raw["cells"]:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", source(cell)
            assert WIDGET not in output.get("data", {}), source(cell)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_prose_leads_the_reader(path: pathlib.Path) -> None:
    nb = cells(path)
    assert nb[0]["cell_type"] == "markdown"
    assert source(nb[0]).startswith("# ")
    markdown = sum(c["cell_type"] == "markdown" for c in nb)
    assert markdown >= len(nb) // 3
    assert "connect()" in "".join(source(c) for c in nb)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_connect_reads_the_account_or_the_demo_asked_for(path: pathlib.Path) -> None:
    # No demo=True in a cell: the environment decides, so the same notebook reads
    # an account where one is set, the demo on Binder, and nothing by default.
    nb = cells(path)
    code = [source(c) for c in nb if c["cell_type"] == "code"]
    assert sum("client = sn.connect()" in text for text in code) == 1
    assert not any("demo=" in text for text in code)
    connect = next(c for c in nb if "client = sn.connect()" in source(c))
    assert MARK in source(connect)
    said = "".join(connect["outputs"][0]["text"])
    assert said.startswith("Demo data: the embedded demo service")
    prose = "".join(source(c) for c in nb if c["cell_type"] == "markdown")
    assert "STOPLIST_NB_DEMO=1" in prose
    assert "sn.connect(demo=True)" in prose


@pytest.mark.slow
@pytest.mark.notebooks
def test_without_an_account_or_the_demo_the_connect_cell_refuses(
    tmp_path: pathlib.Path,
) -> None:
    code = next(source(c) for c in cells(NOTEBOOKS[0]) if "client = sn.connect()" in source(c))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPLIST_NB_")}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Demo data" not in done.stdout
    assert "InvalidInput: no account to read: STOPLIST_NB_URL" in done.stderr
    assert "sn.connect(demo=True) or STOPLIST_NB_DEMO=1" in done.stderr


@pytest.mark.slow
@pytest.mark.notebooks
def test_a_changed_number_in_a_checked_cell_fails_the_run(tmp_path: pathlib.Path) -> None:
    raw = json.loads(NOTEBOOKS[0].read_text(encoding="utf-8"))
    checked = [c for c in raw["cells"] if c["cell_type"] == "code" and MARK in source(c)]
    target = next(c for c in checked if "profiles," in "".join(c["outputs"][0]["text"]))
    text = "".join(target["outputs"][0]["text"])
    assert "2000 profiles" in text
    target["outputs"][0]["text"] = text.replace("2000 profiles", "2001 profiles")
    altered = tmp_path / "altered.ipynb"
    altered.write_text(json.dumps(raw), encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STOPLIST_NB_")}
    env["STOPLIST_NB_DEMO"] = "1"  # as binder/start and notebooks/conftest.py set it
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(tmp_path / "pytest.ini"), "-p",
         "no:cacheprovider", "--nbval-lax", "--nbval-current-env", "-q", str(altered)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:]
    assert "1 failed" in done.stdout
    assert "2001 profiles" in done.stdout
    assert "2000 profiles" in done.stdout
