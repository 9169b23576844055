"""Build the widget's frontend into the wheel and the sdist (src/torchxray/static/).

A wheel or sdist built from a clean clone (``pip wheel .``, ``pip install git+...``, a release)
must carry static/widget.js, widget.css and viz.js, which are build outputs and not committed.
This hook runs ``npm ci`` and ``npm run build`` for standard builds when they are missing.

Not hatch-jupyter-builder, the usual choice for anywidget projects: its npm builder runs
``npm install``, which may rewrite package-lock.json (our CI installs with ``npm ci`` from the
lock), and it builds on editable installs too, where ``make setup`` already builds the bundle.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUILT = ("widget.js", "widget.css", "viz.js")


class FrontendBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return  # `make setup` builds the bundle into the checkout; the package reads it there
        root = Path(self.root)
        static = root / "src" / "torchxray" / "static"
        if all((static / name).is_file() for name in BUILT):
            return  # an sdist carries the bundle; a built checkout has it already
        npm = shutil.which("npm")
        if npm is None or not (root / "package.json").is_file():
            raise RuntimeError(
                "torchxray's frontend (src/torchxray/static/widget.js) is not built and cannot be: "
                "building it needs Node.js 20+ and npm, and the checkout's package.json"
            )
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=root, check=True)
        subprocess.run([npm, "run", "build"], cwd=root, check=True)
        missing = [name for name in BUILT if not (static / name).is_file()]
        if missing:
            raise RuntimeError(f"the frontend build did not produce {', '.join(missing)}")
