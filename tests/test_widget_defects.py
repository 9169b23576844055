"""Defects of #16 (4, 6, 9, 10), through ``Session.handle`` as the widget sends them, and the
``PatchLog`` / ``form`` API under them."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn as nn

import torchxray as tx
from torchxray._view.session import Session


def _cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.MaxPool2d((2, 2)), nn.Flatten(), nn.Linear(8, 4))


def _session(model: nn.Module | None = None) -> Session:
    return Session(model or _cnn(), (torch.randn(1, 3, 6, 6),))


def _edit(s: Session, path: str, **changes: Any) -> dict[str, Any]:
    reply, _ = s.handle({"kind": "edit", "path": path, "changes": changes, "rev": s.rev})
    return dict(reply)


# -- 4. edits that change nothing -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "changes"),
    [
        ("1", {"kernel_size": "(2,2)"}),
        ("0", {"kernel_size": "3"}),  # canonicalised by the constructor to (3, 3)
        ("3", {"dtype": "float32"}),
        ("3", {"dtype": "torch.float32", "in_features": "8"}),
    ],
)
def test_edit_with_the_live_values_records_nothing(path: str, changes: dict[str, Any]) -> None:
    s = _session()
    before = s.tree.module(path)
    reply = _edit(s, path, **changes)
    assert reply["kind"] == "error"
    assert "nothing changed" in reply["message"], reply
    assert s.patch_log().entries == ()
    assert s.tree.module(path) is before


def test_edit_records_only_the_fields_that_changed() -> None:
    s = _session()
    reply = _edit(s, "0", kernel_size="(3,3)", out_channels="16", stride="1")
    assert reply["kind"] == "patched", reply
    (entry,) = s.patch_log().entries
    assert entry.changes == {"out_channels": (8, 16)}
    assert "kernel_size" not in entry.code.splitlines()[0]


def test_patchlog_edit_from_python_refuses_a_no_op() -> None:
    model = _cnn()
    log = tx.PatchLog(model)
    with pytest.raises(ValueError, match="nothing changed at '3': dtype=torch.float32"):
        log.edit("3", dtype=torch.float32)
    assert log.entries == ()
    entry = log.edit("3", dtype="float16")
    assert entry.changes == {"dtype": (torch.float32, torch.float16)}
    with pytest.raises(ValueError, match="nothing changed"):
        log.edit("3", dtype="torch.float16")
    assert len(log.entries) == 1


def test_form_changed_compares_parsed_values() -> None:
    f = tx.form(nn.Conv2d(3, 8, (2, 2)))
    assert f.changed(kernel_size="(2,2)", padding=(0, 0), bias="True") == {}
    assert f.changed(kernel_size="(3,3)", out_channels="x") == {
        "kernel_size": "(3,3)",
        "out_channels": "x",  # does not parse: kept so build/validate name it
    }
