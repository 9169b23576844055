"""What the rows and the Diff tab say after a failure and a freeze: the failing module's ancestors
are marked (a failure inside collapsed rows is seen from the top), frozen modules are marked
frozen, and Diff against the model as opened lists the frozen modules."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn

from torchxray._view.session import Session


def _model() -> nn.Module:
    block = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
    return nn.Sequential(nn.Sequential(block), nn.Flatten(), nn.Linear(8 * 4 * 4, 4))


def _row(s: Session, path: str) -> dict[str, Any]:
    rows = s.rows()
    return dict(rows.row(s.tree[path]))


def test_a_failure_marks_its_ancestors() -> None:
    s = Session(_model(), (torch.randn(1, 3, 6, 6),))
    s.run_probe()
    s.patch("edit", "0.0.0", out_channels=6)
    assert s.report is not None and s.report.error is not None
    assert s.report.error.path == "0.0.1"
    assert "error" in _row(s, "0.0.1")["marks"]
    for path in ("", "0", "0.0"):
        assert "inside_error" in _row(s, path)["marks"], path
    assert "inside_error" not in _row(s, "2").get("marks", [])


def test_frozen_rows_and_the_diff_against_the_model_as_opened() -> None:
    s = Session(_model(), (torch.randn(1, 3, 6, 6),))
    _ = s.origin
    reply, _ = s.handle({"kind": "bulk", "op": "freeze", "paths": ["0"], "rev": s.rev})
    assert reply["kind"] != "error", reply
    assert "frozen" in _row(s, "0.0.0")["marks"] and "frozen" in _row(s, "0")["marks"]
    assert "frozen" not in _row(s, "2").get("marks", []) and "frozen" not in _row(s, "").get(
        "marks", []
    )
    d, _ = s.handle({"kind": "diff", "against": "open", "file": ""})
    assert d["counts"] == {"frozen": 2}  # type: ignore[typeddict-item]
    rows = {r["path"]: r for r in d["rows"]}  # type: ignore[typeddict-item]
    assert rows["0.0.0"]["detail"] == "requires_grad True → False: weight, bias"
    assert d["badges"] == {"0.0.0": "frozen", "0.0.1": "frozen"}  # type: ignore[typeddict-item]
