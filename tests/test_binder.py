"""The Binder configuration, checked by repo2docker itself without docker.

`repo2docker --no-build --debug --no-run .` resolves the configuration exactly as mybinder.org
would and prints the Dockerfile it would build, so a misplaced or ignored file shows up here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
REPO2DOCKER = Path(sys.executable).with_name("repo2docker")


@pytest.fixture(scope="module")
def dockerfile() -> str:
    if not REPO2DOCKER.exists():
        pytest.fail(
            f"{REPO2DOCKER} is missing: pip install -e '.[test]' installs jupyter-repo2docker"
        )
    proc = subprocess.run(
        [str(REPO2DOCKER), "--no-build", "--debug", "--no-run", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def test_python_version_comes_from_runtime_txt(dockerfile: str) -> None:
    version = (BINDER / "runtime.txt").read_text().strip()
    assert re.fullmatch(r"python-3\.1\d", version), version
    assert f"python={version.removeprefix('python-')}" in dockerfile


def test_requirements_install_cpu_torch_and_the_package(dockerfile: str) -> None:
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in dockerfile
    lines = [
        line.strip()
        for line in (BINDER / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    # Binder reads binder/ alone: the root pyproject is installed only through `-e .`.
    assert "-e .[models]" in lines  # the tours build timm and transformers models
    torch_pins = [line for line in lines if line.startswith("torch==")]
    assert len(torch_pins) == 1 and re.fullmatch(r"torch==[\d.]+\+cpu", torch_pins[0]), torch_pins
    assert any("download.pytorch.org/whl/cpu" in line for line in lines)
    # The same torch release as `make setup`, so Binder runs what CI tested.
    makefile = (ROOT / "Makefile").read_text()
    pinned = re.search(r"^TORCH \?= torch==([\d.]+) torchvision==([\d.]+)", makefile, re.M)
    assert pinned, "Makefile has no `TORCH ?= torch==X.Y.Z torchvision==A.B.C` line"
    assert torch_pins[0] == f"torch=={pinned.group(1)}+cpu"
    assert f"torchvision=={pinned.group(2)}+cpu" in lines


def test_apt_packages_are_installed(dockerfile: str) -> None:
    packages = (BINDER / "apt.txt").read_text().split()
    assert "graphviz" in packages
    install = re.search(r"apt-get install --yes --no-install-recommends ([^&]+)&&", dockerfile)
    assert install, "no apt-get install step for binder/apt.txt in the Dockerfile"
    assert set(packages) <= set(install.group(1).split())


def test_post_build_builds_the_javascript_after_pip(dockerfile: str) -> None:
    post_build = BINDER / "postBuild"
    assert os.access(post_build, os.X_OK), "binder/postBuild must be executable"
    script = post_build.read_text()
    assert script.startswith("#!")
    assert "npm ci" in script and "npm run build" in script
    assert "set -e" in script  # a failed build must fail the image, not ship an empty widget
    # npm ci needs the lock file; `npm run build` needs the script it names.
    assert (ROOT / "package-lock.json").is_file()
    scripts = json.loads((ROOT / "package.json").read_text()).get("scripts", {})
    assert "build" in scripts, "package.json has no build script for postBuild to run"
    pip_at = dockerfile.index('-r "binder/requirements.txt"')
    post_at = dockerfile.index("RUN ./binder/postBuild")
    assert pip_at < post_at
