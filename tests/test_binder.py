"""binder/: what repo2docker builds, rebuilt here in a fresh virtual environment.

The environment is made from the binder/ files alone, as repo2docker's Python
build pack does it (``pip install -r binder/requirements.txt`` run from the
repository's root), and the notebooks then run in it, under nbval, with no
account set, through ``binder/start`` as Binder starts Jupyter: it asks for the
demo service (``STOPLIST_NB_DEMO=1``), which ``sn.connect()`` reads only when asked.
The requirements are installed by uv (the test extra), which reads the same
file: 11 s here against 49 s for pip, both with a warm cache. The pins are
then checked against what landed.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import venv

import pytest

uv = pytest.importorskip("uv", reason="the Binder environment is built by uv (the test extra)")

pytestmark = [pytest.mark.slow, pytest.mark.packaging, pytest.mark.network]

ROOT = pathlib.Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
PINNED = ("jupyterlab", "ipywidgets", "jupyterlab_widgets", "widgetsnbextension")


def requirement_lines() -> list[str]:
    text = (BINDER / "requirements.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def pins() -> dict[str, str]:
    found = (
        re.fullmatch(r"([A-Za-z0-9_.-]+)==([0-9][^\s;]*)", line) for line in requirement_lines()
    )
    return {m[1].lower().replace("-", "_"): m[2] for m in found if m}


def test_requirements_install_this_package_with_the_notebook_extras() -> None:
    local = [line for line in requirement_lines() if line.startswith(".")]
    assert len(local) == 1, "exactly one line installs the repository itself"
    extras = set(re.fullmatch(r"\.\[([a-z,]+)\]", local[0])[1].split(","))  # type: ignore[index]
    assert {"widgets", "plots", "demo"} <= extras


def test_front_end_and_widget_versions_are_pinned_together() -> None:
    assert set(PINNED) <= set(pins())


def test_start_asks_for_the_demo_and_runs_the_command_it_is_given(
    tmp_path: pathlib.Path,
) -> None:
    start = BINDER / "start"
    assert os.access(start, os.X_OK), "repo2docker runs binder/start as a program"
    assert start.read_text(encoding="utf-8").startswith("#!/bin/bash\n")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("STOPLIST_NB_")}
    done = subprocess.run(
        [start, "sh", "-c", 'echo "demo=$STOPLIST_NB_DEMO args=$0 $1"', "one", "two words"],
        env=environ, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout == "demo=1 args=one two words\n"


def test_runtime_is_a_python_the_package_supports() -> None:
    runtime = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    match = re.fullmatch(r"python-3\.(\d+)", runtime)
    assert match, runtime
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    floor = re.search(r'^requires-python = ">=3\.(\d+)"$', pyproject, re.MULTILINE)
    assert floor
    assert int(match[1]) >= int(floor[1])


def test_notebooks_run_in_an_environment_built_from_binder_files(
    tmp_path: pathlib.Path,
) -> None:
    env_dir = tmp_path / "binder-env"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("STOPLIST_NB_", "UV_"))}
    environ.pop("PYTHONPATH", None)
    # Its cache may sit on another file system than the temporary directory.
    environ["UV_LINK_MODE"] = "copy"
    install = (uv.find_uv_bin(), "pip", "install", "-q", "--python", python)

    def run(*args: str | os.PathLike[str], cwd: pathlib.Path = ROOT) -> str:
        done = subprocess.run(
            [str(a) for a in args], cwd=cwd, env=environ, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
        return done.stdout + done.stderr

    # As repo2docker does: from the repository's root, the requirements file only.
    run(*install, "-r", BINDER / "requirements.txt")
    if (BINDER / "postBuild").exists():
        run("bash", BINDER / "postBuild")

    versions = run(uv.find_uv_bin(), "pip", "freeze", "--exclude-editable", "--python", python)
    installed = {
        name.lower().replace("-", "_"): version
        for name, _, version in (line.partition("==") for line in versions.split())
    }
    for name, version in pins().items():
        assert installed.get(name) == version, name
    labextensions = run(python, "-m", "jupyter", "labextension", "list")
    assert "@jupyter-widgets/jupyterlab-manager" in labextensions

    # The package comes from site-packages, not from this checkout.
    where = run(python, "-c", "import stoplist_nb; print(stoplist_nb.__file__)", cwd=tmp_path)
    assert where.startswith(str(env_dir)), where

    # The test runner is the only thing added to what Binder would have.
    run(*install, "pytest", "nbval")
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 3
    # An ini file of its own: the checkout's pytest settings name plugins Binder lacks.
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    # As Binder starts Jupyter: through binder/start, which asks for the demo service.
    report = run(
        BINDER / "start", python, "-m", "pytest", "-c", tmp_path / "pytest.ini",
        "-p", "no:cacheprovider", "--nbval-lax", "--nbval-current-env", "-q", *notebooks,
        cwd=tmp_path,
    )  # fmt: skip
    assert re.search(r"\b\d+ passed\b", report), report
    assert "failed" not in report, report
    assert "error" not in report.lower(), report
