"""A throwaway `marimo edit` server on one notebook of `notebooks/` (loopback, headless, no token),
as `lab.py` starts JupyterLab; `python tests/ui/mo_server.py` prints its URL and waits.

Named apart from the `marimo` package, which this folder being on sys.path would otherwise shadow.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from lab import NOTEBOOKS, Server, free_port

NOTEBOOK = NOTEBOOKS / "09-marimo.py"

# A person's own marimo settings do not apply; cells run as the notebook opens (marimo's
# "autorun on startup"), so a flow does not depend on where marimo puts its Run button.
_CONFIG = """\
[runtime]
auto_instantiate = true

[completion]
activate_on_typing = false
"""


class Marimo(Server):
    """`marimo edit NOTEBOOK` from this venv on 127.0.0.1, with its own home and settings."""

    def __init__(self, workdir: Path, notebook: Path = NOTEBOOK) -> None:
        self.workdir = workdir
        self.root = workdir / "root"
        self.home = workdir / "home"
        for d in (self.root, self.home, self.home / ".config" / "marimo"):
            d.mkdir(parents=True, exist_ok=True)
        (self.home / ".config" / "marimo" / "marimo.toml").write_text(_CONFIG)
        self.notebook = self.root / notebook.name
        shutil.copy(notebook, self.notebook)
        self.log_path = workdir / "marimo.log"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 90.0) -> None:
        marimo = Path(sys.executable).with_name("marimo")
        cmd = [
            str(marimo),
            "edit",
            str(self.notebook),
            "--headless",
            "--no-token",
            "--host=127.0.0.1",
            f"--port={self.port}",
            "--skip-update-check",
            "--no-sandbox",
        ]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # The kernel imports torchxray as the tests do (PYTHONPATH passes through); marimo's
        # settings, cache and state live in the temp home.
        env["HOME"] = str(self.home)
        for var, sub in (
            ("XDG_CONFIG_HOME", ".config"),
            ("XDG_CACHE_HOME", ".cache"),
            ("XDG_STATE_HOME", ".state"),
        ):
            env[var] = str(self.home / sub)
        self.spawn("marimo", cmd, self.root, env, f"{self.url}/health", timeout)


if __name__ == "__main__":
    import tempfile

    with Marimo(Path(tempfile.mkdtemp(prefix="torchxray-marimo-"))) as server:
        print(server.url, server.notebook, flush=True)
        signal.pause()
