"""PatchLog: replace / edit / replace_all, transactions, undo/redo, retained bytes, to_code."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn as nn
from fixtures.models import (
    awkward_moduledict,
    check_input,
    hooked_model,
    lazy_model,
    log_forward,
    meta_model,
    parametrized,
    repeated_blocks,
    script_module,
    shared_module,
    tiny_cnn,
    tiny_mlp,
)
from torch.nn.utils import parametrize

from torchxray.forms import FormError
from torchxray.forms import form as form_of
from torchxray.patch import PatchEntry, PatchLog

# -- helpers -------------------------------------------------------------------------------------


def _hooks(m: nn.Module) -> tuple[Any, ...]:
    tables = (
        "_forward_hooks",
        "_forward_hooks_with_kwargs",
        "_forward_hooks_always_called",
        "_forward_pre_hooks",
        "_forward_pre_hooks_with_kwargs",
        "_backward_hooks",
    )
    return tuple(tuple((k, id(v)) for k, v in getattr(m, t).items()) for t in tables)


def _digest(t: torch.Tensor) -> str:
    if t.is_meta:
        return "meta"
    raw = t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return hashlib.sha1(raw).hexdigest()


def state(model: nn.Module) -> tuple[Any, ...]:
    """Everything a failed patch must not change: objects at every path, modes, hooks, tensors."""
    mods = tuple(
        (p, id(m), type(m), m.training, _hooks(m), tuple(m._modules))
        for p, m in model.named_modules(remove_duplicate=False)
    )
    tensors = tuple(
        (k, id(t), t.dtype, str(t.device), tuple(t.shape), t.requires_grad, _digest(t))
        for k, t in model.state_dict(keep_vars=True).items()
    )
    return mods, tensors


def structure(model: nn.Module) -> list[tuple[str, str, str]]:
    """Path, class and hyperparameters (repr) of every module, plus parameter shapes/dtypes."""
    mods = [(p, type(m).__name__, m.extra_repr()) for p, m in model.named_modules()]
    params = [(k, str(tuple(t.shape)), str(t.dtype)) for k, t in model.state_dict().items()]
    return mods + params


def replay(log: PatchLog, fresh: nn.Module) -> nn.Module:
    exec(compile(log.to_code(), "<to_code>", "exec"), {"model": fresh})
    return fresh


def seeded(builder: Any, seed: int = 0) -> Any:
    torch.manual_seed(seed)
    return builder()


class Wrapper(nn.Module):
    """Wraps a layer and scales its output (like an adapter)."""

    def __init__(self, inner: nn.Module, scale: float = 2.0) -> None:
        super().__init__()
        self.inner = inner
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x) * self.scale


# -- replace -------------------------------------------------------------------------------------


def test_replace_attribute_and_index_paths() -> None:
    model = tiny_cnn()
    log = PatchLog(model)
    gelu, head = nn.GELU(), nn.Linear(8, 3)
    e1 = log.replace("features.2", gelu)
    e2 = log.replace("head", head)
    assert model.features[2] is gelu and model.head is head
    assert (e1.op, e1.paths, e1.old_cls, e1.new_cls) == ("replace", ("features.2",), "ReLU", "GELU")
    assert e2.id == e1.id + 1 and log.entries == (e1, e2)
    assert model(torch.randn(2, 3, 8, 8)).shape == (2, 3)


def test_replace_moduledict_keys_that_are_not_identifiers() -> None:
    model = awkward_moduledict()
    log = PatchLog(model)
    inner = nn.ReLU()
    log.replace("with space.0", inner)
    assert model["with space"][0] is inner
    for key in ("a-b", "with space", "ünïcode", "1x"):
        new = nn.Identity()
        log.replace(key, new)
        assert model[key] is new
    assert list(model.keys()) == ["a-b", "1x", "with space", "ünïcode"]  # order kept


def test_replacement_takes_dtype_device_mode_and_hooks() -> None:
    model = hooked_model().to(torch.float64).eval()
    old = model[0]
    calls: list[str] = []
    h = old.register_forward_hook(lambda m, a, k, o: calls.append("kw"), with_kwargs=True)
    old.register_forward_hook(lambda m, a, o: calls.append("always"), always_call=True)
    new = nn.Linear(4, 4)
    assert new.training and new.weight.dtype == torch.float32
    log = PatchLog(model)
    log.replace("0", new)
    assert new.weight.dtype == torch.float64 and not new.training
    assert list(new._forward_hooks.values())[:2] == [log_forward, old._forward_hooks[h.id]]
    assert list(new._forward_pre_hooks.values()) == [check_input]
    assert new._forward_hooks_with_kwargs == old._forward_hooks_with_kwargs
    assert new._forward_hooks_always_called == old._forward_hooks_always_called
    model(torch.randn(1, 4, dtype=torch.float64))
    assert calls == ["kw", "always"]


def test_old_style_weight_norm_hook_is_not_copied() -> None:
    with pytest.warns(FutureWarning):
        old = torch.nn.utils.weight_norm(nn.Linear(4, 4))
    model = nn.Sequential(old)
    old.register_forward_pre_hook(check_input)
    new = nn.Linear(4, 4)
    PatchLog(model).replace("0", new)
    assert list(new._forward_pre_hooks.values()) == [check_input]
    assert model(torch.randn(1, 4)).shape == (1, 4)


def test_replacement_without_tensors_takes_the_ancestors_dtype() -> None:
    model = tiny_mlp().to(torch.bfloat16)
    log = PatchLog(model)
    new = nn.PReLU()  # the ReLU it replaces has no tensors; the parent Sequential has
    log.replace("1", new)
    assert new.weight.dtype == torch.bfloat16


def test_meta_model_gets_meta_replacement_and_meta_replacement_stays_meta() -> None:
    model = meta_model()
    log = PatchLog(model)
    new = nn.Linear(4, 8)
    log.replace("0", new)
    assert new.weight.is_meta
    entry = log.edit("2", out_features=3)
    assert model[2].weight.is_meta and model[2].out_features == 3 and entry.kept == ()
    real = tiny_mlp()
    with torch.device("meta"):
        lazy = nn.Linear(4, 8)
    PatchLog(real).replace("0", lazy)
    assert real[0] is lazy and lazy.weight.is_meta  # left alone: materialising needs an init


def test_shared_module_replaced_at_every_path_or_one() -> None:
    model = shared_module()
    log = PatchLog(model)
    first = model.first
    new = nn.Linear(4, 4)
    entry = log.replace("again", new)
    assert model.first is model.again is model.seq[0] is new
    assert entry.paths == ("first", "again", "seq.0")
    log.undo()
    assert model.first is model.again is model.seq[0] is first
    other = nn.Linear(4, 4)
    entry = log.replace("seq.0", other, which="this")
    assert model.seq[0] is other and model.first is model.again is first
    assert entry.paths == ("seq.0",)


def test_which_this_through_a_shared_parent_changes_the_one_slot() -> None:
    model = nn.Module()
    model.a = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    model.b = model.a
    model.c = nn.Sequential(model.a[1])  # the ReLU is also reachable outside the shared parent
    log = PatchLog(model)
    entry = log.replace("b.1", nn.GELU(), which="this")
    assert entry.paths == ("a.1", "b.1")  # one slot, two paths through the shared parent
    assert isinstance(model.a[1], nn.GELU) and isinstance(model.c[0], nn.ReLU)
    assert entry.code.count("= new") == 1


def test_replace_a_parametrized_module() -> None:
    model = parametrized()
    new = nn.Linear(3, 3)
    PatchLog(model).replace("0", new)
    assert model[0] is new and model(torch.randn(2, 3)).shape == (2, 2)


def test_lazy_modules_are_reinitialised_not_copied() -> None:
    model = lazy_model()
    log = PatchLog(model)
    entry = log.edit("0", out_features=5)
    assert entry.kept == () and set(entry.reinitialised) == {"weight", "bias"}
    # The old LazyLinear's own initialisation hook must not be copied onto the new one.
    assert len(model[0]._forward_pre_hooks) == 1
    log.replace("2", nn.Linear(5, 2))
    assert model(torch.randn(1, 5)).shape == (1, 2)


def test_script_module_is_refused() -> None:
    with pytest.raises(TypeError, match="TorchScript"):
        PatchLog(script_module())
    model = nn.Sequential(script_module())
    with pytest.raises(TypeError, match="TorchScript"):
        PatchLog(model).replace("0.0", nn.Linear(4, 8))
    assert isinstance(model[0], torch.jit.ScriptModule)


# -- undo / redo / history -----------------------------------------------------------------------


def test_undo_redo_restore_exact_objects_and_weights() -> None:
    model = tiny_cnn()
    before = state(model)
    log = PatchLog(model)
    log.replace("head", nn.Linear(8, 4))
    log.edit("features.0", out_channels=8, kernel_size=5, padding=2)
    after = state(model)
    assert log.can_undo and not log.can_redo
    assert log.undo().op == "edit" and log.undo().op == "replace"
    assert state(model) == before and not log.can_undo and log.can_redo
    log.redo()
    log.redo()
    assert state(model) == after
    with pytest.raises(IndexError, match="nothing to redo"):
        log.redo()


def test_new_change_clears_redo() -> None:
    model = tiny_mlp()
    log = PatchLog(model)
    log.replace("1", nn.GELU())
    log.undo()
    log.replace("1", nn.Tanh())
    assert not log.can_redo and [e.new_cls for e in log.entries] == ["Tanh"]
    log.undo()
    with pytest.raises(IndexError, match="nothing to undo"):
        log.undo()


def test_undo_refuses_after_an_outside_change() -> None:
    model = tiny_mlp()
    log = PatchLog(model)
    log.replace("1", nn.GELU())
    model[1] = nn.Tanh()  # the user changes the model by hand
    before = state(model)
    with pytest.raises(RuntimeError, match="changed outside this PatchLog"):
        log.undo()
    assert state(model) == before and log.can_undo


def test_retained_bytes_and_clear() -> None:
    model = nn.Sequential(nn.Linear(100, 100), nn.ReLU())
    log = PatchLog(model)
    assert log.retained_bytes == 0
    log.replace("0", nn.Linear(100, 50))
    assert log.retained_bytes == (100 * 100 + 100) * 4  # the old Linear, kept for undo
    log.undo()
    assert log.retained_bytes == (100 * 50 + 50) * 4  # now the undone replacement, for redo
    log.redo()
    code = log.to_code()
    assert log.clear() == (100 * 100 + 100) * 4
    assert log.retained_bytes == 0 and not log.can_undo and not log.can_redo
    assert len(log.entries) == 1 and log.to_code() == code  # the change stays replayable


def test_meta_modules_retain_nothing() -> None:
    log = PatchLog(meta_model())
    log.replace("0", nn.Linear(4, 8))
    assert log.retained_bytes == 0


def test_replace_with_another_module_of_the_model_shares_it() -> None:
    model = tiny_mlp((4, 4, 4)).eval()
    model[0].train()  # an odd mode that sharing must not "fix"
    log = PatchLog(model)
    log.replace("2", model[0])
    assert model[2] is model[0] and model[0].training
    fresh = replay(log, tiny_mlp((4, 4, 4)))
    assert fresh[2] is fresh[0]


def test_which_module_stays_in_model_is_not_counted() -> None:
    model = shared_module()
    log = PatchLog(model)
    log.replace("seq.0", nn.Linear(4, 4), which="this")
    assert log.retained_bytes == 0  # the old Linear is still at "first"/"again"


# -- edit ----------------------------------------------------------------------------------------


def test_edit_keeps_matching_tensors_and_requires_grad() -> None:
    model = tiny_cnn()
    old = model.features[0]
    old.bias.requires_grad_(False)
    log = PatchLog(model)
    entry = log.edit("features.0", kernel_size=5, padding=2)
    new = model.features[0]
    assert new is not old and new.kernel_size == (5, 5)
    assert entry.kept == ("bias",) and entry.reinitialised == ("weight",)
    assert torch.equal(new.bias, old.bias) and not new.bias.requires_grad
    assert entry.changes["kernel_size"] == ((3, 3), (5, 5))
    bn = log.edit("features.1", eps=1e-3)  # same shapes: everything, buffers included, is kept
    assert set(bn.kept) == {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}
    assert bn.reinitialised == ()


def test_edit_accepts_ui_strings() -> None:
    model = tiny_mlp()
    PatchLog(model).edit("2", out_features="5")
    assert model[2].out_features == 5 and model(torch.randn(1, 4)).shape == (1, 5)


def test_edit_dtype_is_not_undone_by_placement() -> None:
    model = tiny_mlp()
    log = PatchLog(model)
    log.edit("0", dtype=torch.float64)
    assert model[0].weight.dtype == torch.float64
    assert "dtype=torch.float64), model, '0', cast=False)" in log.to_code()
    assert replay(log, tiny_mlp())[0].weight.dtype == torch.float64


def test_edit_keeps_hooks_and_mode() -> None:
    model = hooked_model().eval()
    log = PatchLog(model)
    log.edit("0", out_features=6)
    assert list(model[0]._forward_pre_hooks.values()) == [check_input]
    assert list(model[0]._forward_hooks.values()) == [log_forward]
    assert not model[0].training


# -- replace_all ---------------------------------------------------------------------------------


def test_replace_all_by_class_is_one_entry() -> None:
    model = repeated_blocks(3)
    before = state(model)
    log = PatchLog(model)
    preview = log.matches(nn.LayerNorm)
    assert len(preview) == 8 and preview[0] == "layers.0.norm1"
    entry = log.replace_all(nn.LayerNorm, lambda m: nn.RMSNorm(m.normalized_shape))
    assert entry.paths == tuple(preview) and entry.op == "replace_all"
    assert (
        entry.code.startswith("# 1. replace_all layers.0.norm1, layers.0.norm2, ")
        and "4 more" in entry.code
    )
    assert entry.old_cls == "LayerNorm" and entry.new_cls == "RMSNorm"
    assert sum(isinstance(m, nn.RMSNorm) for m in model.modules()) == 8
    log.undo()
    assert state(model) == before


def test_replace_all_regex_uses_fullmatch_and_outermost() -> None:
    model = nn.Sequential(*[nn.Linear(2, 2) for _ in range(11)])
    log = PatchLog(model)
    assert log.matches("1") == ["1"]  # not "10"
    assert log.matches(r"1\d*") == ["1", "10"]
    deep = repeated_blocks(2)
    log2 = PatchLog(deep)
    # "layers.0" and everything under it match; only the outermost is replaced.
    assert log2.matches(r"layers\.0(\..*)?") == ["layers.0"]


def test_replace_all_identity_factory_skips_and_shared_modules() -> None:
    model = shared_module()
    log = PatchLog(model)
    calls: list[nn.Module] = []

    def factory(m: nn.Module) -> nn.Module:
        calls.append(m)
        return m if isinstance(m, nn.Tanh) else nn.Linear(4, 4)

    entry = log.replace_all(r"first|seq\.1", factory)
    assert len(calls) == 2  # one call per distinct module, not per path
    assert entry.paths == ("first", "again", "seq.0")
    with pytest.raises(ValueError, match="unchanged"):
        log.replace_all(nn.Tanh, lambda m: m)


def test_replace_all_wrapper_keeps_wrapped_layer() -> None:
    model = tiny_mlp()
    inner = model[0]
    log = PatchLog(model)
    log.replace_all(nn.Linear, lambda m: Wrapper(m))
    assert model[0].inner is inner and isinstance(model[2], Wrapper)
    assert "model.get_submodule('0')" in log.entries[0].code


# -- bad input: model untouched ------------------------------------------------------------------


def test_missing_path_names_closest() -> None:
    model = tiny_cnn()
    before = state(model)
    log = PatchLog(model)
    with pytest.raises(KeyError, match="features.0") as info:
        log.replace("featres.0", nn.ReLU())
    assert "no submodule at path 'featres.0'" in str(info.value)
    with pytest.raises(KeyError, match="'head.weight' is a parameter or buffer of 'head'"):
        log.edit("head.weight", out_features=3)
    with pytest.raises(KeyError, match="closest"):
        log.edit("head.weight.x", out_features=3)
    with pytest.raises(KeyError, match="no path fully matches"):
        log.replace_all("nothing.here", lambda m: m)
    with pytest.raises(KeyError, match="classes present"):
        log.replace_all(nn.Conv3d, lambda m: m)
    assert state(model) == before and log.entries == ()


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (("", nn.ReLU()), ValueError, "the model itself"),
        ((3, nn.ReLU()), TypeError, "dotted string"),
        (("head", nn.Linear), TypeError, "needs a module instance"),
        (("head", "Linear"), TypeError, "not an nn.Module"),
        (("head", nn.ReLU(), "both"), ValueError, "which must be"),
    ],
)
def test_replace_bad_arguments(args: tuple[Any, ...], error: type, message: str) -> None:
    model = tiny_cnn()
    before = state(model)
    log = PatchLog(model)
    with pytest.raises(error, match=message):
        log.replace(*args)
    assert state(model) == before and log.entries == ()


def test_replace_with_itself_and_bad_match() -> None:
    model = tiny_cnn()
    log = PatchLog(model)
    with pytest.raises(ValueError, match="already the one"):
        log.replace("head", model.head)
    with pytest.raises(ValueError, match="invalid path regex"):
        log.matches("(")
    with pytest.raises(TypeError, match="class or a path regex"):
        log.matches(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="factory must be callable"):
        log.replace_all(nn.Linear, nn.Linear(2, 2).weight)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="nn.Module"):
        PatchLog("model")  # type: ignore[arg-type]


def test_edit_form_error_leaves_model_untouched() -> None:
    model = tiny_cnn()
    before = state(model)
    log = PatchLog(model)
    with pytest.raises(FormError) as info:
        log.edit("features.0", kernel_size="big", stride=-1)
    assert "kernel_size" in info.value.errors and "stride" in info.value.errors
    with pytest.raises(FormError, match="no parameter"):
        log.edit("head", out_featurs=3)
    assert state(model) == before and log.entries == ()


def test_factory_raising_halfway_leaves_model_untouched() -> None:
    model = tiny_mlp((4, 8, 8, 2))
    before = state(model)
    log = PatchLog(model)
    calls = 0

    def factory(m: nn.Module) -> nn.Module:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("factory broke")
        return nn.Linear(m.in_features, m.out_features)

    with pytest.raises(RuntimeError, match="factory broke"):
        log.replace_all(nn.Linear, factory)
    assert state(model) == before and log.entries == ()


def test_factory_returning_non_module_is_type_error() -> None:
    model = tiny_mlp((4, 8, 8, 2))
    before = state(model)
    log = PatchLog(model)
    answers = iter([nn.Linear(4, 8), "oops"])
    with pytest.raises(TypeError, match=r"factory\(Linear at '2'\) returned is a str"):
        log.replace_all(nn.Linear, lambda m: next(answers))
    assert state(model) == before and log.entries == ()


class Unmovable(nn.Linear):
    def _apply(self, fn: Any, recurse: bool = True) -> nn.Module:
        raise RuntimeError("device move failed")


def test_device_move_failing_leaves_model_untouched() -> None:
    model = tiny_mlp((4, 8, 8, 2)).to(torch.float64)
    before = state(model)
    log = PatchLog(model)
    made = iter([nn.Linear(4, 8), Unmovable(8, 8), nn.Linear(8, 2)])
    with pytest.raises(RuntimeError, match="device move failed"):
        log.replace_all(nn.Linear, lambda m: next(made))
    assert state(model) == before and log.entries == ()


class FailingSlots(dict):  # type: ignore[type-arg]
    """A ``_modules`` dict whose assignment fails once armed (a failure in the middle of a swap)."""

    armed = False

    def __setitem__(self, key: str, value: Any) -> None:
        if self.armed:
            raise KeyboardInterrupt
        super().__setitem__(key, value)


def test_failure_mid_swap_rolls_back() -> None:
    model = repeated_blocks(2)
    slots = FailingSlots(model.layers[1]._modules)
    model.layers[1]._modules = slots
    before = state(model)
    slots.armed = True
    log = PatchLog(model)
    with pytest.raises(KeyboardInterrupt):
        log.replace_all(nn.LayerNorm, lambda m: nn.Identity())
    assert state(model) == before and log.entries == ()
    assert isinstance(model.layers[0].norm1, nn.LayerNorm)  # the first swaps were put back


# -- to_code -------------------------------------------------------------------------------------


def test_to_code_replays_on_a_fresh_instance() -> None:
    model = seeded(tiny_cnn)
    log = PatchLog(model)
    log.replace("features.2", nn.GELU())
    log.edit("features.0", out_channels=16, kernel_size=5, padding=2)
    log.replace_all(nn.BatchNorm2d, lambda b: nn.GroupNorm(4, 16))
    log.edit("head", in_features=16, out_features=4)
    code = log.to_code()
    # Readable constructor calls: required arguments positional, defaults left out.
    assert re.search(r"torch\.nn\.Conv2d\(3, 16, \(?5(, 5\))?, padding=\(?2(, 2\))?\)", code)
    assert "model.get_submodule('features')[0] = new" in code
    assert not re.search(r"\._\w", code)  # no private torch attribute anywhere
    fresh = replay(log, seeded(tiny_cnn))
    assert structure(fresh) == structure(model)
    assert torch.equal(fresh.features[0].bias, model.features[0].bias)  # kept via _carry
    assert torch.equal(fresh.head.bias, model.head.bias)
    x = torch.randn(1, 3, 8, 8)
    assert fresh(x).shape == model(x).shape == (1, 4)


def test_to_code_awkward_keys_shared_modules_and_dtype() -> None:
    model = awkward_moduledict().half()
    log = PatchLog(model)
    log.replace("a-b", nn.Linear(2, 3))
    log.replace("with space.0", nn.Dropout(0.25))
    code = log.to_code()
    assert "model['a-b'] = new" in code and "model.get_submodule('with space')[0]" in code
    fresh = replay(log, awkward_moduledict().half())
    assert structure(fresh) == structure(model)
    assert fresh["a-b"].weight.dtype == torch.float16

    shared = shared_module()
    log2 = PatchLog(shared)
    log2.replace("first", nn.Linear(4, 4, bias=False))
    again = replay(log2, shared_module())
    assert again.first is again.again is again.seq[0] and again.first.bias is None


def test_to_code_edit_of_repeated_blocks_and_wrapper() -> None:
    model = seeded(lambda: repeated_blocks(2))
    log = PatchLog(model)
    log.edit("layers.1.mlp.0", out_features=24)
    log.edit("layers.1.mlp.2", in_features=24)
    log.replace_all(r"layers\.\d+\.attn\.q", lambda m: Wrapper(m, scale=0.5))
    fresh = replay(log, seeded(lambda: repeated_blocks(2)))
    assert structure(fresh) == structure(model)
    assert torch.equal(fresh.layers[1].mlp[2].bias, model.layers[1].mlp[2].bias)
    assert torch.equal(fresh.layers[0].attn.q.inner.weight, model.layers[0].attn.q.inner.weight)
    x = torch.randn(2, 8)
    assert fresh(x).shape == (2, 8)


def test_to_code_marks_what_it_cannot_write() -> None:
    class Local(nn.Module):  # defined in a function: no import path
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    model = tiny_mlp()
    log = PatchLog(model)
    log.replace("1", Local())
    code = log.to_code()
    compile(code, "<to_code>", "exec")  # still valid Python
    with pytest.raises(NotImplementedError, match="cannot write code for the replacement at '1'"):
        replay(log, tiny_mlp())


def test_entry_is_frozen() -> None:
    log = PatchLog(tiny_mlp())
    entry = log.replace("1", nn.GELU())
    assert isinstance(entry, PatchEntry)
    with pytest.raises(AttributeError):
        entry.op = "edit"  # type: ignore[misc]


# -- CUDA ----------------------------------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_replacement_follows_the_model() -> None:
    model = tiny_cnn().cuda()
    log = PatchLog(model)
    log.replace("head", nn.Linear(8, 4))
    entry = log.edit("features.0", kernel_size=5, padding=2)
    assert model.head.weight.is_cuda and model.features[0].weight.is_cuda
    assert entry.kept == ("bias",)
    assert log.retained_bytes > 0
    log.undo()
    log.undo()
    assert model.head.out_features == 10 and model.head.weight.is_cuda
    log.redo()
    log.redo()
    fresh = replay(log, tiny_cnn().cuda())
    assert fresh.features[0].weight.is_cuda
    assert structure(fresh) == structure(model)


def test_an_edit_keeps_a_parametrization_list_as_the_live_one_was() -> None:
    # Convs the user parametrized after making them, one the default way (spectral_norm), one
    # with ``unsafe=True``: an edit rebuilds each list with the live one's flag (placement
    # registers the copies without running them, then gives each list its flag back).
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.LeakyReLU(0.2), nn.Conv2d(4, 4, 3))
    nn.utils.parametrizations.spectral_norm(model[0])
    parametrize.register_parametrization(model[2], "weight", _Scaled(), unsafe=True)
    log = PatchLog(model)
    log.edit("0", padding=1)
    log.edit("2", padding=1)
    assert parametrize.is_parametrized(model[0], "weight") and model[0].padding == (1, 1)
    assert model[0].parametrizations["weight"].unsafe is False
    assert model[2].parametrizations["weight"].unsafe is True
    assert model(torch.randn(1, 3, 8, 8)).shape == (1, 4, 8, 8)


class _Scaled(nn.Module):
    def forward(self, w: torch.Tensor) -> torch.Tensor:
        return 2 * w


class _Normed(nn.Module):
    """A constructor that wraps its own conv by a flag (``legacy``: the hook-based weight_norm,
    else the parametrization)."""

    legacy = True

    def __init__(self, channels: int = 4, use_norm: bool = True) -> None:
        super().__init__()
        conv = nn.Conv1d(channels, channels, 3, padding=1)
        if use_norm:
            legacy = type(self).legacy
            conv = (nn.utils.weight_norm if legacy else nn.utils.parametrizations.weight_norm)(conv)
        self.conv = conv

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class _Parametrized(_Normed):
    legacy = False

    def __init__(self, channels: int = 4, use_norm: bool = True) -> None:
        super().__init__(channels, use_norm)


@pytest.mark.parametrize("cls", [_Normed, _Parametrized])
def test_an_edit_that_turns_the_constructors_own_wrapping_off_is_not_wrapped_again(
    cls: type[nn.Module],
) -> None:
    import warnings

    from torchxray._forms.rebuild.hooked import norm_hooks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = nn.Sequential(cls())
        log = PatchLog(model)
        # The form reads use_norm=True off the wrapping (``_forms/rebuild/wrapping.py``), so the
        # edit applies; the parametrization is not put back on the plain layer it made.
        log.edit("0", use_norm=False)
    conv = model[0].conv
    assert not norm_hooks(conv) and not parametrize.is_parametrized(conv)
    assert model(torch.randn(1, 4, 8)).shape == (1, 4, 8)
    log.undo()
    assert norm_hooks(model[0].conv) or parametrize.is_parametrized(model[0].conv)


class _Unreadable(nn.Module):
    """A constructor that reads its width from a file (a vocabulary), gone since."""

    def __init__(self, vocab_file: str, padding_type: str = "reflect") -> None:
        super().__init__()
        with open(vocab_file) as f:
            width = len(f.read().split())
        pads = {"reflect": nn.ReflectionPad1d, "replicate": nn.ReplicationPad1d}
        self.pad = pads[padding_type](1)
        self.conv = nn.Conv1d(width, width, 3)


def test_an_edit_of_a_refused_form_leads_with_why_it_is_refused(tmp_path: Path) -> None:
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a b c d")
    model = nn.Sequential(_Unreadable(str(vocab)))
    vocab.unlink()
    form = form_of(model[0])
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert form.inexact.startswith("inexact: ")  # no build can read the file again
    with pytest.raises(FormError) as e:
        PatchLog(model).edit("0", padding_type="zero")
    text = str(e.value)
    assert text.startswith("_Unreadable: its form could not read this module's values (")
    assert form.inexact.removeprefix("inexact: ") in text
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
