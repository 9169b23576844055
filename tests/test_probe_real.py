"""Probes of real models (tests/fixtures/real.py: timm and transformers from small configs): both
modes succeed wherever a plain forward does and agree with torchinfo; batches go in as the model
takes them and outputs keep their names; MoE experts run in fake mode; modules a forward skips are
reported as not called, with the reason; a failure after a patch names the patch."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from fixtures.real import ENTRIES, build
from torch import nn

import torchxray as tx
from torchxray.probe import TensorInfo, run_probe

pytest.importorskip("timm")
pytest.importorskip("transformers")


def _forward_works(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the zoo entry's own forward decides what is asked of the probe
        return False
    return True


def _torchinfo_sizes(
    model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, list[list[int]]]:
    """path -> torchinfo's output size of each call, in call order (torchinfo gives [] where it
    cannot size an output, and the last value of a dict-like output)."""
    torchinfo = pytest.importorskip("torchinfo")
    paths = {id(m): p for p, m in model.named_modules()}
    data = list(args) if args else kwargs
    stats = torchinfo.summary(model, input_data=data, verbose=0, depth=100)
    sizes: dict[str, list[list[int]]] = {}
    for layer in stats.summary_list:
        path = paths.get(id(layer.module))
        if path is not None:
            sizes.setdefault(path, []).append(list(layer.output_size))
    return sizes


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ENTRIES))
def test_fake_and_real_probes_match_torchinfo(name: str) -> None:
    model, args, kwargs = build(name)
    if not _forward_works(model, args, kwargs):
        pytest.skip(f"{name}: the plain forward fails here")
    sizes = _torchinfo_sizes(model, args, kwargs)
    fake = tx.probe(model, *args, **kwargs)
    real = tx.probe(model, *args, mode="real", **kwargs)
    assert fake.ok, fake.error
    assert real.ok, real.error
    assert list(fake) == list(real)
    compared = 0
    for path in real:
        for rep in (fake, real):
            assert rep[path].output_shapes == real[path].output_shapes, (name, path)
        theirs = sizes.get(path)
        if theirs is None:
            continue
        calls = real[path].call_records
        assert len(calls) == len(theirs), (name, path)
        for call, size in zip(calls, theirs):
            shapes = [list(o.shape) for o in call.outputs if isinstance(o, TensorInfo)]
            if not size:  # torchinfo could not size it (a cache object in the output)
                continue
            compared += 1
            if len(shapes) == 1:
                assert shapes[0] == size, (name, path)
            else:  # a tuple or ModelOutput: torchinfo keeps one of its tensors
                assert size in shapes, (name, path, size, shapes)
    assert compared >= 0.8 * len(real), (name, compared, len(real))


@pytest.mark.parametrize("name", ["hf-mixtral", "hf-qwen2_moe"])
def test_moe_experts_probe_in_fake_mode_as_in_real_mode(name: str) -> None:
    model, args, kwargs = build(name)
    fake = tx.probe(model, *args, **kwargs)
    real = tx.probe(model, *args, mode="real", **kwargs)
    assert fake.ok, fake.error
    experts = "model.layers.0.mlp.experts"
    assert experts in fake and fake[experts].output_shapes == real[experts].output_shapes
    assert all(fake[p].output_shapes == real[p].output_shapes for p in real)


def test_fake_grouped_mm_follows_the_cpu_kernel() -> None:
    """float32 runs on CPU (torch's meta kernel only allows the CUDA dtypes); float64 is refused
    by the CPU kernel too, so the meta kernel's error stands."""
    from torchxray._fake.mode import FakeMode

    offs = torch.tensor([8, 16], dtype=torch.int32)
    cases = ((torch.float32, 8, True), (torch.float64, 8, False), (torch.float32, 6, False))
    for dtype, width, runs in cases:  # 6 floats a row: not the 16-byte strides the kernel wants
        a, b = torch.randn(16, width, dtype=dtype), torch.randn(2, width, 4, dtype=dtype)
        if runs:
            expected = torch._grouped_mm(a, b, offs=offs)
        mode = FakeMode(allow_non_fake_inputs=True)
        # As in a probe: fake activations, the real weight converted by the mode.
        fa, foffs = mode.from_tensor(a), mode.from_tensor(offs)
        with mode:
            if runs:
                out = torch._grouped_mm(fa, b, offs=foffs)
                assert out.shape == expected.shape and out.dtype == expected.dtype
            else:
                # The error the CPU kernel gives: the meta kernel's for a dtype it refuses too.
                why = "BFloat16" if dtype == torch.float64 else "multiple of 16 bytes"
                with pytest.raises(RuntimeError, match=why):
                    torch._grouped_mm(fa, b, offs=foffs)
        if not runs:  # and the CPU kernel refuses it too
            with pytest.raises(RuntimeError):
                torch._grouped_mm(a, b, offs=offs)


# -- inputs as the model takes them, outputs by name ------------------------------------------


def test_batch_encoding_as_keywords_or_as_the_only_input() -> None:
    from transformers import BatchEncoding

    model, _, kwargs = build("hf-bert")
    batch = BatchEncoding(
        {"input_ids": kwargs["input_ids"], "attention_mask": torch.ones_like(kwargs["input_ids"])}
    )
    for rep in (tx.probe(model, **batch), tx.probe(model, batch), tx.probe(model, dict(batch))):
        assert rep.ok, rep.error
        names = [i.name for i in rep[""].inputs if isinstance(i, TensorInfo)]
        assert names == ["kwargs['input_ids']", "kwargs['attention_mask']"]
    ex = tx.explore(model, **batch)
    try:
        assert ex.probe_report is not None and ex.probe_report.ok
    finally:
        ex.close()


class TakesDict(nn.Module):
    """A forward written for the batch itself: it must get the mapping as it is."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.fc(batch["x"])


class TakesX(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        return self.fc(x) * scale


def test_a_mapping_is_opened_only_when_the_forward_takes_its_keys() -> None:
    x = torch.randn(3, 4)
    rep = tx.probe(TakesDict(), {"x": x})
    assert rep.ok, rep.error
    assert rep[""].inputs[0].name == "args[0]['x']"  # type: ignore[union-attr]
    rep = tx.probe(TakesX(), {"x": x, "scale": 2.0})
    assert rep.ok and rep[""].inputs[0].name == "kwargs['x']"  # type: ignore[union-attr]
    # Keys the forward does not take: the mapping goes in as the one argument, and fails there.
    rep = tx.probe(TakesX(), {"y": x})
    assert not rep.ok and rep.error is not None and rep.error.path == "fc"


def test_model_output_fields_keep_their_names() -> None:
    model, args, kwargs = build("hf-llama")
    for mode in ("fake", "real"):
        rep = tx.probe(model, *args, mode=mode, **kwargs)
        out = [o for o in rep[""].outputs if isinstance(o, TensorInfo)]
        assert out[0].name == "logits" and out[0].shape == (2, 8, 128)
        caches = [o.name for o in out[1:]]
        assert caches and all(n.endswith((".keys", ".values")) for n in caches), caches
        field = caches[0].split("[")[0]  # "past_key_values", or "cache" in transformers 5
        assert caches[:2] == [f"{field}[0].keys", f"{field}[0].values"]
        assert len(caches) == 2 * model.config.num_hidden_layers
    model, args, kwargs = build("hf-bert")
    rep = tx.probe(model, *args, **kwargs)
    assert [o.name for o in rep[""].outputs] == ["last_hidden_state", "pooler_output"]
    # Tuples keep their indices.
    rep = tx.probe(nn.LSTM(4, 8), torch.randn(3, 2, 4))
    assert [o.name for o in rep[""].outputs] == ["[0]", "[1][0]", "[1][1]"]  # type: ignore[union-attr]


# -- modules a forward does not call ----------------------------------------------------------


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_fused_fast_path_children_are_reported_not_called(mode: str) -> None:
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    rep = tx.probe(model, torch.randn(2, 5, 16), mode=mode)
    assert rep.ok, rep.error
    assert "layers.0" in rep and "layers.0.linear1" not in rep
    assert "fused fast path" in rep.not_called["layers.0.linear1"]
    assert "layers" not in rep.not_called  # a ModuleList is never called itself
    why = rep.why_not_called("layers.1.self_attn.out_proj")
    assert why is not None and why.startswith("inside layers.1.self_attn")
    assert rep.why_not_called("layers.0") is None


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_a_model_in_train_mode_is_probed_in_train_mode(mode: str) -> None:
    # As the user's own call: no fused fast path in train mode, so every child runs.
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).train()
    model.layers[1].eval()  # and each module in its own mode
    rep = tx.probe(model, torch.randn(2, 5, 16), mode=mode)
    assert rep.ok, rep.error
    assert "layers.0.linear1" in rep and "layers.1.linear1" not in rep
    assert model.training and not model.layers[1].training


def test_unused_and_weight_only_children_are_reported_with_their_reason() -> None:
    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
            self.head = nn.Linear(8, 2)
            self.unused = nn.Sequential(nn.Linear(8, 8), nn.ReLU())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.attn(x, x, x)[0])

    rep = tx.probe(Model(), torch.randn(2, 3, 8))
    assert set(rep.not_called) == {"attn.out_proj", "unused"}
    assert "out_proj's weights" in rep.not_called["attn.out_proj"]
    assert "not called by Model.forward" in rep.not_called["unused"]
    assert rep.why_not_called("unused.0") is not None
    failed = tx.probe(Model(), torch.randn(2, 3, 5), mode="real")
    assert not failed.ok and dict(failed.not_called) == {}


@pytest.mark.skipif(not hasattr(torch.compiler, "set_stance"), reason="torch < 2.6")
def test_compiled_model_is_probed_eagerly_with_every_layer() -> None:
    inner = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    compiled = torch.compile(inner, backend="eager")
    x = torch.randn(3, 4)
    compiled(x)  # compiled before the probe, as a user would have
    for mode in ("fake", "real"):
        rep = tx.probe(compiled, x, mode=mode)
        assert rep.ok, rep.error
        assert {"_orig_mod.0", "_orig_mod.2"} <= set(rep) and not rep.not_called
    # The stance is the default again: compiled code runs compiled after the probe.
    from torch._dynamo import eval_frame

    assert eval_frame._stance.stance == "default"


# -- a failure after a patch names the patch --------------------------------------------------


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 96, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(96)
        self.conv2 = nn.Conv2d(96, 8, 3)
        self.fc = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv2(torch.relu(self.bn1(self.conv1(x))))
        return self.fc(x.mean((2, 3)))


def test_hint_names_the_edit_the_failure_follows() -> None:
    model, x = ConvNet(), torch.randn(1, 3, 8, 8)
    log = tx.PatchLog(model)
    log.edit("conv1", out_channels=64)
    plain = tx.probe(model, x)
    assert plain.error is not None and "inputs" in plain.error.hint  # nothing told it of the edit
    for mode in ("fake", "real"):
        rep = tx.probe(model, x, mode=mode, patch_log=log)
        assert rep.error is not None and rep.error.path == "bn1"
        hint = rep.error.hint
        assert "conv1 was edited to out_channels=64 (was 96)" in hint
        assert "bn1 receives its output (1x64x8x8) and still has num_features=96" in hint
        assert "example inputs are not the cause" in hint
    # bn1 fixed too: conv2 fails later in the forward; the entries alone also work.
    log.edit("bn1", num_features=64)
    rep = tx.probe(model, x, patch_log=log.entries)
    assert rep.error is not None and rep.error.path == "conv2"
    assert "bn1 was edited to num_features=64" in rep.error.hint  # the last patch that ran
    # relu ran in between (a function, not a module): conv2 got bn1's output all the same.
    assert "conv2 receives its output (1x64x8x8) and still has in_channels=96" in rep.error.hint
    log.undo()
    log.undo()
    assert tx.probe(model, x, patch_log=log).ok


def test_hint_when_the_patched_module_itself_fails() -> None:
    model, x = ConvNet(), torch.randn(1, 3, 8, 8)
    log = tx.PatchLog(model)
    log.edit("conv2", in_channels=32)
    rep = tx.probe(model, x, patch_log=log)
    assert rep.error is not None and rep.error.path == "conv2"
    assert rep.error.hint.startswith("conv2 was edited to in_channels=32 (was 96)")
    assert "raised inside it" in rep.error.hint and "inputs are not the cause" in rep.error.hint


def test_explorer_header_names_the_edit() -> None:
    model, x = ConvNet(), torch.randn(1, 3, 8, 8)
    ex = tx.explore(model, x)
    try:
        ex.edit("conv1", out_channels=64)
        rep = ex.probe_report
        assert rep is not None and rep.error is not None
        assert "conv1 was edited to out_channels=64" in rep.error.hint
        summary = ex._session.probe_summary()
        assert "conv1 was edited" in summary["error"]["hint"]
    finally:
        ex.close()


def test_probe_refuses_a_patch_log_of_the_wrong_type() -> None:
    with pytest.raises(TypeError, match="patch_log"):
        run_probe(ConvNet(), (torch.randn(1, 3, 8, 8),), {}, patch_log=3)


def test_widget_data_carries_not_called_reasons() -> None:
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
    model = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False).eval()
    ex = tx.explore(model, torch.randn(2, 5, 16))
    try:
        session = ex._session
        assert session is not None
        reply, _ = session.handle({"kind": "probe_table", "offset": 0, "limit": 50})
        assert "8 not called" in session.probe_summary()["status"]
        assert "fused fast path" in reply["not_called"]["layers.0.linear1"]
        session.select("layers.0.self_attn.out_proj")
        why = session.overview()["not_called"]
        assert why is not None and why.startswith("inside layers.0.self_attn")
        session.select("layers.0")
        assert session.overview()["not_called"] is None
        snap = session.snapshot()
        assert "fused fast path" in snap["overview"]["layers.0.linear1"]["not_called"]
    finally:
        ex.close()


def test_small_old_values_are_named_only_for_related_attributes() -> None:
    from types import SimpleNamespace

    from torchxray._probe.cause import patch_hint

    class Heads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.num_heads, self.layer_idx, self.dim = 4, 4, 64

    entry = SimpleNamespace(
        op="edit", paths=("a",), changes={"num_heads": (4, 2)}, old_cls="A", new_cls="A"
    )
    calls = [SimpleNamespace(path="a", done=True), SimpleNamespace(path="b", done=False)]
    hint = patch_hint([entry], "b", Heads(), calls)
    assert "a was edited to num_heads=2 (was 4); b runs right after it" in hint
    assert "still has num_heads=4" in hint and "layer_idx" not in hint
    assert patch_hint([entry], "c", Heads(), [SimpleNamespace(path="c", done=False)]) == ""


def test_nested_output_names_read_as_attribute_access() -> None:
    import dataclasses

    @dataclasses.dataclass
    class Pair:
        a: torch.Tensor
        b: torch.Tensor

    class Model(nn.Module):
        def forward(self, x: torch.Tensor) -> dict[str, Any]:
            return {"out": Pair(x, x * 2), "n": [x, x], "odd key": x}

    rep = tx.probe(Model(), torch.randn(2, 3))
    names = [o.name for o in rep[""].outputs]  # type: ignore[union-attr]
    assert names == ["out.a", "out.b", "n[0]", "n[1]", "['odd key']"]
