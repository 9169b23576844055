"""The public API exactly as DESIGN.md section 2 writes it, used the way a notebook user would.

Everything goes through ``import torchxray as tx``; the per-module test files cover the details.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import re
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn as nn

import torchxray as tx
from torchxray.demo import BasicBlock, images, resnet_ish


@pytest.fixture
def model() -> nn.Module:
    torch.manual_seed(0)
    return resnet_ish()


def _state(model: nn.Module) -> list[tuple[str, int, dict[str, torch.Tensor]]]:
    """Identity and a copy of the state of every module: "the model is untouched" means equal."""
    return [
        (path, id(m), {k: v.clone() for k, v in m.state_dict().items()})
        for path, m in model.named_modules()
    ]


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        pa == pb
        and ia == ib
        and da.keys() == db.keys()
        and all(torch.equal(da[k], db[k]) for k in da)
        for (pa, ia, da), (pb, ib, db) in zip(a, b)
    )


# -- walk ---------------------------------------------------------------------------------------


def test_walk_node_fields_as_the_contract_lists_them(model: nn.Module) -> None:
    tree = tx.walk(model)
    assert tree.root.path == "" and tree.root.cls == "ResNetIsh"
    node = tree["layer1.0.conv1"]
    conv = model.get_submodule("layer1.0.conv1")
    assert (node.path, node.name, node.cls) == ("layer1.0.conv1", "conv1", "Conv2d")
    assert node.qualname == "torch.nn.modules.conv.Conv2d"
    assert node.children == () and node.aliases == ()
    assert node.params_own == node.params_total == node.trainable_total == conv.weight.numel()
    assert node.bytes_total == conv.weight.numel() * 4
    assert node.devices == ("cpu",) and node.dtypes == ("float32",)
    assert node.training is conv.training
    assert node.hooks == () and node.forward_patched is False
    assert node.extra_repr == conv.extra_repr()
    assert tree["layer1.0"].children == tuple(
        f"layer1.0.{n}" for n, _ in model.layer1[0].named_children()
    )
    # Pre-order, one node per named_modules() entry, lookup identical to get_submodule.
    assert [n.path for n in tree.nodes] == [p for p, _ in model.named_modules()]
    for path, module in model.named_modules():
        assert tree.module(path) is module


def test_walk_aliases_shared_parameters_hooks_and_patched_forward() -> None:
    shared = nn.Linear(3, 3)

    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = shared
            self.b = shared  # the same object at a second path
            self.c = nn.Linear(3, 3)
            self.c.weight = shared.weight  # one parameter in two modules

    model = Tied()
    model.c.weight.requires_grad_(False)

    def log_output(mod: nn.Module, args: object, out: object) -> None:
        pass

    model.c.register_forward_hook(log_output)
    model.c.forward = lambda x: x  # type: ignore[method-assign]
    tree = tx.walk(model)
    assert [n.path for n in tree.nodes] == ["", "a", "c"]
    assert tree["a"].aliases == ("b",) and tree["b"] is tree["a"]
    assert tree.root.params_total == 9 + 3 + 3  # the shared weight counts once
    assert tree.root.trainable_total == 3 + 3  # the frozen shared weight not at all
    assert [(h.kind, h.name) for h in tree["c"].hooks] == [("forward", "log_output")]
    assert tree["c"].forward_patched and not tree["a"].forward_patched


def test_walk_bad_input() -> None:
    tree = tx.walk(resnet_ish())
    with pytest.raises(
        KeyError, match="closest existing paths: 'layer1.0.conv2', 'layer1.0.conv1'"
    ):
        tree["layer1.0.conv"]
    for bad in (torch.zeros(1), "resnet", nn.Linear):
        with pytest.raises(TypeError, match=r"walk\(\) expects a torch.nn.Module instance"):
            tx.walk(bad)


# -- source -------------------------------------------------------------------------------------


def test_source_of_instance_class_function_and_method(model: nn.Module) -> None:
    src = tx.source(model.layer1[0])
    assert src.text is not None and src.text.startswith("class BasicBlock(")
    assert src.file is not None and src.file.endswith("demo.py") and src.reason is None
    assert src.forward_lines is not None
    with open(src.file) as fh:
        lines = fh.read().splitlines()
    assert lines[src.line - 1].startswith("class BasicBlock(")
    assert lines[src.forward_lines[0] - 1].strip().startswith("def forward(")
    assert tx.source(BasicBlock).text == src.text
    for method in (BasicBlock.forward, model.layer1[0].forward):
        assert tx.source(method).text.lstrip().startswith("def forward(")  # type: ignore[union-attr]
    assert tx.source(resnet_ish).text.startswith("def resnet_ish(")  # type: ignore[union-attr]


def test_source_without_python_text_gives_a_reason() -> None:
    cases = [len, torch.add, torch.jit.script(nn.Linear(2, 2)), type("Dyn", (nn.Module,), {})]
    for obj in cases:
        src = tx.source(obj)
        assert src.text is None and src.reason, obj
    with pytest.raises(TypeError, match=r"source\(\) expects an nn.Module instance, a class"):
        tx.source(3)


def test_source_of_a_class_defined_in_a_real_ipython_cell() -> None:
    # A real IPython shell (in a subprocess: its singleton must not leak into other tests).
    script = textwrap.dedent(
        """
        from IPython.core.interactiveshell import InteractiveShell
        ip = InteractiveShell.instance()
        ip.run_cell("import torch.nn as nn, torchxray as tx", store_history=True)
        ip.run_cell("class Net(nn.Module):\\n    def forward(self, x):\\n        return x + 1\\n",
                    store_history=True)
        ip.run_cell("old = Net()", store_history=True)
        ip.run_cell("class Net(nn.Module):\\n    def forward(self, x):\\n        return x * 2\\n",
                    store_history=True)
        ip.run_cell("a, b = tx.source(old), tx.source(Net())", store_history=True)
        a, b = ip.user_ns["a"], ip.user_ns["b"]
        print(repr((a.text, a.forward_lines, b.text)))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    old_text, forward_lines, new_text = eval(out.strip().splitlines()[-1])  # noqa: S307 - our repr
    assert "x + 1" in old_text and "x * 2" in new_text  # each instance finds its own cell
    assert forward_lines == (2, 3)


# -- form ---------------------------------------------------------------------------------------


def test_form_values_validate_and_build_with_ui_strings() -> None:
    conv = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False, padding_mode="reflect")
    f = tx.form(conv)
    fields = {fl.name: fl for fl in f.fields}
    names = {fl.name for fl in dataclasses.fields(fields["in_channels"])}
    assert names >= {"name", "kind", "value", "default", "required", "choices", "origin"}
    assert (fields["out_channels"].kind, fields["out_channels"].value) == ("int", 8)
    assert fields["bias"].origin == "derived" and f.values["bias"] is False
    assert fields["padding_mode"].kind == "choice"
    assert fields["padding_mode"].choices == ("zeros", "reflect", "replicate", "circular")
    assert f.values["stride"] == (2, 2)

    errors = f.validate(out_channels="abc", padding_mode="zzz", nope=1)
    assert errors["out_channels"] == "out_channels: expected an integer, got 'abc'"
    assert "padding_mode" in errors["padding_mode"] and "'zzz'" in errors["padding_mode"]
    assert "nope" in errors["nope"]
    assert f.validate(out_channels="16", stride="(2, 1)", bias="True") == {}

    new = f.build(out_channels="16", stride="(2, 1)", bias="True", padding_mode="zeros")
    assert type(new) is nn.Conv2d and new is not conv
    assert (new.out_channels, new.stride, new.bias is not None) == (16, (2, 1), True)
    assert f.build().extra_repr() == conv.extra_repr()
    with pytest.raises(tx.FormError) as info:
        f.build(out_channels="x")
    assert info.value.errors == {"out_channels": "out_channels: expected an integer, got 'x'"}
    with pytest.raises(TypeError, match=r"form\(\) expects an nn.Module"):
        tx.form(3)


def test_record_init_args_makes_custom_forms_exact() -> None:
    class Block(nn.Module):
        def __init__(self, dim: int, ratio: float = 4.0, sizes: list | None = None) -> None:
            super().__init__()
            if sizes is not None:
                sizes.append(99)  # a constructor that mutates its argument
            self.fc = nn.Linear(dim, int(dim * ratio))

    guessed = tx.form(Block(8, ratio=2.0))
    # Not stored: it shows only as fc's width, int(8 * ratio) = 16, which 2.05 makes too. The
    # value found is 2.0, checked by a meta-device build, and flagged as a guess (the rival named).
    assert guessed["ratio"].value == 2.0 and guessed["ratio"].origin == "default"
    assert guessed["ratio"].note.startswith("a guess")
    assert guessed["sizes"].origin == "default"  # shapes nothing: still a flagged guess
    with tx.record_init_args():
        block = Block(8, ratio=2.0, sizes=[1])
    f = tx.form(block)
    assert {fl.name: fl.origin for fl in f.fields} == dict.fromkeys(
        ["dim", "ratio", "sizes"], "recorded"
    )
    assert f.values == {"dim": 8, "ratio": 2.0, "sizes": [1]}  # as passed, not as mutated after
    assert f.build().fc.out_features == 16
    assert "recorded" not in {fl.origin for fl in tx.form(Block(4)).fields}  # the hook is gone


# -- mro_graph ----------------------------------------------------------------------------------


def test_mro_graph_draws_multiple_inheritance() -> None:
    class Mixin:
        def extra_repr(self) -> str:
            return "mixin"

    class Base(nn.Module):
        def __init__(self) -> None:
            super().__init__()

    class Multi(Base, Mixin):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    g = tx.mro_graph(Multi())
    dot = g.source
    assert dot.startswith("digraph")
    edges = set(re.findall(r"(c\d+) -> (c\d+)", dot))
    # Multi (c0) -> Base (c1) and -> Mixin (c3); both Module (c2) and Mixin reach object (c4).
    assert edges == {("c0", "c1"), ("c0", "c3"), ("c1", "c2"), ("c2", "c4"), ("c3", "c4")}
    assert "Multi\\n" in dot and "MRO #0" in dot and "defines forward" in dot
    assert "defines extra_repr" in dot
    assert len({m for m in re.findall(r'fillcolor="(#\w+)"', dot)}) == 3  # user/torch/builtin
    with pytest.raises(TypeError, match=r"^mro_graph\(\) expects a class or an nn.Module"):
        tx.mro_graph(3)


# -- PatchLog -----------------------------------------------------------------------------------


def test_patchlog_replace_edit_replace_all_undo_redo_and_replayable_code(model: nn.Module) -> None:
    fresh = copy.deepcopy(model)
    log = tx.PatchLog(model)
    old_conv = model.layer1[0].conv1

    log.replace("layer1.0.relu", nn.GELU())
    entry = log.edit("layer1.0.conv1", padding_mode="reflect")
    assert entry.kept == ("weight",) and entry.reinitialised == ()
    assert torch.equal(model.layer1[0].conv1.weight, old_conv.weight)
    entry = log.edit("fc", out_features="20")  # a string, as from a UI
    assert entry.changes == {"out_features": (10, 20)} and entry.reinitialised == ("weight", "bias")
    assert log.matches(nn.BatchNorm2d)[:2] == ["bn1", "layer1.0.bn1"]
    entry = log.replace_all(nn.BatchNorm2d, lambda old: nn.GroupNorm(4, old.num_features))
    assert entry.op == "replace_all" and len(entry.paths) == 10  # one entry for the bulk change
    assert [e.op for e in log.entries] == ["replace", "edit", "edit", "replace_all"]
    assert model(images()).shape == (2, 20)

    namespace = {"model": fresh}
    exec(log.to_code(), namespace)  # noqa: S102 - the emitted replay code is what we test
    assert str(fresh) == str(model)
    assert torch.equal(fresh.layer1[0].conv1.weight, model.layer1[0].conv1.weight)

    new_conv = model.layer1[0].conv1
    for _ in range(3):
        log.undo()
    assert model.layer1[0].conv1 is old_conv and model.fc.out_features == 10
    assert log.can_undo and log.can_redo
    log.redo()
    assert model.layer1[0].conv1 is new_conv
    kept = log.retained_bytes
    assert kept > 0 and log.clear() == kept and log.retained_bytes == 0
    assert not log.can_undo and len(log.entries) == 2  # cleared history still replays


def test_patchlog_failures_leave_the_model_untouched(model: nn.Module) -> None:
    before = _state(model)
    log = tx.PatchLog(model)
    calls = []

    def dies_halfway(old: nn.Module) -> nn.Module:
        calls.append(old)
        if len(calls) == 3:
            raise RuntimeError("factory died")
        return nn.Identity()

    with pytest.raises(KeyError, match="closest existing paths: 'layer1.0.conv2'"):
        log.replace("layer1.0.conv", nn.ReLU())
    with pytest.raises(TypeError, match="not an nn.Module"):
        log.replace_all(nn.BatchNorm2d, lambda old: "relu")
    with pytest.raises(RuntimeError, match="factory died"):
        log.replace_all(nn.BatchNorm2d, dies_halfway)
    with pytest.raises(tx.FormError) as info:
        log.edit("fc", out_features="abc", bias="maybe")
    assert set(info.value.errors) == {"out_features", "bias"}
    assert _same(before, _state(model)) and log.entries == ()
    with pytest.raises(TypeError, match="PatchLog needs an nn.Module"):
        tx.PatchLog("model")  # type: ignore[arg-type]


# -- register / catalog -------------------------------------------------------------------------


def test_register_and_catalog() -> None:
    @tx.register
    class MyAct(nn.Module):
        """An activation of my own."""

    try:
        assert [e.name for e in tx.catalog("conv2")] == ["Conv2d", "LazyConv2d"]
        (entry,) = tx.catalog("myact")
        assert (entry.group, entry.doc) == ("registered", "An activation of my own.")
        assert tx.resolve(entry.qualname) is MyAct
    finally:
        tx.unregister(MyAct)
    with pytest.raises(TypeError, match="register\\(\\) takes an nn.Module subclass"):
        tx.register(nn.ReLU())  # type: ignore[arg-type]


def test_catalog_offers_model_classes_from_torch_prefixed_packages(model: nn.Module) -> None:
    # torchvision / torchaudio / torchxray module names start with "torch" but are not torch.
    Vision = type("VisionBlock", (nn.Module,), {"__module__": "torchvision.models.fake"})
    model.extra = Vision()
    groups = {e.name: e.group for e in tx.catalog(model=model) if e.group == "model"}
    assert groups == {"ResNetIsh": "model", "BasicBlock": "model", "VisionBlock": "model"}


# -- probe --------------------------------------------------------------------------------------


def test_probe_fake_and_real_records(model: nn.Module) -> None:
    model.train()
    rep = tx.probe(model, images(), mode="fake")
    assert rep.ok and rep.error is None
    rec = rep["layer1.0.conv1"]
    assert rec.calls == 1
    assert rec.input_shapes == ((2, 16, 32, 32),) and rec.output_shapes == ((2, 16, 32, 32),)
    assert rep[""].output_shapes == ((2, 10),)
    real = tx.probe(model, images(), mode="real", flops=True)
    assert real.ok and real["layer1.0.conv1"].output_shapes == rec.output_shapes
    assert real["layer1.0.conv1"].flops == rec.flops > 0
    assert tx.probe(model, images(), mode="real")["layer1.0.conv1"].flops is None
    assert model.training and all(not m._forward_hooks for m in model.modules())


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_probe_wrong_inputs_give_failed_reports(model: nn.Module, mode: str) -> None:
    before = _state(model)
    for args, path in [
        ((torch.zeros(2, 4, 32, 32),), "conv1"),  # wrong channel count
        ((images(), images()), ""),  # one input too many
        ((), ""),  # none at all
    ]:
        rep = tx.probe(model, *args, mode=mode)
        assert not rep.ok and rep.error is not None and rep.error.path == path
        assert rep.error.exc_type and rep.error.message
    bad = resnet_ish()
    bad.layer2[0].conv2 = nn.Conv2d(5, 32, 3, padding=1)
    rep = tx.probe(bad, images(), mode=mode)
    assert rep.error is not None and rep.error.path == "layer2.0.conv2"  # the innermost module
    assert rep.error.input_shapes == ((2, 32, 16, 16),)
    assert "layer1.1" in rep  # records up to the failure are kept
    assert _same(before, _state(model))


def test_probe_fake_failure_does_not_print_torch_tracebacks(model: nn.Module) -> None:
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    logger.addHandler(handler)
    level = logger.level
    try:
        # Integer images pass the fake convolutions and fail in a meta kernel (the mean of avgpool).
        rep = tx.probe(model, torch.zeros(2, 3, 32, 32, dtype=torch.long))
    finally:
        logger.removeHandler(handler)
    assert not rep.ok and seen == [] and logger.level == level


def test_probe_diff_and_bad_input(model: nn.Module) -> None:
    before = tx.probe(model, images())
    log = tx.PatchLog(model)
    log.edit("fc", out_features=7)
    log.replace("layer2.0.relu", nn.Sequential(nn.ReLU(), nn.Identity()))
    after = tx.probe(model, images())
    diff = before.diff(after)
    assert [d.path for d in diff.changed] == ["", "fc"]
    assert [d.path for d in diff.added] == ["layer2.0.relu.0", "layer2.0.relu.1"]
    assert [d.path for d in after.diff(before).removed] == ["layer2.0.relu.0", "layer2.0.relu.1"]
    with pytest.raises(TypeError, match=r"probe\(\) needs a torch.nn.Module"):
        tx.probe(torch.zeros(1), images())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode must be 'fake' or 'real'"):
        tx.probe(model, images(), mode="slow")


def test_edit_names_the_hyperparameters_it_had_to_guess() -> None:
    class Block(nn.Module):
        def __init__(self, dim: int, act: str = "relu", scale: float = 1.0) -> None:
            super().__init__()
            self.dim = dim  # recoverable; act and scale are not kept anywhere
            self.fc = nn.Linear(dim, dim)

    model = nn.Sequential(Block(4, act="gelu"), nn.Conv2d(2, 2, 3))
    log = tx.PatchLog(model)
    entry = log.edit("0", scale=2.0)
    assert entry.guessed == ("act",) and "guessed (defaults) act" in entry.code
    assert log.edit("1", stride=2).guessed == ()  # torch layers are recovered exactly
    with tx.record_init_args():
        model[0] = Block(4, act="gelu")
    assert log.edit("0", scale=3.0).guessed == ()


# -- compare, health and selection ---------------------------------------------------------


def test_diff_stats_select_freeze_and_nonfinite(model: nn.Module) -> None:
    other = copy.deepcopy(model)
    with torch.no_grad():
        other.fc.weight.mul_(2)
    d = tx.diff(model, other)
    assert (d.added, d.removed, d.retyped, d.changed) == ((), (), (), ())
    assert d.params["fc.weight"].kind == "values" and d.params["fc.bias"].kind == "same"
    assert d.params["fc.weight"].rel_change == pytest.approx(1.0, rel=1e-6)
    s = tx.stats(model)["fc.weight"]
    assert {"norm", "mean", "std", "min", "max", "zeros", "nonfinite", "hist"} <= {
        f.name for f in dataclasses.fields(s)
    }
    convs = tx.select(model, r"^layer1\.", cls=nn.Conv2d)
    assert convs == [
        p for p, m in model.named_modules() if p.startswith("layer1.") and isinstance(m, nn.Conv2d)
    ]
    assert tx.peft_targets(model, convs) == convs  # "conv1", "0.conv1" would take layer2's too
    log = tx.PatchLog(model)
    log.freeze(convs)
    assert not any(model.get_submodule(p).weight.requires_grad for p in convs)
    assert [e.op for e in log.entries] == ["freeze"]
    log.undo()
    assert all(p.requires_grad for p in model.parameters())
    assert tx.probe(model, images(), mode="real").nonfinite is None
