"""The widget's selection, compare and health tools through Session.handle, as the
frontend sends them: every reply checked against the model it describes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from torchxray._view.session import Session


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 8), nn.GELU(), nn.Conv1d(8, 6, 3), nn.Linear(6, 2)
    )


def _ok(s: Session, msg: dict) -> dict:
    reply, _ = s.handle(msg)
    assert reply["kind"] != "error", reply
    return dict(reply)


def _err(s: Session, msg: dict) -> str:
    reply, _ = s.handle(msg)
    assert reply["kind"] == "error", reply
    return str(reply["message"])


def test_pick_returns_every_filter_match_and_a_bad_regex_says_so() -> None:
    s = Session(_model())
    assert _ok(s, {"kind": "pick", "query": "gelu"})["paths"] == ["1", "3"]
    assert _ok(s, {"kind": "pick", "query": "^[02]$", "regex": True})["paths"] == ["0", "2"]
    assert "bad regular expression" in _err(s, {"kind": "pick", "query": "(", "regex": True})


def test_bulk_replace_is_one_undoable_entry_after_a_live_count() -> None:
    model = _model()
    s = Session(model, (torch.randn(2, 4),))
    plan = _ok(s, {"kind": "plan", "paths": ["1", "3"], "cls": "torch.nn.SiLU"})
    assert plan["count"] == 2 and plan["classes"] == {"GELU": 2}
    _ok(s, {"kind": "bulk", "op": "replace", "paths": ["1", "3"], "cls": "torch.nn.SiLU"})
    assert isinstance(model[1], nn.SiLU) and isinstance(model[3], nn.SiLU)
    entries = s.history()["entries"]
    assert [e["op"] for e in entries] == ["replace_all"] and entries[0]["paths"] == ["1", "3"]
    _ok(s, {"kind": "undo"})
    assert isinstance(model[1], nn.GELU) and isinstance(model[3], nn.GELU)


def test_bulk_replace_from_each_module_keeps_its_values_and_a_bad_field_changes_nothing() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 3))
    s = Session(model)
    msg = {"kind": "bulk", "op": "replace", "paths": ["0", "1"], "cls": "torch.nn.Linear"}
    _ok(s, {**msg, "prefill": True, "changes": {"bias": "False"}})
    assert (model[0].in_features, model[0].out_features, model[0].bias) == (4, 8, None)
    assert (model[1].in_features, model[1].out_features) == (8, 3)
    before = list(model)
    assert _err(s, {**msg, "changes": {"in_features": "x"}})
    assert list(model) == before and len(s.history()["entries"]) == 1
    assert "nothing selected" in _err(s, {**msg, "paths": []})


def test_freeze_two_blocks_is_one_history_entry() -> None:
    model = _model()
    s = Session(model)
    _ok(s, {"kind": "bulk", "op": "freeze", "paths": ["0", "2"]})
    assert not any(p.requires_grad for p in model[0].parameters())
    assert all(p.requires_grad for p in model[4].parameters())
    (entry,) = s.history()["entries"]
    assert entry["op"] == "freeze" and entry["paths"] == ["0", "2"]
    _ok(s, {"kind": "undo"})
    assert all(p.requires_grad for p in model.parameters())


def test_peft_targets_and_lora_count() -> None:
    s = Session(_model())
    r = _ok(s, {"kind": "peft", "paths": ["0", "2", "4", "1"], "r": 4})
    assert r["targets"] == "['0', '1', '2', '4']"
    assert r["lora_params"] == 4 * (4 + 8) + 4 * (8 + 8) + 4 * (8 * 3 + 6)
    assert r["skipped"] == ["1"]
    assert "rank r must be at least 1" in _err(s, {"kind": "peft", "paths": ["0"], "r": 0})


def test_lora_count_matches_peft() -> None:
    peft = pytest.importorskip("peft")
    from fixtures.real import build

    model, _, _ = build("hf-llama")
    s = Session(model)
    paths = _ok(s, {"kind": "pick", "query": r"layers\.0\.self_attn\.[qv]_proj$", "regex": True})
    r = _ok(s, {"kind": "peft", "paths": paths["paths"], "r": 4})
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=4, target_modules=eval(r["targets"])))
    lora = sum(p.numel() for n, p in wrapped.named_parameters() if "lora_" in n)
    assert lora == r["lora_params"] > 0


def test_diff_against_the_opened_model_and_badges() -> None:
    model = _model()
    s = Session(model)
    assert _ok(s, {"kind": "diff", "against": "open"})["total"] == 0
    _ok(s, {"kind": "replace", "path": "1", "cls": "torch.nn.SiLU"})
    _ok(s, {"kind": "edit", "path": "2", "changes": {"out_features": "5"}})
    d = _ok(s, {"kind": "diff", "against": "open"})
    assert d["badges"]["1"] == "retyped" and d["badges"]["2"] == "changed"
    kinds = {(row["path"], row["kind"]) for row in d["rows"]}
    assert ("2.weight", "shape") in kinds and ("1", "retyped") in kinds


def test_diff_against_a_checkpoint_and_its_errors(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    model = _model()
    s = Session(model)
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    sd["0.weight"] = sd["0.weight"] * 2
    save_file(sd, str(tmp_path / "m.safetensors"))
    d = _ok(s, {"kind": "diff", "against": "checkpoint", "file": str(tmp_path / "m.safetensors")})
    (row,) = d["rows"]
    assert row["path"] == "0.weight" and row["kind"] == "values" and row["module"] == "0"
    assert row["rel_change"] == pytest.approx(1.0)
    assert d["badges"] == {"0": "values"}
    assert "no checkpoint file" in _err(
        s, {"kind": "diff", "against": "checkpoint", "file": str(tmp_path / "nope.pt")}
    )
    (tmp_path / "bad.safetensors").write_bytes(b"not a checkpoint")
    assert _err(
        s, {"kind": "diff", "against": "checkpoint", "file": str(tmp_path / "bad.safetensors")}
    )
    torch.save({"w": nn.Linear(2, 2)}, tmp_path / "pickled.pt")  # a module: weights_only refuses
    assert _err(s, {"kind": "diff", "against": "checkpoint", "file": str(tmp_path / "pickled.pt")})


def test_stats_and_nonfinite_weights() -> None:
    model = _model()
    s = Session(model)
    rows = {r["name"]: r for r in _ok(s, {"kind": "stats", "path": "0"})["rows"]}
    assert set(rows) == {"weight", "bias"}
    w = model[0].weight
    assert rows["weight"]["norm"] == pytest.approx(float(w.norm()), rel=1e-6)
    assert sum(rows["weight"]["hist"]) == w.numel()
    assert _ok(s, {"kind": "health", "paths": ["", "0", "2"]})["nonfinite"] == []
    with torch.no_grad():
        model[2].weight[0, 0] = float("nan")
    h = _ok(s, {"kind": "health", "paths": ["", "0", "2"]})
    assert h["nonfinite"] == ["2"]
    st = {r["name"]: r for r in _ok(s, {"kind": "stats", "path": "2"})["rows"]}
    assert st["weight"]["nonfinite"] == 1


def test_a_real_probe_names_the_first_nonfinite_module() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 8), nn.GELU())
    with torch.no_grad():
        model[2].bias[0] = float("inf")
    s = Session(model, (torch.randn(2, 4),), mode="real")
    s.run_probe()
    h = _ok(s, {"kind": "health"})
    assert h["probe_path"] == "2" and "non-finite" in h["probe_note"]


def test_a_selection_of_hundreds_of_modules_fits_in_one_request() -> None:
    # "select all N matches" of a deep model: 600 layers frozen by one message, one entry.
    model = nn.Sequential(*(nn.Linear(2, 2) for _ in range(600)))
    s = Session(model)
    paths = _ok(s, {"kind": "pick", "query": "Linear"})["paths"]
    assert len(paths) == 600
    _ok(s, {"kind": "bulk", "op": "freeze", "paths": paths})
    assert not any(p.requires_grad for p in model.parameters())
    assert len(s.history()["entries"]) == 1


def test_a_model_whose_state_dict_fails_still_opens_and_the_diff_says_why() -> None:
    model = _model()

    def broken(*_args: object) -> None:
        raise RuntimeError("hook broke")

    model.register_state_dict_post_hook(broken)
    s = Session(model)
    assert "state_dict() failed" in _err(s, {"kind": "diff", "against": "open"})
    assert _ok(s, {"kind": "pick", "query": "gelu"})["paths"] == ["1", "3"]


def test_pick_follows_the_filters_names_only() -> None:
    # "attn" in path or class matches an attention and every child of it; in names only, itself.
    class Attn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(4, 4)
            self.k = nn.Linear(4, 4)

    s = Session(nn.Sequential(nn.ModuleDict({"attn": Attn(), "mlp": nn.Linear(4, 4)})))
    assert _ok(s, {"kind": "pick", "query": "attn"})["paths"] == ["0.attn", "0.attn.q", "0.attn.k"]
    assert _ok(s, {"kind": "pick", "query": "attn", "names": True})["paths"] == ["0.attn"]
    # The filter's rows agree: the same matches.
    rows = _ok(s, {"kind": "filter", "query": "attn", "names": True})
    assert [r["path"] for r in rows["rows"] if r.get("match")] == ["0.attn"]
