"""The documentation's examples run: every ```python block of the README, getting started, the
home page and the guide pages, page by page, in order, in one fresh namespace per page (a page's
blocks build on each other, as a reader runs them in one notebook).

A block meant to be read, not run (it needs a GPU, a Hugging Face Trainer, gloo processes or a
minute of CPU) is fenced ```py instead; docs/contributing.md says so. The docstrings' examples run
through `pytest --doctest-modules src/torchxray`, and the notebooks through test_notebooks.py.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    ROOT / "docs" / "index.md",
    ROOT / "docs" / "getting-started.md",
    *sorted((ROOT / "docs" / "guide").glob("*.md")),
]
# Only ```python opens a block that runs (```py, ```bash, ```text do not).
BLOCK = re.compile(r"^```python[^\n]*\n(.*?)^```", re.M | re.S)


def blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text(encoding="utf-8"))


def test_every_guide_page_has_an_example_that_runs() -> None:
    without = [p.relative_to(ROOT).as_posix() for p in PAGES if not blocks(p)]
    # Binder's page shows a configuration, not code to run.
    assert without == ["docs/guide/binder.md"], without


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)], ids=lambda p: p.name)
def test_the_examples_of_a_page_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # files a page writes (ex.to_html) land in a temporary folder
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    out = io.StringIO()
    for i, code in enumerate(blocks(page)):
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"{page.name}, block {i + 1}", "exec"), namespace)  # noqa: S102
        except Exception as exc:
            pytest.fail(
                f"{page.relative_to(ROOT)}, block {i + 1} raised {type(exc).__name__}: {exc}\n"
                f"{code}\nprinted so far:\n{out.getvalue()[-2000:]}",
                pytrace=False,
            )
    for value in list(namespace.values()):  # an explorer shown by the page lets its model go
        close = getattr(value, "close", None)
        if type(value).__name__ == "Explorer" and callable(close):
            close()
