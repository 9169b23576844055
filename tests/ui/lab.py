"""A throwaway JupyterLab server, and the few things a person does in it (open, run, read cells).

Kept apart from the fixtures so the flows read as what a person does, and so the server can be
started by hand for debugging: `python tests/ui/lab.py` prints its URL and waits.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import nbformat
from playwright.sync_api import Locator, Page, expect
from typing_extensions import Self

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"

# Settings a fresh JupyterLab would otherwise ask about in a toast over the widget.
_QUIET_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    # Render every cell: with windowing, off-screen cells have no DOM to read prompts from.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}

# JupyterLab's error output; a traceback in any cell fails the flow.
ERROR_OUTPUT = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"


# The first cell of most flows: the demo ResNet and a batch of images, built in code.
RESNET_SETUP = """\
import torch
import torchxray as tx
from torchxray import demo

model = demo.resnet_ish()
x = demo.images()"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A local server process (JupyterLab, marimo) in its own session, started from this venv:
    its stdout and stderr in `log_path`, ready once `health` answers 200."""

    log_path: Path
    proc: subprocess.Popen[bytes] | None = None

    def spawn(
        self, what: str, cmd: list[str], cwd: Path, env: dict[str, str], health: str, timeout: float
    ) -> None:
        # Its kernels must be this venv's python, so `import torchxray` works in them.
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        log = self.log_path.open("wb")
        # Its own session, so the kernels it starts can be ended with it by its process group id.
        self.proc = subprocess.Popen(
            cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{what} exited early:\n{self.log()}")
            try:
                with urllib.request.urlopen(health, timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"{what} did not answer on {health} in {timeout}s:\n{self.log()}")

    def start(self, timeout: float = 90.0) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        """``with Lab(dir) as lab:``: started, and stopped however the block ends."""
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()  # lets the server shut its kernels down
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        # Anything it left behind (an orphaned kernel) is in the group it led.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


class Lab(Server):
    """`jupyter lab` from this venv on 127.0.0.1, with its own root, settings and workspaces."""

    def __init__(self, workdir: Path, app: str = "lab", env: dict[str, str] | None = None) -> None:
        self.app = app  # "lab" (JupyterLab) or "notebook" (Notebook 7)
        self.extra_env = dict(env or {})  # for the server and so for its kernels
        self.workdir = workdir
        self.root = workdir / "root"
        self.settings = workdir / "settings"
        self.workspaces = workdir / "workspaces"
        self.log_path = workdir / "lab.log"
        for d in (self.root, self.settings, self.workspaces):
            d.mkdir(parents=True, exist_ok=True)
        for name, value in _QUIET_SETTINGS.items():
            path = self.settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        for nb in NOTEBOOKS.glob("*.ipynb"):
            shutil.copy(nb, self.root / nb.name)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 90.0) -> None:
        jupyter = Path(sys.executable).with_name("jupyter")
        cmd = [
            str(jupyter),
            self.app,
            "--no-browser",
            "--ServerApp.token=",
            "--ServerApp.password=",
            "--ServerApp.ip=127.0.0.1",
            f"--port={self.port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.root}",
            f"--LabApp.workspaces_dir={self.workspaces}",
            f"--LabApp.user_settings_dir={self.settings}",
            # Lets the fixture shut kernels down through the REST API between flows.
            "--ServerApp.disable_check_xsrf=True",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")  # CI containers run as root
        env = dict(os.environ, PYTHONUNBUFFERED="1", **self.extra_env)
        # Nothing from the user's own Jupyter/IPython setup (passwords, startup scripts) applies.
        for var, sub in (
            ("JUPYTER_CONFIG_DIR", "config"),
            ("JUPYTER_RUNTIME_DIR", "runtime"),
            ("IPYTHONDIR", "ipython"),
        ):
            env[var] = str(self.workdir / sub)
        self.spawn("jupyter lab", cmd, self.root, env, f"{self.url}/api", timeout)

    def api(self, method: str, path: str) -> object:
        req = urllib.request.Request(f"{self.url}/api/{path}", method=method)
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Frees the two CPUs for the next flow; each flow starts its own kernel."""
        sessions = self.api("GET", "sessions")
        assert isinstance(sessions, list)
        for s in sessions:
            self.api("DELETE", f"sessions/{s['id']}")

    def write_notebook(self, name: str, *cells: str) -> str:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
        }
        nbformat.write(nb, self.root / name)
        return name


def open_notebook(page: Page, lab: Lab, name: str, workspace: str) -> None:
    """Opens a notebook in a fresh workspace (no tabs restored from an earlier flow)."""
    page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{name}?reset")
    expect(page.locator(".jp-NotebookPanel")).to_be_visible()
    expect(page.get_by_role("tab", name=re.compile(re.escape(name)))).to_be_visible()
    wait_idle(page)


def wait_idle(page: Page, timeout: float = 120_000) -> None:
    """Waits until the kernel is connected and idle, as the status bar says.

    The toolbar's execution indicator reads "idle" before a kernel exists, and cells run then are
    silently dropped; the status bar names the kernel's state only once it is connected.
    """
    status = page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\|\s*Idle\s*$"))
    expect(status).to_be_visible(timeout=timeout)
    indicator = page.locator(
        ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator"
    )
    expect(indicator).to_have_attribute("data-status", "idle", timeout=timeout)


def menu(page: Page, top: str, *path: str) -> None:
    """Clicks through the menu bar, e.g. menu(page, "Settings", "Theme", "JupyterLab Dark")."""
    page.get_by_role("menubar").get_by_role("menuitem", name=top, exact=True).click()
    for label in path:
        # Lumino gives submenus no role and toggles role="menuitemcheckbox": match the label.
        exact = page.locator(".lm-Menu-itemLabel").get_by_text(label, exact=True)
        page.locator(".lm-Menu .lm-Menu-item").filter(has=exact).filter(visible=True).first.click()


def code_cells(page: Page) -> Locator:
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell")


def run_all(page: Page, timeout: float = 120_000) -> None:
    """Run > Run All Cells, then waits until every code cell has an execution count."""
    menu(page, "Run", "Run All Cells")
    prompts = code_cells(page).locator(".jp-InputPrompt")
    deadline = time.monotonic() + timeout / 1000
    while True:
        texts = [t.strip() for t in prompts.all_inner_texts()]
        if texts and all(re.fullmatch(r"\[\d+\]:", t) for t in texts):
            break
        failed = errors(page)
        if failed:  # the cells after it will never run: say why now
            raise AssertionError(f"a cell raised during Run All:\n{failed[0][-2000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(
                f"cells still running or not run after {timeout / 1000:.0f}s: {texts}"
            )
        page.wait_for_timeout(250)
    wait_idle(page, timeout)


def run_cell(page: Page, index: int, timeout: float = 60_000) -> str:
    """Clicks into a code cell, runs it in place (Ctrl+Enter) and returns its new output text."""
    cell = code_cells(page).nth(index)
    prompt = cell.locator(".jp-InputPrompt")
    before = prompt.inner_text().strip()
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    expect(prompt).not_to_have_text(before, timeout=timeout)
    expect(prompt).to_have_text(re.compile(r"\[\d+\]:"), timeout=timeout)
    return cell.locator(".jp-OutputArea").inner_text()


def set_theme(page: Page, theme: str) -> None:
    """Settings > Theme > `theme` ("JupyterLab Dark" / "JupyterLab Light"); waits until applied."""
    menu(page, "Settings", "Theme", theme)
    expect(page.locator("body")).to_have_attribute("data-jp-theme-name", theme)
    # JupyterLab covers the page with its splash screen while the theme's CSS loads.
    expect(page.locator("#jupyterlab-splash")).to_have_count(0)


def errors(page: Page) -> list[str]:
    """Tracebacks shown in the notebook (IPython starts them with a rule of dashes)."""
    texts = page.locator(ERROR_OUTPUT).all_inner_texts()
    return [t for t in texts if t.lstrip().startswith("---") or "Traceback (most recent" in t]


def settled(read: Callable[[], T], ok: Callable[[T], bool], timeout: float = 15.0) -> T:
    """``read()`` again until ``ok`` holds of what it returns, or ``timeout`` seconds pass (then
    the last reading): for a figure the page gives, such as a colour or a position, that a
    re-render (the probe's result arriving) can take from under it mid-read. Playwright's
    ``expect`` retries text and attributes, not a computed value."""
    end = time.monotonic() + timeout
    got = read()
    while not ok(got) and time.monotonic() < end:
        time.sleep(0.1)
        got = read()
    return got


def explorer(page: Page, cell: int | None = None) -> Locator:
    """The Explorer widget in a code cell's output (the last one shown when `cell` is None)."""
    scope = code_cells(page).nth(cell) if cell is not None else page
    return scope.locator(".tx-root").last


def treeitem(scope: Page | Locator, name: str) -> Locator:
    """A tree row by the module's attribute name, e.g. "conv1" matches "conv1 Conv2d"."""
    return scope.get_by_role("treeitem", name=re.compile(rf"^{re.escape(name)} "))


def hide_file_browser(page: Page) -> None:
    """Closes the left sidebar so the notebook (and screenshots) get the room."""
    if page.locator("#jp-left-stack").is_visible():
        menu(page, "View", "Appearance", "Show Left Sidebar")
        expect(page.locator("#jp-left-stack")).to_be_hidden()


def open_explorer(
    page: Page, lab: Lab, name: str, *cells: str, cell: int = 1, status: str = r"^probe ok"
) -> Locator:
    """Writes a notebook of `cells`, opens and runs it; returns the explorer shown by code cell
    `cell` once its status matches `status` (the probe is ok)."""
    nb = lab.write_notebook(f"{name}.ipynb", *cells)
    open_notebook(page, lab, nb, name)
    hide_file_browser(page)
    run_all(page)
    assert errors(page) == []
    ex = explorer(page, cell)
    expect(ex.get_by_role("status")).to_have_text(re.compile(status), timeout=60_000)
    return ex


if __name__ == "__main__":
    import tempfile

    with Lab(Path(tempfile.mkdtemp(prefix="torchxray-lab-"))) as lab:
        print(lab.url, lab.root, flush=True)
        signal.pause()


# A small model in stages (a stem, two stages of residual blocks, a head), as notebook cell
# source: the Graph and Memory flows select blocks.1.1 in it.
STAGED_NET = """\
import torch
from torch import nn
import torchxray as tx


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv, self.act = nn.Conv2d(c, c, 3, padding=1), nn.ReLU()

    def forward(self, x):
        return x + self.act(self.conv(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.Sequential(
            nn.Sequential(Block(8), Block(8)),
            nn.Sequential(nn.Conv2d(8, 16, 1), Block(16)),
        )
        self.pool, self.head = nn.AdaptiveAvgPool2d(1), nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.pool(self.blocks(self.stem(x))).flatten(1))


model = Net()"""
