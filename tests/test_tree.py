"""Tests for torchxray.tree: walk() -> ModelTree."""

from __future__ import annotations

import dataclasses
import gc
import warnings

import pytest
import torch
import torch.nn as nn
from fixtures.models import (
    ALL_BUILDERS,
    DecoderLayer,
    hooked_model,
    lazy_model,
    meta_model,
    parametrized,
    patched_forward,
    raising_repr,
    repeated_blocks,
    shared_module,
    tied_weights,
    tiny_cnn,
    tiny_mlp,
    wide_model,
)

from torchxray.tree import BufferInfo, ModelTree, Node, walk


def _all_paths(model: nn.Module) -> list[str]:
    return [p for p, _ in model.named_modules(remove_duplicate=False)]


def _unique_params(module: nn.Module) -> list[nn.Parameter]:
    return list(module.parameters())  # parameters() dedupes shared tensors over the subtree


# -- structure -----------------------------------------------------------------------------------


def test_nodes_follow_named_modules_preorder() -> None:
    model = tiny_cnn()
    tree = walk(model)
    assert [n.path for n in tree.nodes] == [p for p, _ in model.named_modules()]
    assert isinstance(tree, ModelTree) and len(tree) == 8
    assert [n.index for n in tree] == list(range(8))
    root = tree.root
    assert root.path == "" and root.name == "" and root.parent is None and root.depth == 0
    assert root.children == ("features", "pool", "head")
    conv = tree["features.0"]
    assert (conv.name, conv.parent, conv.depth) == ("0", "features", 2)
    assert conv.cls == "Conv2d" and conv.qualname == "torch.nn.modules.conv.Conv2d"
    assert root.cls == "TinyCNN" and root.qualname.endswith("models.TinyCNN")
    assert root.is_custom and not conv.is_custom
    assert tree["features"].container == "Sequential" and conv.container is None
    assert tree["features"].size == 5 and root.size == 8 and conv.size == 1


def test_extra_repr_matches_module() -> None:
    model = tiny_cnn()
    tree = walk(model)
    for path, module in model.named_modules():
        assert tree[path].extra_repr == module.extra_repr()


@pytest.mark.parametrize(
    "layer",
    [
        nn.Linear(3, 4),
        nn.Linear(3, 4, bias=False),
        nn.LayerNorm(5, eps=1e-3),
        nn.LayerNorm((2, 3), elementwise_affine=False),
        nn.Conv2d(2, 4, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm1d(3, momentum=0.2),
        nn.Dropout(0.3),
        nn.Embedding(7, 3, padding_idx=0),
        nn.GroupNorm(2, 4),
        nn.MaxPool2d(3, stride=2),
    ],
    ids=repr,
)
def test_memoised_extra_repr_is_exact(layer: nn.Module) -> None:
    # The walk memoises extra_repr of torch layers; equal-looking layers must still print right.
    twin = nn.Sequential(
        layer, nn.Linear(3, 4, bias=True), nn.Dropout(1), nn.Dropout(1.0), nn.LayerNorm(5)
    )
    tree = walk(twin)
    for path, module in twin.named_modules():
        assert tree[path].extra_repr == module.extra_repr()


def test_container_kinds() -> None:
    model = nn.ModuleDict(
        {"s": nn.Sequential(), "l": nn.ModuleList(), "p": nn.ParameterList(), "x": nn.ReLU()}
    )
    tree = walk(model)
    assert tree.root.container == "ModuleDict"
    assert [tree[k].container for k in "slpx"] == [
        "Sequential",
        "ModuleList",
        "ParameterList",
        None,
    ]


def test_modeltree_api() -> None:
    model = tiny_mlp()
    tree = walk(model)
    assert "0" in tree and "9" not in tree and 3 not in tree
    assert tree.get("9") is None and tree.get("0") is tree["0"]
    assert [n.path for n in tree.children("")] == ["0", "1", "2"]
    assert list(iter(tree)) == list(tree.nodes)
    assert tree.module("2") is model[2] and tree.module("") is model
    assert repr(tree) == "ModelTree(root=Sequential, nodes=4)"
    assert tree.unwrapped is tree.root
    assert tree.global_hooks == ()


def test_nodes_are_built_once_and_shared() -> None:
    tree = walk(tiny_cnn())
    head = tree["head"]  # a leaf, built on first access
    assert type(head) is Node and tree["head"] is head
    nodes = tree.nodes
    assert all(type(n) is Node for n in nodes) and nodes[7] is head
    assert tree.nodes == nodes and tree.children("features")[0] is nodes[2]


def test_nodes_are_frozen_slotted_dataclasses() -> None:
    node = walk(tiny_mlp()).root
    assert type(node) is Node and dataclasses.is_dataclass(node)
    assert not hasattr(node, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.path = "x"  # type: ignore[misc]
    again = walk(tiny_mlp()).root
    assert node.signature == again.signature
    assert hash(node) != 0  # hashable like any frozen dataclass


# -- lookup --------------------------------------------------------------------------------------


def test_lookup_matches_get_submodule_including_aliases() -> None:
    for build in (tiny_cnn, shared_module, tied_weights, repeated_blocks, parametrized):
        model = build()
        tree = walk(model)
        for path in _all_paths(model):
            assert path in tree
            assert tree.module(path) is model.get_submodule(path), (build.__name__, path)


def test_path_through_a_shared_module_resolves() -> None:
    outer = nn.Module()
    block = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    outer.a = block
    outer.b = block
    tree = walk(outer)
    assert len(tree) == 4
    assert tree["b.0"] is tree["a.0"] and tree.module("b.1") is block[1]
    assert tree["b"].aliases == ("b",) or tree["a"].aliases == ("b",)


def test_missing_path_names_close_paths() -> None:
    tree = walk(tiny_cnn())
    with pytest.raises(KeyError) as info:
        tree["featurs.0"]
    message = str(info.value)
    assert "'featurs.0'" in message and "'features.0'" in message
    with pytest.raises(KeyError, match="closest existing paths"):
        tree["features.9"]
    with pytest.raises(KeyError):
        tree["features..0"]
    with pytest.raises(TypeError, match="dotted strings"):
        tree[0]  # type: ignore[index]


def test_missing_path_in_a_large_tree_still_suggests() -> None:
    tree = walk(wide_model(30_000))
    with pytest.raises(KeyError, match=r"stages\.0\.1"):
        tree["stages.0.1.7"]


# -- counts --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build", [tiny_cnn, tied_weights, shared_module, repeated_blocks, parametrized, tiny_mlp]
)
def test_totals_count_each_tensor_once(build) -> None:  # type: ignore[no-untyped-def]
    model = build()
    model.requires_grad_(True)
    next(model.parameters()).requires_grad_(False)
    tree = walk(model)
    for path, module in model.named_modules():
        params = _unique_params(module)
        node = tree[path]
        assert node.params_total == sum(p.numel() for p in params), path
        trainable = sum(p.numel() for p in params if p.requires_grad)
        assert node.trainable_total == trainable, path
        tensors = {id(t): t for t in [*params, *module.buffers()]}
        assert node.bytes_total == sum(t.numel() * t.element_size() for t in tensors.values())
        own = sum(p.numel() for p in module._parameters.values() if p is not None)
        assert node.params_own == own


def test_tied_weights_counted_once() -> None:
    model = tied_weights()
    tree = walk(model)
    embed = model.embed.weight.numel()
    assert tree["head"].params_total == embed
    assert tree.root.params_total == embed + sum(p.numel() for p in model.body.parameters())


def test_shared_module_listed_once_with_aliases() -> None:
    model = shared_module()
    tree = walk(model)
    assert len(tree) == len(list(model.named_modules())) == 5
    first = tree["first"]
    assert first.aliases == ("again", "seq.0")
    assert tree["again"] is first and tree["seq.0"] is first
    assert tree["seq"].children == ("seq.0", "seq.1")
    assert tree.root.params_total == 20 and tree["seq"].params_total == 20


def test_buffers_devices_dtypes() -> None:
    model = nn.Sequential(nn.BatchNorm1d(3), nn.Linear(3, 2).to(torch.float16))
    model[0].register_buffer("scratch", torch.zeros(2), persistent=False)
    tree = walk(model)
    bn = tree["0"]
    names = [b.name for b in bn.buffers]
    assert names == ["running_mean", "running_var", "num_batches_tracked", "scratch"]
    assert bn.buffers[0] == BufferInfo("running_mean", (3,), "float32", "cpu", True)
    assert bn.buffers[-1].persistent is False
    assert bn.dtypes == ("float32", "int64")
    assert tree["1"].dtypes == ("float16",)
    assert tree.root.dtypes == ("float16", "float32", "int64")
    assert tree.root.devices == ("cpu",)
    assert tree["1"].bytes_own == 8 * 2 and tree["1"].trainable_own == 8


def test_training_flag_per_node() -> None:
    model = tiny_mlp()
    model[0].eval()
    tree = walk(model)
    assert tree.root.training and not tree["0"].training and tree["2"].training


# -- hooks and patched forward -------------------------------------------------------------------


def test_hooks_are_listed_by_name_and_left_in_place() -> None:
    model = hooked_model()
    before = [len(getattr(m, a)) for m in model.modules() for a in ("_forward_hooks",)]
    tree = walk(model)
    first = {(h.kind, h.name) for h in tree["0"].hooks}
    assert first == {
        ("forward", "log_forward"),
        ("forward_pre", "check_input"),
        ("backward", "grad_probe"),
        ("backward_pre", "grad_pre_probe"),
    }
    assert [h.name for h in tree["1"].hooks] == [
        "<lambda>",
        "partial(_scaled)",
        "HookOwner.on_forward",
    ]
    assert tree.root.hooks == ()
    assert [len(getattr(m, a)) for m in model.modules() for a in ("_forward_hooks",)] == before


def test_global_hooks_are_reported() -> None:
    def watch_everything(module, args, output):  # type: ignore[no-untyped-def]
        return None

    handle = nn.modules.module.register_module_forward_hook(watch_everything)
    try:
        tree = walk(tiny_mlp())
    finally:
        handle.remove()
    assert [(h.kind, h.name) for h in tree.global_hooks] == [("forward", "watch_everything")]


def test_forward_patched() -> None:
    tree = walk(patched_forward())
    assert tree["0"].forward_patched and not tree["1"].forward_patched
    assert not tree.root.forward_patched


# -- hostile and unusual modules -----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL_BUILDERS))
def test_never_crashes_on_fixtures(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ALL_BUILDERS[name]()
    tree = walk(model)
    assert len(tree) == len(list(model.named_modules()))
    for node in tree:
        assert "inspection raised" not in node.extra_repr, (name, node.path)
        assert node.signature and node.params_total >= 0


def test_raising_repr_gives_placeholder() -> None:
    tree = walk(raising_repr())
    assert tree["0"].extra_repr.startswith("<unavailable: extra_repr() raised RuntimeError")
    assert tree["1"].extra_repr == "42"
    assert tree["0"].params_total == 6


def test_module_too_broken_to_inspect_still_gets_a_node() -> None:
    model = tiny_mlp()
    object.__delattr__(model[1], "_parameters")  # what a forgotten super().__init__() looks like
    tree = walk(model)
    assert len(tree) == 4
    assert "unavailable: inspection raised" in tree["1"].extra_repr
    assert tree.root.params_total == 58


def test_lazy_modules() -> None:
    model = lazy_model()
    tree = walk(model)
    assert tree["0"].cls == "LazyLinear" and tree["0"].params_own == 0
    assert not tree["0"].params_exact and not tree.root.params_exact and tree["2"].params_exact
    assert tree.root.params_total == 3 * 2 + 2
    model(torch.zeros(1, 5))  # initialise; a new walk sees real sizes
    after = walk(model)
    assert after.root.params_exact and after["0"].params_total == 5 * 3 + 3


def test_meta_tensors() -> None:
    tree = walk(meta_model())
    assert tree.root.devices == ("meta",)
    assert tree["0"].params_total == 4 * 8 + 8
    assert tree["1"].buffers[0].device == "meta"


def test_parametrized_modules_show_original_class() -> None:
    model = parametrized()
    tree = walk(model)
    assert type(model[0]).__name__ == "ParametrizedLinear"
    assert tree["0"].cls == "Linear" and tree["0"].qualname == "torch.nn.modules.linear.Linear"
    assert tree["0"].parametrizations == ("weight: Symmetric",)
    assert tree["1"].parametrizations == ("weight: _WeightNorm",)
    assert tree["0.parametrizations.weight.0"].cls == "Symmetric"
    assert tree["0"].params_total == 3 * 3 + 3


def test_awkward_moduledict_keys() -> None:
    model = ALL_BUILDERS["awkward_moduledict"]()
    tree = walk(model)
    assert tree.root.children == ("a-b", "1x", "with space", "ünïcode")
    assert tree["with space.0"].cls == "Identity"
    assert tree.module("a-b") is model["a-b"]


def test_reference_cycle_does_not_hang() -> None:
    a, b = nn.Sequential(nn.Linear(2, 2)), nn.Sequential(nn.ReLU())
    a.add_module("b", b)
    b.add_module("back", a)  # a -> b -> a
    tree = walk(a)
    assert [n.path for n in tree] == ["", "0", "b", "b.0"]
    assert tree["b.back"] is tree.root and tree["b.back.b.0"] is tree["b.0"]
    assert tree.root.params_total == 6 and tree["b"].params_total == 6
    assert all(n.signature for n in tree)


# -- wrappers ------------------------------------------------------------------------------------


def test_compile_wrapper_is_walked_through() -> None:
    tree = walk(ALL_BUILDERS["compiled"]())
    assert tree.root.cls == "OptimizedModule" and tree.root.wraps == "_orig_mod"
    assert tree.unwrapped.path == "_orig_mod" and tree.unwrapped.cls == "Sequential"
    assert tree.root.params_total == tree["_orig_mod"].params_total == 58


def test_data_parallel_wrapper() -> None:
    tree = walk(ALL_BUILDERS["data_parallel"]())
    assert tree.root.wraps == "module" and tree.unwrapped.path == "module"
    assert tree["module.0"].cls == "Linear"


def test_fx_graph_module() -> None:
    tree = walk(ALL_BUILDERS["fx_graph_module"]())
    assert tree.root.cls == "GraphModule" and not tree.root.is_custom
    assert [n.cls for n in tree.children("")] == ["Linear", "ReLU", "Linear"]


def test_script_module_shows_original_classes() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ALL_BUILDERS["script_module"]()
    tree = walk(model)
    assert [n.cls for n in tree] == ["Sequential", "Linear", "ReLU", "Linear"]
    assert tree.root.container == "Sequential" and tree["0"].container is None
    assert tree["0"].qualname == "torch.nn.modules.linear.Linear" and not tree["0"].is_custom
    assert not tree["0"].forward_patched  # TorchScript stores forward on the instance
    assert tree.root.params_total == 58


# -- signatures ----------------------------------------------------------------------------------


def test_repeated_blocks_share_a_signature() -> None:
    tree = walk(repeated_blocks(5))
    layers = tree.children("layers")
    assert len({n.signature for n in layers}) == 1
    assert tree["final"].signature != layers[0].signature  # same class, other hyperparameters
    assert tree["layers.0.attn.q"].signature == tree["layers.3.attn.k"].signature
    assert tree["layers.0.mlp.0"].signature != tree["layers.0.mlp.2"].signature
    # stable across walks and across separately built models
    assert walk(repeated_blocks(5))["layers.2"].signature == layers[0].signature
    assert walk(DecoderLayer()).root.signature == layers[0].signature


def test_signature_sees_hyperparameters_tensors_and_child_names() -> None:
    def sig(m: nn.Module) -> str:
        return walk(m).root.signature

    assert sig(nn.Linear(2, 3)) == sig(nn.Linear(2, 3))
    assert sig(nn.Linear(2, 3)) != sig(nn.Linear(2, 4))
    assert sig(nn.Linear(2, 3)) != sig(nn.Linear(2, 3, bias=False))
    assert sig(nn.Linear(2, 3)) != sig(nn.Linear(2, 3).half())
    a, b = nn.Module(), nn.Module()
    a.x, b.y = nn.ReLU(), nn.ReLU()
    assert sig(a) != sig(b)
    c = nn.Module()
    c.scale = nn.Parameter(torch.ones(3))
    d = nn.Module()
    d.scale = nn.Parameter(torch.ones(4))
    assert sig(c) != sig(d)


def test_shared_child_keeps_repeated_signature() -> None:
    # Each layer holds a reference to one shared module (as rotary embeddings often are):
    # the first layer owns it, the others alias it; all layers must still fold together.
    shared = nn.Linear(2, 2)
    layers = nn.ModuleList()
    for _ in range(3):
        layer = nn.Module()
        layer.proj = nn.Linear(2, 2)
        layer.rope = shared
        layers.append(layer)
    tree = walk(layers)
    assert len({n.signature for n in tree.children("")}) == 1
    assert tree["1.rope"] is tree["0.rope"]


# -- contract ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [nn.Linear, 3, "model", None, lambda x: x])
def test_non_module_raises_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match="expects a torch.nn.Module instance"):
        walk(bad)  # type: ignore[arg-type]


def test_class_instead_of_instance_hint() -> None:
    with pytest.raises(TypeError, match=r"walk\(MyModel\(\)\)"):
        walk(nn.Linear)  # type: ignore[arg-type]


def test_walk_leaves_the_model_and_gc_alone() -> None:
    model = tied_weights()
    model.eval()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    assert gc.isenabled()
    walk(model)
    assert gc.isenabled()
    assert not model.training and all(not m.training for m in model.modules())
    after = model.state_dict()
    assert state.keys() == after.keys() and all(torch.equal(state[k], after[k]) for k in state)
    gc.disable()
    try:
        walk(model)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


def test_wide_model_counts() -> None:
    model = wide_model(3000)
    tree = walk(model)
    assert len(tree) == sum(1 for _ in model.named_modules())
    assert tree.root.params_total == sum(p.numel() for p in model.parameters())
    assert tree.root.size == len(tree)
