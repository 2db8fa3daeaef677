"""The wheel and the sdist built from this tree: what they carry, and what they leave out.

Both are built once per module, offline (``python -m build --no-isolation``, with the
setuptools and build of the test extra), from a copy of the tree (caches planted in it,
virtual environments left out), so the checkout itself is never written to.
"""

from __future__ import annotations

import email.message
import email.parser
import importlib.metadata
import importlib.util
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.packaging]

ROOT = pathlib.Path(__file__).resolve().parents[1]
# What a clean clone lacks: never in a distribution, wherever it sits.
JUNK = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "*.py[cod]",
    ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".ipynb_checkpoints",
    ".coverage", ".coverage.*", "stoplist-demo",
)  # fmt: skip
# Left out of the copy to build from, for speed; the caches of a working tree stay in it.
HEAVY = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "dist", "*.egg-info", ".mypy_cache", "stoplist-demo"
)
# Caches a working tree may hold among the shipped directories, planted in the copy.
PLANTED = (
    "tests/__pycache__/conftest.cpython-311.pyc",
    "tests/.hypothesis/examples/0/1",
    "notebooks/.ipynb_checkpoints/01-quickstart-checkpoint.ipynb",
    "benchmarks/__pycache__/profile_pages.cpython-311.pyc",
)
# Read by the test suite (notebooks run under nbval, binder/ rebuilt, benchmarks run,
# docs/faults.md checked, .ci/run compared with the README), so shipped with it.
SUITE_DIRS = ("tests", "notebooks", "binder", "benchmarks", "docs")
SETUPTOOLS_FLOOR = 77  # the build-system requirement of pyproject.toml
PYTHON = re.compile(r"Programming Language :: Python :: (3\.\d+)")


@dataclass(frozen=True)
class Dists:
    """The names inside each archive, relative to its root."""

    wheel: frozenset[str]
    sdist: frozenset[str]
    metadata: email.message.Message


def ignored(name: str) -> bool:
    return bool(JUNK("", [name]))


def source_files(top: str) -> list[str]:
    """Files under ``ROOT / top`` that a clean clone holds, as paths relative to ROOT."""
    found = (path.relative_to(ROOT) for path in sorted((ROOT / top).rglob("*")) if path.is_file())
    return [path.as_posix() for path in found if not any(map(ignored, path.parts))]


def setuptools_major() -> int:
    return int(importlib.metadata.version("setuptools").split(".")[0])


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    if importlib.util.find_spec("build") is None:
        pytest.skip("the `build` package is not installed (it is in the test extra)")
    if setuptools_major() < SETUPTOOLS_FLOOR:
        pytest.skip("setuptools>=77 (the build requirement, in the test extra) is not installed")
    work = tmp_path_factory.mktemp("dist")
    tree = work / "tree"
    shutil.copytree(ROOT, tree, ignore=HEAVY)
    for name in PLANTED:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(b"")
    out = work / "out"
    # The sdist first, then the wheel from the unpacked sdist: what pip does with it.
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        wheel_names = frozenset(archive.namelist())
        (meta,) = (n for n in wheel_names if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(archive.read(meta).decode("utf-8"))
    with tarfile.open(sdist) as archive:
        members = [m.name for m in archive.getmembers() if m.isfile()]
    prefix = f"{sdist.name.removesuffix('.tar.gz')}/"
    assert all(name.startswith(prefix) for name in members)
    return Dists(wheel_names, frozenset(n.removeprefix(prefix) for n in members), metadata)


def test_wheel_carries_the_license_and_the_typing_marker(dists: Dists) -> None:
    assert "stoplist_nb/py.typed" in dists.wheel
    licenses = [n for n in dists.wheel if n.endswith(".dist-info/licenses/LICENSE")]
    assert len(licenses) == 1
    assert dists.metadata["License-Expression"] == "MIT"
    assert dists.metadata.get_all("License-File") == ["LICENSE"]


def test_wheel_and_sdist_carry_the_query_builders_front_end(dists: Dists) -> None:
    front = {"stoplist_nb/widgets/static/builder.js", "stoplist_nb/widgets/static/builder.css"}
    assert front <= dists.wheel
    assert front <= dists.sdist


def test_wheel_holds_every_module_of_the_package_and_nothing_else(dists: Dists) -> None:
    modules = {p for p in source_files("stoplist_nb") if p.endswith(".py")}
    assert modules
    assert modules <= dists.wheel
    tops = {name.split("/")[0] for name in dists.wheel}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"stoplist_nb"}


def test_sdist_carries_the_license_the_typing_marker_and_its_tests(dists: Dists) -> None:
    assert {"LICENSE", "README.md", "pyproject.toml", "stoplist_nb/py.typed"} <= dists.sdist
    assert ".ci/run" in dists.sdist  # the README's test command is checked against it
    for top in SUITE_DIRS:
        shipped = source_files(top)
        assert shipped, top
        missing = [name for name in shipped if name not in dists.sdist]
        assert missing == [], top


def test_sdist_leaves_out_caches_and_environments(dists: Dists) -> None:
    junk = [name for name in dists.sdist if any(map(ignored, name.split("/")))]
    # setuptools writes its own egg-info into every sdist: that one is expected.
    assert [name for name in junk if ".egg-info/" not in name] == []


def test_metadata_names_the_supported_pythons_and_the_project_links(dists: Dists) -> None:
    assert dists.metadata["Requires-Python"] == ">=3.10"
    classifiers = dists.metadata.get_all("Classifier") or []
    versions = [m[1] for c in classifiers if (m := PYTHON.fullmatch(c))]
    assert versions == ["3.10", "3.11", "3.13"]  # the tested ones (.ci/tiers, test_quality)
    urls = dict(u.split(", ", 1) for u in dists.metadata.get_all("Project-URL") or [])
    assert urls["Source"] == "https://github.com/stoplist-nb/stoplist_nb"
    assert urls["Issues"] == "https://github.com/stoplist-nb/stoplist_nb/issues"
