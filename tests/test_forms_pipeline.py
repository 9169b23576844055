"""The forms pipeline (``forms.py``): a module's route through ``tx.form`` enters each of the five
stages once, in order (signature, sources, candidates, exact, form), and a stage imports only
from the records and helpers beside the stages and from the stages before it, never after.

A layer's own form opened on the way (a factory for a field, a block's description) is a route of
its own: it enters the stages again from the first, and is followed apart."""

from __future__ import annotations

import ast
import sys
import warnings
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray import forms

warnings.filterwarnings("ignore")

FORMS = Path(forms.__file__).parent / "_forms"
STAGES = ("signature", "sources", "candidates", "exact", "form")


def _stage(filename: str) -> str | None:
    """The stage a file belongs to: ``_forms/<stage>.py`` or ``_forms/<stage>/...``; None for
    the shared records and helpers beside the stages (and anything outside ``_forms``)."""
    try:
        rel = Path(filename).resolve().relative_to(FORMS.resolve())
    except ValueError:
        return None
    head = rel.parts[0].removesuffix(".py")
    return head if head in STAGES else None


def route(obj: Any) -> list[list[str]]:
    """The stages each route through ``tx.form(obj)`` entered, in order, repeats collapsed: the
    form's own first, then each child form's."""
    routes: list[list[str]] = []
    stack: list[list[str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        code = frame.f_code
        if code is forms._open.__code__:
            if event == "call":
                stack.append([])
            elif event == "return":
                routes.append(stack.pop())
            return
        if event != "call" or not stack:
            return
        stage = _stage(code.co_filename)
        if stage is not None and (not stack[-1] or stack[-1][-1] != stage):
            stack[-1].append(stage)

    sys.setprofile(profile)
    try:
        tx.form(obj)
    finally:
        sys.setprofile(None)
    # The form's own route ends last (its children end inside it): put it first.
    return [routes[-1], *routes[:-1]]


def _in_order(stages: list[str]) -> bool:
    at = [STAGES.index(s) for s in stages]
    return at == sorted(set(at))


class Block(nn.Module):
    """A person's block that keeps none of its arguments: its form is searched."""

    def __init__(self, dim: int, ratio: float = 2.0, norm: type[nn.Module] = nn.LayerNorm) -> None:
        super().__init__()
        self.norm = norm(dim)
        self.fc1 = nn.Linear(dim, int(dim * ratio))
        self.fc2 = nn.Linear(int(dim * ratio), dim)


def test_a_searched_form_enters_each_stage_once_in_order() -> None:
    routes = route(Block(16, ratio=3.0))
    assert routes[0] == list(STAGES), routes[0]
    assert all(_in_order(r) for r in routes), routes


def test_a_form_with_every_value_known_skips_the_search() -> None:
    # A torch class: its values are read, the gate runs when asked (not inside tx.form).
    assert route(nn.Conv2d(3, 8, 3)) == [["signature", "sources", "form"]]
    with tx.record_init_args():
        recorded = Block(8)
    assert route(recorded) == [["signature", "sources", "form"]]
    assert route(Block) == [["signature", "sources", "form"]]


def test_a_whole_models_form_and_its_child_forms_each_go_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The profile below runs Python on every call, and the form's safety ceiling counts CPU
    # time: past it, the watchdog's error lands in the profile function and ends the profile.
    monkeypatch.setattr(forms, "CEILING_SECONDS", 60.0)
    timm = pytest.importorskip("timm")
    model = timm.create_model("resnet18", num_classes=10)
    block = model.layer2[0]
    routes = route(block)
    assert routes[0][0] == "signature" and routes[0][-1] == "form"
    assert all(_in_order(r) for r in routes), routes


def _imports(path: Path) -> list[str]:
    """The ``_forms`` modules ``path`` imports (dotted, relative to ``torchxray._forms``)."""
    package = ".".join(path.relative_to(FORMS.parent.parent).with_suffix("").parts)
    if path.name == "__init__.py":
        package = package.removesuffix(".__init__")
    else:
        package = package.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            name = ".".join([*base, *([node.module] if node.module else [])])
            out += [f"{name}.{a.name}" for a in node.names]
    return [n for n in out if n.startswith("torchxray._forms.")]


def test_a_stage_imports_nothing_from_the_stages_after_it() -> None:
    for path in sorted(FORMS.rglob("*.py")):
        own = _stage(str(path))
        for name in _imports(path):
            parts = name.split(".")[2:]
            other = parts[0] if parts and parts[0] in STAGES else None
            if other is None or other == own:
                continue
            where = path.relative_to(FORMS)
            assert own is not None, f"{where} (shared) imports the stage {other}: {name}"
            assert STAGES.index(other) < STAGES.index(own), f"{where} imports {name}"


def test_the_shared_helpers_hold_no_form_state() -> None:
    # Beside the stages: records, kinds, values, checks, binding, configs, the construction
    # record, the budget and the meta rebuilds. None of them calls a stage.
    shared = [p for p in FORMS.rglob("*.py") if _stage(str(p)) is None]
    assert {p.name for p in shared} >= {"field.py", "kinds.py", "values.py", "budget.py"}
    assert torch.device("meta")  # the rebuilds build on meta only
