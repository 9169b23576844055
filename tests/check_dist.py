"""What `make dist` must have built: `python tests/check_dist.py dist/` (exit 1 naming what is wrong).

- the sdist carries the frontend's sources (js/*.ts, package.json, package-lock.json, the build
  script) so that anyone can rebuild the bundle, and the built bundle too, so that installing it
  needs no Node.js (hatch_build.py builds it only where it is missing);
- the wheel carries the built bundle (src/torchxray/static/) and none of the sources;
- both say the version written in src/torchxray/__init__.py, and carry the license.

Not a pytest test: it reads what `make dist` wrote, and building a wheel and an sdist is too slow
for the suite (tests/ui/test_packaging.py installs a wheel built from a clean clone instead).
"""

from __future__ import annotations

import re
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ("widget.js", "widget.css", "viz.js")


def version() -> str:
    text = (ROOT / "src" / "torchxray" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    if match is None:
        raise SystemExit('src/torchxray/__init__.py has no __version__ = "..." line')
    return match.group(1)


def sdist_problems(path: Path, want: str) -> list[str]:
    with tarfile.open(path) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        pkg_info = tar.extractfile(f"torchxray-{want}/PKG-INFO")
        meta = pkg_info.read().decode() if pkg_info is not None else ""
    sources = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "js").rglob("*.ts"))
    needed = [
        *sources,
        "js/build.mjs",
        "js/styles.css",
        "package.json",
        "package-lock.json",
        "hatch_build.py",
        "pyproject.toml",
        "README.md",
        "LICENSE",
        *(f"src/torchxray/static/{name}" for name in BUNDLE),
    ]
    problems = [f"{path.name} lacks {n}" for n in needed if n not in names]
    problems += [
        f"{path.name} holds {n}" for n in names if n.startswith(("node_modules/", "site/"))
    ]
    if f"\nVersion: {want}\n" not in meta:
        problems.append(f"{path.name}'s PKG-INFO does not say Version: {want}")
    return problems


def wheel_problems(path: Path, want: str) -> list[str]:
    with zipfile.ZipFile(path) as whl:
        names = set(whl.namelist())
        meta = whl.read(f"torchxray-{want}.dist-info/METADATA").decode()
    problems = [f"{path.name} lacks torchxray/static/{n}" for n in BUNDLE]
    problems = [p for p, n in zip(problems, BUNDLE) if f"torchxray/static/{n}" not in names]
    problems += [f"{path.name} holds the source {n}" for n in names if n.endswith(".ts")]
    if not any(n.startswith(f"torchxray-{want}.dist-info/licenses/LICENSE") for n in names):
        problems.append(f"{path.name} carries no LICENSE")
    if f"\nVersion: {want}\n" not in meta:
        problems.append(f"{path.name}'s METADATA does not say Version: {want}")
    return problems


def main(folder: Path) -> int:
    want = version()
    sdists = sorted(folder.glob("torchxray-*.tar.gz"))
    wheels = sorted(folder.glob("torchxray-*.whl"))
    if [s.name for s in sdists] != [f"torchxray-{want}.tar.gz"] or len(wheels) != 1:
        print(f"expected one sdist and one wheel of torchxray {want} in {folder}, found: "
              f"{[p.name for p in sdists + wheels]}")  # fmt: skip
        return 1
    problems = sdist_problems(sdists[0], want) + wheel_problems(wheels[0], want)
    for p in problems:
        print(p)
    if not problems:
        print(f"{sdists[0].name}: JS sources and bundle; {wheels[0].name}: bundle, no sources")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "dist")))
