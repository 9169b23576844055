"""The sweep's export column (`bench.sweep.export_col`): torch's own list of missing ONNX ops comes
from ``torch.onnx.export(..., report=True)`` run in a forked child, and the column agrees with it
on a model with two missing ops, a clean one, and one whose torch.export fails (a small sample of
what ``python -m bench.sweep --only export`` runs over the families by hand)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from bench.sweep.export_col import export_column, judge, report_ops

pytest.importorskip("onnxscript")


class Two(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cummax(torch.linalg.qr(x)[0], 0)[0]


class Branchy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x * 2
        return x


def guarded(check: str, fn: object) -> object:
    return fn()  # type: ignore[operator]


def test_the_column_agrees_with_torchs_report() -> None:
    x = (torch.randn(4, 4),)
    cell, details = export_column("timm", True, Two(), x, {}, guarded)
    assert cell is not None and cell[0] == "ok", cell
    assert details["torch"]["ops"] == ["aten.cummax.default", "aten.linalg_qr.default"]
    assert cell[1].startswith("onnx: (root) |")
    cell, _ = export_column("torchvision", True, nn.Linear(4, 4).eval(), x, {}, guarded)
    assert cell == ("ok", "ready | torch's report: no missing op")
    assert export_column("diffusers", True, Two(), x, {}, guarded)[0][0] == "n/a"
    assert export_column("timm", False, Two(), x, {}, guarded)[0][0] == "n/a"


def test_the_rule_and_the_report_parser() -> None:
    text = "## ONNX Conversion Information\n\nErrors grouped by operator:\n\n- `aten.mode.default`: No\n- `aten.kthvalue.default`: x\n"
    assert report_ops(text) == ["aten.kthvalue.default", "aten.mode.default"]
    assert report_ops("All operators in the model have registered ONNX decompositions.") == []
    mine = {"ok": False, "error": None, "export_fails": True, "onnx_ops": [],
            "failing": {"export": ["c"]}, "targets": {"export": "fails", "onnx": "not checked"}}  # fmt: skip
    assert judge(mine, {"ops": [], "captured": False, "error": "TorchExportError: x"})[0] == "ok"
    assert judge(mine, {"ops": ["aten.mode.default"], "captured": True, "error": ""})[0] == "fail"
    assert judge(mine, {"crash": "boom"})[0] == "n/a"
