"""tx.export_check: planted ops on the right module and line in one call, every target's verdict,
drift below 1e-4 on clean models and where it starts, bad input in one sentence, a missing package
as "not installed", and the model and torch's settings left as found. The agreement with
``torch.onnx.export(..., report=True)`` is tests/test_sweep_export.py's (and the sweep's, by hand)."""

from __future__ import annotations

import copy
import inspect
import sys

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._export.guard import snapshot

pytest.importorskip("onnxscript")


def line_of(marker: str) -> int:
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()  # type: ignore[arg-type]
    hits = [i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(marker)]
    assert len(hits) == 1, marker
    return hits[0]


class Ortho(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = torch.linalg.qr(self.w)[0]  # OP-qr
        return x @ q


class Sorted(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cummax(x, 1)[0]  # OP-cummax


class Branch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if y.mean() > 100:  # OP-branch
            return y * 0
        return y


class Planted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Sequential(nn.Linear(8, 8), Ortho())
        self.b = Sorted()
        self.c = Branch()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(self.b(self.a(x)))


def planted() -> Planted:
    torch.manual_seed(0)
    return Planted().eval()


X = torch.randn(2, 3, 8)


def test_three_planted_problems_on_their_modules_and_lines_in_one_call() -> None:
    rep = tx.export_check(planted(), X)
    assert not rep.ok and rep.error is None
    got = {(f.target, f.path, f.cls, f.kind, f.line) for f in rep.failures}
    assert got == {
        ("onnx", "a.1", "Ortho", "no ONNX translation", line_of("# OP-qr")),
        ("onnx", "b", "Sorted", "no ONNX translation", line_of("# OP-cummax")),
        ("export", "c", "Branch", "data-dependent control flow", line_of("# OP-branch")),
    }
    assert all(f.file == __file__ for f in rep.failures)
    ops = {f.path: f.op for f in rep.failures}
    assert ops["a.1"] == "aten.linalg_qr.default" and ops["b"] == "aten.cummax.default"
    assert rep.failures[0].target == "export"  # target order, then forward order
    assert rep.targets["export"].status == "fails" and rep.targets["onnx"].status == "fails"
    # rep[path]: own issues, the subtree's, ok per row
    assert rep["a"].own == () and [f.path for f in rep["a"].issues] == ["a.1"]
    assert not rep["a"].ok and rep["a.0"].ok and not rep[""].ok
    assert rep["a.0"].status == {"export": "ok", "onnx": "ok"}
    assert rep["a.1"].status == {"export": "ok", "onnx": "fails"}
    assert rep["c"].status["export"] == "fails"
    assert "torch.linalg.qr(self.w)" in rep["a.1"].own[0].source
    text = str(rep)
    assert "3 issue(s)" in text and "a.1" in text and "Ortho" in text and "cummax" in text
    with pytest.raises(KeyError, match="did you mean 'a.1'"):
        rep["a.2"]


def test_fake_mode_finds_the_export_failure_and_says_what_it_could_not_check() -> None:
    rep = tx.export_check(planted(), X, options={"mode": "fake"})
    assert rep.mode == "fake"
    assert [(f.target, f.path) for f in rep.failures] == [("export", "c")]
    assert rep.targets["onnx"].status == "not checked"
    assert any("mode': 'real'" in n for n in rep.notes)


def test_compile_check_lists_the_same_export_failures_from_the_same_engine() -> None:
    model = planted()
    exp = tx.export_check(model, X, options={"targets": ("export",), "mode": "fake"})
    comp = tx.compile_check(model, X)
    assert [(f.path, f.line) for f in comp.export] == [
        (f.path, f.line) for f in exp.failures if f.target == "export"
    ]


def _clean_cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU()),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4),
    ).eval()  # fmt: skip


def _llama() -> tuple[nn.Module, torch.Tensor]:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config).eval(), torch.randint(0, 128, (1, 8))


def test_clean_cnn_and_llama_export_with_every_module_drift_below_1e_4() -> None:
    llama, ids = _llama()
    for model, x, kwargs in (
        (_clean_cnn(), torch.randn(2, 3, 16, 16), {}),
        (llama, ids, {"use_cache": False}),  # a cache object is no output ONNX takes
    ):
        rep = tx.export_check(model, x, **kwargs)
        assert rep.ok, str(rep)
        assert rep.targets["onnx"].program is not None
        drifted = [p for p, _ in model.named_modules() if p in rep.drift]
        assert len(drifted) >= 5
        assert max(d.max_abs for d in rep.drift.values()) < 1e-4, str(rep)
        assert rep[""].drift is not None
    # The rotary embedding returns cos and sin, of one shape: each compared with its own.
    assert rep.drift["model.rotary_emb"].outputs == 2


class Bicubic(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.interpolate(x, size=(7, 7), mode="bicubic")


def test_drift_starts_at_the_module_whose_op_lowers_differently() -> None:
    # ONNX's cubic Resize and torch's bicubic kernel agree to ~1e-6, ~30x less closely than the
    # 1x1 convolution before it: the row where drift starts is the resize.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 3, 1), Bicubic(), nn.Conv2d(3, 3, 1)).eval()
    rep = tx.export_check(model, torch.randn(1, 3, 32, 32))
    assert rep.ok and set(rep.drift) == {"", "0", "1", "2"}
    assert rep.drift["1"].max_abs > 5 * rep.drift["0"].max_abs
    assert rep["1"].drift == rep.drift["1"] and rep.drift["1"].outputs == 1


def test_bad_input_is_one_clear_sentence() -> None:
    with pytest.raises(TypeError, match=r"needs a torch.nn.Module, got function"):
        tx.export_check(lambda x: x, X)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"unknown export target 'onx' \(did you mean 'onnx'\?\)"):
        tx.export_check(planted(), X, options={"targets": ("onx",)})
    with pytest.raises(TypeError, match="has no option 'target' \\(did you mean 'targets'\\?\\)"):
        tx.export_check(planted(), X, options={"target": ("onnx",)})
    with pytest.raises(TypeError, match=r"export_check's own settings go in options="):
        tx.export_check(planted(), X, targets=("onnx",))
    rep = tx.export_check(planted(), torch.randn(2, 3, 5))  # the forward fails on these inputs
    assert not rep.ok and rep.failures == ()
    assert rep.error is not None and rep.error.startswith(
        "the forward fails on these inputs in a.0"
    )
    assert "\n" not in rep.error and str(rep).startswith("export check: the forward fails")


def test_a_missing_package_is_not_installed_never_an_import_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "onnxscript", None)  # import onnxscript -> ImportError
    monkeypatch.setitem(sys.modules, "executorch", None)
    monkeypatch.setitem(sys.modules, "executorch.exir", None)
    rep = tx.export_check(Sorted(), X, options={"targets": ("onnx", "executorch")})
    for name in ("onnx", "executorch"):
        assert rep.targets[name].status == "not installed"
        assert rep.targets[name].message.startswith("not installed: pip install torchxray[export]")
    assert rep.targets["export"].ok and not rep.ok


def test_attributes_are_the_same_objects_after_export() -> None:
    # Non-strict export sets equal copies of some module attributes (a convolution's
    # kernel_size tuple): the check puts the very objects back, for compile_check too.
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.LazyLinear(2)).eval()
    x = torch.randn(1, 3, 6, 6)
    model(x)
    before = [(m, dict(vars(m))) for m in model.modules()]
    tx.export_check(model, x)
    tx.compile_check(model, x)
    for m, attrs in before:
        assert set(vars(m)) == set(attrs)
        assert all(vars(m)[k] is v for k, v in attrs.items()), type(m).__name__


def test_model_and_torch_settings_are_left_as_found() -> None:
    model = planted()
    model.a.train()  # a mix of modes, kept
    hook = model.b.register_forward_hook(lambda *a: None)
    before_state = copy.deepcopy(model.state_dict())
    before_modes = [m.training for m in model.modules()]
    before_classes = [type(m) for m in model.modules()]
    tx.export_check(Sorted(), X)  # the first imports torch.onnx's exporter: not the check's doing
    before_cfg = snapshot()
    globals_before = dict(torch.nn.modules.module._global_forward_hooks)
    decomps = dict(torch._decomp.decomposition_table)
    pytree_types = set(torch.utils._pytree.SUPPORTED_NODES)
    tx.export_check(model, X)
    tx.export_check(model, X, options={"mode": "fake"})
    assert snapshot() == before_cfg
    assert dict(torch._decomp.decomposition_table) == decomps  # the registries too
    assert set(torch.utils._pytree.SUPPORTED_NODES) == pytree_types
    assert [m.training for m in model.modules()] == before_modes
    assert [type(m) for m in model.modules()] == before_classes
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before_state.items())
    assert list(model.b._forward_hooks) == [hook.id]
    assert dict(torch.nn.modules.module._global_forward_hooks) == globals_before
    assert all(p.device.type == "cpu" for p in model.parameters())


def test_dynamic_shape_constraint_names_the_line_that_specialised_it() -> None:
    class Fixed(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.shape[0] == 2:  # OP-specialise
                return x * 2
            return x

    model = nn.Sequential(nn.Linear(8, 8), Fixed()).eval()
    batch = torch.export.Dim("batch")
    rep = tx.export_check(model, torch.randn(2, 8), options={"dynamic_shapes": ({0: batch},)})
    found = [f for f in rep.failures if f.kind == "dynamic shape constraint violated"]
    assert [(f.path, f.line) for f in found] == [("1", line_of("# OP-specialise"))]
    assert "batch" in found[0].reason


def test_executorch_delegated_portable_and_outside_core_aten_per_module() -> None:
    pytest.importorskip("executorch.exir")

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(16, 8)  # no XNNPACK config: portable
            self.fc = nn.Linear(8, 8)  # delegated
            self.ortho = Ortho()  # linalg_qr: outside the Core ATen set

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.ortho(self.fc(self.embed(ids)))

    rep = tx.export_check(
        Net().eval(), torch.randint(0, 16, (2, 4)), options={"targets": ("executorch",)}
    )
    et = rep.targets["executorch"]
    assert et.status == "fails" and et.delegated >= 1 and et.portable >= 2, et
    kinds = {(f.path, f.kind) for f in rep.failures}
    assert ("ortho", "outside the Core ATen set") in kinds
    assert ("embed", "not delegated to XNNPACK") in kinds
    embed = next(f for f in rep.failures if f.path == "embed")
    assert embed.reason == "no XNNPACK config for this op" and embed.op == "aten.embedding.default"
    assert rep["fc"].status["executorch"] == "delegated"
    assert (
        rep["embed"].status["executorch"] == "portable" and rep["embed"].ok
    )  # portable still runs
    assert rep["ortho"].status["executorch"] == "fails" and not rep["ortho"].ok
    assert rep[""].status["executorch"] == "fails"
