"""Shape probe: records, fake/real modes, failure localisation, clean-up, memoisation, diff."""

from __future__ import annotations

import dataclasses
import gc
import weakref
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from fixtures.models import (
    hooked_model,
    patched_forward,
    repeated_blocks,
    script_module,
    shared_module,
    tiny_mlp,
)
from torch import nn
from torch.nn.modules import module as nn_module
from torch.utils._python_dispatch import _get_current_dispatch_mode

import torchxray as tx
from torchxray.probe import ProbeReport, TensorInfo, probe, run_probe

# -- small models ------------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(o.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.attn = RMSNorm(dim), Attention(dim, heads)
        self.norm2 = RMSNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.SiLU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 50, dim: int = 16, layers: int = 4, heads: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    extra: dict[str, Any]


class DictModel(nn.Module):
    """Takes a dict and a keyword mask; returns a dataclass; has a child with no tensor output."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 3)
        self.count = Counter()

    def forward(
        self, batch: dict[str, torch.Tensor], *, mask: torch.Tensor | None = None
    ) -> Output:
        y = self.proj(batch["x"])
        n = self.count(y)
        if mask is not None:
            y = y * mask
        return Output(y, {"n": n, "pair": (y, y.sum(-1))})


class Counter(nn.Module):
    def forward(self, x: torch.Tensor) -> int:
        return int(x.dim())


class Reuse(nn.Module):
    """One child called twice with different input lengths."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).sum() + self.lin(x[:1]).sum()


class Router(nn.Module):
    """A MoE-style router: boolean masking, whose output size depends on values."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        chosen = self.gate(x).argmax(-1) == 0
        return x[chosen]


class MoE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(4, 4)
        self.router = Router()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.router(self.pre(x))


def _hook_state(model: nn.Module) -> list[tuple[Any, ...]]:
    per_module = [
        (dict(m._forward_hooks), dict(m._forward_pre_hooks), dict(m._backward_hooks))
        for m in model.modules()
    ]
    glob = tuple(
        dict(getattr(nn_module, name))
        for name in dir(nn_module)
        if name.startswith("_global_") and isinstance(getattr(nn_module, name), dict)
    )
    return [*per_module, glob]


def _forward_attrs(model: nn.Module) -> list[Any]:
    return [m.__dict__.get("forward") for m in model.modules()]


# -- records -----------------------------------------------------------------------------------


def test_records_shapes_flops_and_order() -> None:
    model = tiny_mlp((4, 8, 2))
    rep = tx.probe(model, torch.randn(3, 4))
    assert isinstance(rep, tx.ProbeReport)
    assert rep.ok and rep.error is None and rep.mode == "fake" and rep.device == "cpu"
    assert list(rep) == ["", "0", "1", "2"]
    assert rep["0"].input_shapes == ((3, 4),) and rep["0"].output_shapes == ((3, 8),)
    assert rep["2"].output_shapes == ((3, 2),) and rep[""].cls == "Sequential"
    assert rep["0"].flops == 2 * 3 * 4 * 8 and rep["1"].flops == 0
    assert rep[""].flops == rep["0"].flops + rep["2"].flops == rep.total_flops
    out = rep["0"].outputs[0]
    assert isinstance(out, TensorInfo) and (out.dtype, out.device) == ("float32", "cpu")
    assert rep["0"].time_ms is None and rep["0"].mem_peak is None  # fake mode measures no time
    assert "1" in rep and "7" not in rep and len(rep) == 4


def test_missing_path_names_close_ones() -> None:
    rep = probe(repeated_blocks(2), torch.randn(2, 8))
    with pytest.raises(KeyError, match="layers.1.mlp"):
        rep["layers.1.mpl"]


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_a_path_through_an_alias_gives_the_record_of_the_first_path(mode: str) -> None:
    class Shared(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
            self.dec = nn.Linear(4, 2)
            self.also = self.enc  # the same object under a second name

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.dec(self.also(x))

    model = Shared()
    rep = probe(model, torch.randn(3, 4), mode=mode)
    assert rep.ok and rep.aliases == {"also": "enc"}
    assert list(rep) == ["", "enc", "enc.0", "enc.1", "dec"]  # each module once, at its first path
    for path in ("also", "also.0", "also.1"):
        assert model.get_submodule(path) is model.get_submodule(path.replace("also", "enc"))
        assert path in rep and rep[path] == rep[path.replace("also", "enc")]
    assert rep["also.0"].path == "enc.0" and rep["also.0"].output_shapes == ((3, 4),)
    assert "also.2" not in rep and 3 not in rep
    with pytest.raises(KeyError, match="also.2"):
        rep["also.2"]


def test_repeated_calls_keep_first_shapes_and_each_call() -> None:
    rep = probe(Reuse(), torch.randn(5, 4))
    rec = rep["lin"]
    assert rec.calls == 2 and rec.input_shapes == ((5, 4),)
    assert [c.inputs[0].shape for c in rec.call_records] == [(5, 4), (1, 4)]  # type: ignore[union-attr]
    assert rec.flops == 2 * 5 * 4 * 4 + 2 * 1 * 4 * 4


def test_shared_module_counts_calls_at_its_first_path() -> None:
    rep = probe(shared_module(), torch.randn(2, 4))
    assert rep["first"].calls == 3 and "again" not in list(rep) and "seq.0" not in list(rep)
    assert rep["again"] == rep["seq.0"] == rep["first"]  # the other paths lead to the same record
    assert rep["seq.1"].output_shapes == ((2, 4),)


def test_dict_kwargs_dataclass_and_non_tensor_outputs() -> None:
    model = DictModel()
    for mode in ("fake", "real"):
        rep = probe(model, {"x": torch.randn(2, 4)}, mode=mode, mask=torch.ones(2, 3))
        root = rep[""]
        assert root.input_shapes == ((2, 4), (2, 3))
        names = [i.name for i in root.inputs if isinstance(i, TensorInfo)]
        assert names == ["args[0]['x']", "kwargs['mask']"]
        assert root.output_shapes == ((2, 3), (2, 3), (2,))  # dataclass fields flattened
        assert "2" in root.outputs  # the int inside the dataclass's dict, as text
        assert rep["count"].outputs == ("2",) and rep["count"].output_shapes == ()


def test_input_shapes_are_plain_int_tuples() -> None:
    rep = probe(TinyLM(), torch.randint(0, 50, (2, 7)))
    assert rep["layers.0.attn.qkv"].output_shapes == ((2, 7, 48),)
    shape = rep["head"].output_shapes[0]
    assert type(shape) is tuple and all(type(s) is int for s in shape)


# -- bad input ---------------------------------------------------------------------------------


def test_non_module_and_bad_mode_raise() -> None:
    with pytest.raises(TypeError, match="nn.Module"):
        probe(lambda x: x, torch.randn(2))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'fake' or 'real'"):
        probe(tiny_mlp(), torch.randn(2, 4), mode="meta")


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_wrong_shape_names_the_module_and_keeps_earlier_records(mode: str) -> None:
    model = tiny_mlp((4, 8, 2))
    model[2] = nn.Linear(5, 2)  # expects 5 features, gets 8
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rep = probe(model, torch.randn(3, 4), mode=mode)
    assert not rep.ok and rep.error is not None
    assert rep.error.path == "2" and rep.error.cls == "Linear"
    assert rep.error.input_shapes == ((3, 8),) and rep.error.exc_type == "RuntimeError"
    assert "shape" in rep.error.hint and "8" in rep.error.message
    assert rep["0"].complete and rep["1"].output_shapes == ((3, 8),)
    assert not rep["2"].complete and rep["2"].input_shapes == ((3, 8),)
    assert not rep[""].complete and rep.total_flops is None
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_wrong_dtype_and_wrong_count() -> None:
    rep = probe(tiny_mlp(), torch.ones(3, 4, dtype=torch.long), mode="real")
    assert not rep.ok and rep.error is not None and rep.error.path == "0"
    assert "dtype" in rep.error.hint
    rep = probe(tiny_mlp(), torch.randn(3, 4), torch.randn(3, 4))
    assert not rep.ok and rep.error is not None
    assert rep.error.path == "" and rep.error.exc_type == "TypeError"
    assert "number" in rep.error.hint and rep.error.input_shapes == ((3, 4), (3, 4))
    assert "TypeError in the model (root)" in str(rep.error)


class Pair(nn.Module):
    """Returns a tuple (the general output path) or, with `index`, indexes out of range."""

    def __init__(self, index: int | None = None) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.index = index

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.fc(x)
        if self.index is not None:
            y = y[self.index]
        return y, x


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_an_error_of_torchxray_itself_is_reported_as_such(mode: str) -> None:
    import torchxray._probe.calls as calls

    # A bug as torchxray's own code would raise it: a function whose code lives in a torchxray
    # file, called while the forward runs.
    scope: dict[str, Any] = {}
    source = "def helper(value):\n    return value.no_such_attribute\n"
    exec(compile(source, calls.__file__, "exec"), scope)  # noqa: S102

    class Calls(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return scope["helper"](x)

    rep = probe(Calls(), torch.randn(2, 4), mode=mode)
    assert not rep.ok and rep.error is not None and rep.error.exc_type == "AttributeError"
    assert "raised inside torchxray (_probe/calls.py:2 (helper))" in rep.error.hint
    assert torch.__version__ in rep.error.hint and "inputs" not in rep.error.hint


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_a_value_torchxray_cannot_read_never_fails_the_forward(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torchxray._probe.calls as calls

    def broken(value: Any, name: str) -> Any:
        raise ValueError("no way to flatten this")

    monkeypatch.setattr(calls, "leaf_infos", broken)
    rep = probe(Pair(), torch.randn(2, 4), mode=mode)
    assert rep.ok and rep.error is None
    assert rep[""].outputs == ("<not read: ValueError>",)
    assert rep["fc"].output_shapes == ((2, 4),)  # the other records hold
    assert rep.limitations == (
        "torchxray could not read the outputs of (root): ValueError: no way to flatten this",
    )


class TwoArgs(nn.Module):
    """Calls its second Linear with two arguments: the model's own mistake. In fake mode both
    Linears are memoised repeats, so the call goes through the memo's stub."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x), x)


def test_errors_of_the_model_or_torch_are_not_blamed_on_torchxray() -> None:
    from torchxray.demo import tiny_transformer

    rep = probe(Pair(index=10), torch.randn(2, 4), mode="real", flops=True)
    assert rep.error is not None and rep.error.exc_type == "IndexError"
    assert "torchxray" not in rep.error.hint
    # A wrong argument count raises in the frame that calls the forward: the caller's mistake, on
    # the direct route, the instance route (a module with hooks) and through a memo stub.
    hooked = Pair()
    hooked.register_forward_hook(lambda m, a, out: None)
    for model in (Pair(), hooked):
        rep = probe(model, torch.randn(2, 4), torch.randn(2, 4))
        assert rep.error is not None and rep.error.exc_type == "TypeError"
        assert "number" in rep.error.hint and "torchxray" not in rep.error.hint
    rep = probe(TwoArgs(), torch.randn(2, 4))
    assert rep.error is not None and rep.error.path == "b" and rep.error.exc_type == "TypeError"
    assert "number" in rep.error.hint and "torchxray" not in rep.error.hint
    # The package's demo models are model code too, though they live in torchxray's folder.
    rep = probe(tiny_transformer(), torch.randint(0, 10, (16,)))
    assert rep.error is not None and "torchxray" not in rep.error.hint, rep.error


def test_innermost_module_named_even_after_a_caught_exception() -> None:
    class Fallback(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bad = nn.Linear(5, 5)
            self.body = nn.Sequential(nn.Linear(4, 4), nn.Linear(6, 6))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            try:
                x = self.bad(x)
            except RuntimeError:
                pass
            return self.body(x)

    rep = probe(Fallback(), torch.randn(2, 4))
    assert rep.error is not None and rep.error.path == "body.1"
    assert "bad" not in rep  # its call was cut short and swallowed by the forward
    assert rep["body.0"].complete and list(rep) == ["", "body", "body.0", "body.1"]


def test_real_mode_meta_input_on_cpu_model_fails_cleanly() -> None:
    rep = probe(tiny_mlp(), torch.empty(3, 4, device="meta"), mode="real")
    assert not rep.ok and rep.error is not None and rep.error.path == ""
    assert "meta" in rep.error.message


# -- clean-up ----------------------------------------------------------------------------------


def _mixed_modes(model: nn.Module) -> list[bool]:
    model.train()
    for i, m in enumerate(model.modules()):
        if i % 3 == 1:
            m.training = False
    return [m.training for m in model.modules()]


@pytest.mark.parametrize("mode", ["fake", "real"])
@pytest.mark.parametrize("outcome", ["ok", "error", "interrupt", "oom"])
def test_everything_restored(mode: str, outcome: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model = hooked_model()
    model.append(nn.Linear(4, 8))
    model.append(nn.Sequential(*repeated_blocks(3).layers))  # fake mode memoises the repeats
    flags, hooks, forwards = _mixed_modes(model), _hook_state(model), _forward_attrs(model)
    seen: list[bool] = []
    target = model[3][1].mlp[2]  # type: ignore[index]
    real_forward = target.forward

    def spy(x: torch.Tensor) -> torch.Tensor:
        # Its own train/eval flag (the probe runs each module in its own mode) and no grad.
        seen.append(target.training != own or torch.is_grad_enabled())
        if outcome == "error":
            raise ValueError("boom")
        if outcome == "interrupt":
            raise KeyboardInterrupt
        if outcome == "oom":
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_forward(x)

    monkeypatch.setattr(target, "forward", spy)
    forwards = _forward_attrs(model)
    own = target.training
    x = torch.randn(2, 4)
    if outcome == "interrupt":
        with pytest.raises(KeyboardInterrupt):
            probe(model, x, mode=mode)
    else:
        rep = probe(model, x, mode=mode)
        assert rep.ok == (outcome == "ok")
        if outcome == "oom":
            assert rep.error is not None and rep.error.path == "3.1.mlp.2"
            assert "OutOfMemoryError" in rep.error.exc_type and "fake" in rep.error.hint
    assert seen and not any(seen)  # its own mode and no grad inside the probe
    assert [m.training for m in model.modules()] == flags
    assert _hook_state(model) == hooks and _forward_attrs(model) == forwards
    assert torch.is_grad_enabled() and _get_current_dispatch_mode() is None and gc.isenabled()


def test_users_hooks_still_run_and_batchnorm_stats_untouched() -> None:
    calls: list[str] = []
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).train()
    model[0].register_forward_hook(lambda m, a, o: calls.append("hook"))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    assert probe(model, torch.randn(8, 4), mode="real").ok
    assert calls == ["hook"] and model.training
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())


def test_real_mode_releases_intermediate_tensors() -> None:
    refs: list[weakref.ref[torch.Tensor]] = []

    class Keep(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x * 2
            refs.append(weakref.ref(y))
            return y

    for model in (nn.Sequential(Keep(), nn.Linear(4, 4)), nn.Sequential(Keep(), nn.Linear(5, 4))):
        probe(model, torch.randn(3, 4), mode="real")
    # The failing probe runs its forward once more without recording (`probe._bare_runs`: whose
    # failure it is), and that run's tensors are released too.
    assert len(refs) == 3 and all(r() is None for r in refs)


# -- fake mode ---------------------------------------------------------------------------------


def test_fake_mode_uses_real_parameters_without_copy_or_activation_memory() -> None:
    model = nn.Sequential(nn.Linear(2**16, 4), nn.ReLU())
    ptr, weight = model[0].weight.data_ptr(), model[0].weight
    # 2**22 x 2**16 float32 is a 1 TiB activation: only possible if nothing real is allocated.
    huge = torch.empty(2**22, 2**16, device="meta")
    rep = probe(model, huge)
    assert rep.ok and rep["0"].output_shapes == ((2**22, 4),)
    assert rep["0"].inputs[0] == TensorInfo((2**22, 2**16), "float32", "cpu", "args[0]")
    assert model[0].weight is weight and model[0].weight.data_ptr() == ptr
    assert type(model[0].weight) is nn.Parameter


def test_meta_model_probes_and_memoisation_equals_full_probe() -> None:
    with torch.device("meta"):
        model = TinyLM(vocab=1000, dim=64, layers=6, heads=4)
    ids = torch.zeros(2, 33, dtype=torch.long)
    memo = run_probe(model, (ids,), {}, memoise=True)
    full = run_probe(model, (ids,), {}, memoise=False)
    assert memo.ok and full.ok and memo.device == "meta"
    assert memo.memoised and "layers.5" in memo.memoised and not full.memoised
    assert memo.records == full.records and memo.total_flops == full.total_flops
    assert memo["layers.3.attn.out"].outputs[0] == TensorInfo((2, 33, 64), "float32", "meta", "")
    assert _forward_attrs(model) == [None] * len(list(model.modules()))


def test_memoisation_tells_apart_blocks_that_differ_only_in_attributes() -> None:
    class Repeat(nn.Module):
        def __init__(self, k: int) -> None:
            super().__init__()
            self.k = k

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.repeat(1, self.k)

    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b, self.c = Repeat(2), Repeat(3), Repeat(2)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return self.a(x), self.b(x), self.c(x)

    model = Two()
    rep = probe(model, torch.randn(2, 4))
    assert rep["b"].output_shapes == ((2, 12),) and rep["c"].output_shapes == ((2, 8),)
    assert rep.memoised == ("c",)
    assert rep.records == run_probe(model, (torch.randn(2, 4),), {}, memoise=False).records


def test_memoisation_on_repeated_decoder_and_patched_forward() -> None:
    model = repeated_blocks(4)
    rep, full = (
        probe(model, torch.randn(3, 8)),
        run_probe(model, (torch.randn(3, 8),), {}, memoise=False),
    )
    assert {"layers.1", "layers.2", "layers.3"} <= set(rep.memoised) and "final" not in rep.memoised
    assert rep.records == full.records
    patched = patched_forward()
    forward = patched[0].forward
    rep = probe(patched, torch.randn(2, 3))
    assert rep.ok and patched[0].forward is forward and "forward" not in vars(patched[1])


def test_cpu_model_output_devices_and_real_fake_agree() -> None:
    model = TinyLM()
    ids = torch.randint(0, 50, (2, 5))
    fake, real = probe(model, ids), probe(model, ids, mode="real", flops=True)
    assert [r.output_shapes for r in fake.records.values()] == [
        r.output_shapes for r in real.records.values()
    ]
    assert fake.total_flops == real.total_flops and fake.total_flops
    assert [r.flops for r in fake.records.values()] == [r.flops for r in real.records.values()]
    # Real mode counts only when asked: by default it measures, it does not intercept every op.
    lean = probe(model, ids, mode="real")
    assert lean.total_flops is None and all(r.flops is None for r in lean.records.values())
    assert [r.output_shapes for r in lean.records.values()] == [
        r.output_shapes for r in real.records.values()
    ]
    assert probe(model, ids, flops=False).total_flops is None
    with pytest.raises(TypeError, match="flops"):
        probe(model, ids, flops="yes")  # type: ignore[arg-type]
    assert all(r.time_ms is not None and r.time_ms >= 0 for r in real.records.values())
    assert real["layers.0"].mem_alloc is None  # memory is measured on CUDA only


def test_data_dependent_op_fails_in_fake_mode_with_hint_and_runs_in_real() -> None:
    model = MoE()
    rep = probe(model, torch.randn(6, 4))
    assert not rep.ok and rep.error is not None and rep.error.path == "router"
    assert "mode='real'" in rep.error.hint and "depends on tensor values" in rep.error.message
    assert rep["router.gate"].complete and rep["pre"].output_shapes == ((6, 4),)
    real = probe(model, torch.randn(6, 4), mode="real")
    assert real.ok and real["router"].output_shapes[0][1] == 4


# -- diff --------------------------------------------------------------------------------------


def test_diff_changed_added_removed() -> None:
    model = tiny_mlp((4, 8, 2))
    before = probe(model, torch.randn(3, 4))
    model[2] = nn.Linear(8, 3)
    model.append(nn.Tanh())
    model[1] = nn.Identity()
    after = probe(model, torch.randn(3, 4))
    d = before.diff(after)
    assert [e.path for e in d.changed] == ["", "2"] and [e.path for e in d.added] == ["3"]
    assert d.removed == () and d
    two = next(e for e in d.changed if e.path == "2")
    assert two.before[0].shape == (3, 2) and two.after[0].shape == (3, 3)  # type: ignore[union-attr]
    gone = after.diff(before)
    assert [e.path for e in gone.removed] == ["3"] and gone.removed[0].after == ()
    assert not before.diff(before)
    half = probe(model.to(torch.float64), torch.randn(3, 4, dtype=torch.float64))
    assert {e.path for e in after.diff(half).changed} == {"", "0", "1", "2", "3"}
    with pytest.raises(TypeError):
        before.diff("x")  # type: ignore[arg-type]


def test_report_summary_and_error_text() -> None:
    rep = probe(MoE(), torch.randn(3, 4))
    assert isinstance(rep, ProbeReport)
    text = rep.summary()
    assert text.startswith("FAILED:") and "router" in text and "pre  Linear  x1  -> 3x4" in text


def test_fake_probe_leaves_no_fake_tensor_cached_on_the_model() -> None:
    class Rotary(nn.Module):
        """Grows its cached table when it sees a longer sequence (as older LLM code does)."""

        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("table", torch.arange(4.0))
            self.last: torch.Tensor | None = None

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.shape[-1] > self.table.shape[0]:
                self.register_buffer("table", torch.arange(float(x.shape[-1])))
                self.register_buffer("extra", self.table * 2)
            self.last = x
            return x * self.table[: x.shape[-1]]

    model = Rotary()
    table = model.table
    assert probe(model, torch.randn(2, 9)).ok
    assert model.table is table and "extra" not in model._buffers and model.last is None
    # A real run leaves every buffer and tensor attribute as it found them too (a train-mode
    # forward updates some): the grown table and the cached input are put back.
    assert probe(model, torch.randn(2, 9), mode="real").ok
    assert model.table is table and "extra" not in model._buffers and model.last is None


@pytest.mark.parametrize("where", ["attribute", "buffer", "parameter"])
def test_a_tensor_rebound_to_an_equal_one_is_put_back(where: str) -> None:
    """The state check compares the model's dicts with their copies in one go; a tensor that a
    forward replaced by an equal one (one element: a constant under fake mode) is still seen."""

    class Rebinds(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = torch.tensor(2.0)
            self.register_buffer("step", torch.tensor(2.0))
            self.weight = nn.Parameter(torch.tensor(2.0))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if where == "attribute":
                self.scale = torch.tensor(2.0)
            elif where == "buffer":
                self.step = torch.tensor(2.0)
            else:
                self.weight = nn.Parameter(torch.tensor(2.0))
            return x * self.scale * self.step * self.weight

    model = Rebinds()
    before = (model.scale, model.step, model.weight)
    for mode in ("fake", "real"):
        assert probe(model, torch.randn(3, 2), mode=mode).ok
        assert all(a is b for a, b in zip((model.scale, model.step, model.weight), before)), mode


def test_lazy_modules_are_refused_not_initialised() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = nn.Sequential(nn.Linear(3, 5), nn.LazyLinear(2))
    for mode in ("fake", "real"):
        rep = probe(model, torch.randn(2, 3), mode=mode)
        assert not rep.ok and rep.error is not None and rep.error.path == "1"
        assert "initialise" in rep.error.hint and type(model[1]) is nn.LazyLinear


def test_flops_agree_with_flopcountermode_and_across_devices() -> None:
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        meta = TinyLM()
    ids = torch.randint(0, 50, (2, 7))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        meta(ids.to("meta"))
    total = probe(meta, ids).total_flops
    assert total == counter.get_total_flops() > 0
    # CPU attention runs a kernel torch has no formula for; the probe counts it like the others.
    assert probe(TinyLM(), ids, mode="real", flops=True).total_flops == total
    rep = probe(meta, ids)
    assert rep["layers.0"].flops == sum(rep[f"layers.0.{c}"].flops for c in ("attn", "mlp"))  # type: ignore[misc]


class GQAttention(nn.Module):
    """Llama-style grouped-query attention (separate q/k/v/o projections)."""

    def __init__(self, dim: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, d))


class LlamaLayer(nn.Module):
    def __init__(self, dim: int, heads: int, kv_heads: int, hidden: int) -> None:
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(dim), RMSNorm(dim)
        self.self_attn = GQAttention(dim, heads, kv_heads)
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, vocab: int, dim: int, layers: int, heads: int, kv: int, hidden: int) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(LlamaLayer(dim, heads, kv, hidden) for _ in range(layers))
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


def test_70b_llama_architecture_on_meta() -> None:
    with torch.device("meta"):
        model = Llama(vocab=128256, dim=8192, layers=80, heads=64, kv=8, hidden=28672)
    assert sum(p.numel() for p in model.parameters()) > 70e9
    rep = probe(model, torch.zeros(1, 128, dtype=torch.long))
    assert rep.ok and rep.device == "meta" and len(rep) == 1 + 1 + 80 * 11 + 2
    assert rep["layers.79.self_attn.k_proj"].output_shapes == ((1, 128, 1024),)
    assert rep["lm_head"].outputs[0] == TensorInfo((1, 128, 128256), "float32", "meta", "")
    assert len(rep.memoised) == 79 and rep["layers.79"].flops == rep["layers.0"].flops
    layer, head = rep["layers.0"].flops, rep["lm_head"].flops
    assert layer and head and rep.total_flops == 80 * layer + head
    full = run_probe(model, (torch.zeros(1, 128, dtype=torch.long),), {}, memoise=False)
    assert full.records == rep.records and not full.memoised
    assert all(p.device.type == "meta" for p in model.parameters())


def test_real_mode_moves_inputs_to_the_model_device_not_the_model() -> None:
    with torch.device("meta"):
        model = TinyLM()
    ids = torch.randint(0, 50, (2, 5))
    rep = probe(model, ids, mode="real")
    assert rep.ok and rep["embed"].inputs[0] == TensorInfo((2, 5), "int64", "meta", "args[0]")
    assert ids.device.type == "cpu" and next(model.parameters()).device.type == "meta"


class ItemScale(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * x.sum().item()


class Branch(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x if x.sum() > 0 else -x


@pytest.mark.parametrize("op", [ItemScale, Branch])
def test_item_and_value_branches_fail_in_fake_mode_only(op: type[nn.Module]) -> None:
    model = nn.Sequential(nn.Linear(3, 3), op())
    rep = probe(model, torch.randn(2, 3))
    assert rep.error is not None and rep.error.path == "1" and "mode='real'" in rep.error.hint
    assert "DataDependentOutputException" in rep.error.exc_type
    assert probe(model, torch.randn(2, 3), mode="real").ok


def test_memoised_outputs_survive_in_place_metadata_changes() -> None:
    class Twist(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.a(x)
            y.unsqueeze_(0)  # changes the memoised tensor's shape in place
            return self.b(x) + self.c(x) + y.sum()

    rep = probe(Twist(), torch.randn(2, 4))
    assert rep.ok and rep.memoised == ("b", "c") and rep["c"].output_shapes == ((2, 4),)
    assert rep[""].output_shapes == ((2, 4),)


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_script_module_flags_restored_through_its_own_setattr(mode: str) -> None:
    model = script_module()
    model[0].train(False)
    flags = [m.training for m in model.modules()]
    rep = probe(model, torch.randn(2, 4), mode=mode)
    assert rep.ok and rep[""].output_shapes == ((2, 2),)
    assert [m.training for m in model.modules()] == flags
    assert not any("training" in vars(m) for m in model.modules())
