"""Edits as the Form tab sends them (through ``Session.handle``) and the ``PatchLog`` / ``form`` API
under them: an edit that changes nothing records nothing, History's numbers match the replay code,
and an edit too large to build is refused with its estimate until confirmed."""

from __future__ import annotations

import re
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


# -- edits that change nothing record nothing ------------------------------------------------------


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


# -- an edit too large to build unasked ------------------------------------------------------------


def test_a_huge_edit_is_refused_before_building_with_its_estimate() -> None:
    s = _session()
    conv = s.tree.module("0")
    reply = _edit(s, "0", out_channels=str(10**8))
    assert reply["kind"] == "error", reply
    message = reply["fields"]["__confirm__"]
    # 10**8 x 3 x 3 x 3 float32 weights and 10**8 biases: 11.2e9 bytes = 10.4 GiB.
    assert "would hold 10.4 GiB" in message and "Build anyway" in message, message
    assert s.patch_log().entries == () and s.tree.module("0") is conv


def test_a_large_edit_is_built_once_confirmed(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchxray._patch import size

    # A tiny limit stands in for a big module, so the confirmed build stays small.
    monkeypatch.setattr(size, "FLOOR", 4096)
    monkeypatch.setattr(size, "available", lambda device=None: 0)
    s = _session()
    reply = _edit(s, "0", out_channels="64")
    assert "__confirm__" in reply.get("fields", {}), reply
    # 64 x 3 x 3 x 3 float32 weights and 64 biases.
    assert "would hold 7168 bytes" in reply["fields"]["__confirm__"], reply
    assert s.patch_log().entries == ()
    reply, _ = s.handle(
        {
            "kind": "edit",
            "path": "0",
            "changes": {"out_channels": "64"},
            "rev": s.rev,
            "confirm": True,
        }
    )
    assert reply["kind"] == "patched", reply
    assert s.tree.module("0").out_channels == 64
    # From Python: TooLarge (a ValueError) names the confirmation keyword.
    log = tx.PatchLog(_cnn())
    with pytest.raises(ValueError, match=r"_confirm=True"):
        log.edit("0", out_channels=64)
    assert log.entries == ()
    assert log.edit("0", out_channels=64, _confirm=True).changes == {"out_channels": (8, 64)}


def test_the_estimate_is_made_on_meta_and_follows_device_arguments() -> None:
    from torchxray._patch import size

    f = tx.form(nn.Linear(4, 8))
    assert size.estimate(f, {"out_features": 10**9}) == (4 * 10**9 + 10**9) * 4
    assert size.estimate(f, {"out_features": 10, "dtype": "float16"}) == (40 + 10) * 2
    assert size.estimate(f, {"out_features": 10**9, "device": "cpu"}) == 5 * 10**9 * 4
    assert size.limit() >= size.FLOOR


def test_only_edits_that_grow_a_number_are_estimated() -> None:
    from torchxray._patch import size

    f = tx.form(nn.Linear(16, 4))
    assert not size.grows(f, {"bias": "False"})
    assert not size.grows(f, {"out_features": "8"})  # below the largest number it has (16)
    assert size.grows(f, {"out_features": "17"})
    assert size.grows(f, {"dtype": "float64"})
    assert size.grows(f, {"out_features": "oops"})  # unparsable: build decides


# -- History and the replay code agree; the replay starts with the patches -------------------------


def test_history_numbers_and_code_comments_agree_after_an_undo() -> None:
    s = _session()
    for n in (10, 12, 14):
        assert _edit(s, "0", out_channels=str(n))["kind"] == "patched"
    s.handle({"kind": "undo"})
    s.handle({"kind": "undo"})
    for n in (16, 18):
        assert _edit(s, "0", out_channels=str(n))["kind"] == "patched"
    history = s.history()
    ids = [e["id"] for e in history["entries"]]
    assert ids == [1, 2, 3]
    titles = re.findall(r"^# (\d+)\. ", history["code"], re.M)
    assert titles == ["1", "2", "3"]
    assert all(e["code"].startswith(f"# {e['id']}. ") for e in history["entries"])


def test_replay_code_starts_with_the_patches_and_replays() -> None:
    model = _cnn()
    log = tx.PatchLog(model)
    log.edit("0", out_channels=16)
    log.edit("3", in_features=16)
    code = log.to_code()
    lines = [line for line in code.splitlines() if line.strip()]
    # Header: a comment, `import torch`, the helpers' import; then the first patch.
    assert (
        lines[2]
        == "from torchxray.replay import carry as _carry, config as _config, place as _place"
    )
    assert lines[3].startswith("# 1. edit 0")
    assert "def " not in code
    fresh = _cnn().double().train(False)
    exec(code, {"model": fresh})  # noqa: S102 - the code under test
    assert fresh[0].out_channels == 16 and fresh[3].in_features == 16
    assert fresh[0].weight.dtype == torch.float64 and not fresh[0].training


def test_replay_helpers_are_public_and_documented() -> None:
    from torchxray import replay

    model = nn.Sequential(nn.Linear(2, 3).half())
    new = replay.place(nn.Linear(2, 5), model, "0")
    assert new.weight.dtype == torch.float16
    old, new2 = nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    old.running_mean.fill_(2.0)
    old.weight.requires_grad_(False)
    replay.carry(new2, old, ["running_mean", "weight"])
    assert torch.equal(new2.running_mean, old.running_mean) and not new2.weight.requires_grad
    from types import SimpleNamespace

    base = SimpleNamespace(hidden=4, heads=2)
    copy = replay.config(base, {"heads": 4})
    assert (copy.heads, base.heads) == (4, 2)
    assert all(getattr(replay, n).__doc__ for n in replay.__all__)


# -- one Apply opens each module's form once per state of the model ------------------------------


def test_an_apply_opens_the_edited_modules_form_once() -> None:
    timm = pytest.importorskip("timm")
    s = Session(timm.create_model("efficientnet_b0", pretrained=False), ())
    log = s.patch_log()
    opened: list[nn.Module] = []
    open_form = log._forms._open
    log._forms._open = lambda m: opened.append(m) or open_form(m)  # type: ignore[method-assign]
    old = s.tree.module("blocks.1.0")
    tab, _ = s.handle({"kind": "form", "path": "blocks.1.0", "cls": "", "prefill": None})
    assert tab["kind"] == "form", tab
    reply = _edit(s, "blocks.1.0", exp_ratio="4.0")  # the "in_chs: required" once
    assert reply["kind"] == "patched", reply
    new = s.tree.module("blocks.1.0")
    # The tab's form served the edit's check and its plan; the rebuilt module's, its labels and
    # its replay code.
    assert [m is old for m in opened] == [True, False] and opened[1] is new
    s.handle({"kind": "form", "path": "blocks.1.0", "cls": "", "prefill": None})
    s.handle({"kind": "form", "path": "blocks.1.0", "cls": "", "prefill": None})
    # Placed in the model, it is another state: its form once more, then no more.
    assert len(opened) == 3 and opened[2] is new
    kept = log.form(new)
    assert kept is log.form(new) and len(opened) == 3
    new.conv_pw.stride = (2, 2)  # a change made outside the log: the module's parts changed
    assert log.form(new) is not kept and len(opened) == 4
