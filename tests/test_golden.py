"""Docs that run: golden files for what people read (``ProbeReport.summary()``, ``PatchLog.to_code()``
and the Explorer's first state of a demo model), and the doctest examples of every public module.

A golden file changes only on purpose: when an output changes, the failure shows a unified diff;
if the change is intended, regenerate with ``TORCHXRAY_UPDATE_GOLDEN=1 pytest tests/test_golden.py``
and commit the files under tests/golden/ with the change. The outputs come from fake probes and
fixed models, so they hold no timings; memory addresses are masked in case a repr carries one.
"""

from __future__ import annotations

import ast
import difflib
import doctest
import importlib
import json
import os
import re
from pathlib import Path

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray import demo
from torchxray._view.session import Session

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("TORCHXRAY_UPDATE_GOLDEN") == "1"
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def check_golden(name: str, text: str) -> None:
    """Compare ``text`` with tests/golden/``name`` (write it instead under the update flag)."""
    text = _ADDRESS.sub("0x…", text)
    path = GOLDEN / name
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"{path} is missing: run TORCHXRAY_UPDATE_GOLDEN=1 pytest {__file__}")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), text.splitlines(True), f"golden/{name}", "now"
            )
        )
        pytest.fail(
            f"{name} changed (if intended: TORCHXRAY_UPDATE_GOLDEN=1 pytest {__file__}):\n{diff}",
            pytrace=False,
        )


def test_check_golden_shows_a_diff_and_masks_addresses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(f"{__name__}.GOLDEN", tmp_path)
    monkeypatch.setattr(f"{__name__}.UPDATE", False)
    (tmp_path / "x.txt").write_text("a\nb at 0x…\n", encoding="utf-8")
    check_golden("x.txt", "a\nb at 0x7f3a2c1d9e80\n")  # the same once the address is masked
    with pytest.raises(pytest.fail.Exception, match=r"(?s)-b at 0x….*\+c"):
        check_golden("x.txt", "a\nc\n")


def test_probe_summary() -> None:
    torch.manual_seed(0)
    ok = tx.probe(demo.tiny_transformer(), demo.tokens())
    model = demo.resnet_ish()
    tx.PatchLog(model).edit("conv1", out_channels=8)  # bn1 still expects 16 channels
    failed = tx.probe(model, demo.images())
    assert ok.ok and not failed.ok
    text = (
        f"# tiny_transformer\n{ok.summary()}\n\n# resnet_ish, conv1 narrowed\n{failed.summary()}\n"
    )
    check_golden("probe_summary.txt", text)


def test_patch_log_to_code() -> None:
    model = demo.resnet_ish()
    log = tx.PatchLog(model)
    log.edit("conv1", out_channels=8)
    log.edit("bn1", num_features=8)
    log.replace("fc", nn.Linear(16, 4))
    log.replace_all(nn.ReLU, lambda old: nn.GELU())
    log.edit("layer1.0.conv1", in_channels=8)
    log.edit("layer1.0.conv2", out_channels=8)
    log.undo()  # an undone patch is not replayed
    code = log.to_code()
    check_golden("patch_to_code.py", code)
    # The golden code is real: replayed on a fresh model it gives the patched model's shapes.
    fresh = demo.resnet_ish()
    exec(compile(code, "to_code", "exec"), {"model": fresh})  # noqa: S102 - our own output
    assert str(fresh) == str(model)


def test_explorer_first_state() -> None:
    """What the Explorer's traitlets hold when it opens (``Explorer.__init__`` syncs these four)."""
    session = Session(demo.resnet_ish(), (demo.images(),))
    session.run_probe()
    state = {
        "tree": session.tree_state(),
        "overview": session.overview(),
        "probe": session.probe_summary(),
        "history": session.history(),
    }
    check_golden(
        "first_state.json", json.dumps(state, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    )


PUBLIC = (
    "tree",
    "forms",
    "probe",
    "summary",
    "patch",
    "source",
    "mro",
    "catalog",
    "widget",
    "protocol",
    "demo",
    "watch",
    "compile",
)


def test_every_public_module_has_examples_that_run() -> None:
    # pytest --doctest-modules src/torchxray (make test) runs them; this keeps them from vanishing.
    finder = doctest.DocTestFinder()
    counts = {}
    for name in PUBLIC:
        module = importlib.import_module(f"torchxray.{name}")
        tests = finder.find(module, module.__name__)
        counts[name] = sum(1 for t in tests for ex in t.examples if ex.want.strip())
    assert all(counts.values()), f"modules without a checked example: {counts}"
    assert sum(counts.values()) >= 15, counts


def test_the_architecture_map_names_every_module_and_only_real_ones() -> None:
    doc = (Path(__file__).parents[1] / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    src = Path(tx.__file__).parent
    modules = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.py"))
    # A subpackage's __init__.py is on the map as its folder ("_probe/").
    names = [m.removesuffix("__init__.py") if "/" in m else m for m in modules]
    missing = [m for m in names if f"`{m}" not in doc]
    assert not missing, f"docs/ARCHITECTURE.md does not map: {missing}"
    # And every module path the map cites exists (a renamed file leaves no stale line behind).
    cited = set(re.findall(r"`(_?[a-z_]+(?:/[a-z_]+)?\.py)`", doc))
    stale = sorted(c for c in cited if not (src / c).exists() and not c.startswith("test"))
    assert not stale, f"docs/ARCHITECTURE.md cites modules that do not exist: {stale}"
    assert "DESIGN.md" not in doc


def test_the_architecture_map_names_every_js_module_and_only_real_ones() -> None:
    # The frontend's map, one line per module, as the Python map above: a module added, renamed
    # or removed in js/ must show on it.
    root = Path(__file__).parents[1]
    doc = (root / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    start = doc.index("Frontend (`js/`")
    frontend = doc[start : doc.index("\n## ", start)]
    js = root / "js"
    modules = sorted(
        p.relative_to(js).as_posix() for p in js.rglob("*.ts") if not p.name.endswith(".test.ts")
    )
    missing = [m for m in modules if not re.search(rf"^- `{re.escape(m)}`: ", frontend, re.M)]
    assert not missing, f"docs/ARCHITECTURE.md's Frontend map has no line for: {missing}"
    cited = set(re.findall(r"^- `([a-z_/]+\.ts)`", frontend, re.M))
    stale = sorted(c for c in cited if not (js / c).exists())
    assert not stale, (
        f"docs/ARCHITECTURE.md's Frontend map cites modules that do not exist: {stale}"
    )


def _docstring_lines(text: str) -> int:
    """Lines of the module's, classes' and functions' docstrings."""
    count = 0
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                count += (first.end_lineno or first.lineno) - first.lineno + 1
    return count


def test_no_source_file_is_over_400_lines() -> None:
    # One job per file: a file past 400 lines is split, not grown; generated TS too. Docstrings
    # do not count: they are the API reference (parameters, returns, an example that runs, which
    # the documentation site renders), and documenting a function gives the file no second job.
    root = Path(__file__).parents[1]
    files = [*(root / "src" / "torchxray").rglob("*.py"), *(root / "js").rglob("*.ts")]
    long = {}
    for f in files:
        text = f.read_text(encoding="utf-8")
        n = len(text.splitlines()) - (_docstring_lines(text) if f.suffix == ".py" else 0)
        if n > 400:
            long[f.relative_to(root).as_posix()] = n
    assert not long, f"split these files (over 400 lines of code and comments): {long}"
