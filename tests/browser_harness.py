"""JupyterLab in Debian's Chromium, driven by Playwright: what tests/test_browser.py uses.

A :class:`LabServer` runs ``jupyter lab`` on 127.0.0.1 with a random token in a
directory of its own; :func:`open_browser` starts the system's ``chromium``
(Playwright's own browser download is never used); a :class:`NotebookPage`
opens a notebook there, runs its cells and finds what they display, and a
:class:`WidgetArea` reads and drives the widgets of one cell's output.

Nothing here reaches beyond this machine: the server listens on loopback, news
and update checks are off, and Chromium starts with its background connections
switched off (the closed network would refuse them and stall the page).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from children import popen
from playwright.sync_api import BrowserContext, Locator, Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

#: Where Debian's ``chromium`` package puts the browser.
DEBIAN_CHROMIUM = "/usr/bin/chromium"

#: How to get the browser, for the skip message.
INSTALL_HINT = (
    "the browser tests need Debian's chromium: apt-get install chromium "
    "(or set STOPLIST_NB_CHROMIUM to a Chromium binary)"
)

#: Chromium's options: headless, no sandbox (root in CI), and none of the
#: background connections (updates, sync, QUIC probes) that the closed network
#: would refuse.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

#: Milliseconds between two keys typed "as a person does" (about 17 keys a second).
KEY_DELAY_MS = 60

#: The text ipywidgets shows in place of a widget its front end cannot draw.
WIDGET_ERROR = "Error displaying widget"

# JupyterLab's own settings for the run: no news, no update check, no toasts,
# and a notebook opens on the preferred kernel without asking (a "Select Kernel"
# dialog, shown when the page loads before the server has the session, would
# otherwise stop every cell on a loaded machine).
_LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
        "doNotDisturbMode": True,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "autoStartDefaultKernel": True,
    },
}


def find_chromium() -> str | None:
    """The Chromium binary to drive: ``STOPLIST_NB_CHROMIUM``, ``chromium`` on PATH, or None."""
    named = os.environ.get("STOPLIST_NB_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    found = shutil.which("chromium")
    if found:
        return found
    return DEBIAN_CHROMIUM if os.access(DEBIAN_CHROMIUM, os.X_OK) else None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_notebook(path: Path, cells: Sequence[str]) -> Path:
    """Write an nbformat 4 notebook of code cells for the ``python3`` kernel."""
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"cell-{i}",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for i, source in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    return path


class LabServer:
    """``jupyter lab`` on 127.0.0.1, token auth, serving ``root``; every state dir under ``home``.

    Kernels inherit an environment without ``STOPLIST_NB_URL`` / ``STOPLIST_NB_TOKEN``,
    so a notebook reads the embedded demo service with ``sn.connect(demo=True)``.
    """

    def __init__(self, root: Path, home: Path) -> None:
        self.root, self.home = root, home
        self.token = secrets.token_hex(24)
        self.port = 0
        self.log_path = home / "jupyter-lab.log"
        self.runtime_dir = home / "runtime"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """The URL of ``path`` under the server, with the token."""
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}/{path.lstrip('/')}{sep}token={self.token}"

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STOPLIST_NB_")}
        settings = self.home / "lab-settings"
        for name, value in _LAB_SETTINGS.items():
            target = settings / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(value), encoding="utf-8")
        env.update(
            # No user's config, kernels or state: the python3 kernel is this interpreter.
            JUPYTER_CONFIG_DIR=str(self.home / "config"),
            JUPYTER_DATA_DIR=str(self.home / "data"),
            JUPYTER_RUNTIME_DIR=str(self.runtime_dir),
            JUPYTERLAB_SETTINGS_DIR=str(settings),
            JUPYTERLAB_WORKSPACES_DIR=str(self.home / "workspaces"),
            IPYTHONDIR=str(self.home / "ipython"),
            # In the environment rather than on the command line, where ps shows it.
            JUPYTER_TOKEN=self.token,
        )
        return env

    def start(self, *, timeout: float = 60.0) -> None:
        """Start the server and wait until its REST API answers.

        Raises:
            RuntimeError: It exited or did not answer in ``timeout`` seconds;
                the message names its log file.
        """
        for _ in range(3):  # a port taken between free_port() and the bind: another one
            self.port = free_port()
            args = [
                sys.executable, "-m", "jupyterlab",
                "--no-browser", "--allow-root",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0", f"--ServerApp.root_dir={self.root}",
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ]  # fmt: skip
            with self.log_path.open("ab") as log:
                self._proc = popen(
                    args,
                    cwd=self.root,
                    env=self._env(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            if self._wait_ready(timeout):
                return
            self.stop()
            if "already in use" not in self.log_path.read_text(errors="replace"):
                break
        raise RuntimeError(f"jupyter lab did not start; its log: {self.log_path}")

    def _wait_ready(self, timeout: float) -> bool:
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=2) as reply:
                    if reply.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        return False

    def start_session(self, path: str, *, timeout: float = 60.0) -> None:
        """Start the ``python3`` kernel of the notebook at ``path`` (relative to the root).

        JupyterLab opening a notebook that has no session yet can start two kernels
        for it at once and shut one down while it starts, then ask which kernel to
        use; with the session made first, it connects to that one kernel.
        """
        body: dict[str, Any] = {"path": path, "name": Path(path).name, "type": "notebook"}
        body["kernel"] = {"name": "python3"}
        request = urllib.request.Request(
            self.url("api/sessions"),
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            reply.read()

    def kernel_pids(self) -> list[int]:
        """The kernels this server started: their command line names its runtime dir."""
        mark = str(self.runtime_dir).encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if mark in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
        return pids

    def stop(self, *, timeout: float = 15.0) -> None:
        """Shut the server and its kernels down; kill what is still there after ``timeout``."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            # The REST shutdown stops the kernels first; SIGTERM is the fallback.
            request = urllib.request.Request(self.url("api/shutdown"), method="POST")
            with contextlib.suppress(urllib.error.URLError, OSError):
                urllib.request.urlopen(request, timeout=5).close()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        deadline = time.monotonic() + 5
        while (left := self.kernel_pids()) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def open_browser(executable: str, profile: Path) -> Iterator[BrowserContext]:
    """Chromium at ``executable`` with a fresh profile in ``profile``, closed on exit."""
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=executable,
            args=list(CHROMIUM_ARGS),
            headless=True,
            viewport={"width": 1280, "height": 1800},
        )
        context.set_default_timeout(20_000)
        # Copy and paste as a person does them: the page may read and write the clipboard.
        context.grant_permissions(["clipboard-read", "clipboard-write"])
        try:
            yield context
        finally:
            context.close()


class NotebookPage:
    """One notebook open in JupyterLab: run cells, find their outputs, take screenshots."""

    def __init__(self, page: Page, shots: Path, server: LabServer | None = None) -> None:
        self.page, self.shots, self.server = page, shots, server

    def open(self, url: str, *, timeout: float = 60_000) -> None:
        """Open ``url`` (a ``lab/tree/...`` notebook) and wait until its kernel is idle."""
        self.page.goto(url)
        self.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=timeout)
        # The indicator appears once the kernel's session connects; "idle" before
        # that would let Run All run nothing.
        self.page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').wait_for(
            timeout=timeout
        )
        self.wait_idle(timeout=timeout)

    def wait_idle(self, *, timeout: float = 60_000) -> None:
        """Wait until the kernel is idle and no cell is queued or running."""
        self.page.wait_for_function(
            """() => {
                const status = document.querySelector('.jp-Notebook-ExecutionIndicator');
                if (status && status.getAttribute('data-status') !== 'idle') return false;
                return ![...document.querySelectorAll('.jp-InputArea-prompt')]
                    .some(p => p.textContent.includes('*'));
            }""",
            timeout=timeout,
        )

    def run_all(self, *, timeout: float = 90_000) -> None:
        """Run every cell from the Run menu and wait until they are done.

        Right after a notebook opens, JupyterLab can take the command and run
        nothing (the kernel shows idle a moment before the notebook can use it),
        so the menu is used again when no cell starts within 10 s; and it may
        ask which kernel to use although one is running: the notebook's own is
        picked. On a loaded machine the kernel can also drop a cell while it
        settles: the rest then run without what it defines (out of order), or
        the cell waits forever (a prompt that stays ``[*]``). Either way the
        kernel is restarted and every cell run again, up to three runs in all;
        the error names the prompts each run left.
        """
        seen: list[list[str]] = []
        for attempt in range(3):
            if attempt:
                self._menu("Kernel", "Restart Kernel and Run All Cells…")
                self.accept_dialog()
            else:
                self._start_run_all()
            try:
                self.page.wait_for_function(
                    """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
                        .every(p => /\\[\\d+\\]/.test(p.textContent))""",
                    timeout=timeout,
                )
                self.wait_idle(timeout=timeout)
            except PlaywrightTimeout:
                seen.append(self.prompts())
            else:
                if self._ran_in_order():
                    return
                seen.append(self.prompts())
            print(f"Run All Cells, run {attempt + 1}, left the prompts {seen[-1]}")
        raise AssertionError(f"Run All Cells did not run every cell in order in 3 runs: {seen}")

    def _start_run_all(self) -> None:
        """Press Run All Cells until a cell starts (three tries)."""
        for _ in range(3):
            self.accept_dialog()
            self._menu("Run", "Run All Cells")
            if self._wait_started() or (self.accept_dialog() and self._wait_started()):
                return

    def _menu(self, menu: str, item: str) -> None:
        """Click ``item`` in the menu bar's ``menu``."""
        self.page.locator(".lm-MenuBar-itemLabel").filter(has_text=_exact(menu)).click()
        self.page.locator(".lm-Menu-itemLabel").filter(has_text=_exact(item)).click()

    def prompts(self) -> list[str]:
        """The code cells' prompts as shown (``[3]``, ``[*]``, ``[ ]``), and the kernel's status."""
        shown: list[str] = self.page.evaluate(
            """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
                .map(p => p.textContent.trim())"""
        )
        status = self.page.locator(".jp-Notebook-ExecutionIndicator")
        kernel = status.first.get_attribute("data-status") if status.count() else None
        return [*shown, f"kernel {kernel}"]

    def _ran_in_order(self) -> bool:
        """Whether the code cells ran one after another, in order (as one Run All runs them)."""
        counts: list[int] = self.page.evaluate(
            """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
                .map(p => parseInt((p.textContent.match(/\\[(\\d+)\\]/) || [0, -1])[1]))"""
        )
        return all(b == a + 1 for a, b in itertools.pairwise(counts))

    def _wait_started(self) -> bool:
        """Wait up to 10 s for a cell to be queued or run, or for a dialog; say which."""
        try:
            self.page.wait_for_function(
                """() => document.querySelector('.jp-Dialog') !== null
                    || [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
                        .some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))""",
                timeout=10_000,
            )
        except PlaywrightTimeout:
            return False
        return self.page.locator(".jp-Dialog").count() == 0

    def accept_dialog(self) -> bool:
        """Press the default button of a JupyterLab dialog, if one is open."""
        button = self.page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept")
        if not button.count():
            return False
        # A click that lands while the dialog is still being set up does nothing
        # (seen about once in four runs), and on a loaded machine a dialog can
        # be replaced by the next one: press again, by click or by Enter (the
        # accept button has the focus), until none is left.
        presses = 12
        for attempt in range(presses):
            with contextlib.suppress(PlaywrightTimeout):
                if not button.count():
                    return True
                if attempt % 2:
                    self.page.keyboard.press("Enter")
                else:
                    button.first.click(timeout=5_000)
                button.first.wait_for(state="detached", timeout=5_000)
        if not button.count():
            return True
        raise PlaywrightTimeout(f"a JupyterLab dialog stayed open after {presses} presses")

    def cell(self, index: int) -> Locator:
        """The ``index``-th cell (from 0)."""
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def run_cell(self, index: int, *, timeout: float = 60_000) -> None:
        """Run one cell with Ctrl+Enter (as typed in its editor) and wait until it is done."""
        cell = self.cell(index)
        before = cell.locator(".jp-InputArea-prompt").inner_text()
        cell.locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Control+Enter")
        self.page.wait_for_function(
            """([i, before]) => {
                const cell = document.querySelectorAll('.jp-Notebook .jp-Cell')[i];
                const p = cell.querySelector('.jp-InputArea-prompt').textContent;
                return /\\[\\d+\\]/.test(p) && p !== before;
            }""",
            arg=[index, before],
            timeout=timeout,
        )
        self.wait_idle(timeout=timeout)

    def set_source(self, index: int, source: str) -> None:
        """Replace the text of the ``index``-th cell's editor with ``source``."""
        editor = self.cell(index).locator(".jp-InputArea-editor .cm-content")
        editor.click()
        self.page.keyboard.press("Control+a")
        self.page.keyboard.insert_text(source)

    def start_cell(self, index: int) -> None:
        """Run the ``index``-th cell with Ctrl+Enter and return once the kernel is busy with it."""
        self.cell(index).locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Control+Enter")
        self.page.locator('.jp-Notebook-ExecutionIndicator[data-status="busy"]').wait_for()

    def busy(self) -> bool:
        """Whether the kernel is running a cell right now."""
        status = self.page.locator(".jp-Notebook-ExecutionIndicator")
        return status.get_attribute("data-status") == "busy"

    def output(self, index: int) -> Locator:
        """The output area of the ``index``-th cell."""
        return self.cell(index).locator(".jp-Cell-outputArea")

    def widget_errors(self) -> int:
        """How many widgets the page shows as an error instead of drawing them."""
        return self.page.get_by_text(WIDGET_ERROR).count()

    def shot(self, name: str, target: Locator | None = None) -> Path:
        """Save a PNG of the page (or of ``target``) as ``name.png`` and return its path."""
        path = self.shots / f"{name}.png"
        if target is None:
            self.page.screenshot(path=str(path), full_page=True)
        else:
            target.screenshot(path=str(path))
        return path


class WidgetArea:
    """The widgets in one cell's output, found by CSS class and by text."""

    def __init__(self, root: Locator, shots: Path | None = None) -> None:
        self.root, self.shots = root, shots

    def shot(self, name: str) -> Path:
        """Save a PNG of these widgets as ``name.png`` in ``shots`` and return its path."""
        if self.shots is None:
            raise ValueError("this WidgetArea was made without a screenshot directory")
        path = self.shots / f"{name}.png"
        self.root.screenshot(path=str(path))
        return path

    @property
    def page(self) -> Page:
        """The page it is on."""
        return self.root.page

    def by_class(self, name: str) -> Locator:
        """Elements with CSS class ``name`` (no leading dot)."""
        return self.root.locator(f".{name}")

    def button(self, text: str) -> Locator:
        """The buttons whose text is exactly ``text``."""
        return self.root.locator("button").filter(has_text=_exact(text))

    def type_into(self, field: Locator, text: str, *, enter: bool = False) -> None:
        """Click ``field``, replace its text with ``text`` typed at a person's pace, then Enter."""
        field.click()
        field.press("Control+a")
        if text:
            field.press_sequentially(text, delay=KEY_DELAY_MS)
        else:
            field.press("Delete")
        if enter:
            field.press("Enter")

    def commit(self, field: Locator) -> None:
        """Leave ``field`` with Tab, as a user does, so its widget sends what was typed."""
        field.press("Tab")

    def json_text(self) -> str:
        """The text of the JSON preview."""
        shown = self.by_class("sn-json")
        if shown.count():
            pre = shown.locator("pre")
            return (pre if pre.count() else shown).first.inner_text()
        return self.root.locator(".widget-html pre").first.inner_text()

    def json(self) -> Any:
        """The JSON preview, parsed."""
        return json.loads(self.json_text())

    def wait_json(self, expected: Any, *, timeout: float = 10.0) -> Any:
        """Wait until the JSON preview equals ``expected``; return what it shows last."""
        deadline = time.monotonic() + timeout
        shown: Any = None
        while time.monotonic() < deadline:
            with contextlib.suppress(ValueError):
                shown = self.json()
                if shown == expected:
                    return shown
            time.sleep(0.1)
        return shown


def _exact(text: str) -> re.Pattern[str]:
    """A pattern for ``has_text`` that matches ``text`` alone, not inside a longer label."""
    return re.compile(rf"^\s*{re.escape(text)}\s*$")
