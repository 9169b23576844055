"""`python -m bench.latest`: the libraries of the upstream lane (`make test-latest`), each with the
version the project pins (pyproject.toml) and the version installed in this interpreter, as a
markdown table (bench/README.md keeps the lane's results in this shape)."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

# The libraries the lane upgrades, as the registry names them (Makefile's LATEST_LIBS), and torch.
LIBRARIES = (
    "torch",
    "torchvision",
    "transformers",
    "timm",
    "diffusers",
    "torchao",
    "peft",
    "open-clip-torch",
    "accelerate",
    "kernels",
)


def pins(pyproject: Path = Path("pyproject.toml")) -> dict[str, str]:
    """name -> pinned version, from every ``"name==X.Y"`` requirement in pyproject.toml (read
    as text: tomllib is Python 3.11+, and the pins are one per line)."""
    found = re.findall(r'"([A-Za-z0-9_.-]+)==([^";\s]+)"', pyproject.read_text())
    out = {name.lower().replace("_", "-"): version for name, version in found}
    make = Path("Makefile")
    if make.exists():  # torch and torchvision are pinned in the Makefile (TORCH ?= ...)
        for name, version in re.findall(r"(torch|torchvision)==([0-9][^\s\"]*)", make.read_text()):
            out.setdefault(name, version)
    return out


def installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def main() -> None:
    pinned = pins()
    print("| library | pinned | installed here |")
    print("|---|---|---|")
    for name in LIBRARIES:
        print(f"| {name} | {pinned.get(name, '-')} | {installed(name)} |")


if __name__ == "__main__":
    main()
