"""Tests for torchxray._tree.lazy: the fields walk() leaves to its lazy pass, and plain leaves.

walk() records structure and flags; counts, devices, dtypes, extra_repr and signatures come from a
second pass run by the first Node built, and most leaves are recorded as their path alone. These
tests recompute every Node field the slow, obvious way and compare.
"""

from __future__ import annotations

import gc
import itertools
import warnings

import pytest
import torch
import torch.nn as nn
from fixtures.models import (
    ALL_BUILDERS,
    parametrized,
    repeated_blocks,
    shared_module,
    tied_weights,
    tiny_cnn,
    wide_model,
)

from torchxray.tree import ModelTree, Node, walk

_UNINIT = nn.parameter.UninitializedTensorMixin


def _numel(t: torch.Tensor) -> int:
    return 0 if isinstance(t, _UNINIT) else t.numel()


def _nbytes(t: torch.Tensor) -> int:
    return 0 if isinstance(t, _UNINIT) else t.numel() * t.element_size()


def _own(module: nn.Module) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    params = [p for p in module._parameters.values() if p is not None]
    return params, [b for b in module._buffers.values() if b is not None]


def _reference_fields(module: nn.Module) -> dict[str, object]:
    params, buffers = _own(module)
    sub_params = list(module.parameters())  # deduplicated over the subtree
    seen = {id(t): t for t in [*sub_params, *module.buffers()]}
    every = list(seen.values())
    try:
        extra = module.extra_repr()
        extra = extra if isinstance(extra, str) else str(extra)
    except Exception:
        extra = None  # a placeholder; checked below
    return {
        "params_own": sum(_numel(p) for p in params),
        "trainable_own": sum(_numel(p) for p in params if p.requires_grad),
        "bytes_own": sum(_nbytes(t) for t in [*params, *buffers]),
        "params_total": sum(_numel(p) for p in sub_params),
        "trainable_total": sum(_numel(p) for p in sub_params if p.requires_grad),
        "bytes_total": sum(_nbytes(t) for t in every),
        "devices": tuple(sorted({str(t.device) for t in every})),
        "dtypes": tuple(sorted({str(t.dtype).removeprefix("torch.") for t in every})),
        "params_exact": not any(isinstance(t, _UNINIT) for t in every),
        "extra_repr": extra,
    }


def _structure_key(
    tree: ModelTree, module: nn.Module, path: str, memo: dict[int, object]
) -> object:
    """What a signature must tell apart: class, hyperparameters, own tensors, children."""
    if id(module) not in memo:
        node = tree[path]
        params, buffers = _own(module)
        tensors = tuple(
            (k, None if isinstance(t, _UNINIT) else tuple(t.shape), t.dtype)
            for group in (module._parameters, module._buffers)
            for k, t in group.items()
            if t is not None
        )
        kids = tuple(
            (k, _structure_key(tree, c, f"{path}.{k}" if path else k, memo))
            for k, c in module._modules.items()
            if c is not None
        )
        memo[id(module)] = (node.qualname, node.extra_repr, tensors, kids)
    return memo[id(module)]


def _mixed() -> nn.Module:
    model = tiny_cnn()
    model.requires_grad_(False)
    model.head.weight.requires_grad_(True)
    model.features[0].half()
    model.features.eval()  # leaves in eval mode below a training root
    model.features[1].register_forward_hook(lambda *a: None)
    model.features[2].forward = model.features[2].forward  # patched per instance
    model.features.add_module("again", model.pool)  # a plain leaf reached twice
    return model


_REFERENCE_BUILDERS = {
    **ALL_BUILDERS,
    "wide": lambda: wide_model(600),
    "repeated": lambda: repeated_blocks(4),
    "mixed": _mixed,
}


@pytest.mark.parametrize("name", sorted(_REFERENCE_BUILDERS))
def test_node_fields_equal_a_straightforward_reading(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _REFERENCE_BUILDERS[name]()
    tree = walk(model)
    nodes = tree.nodes
    memo: dict[int, object] = {}
    sig_of: dict[object, str] = {}
    key_of: dict[str, object] = {}
    for position, (path, module) in enumerate(model.named_modules()):
        node = tree[path]
        ref = _reference_fields(module)
        if ref["extra_repr"] is None:
            assert node.extra_repr.startswith("<unavailable: extra_repr() raised"), path
            ref["extra_repr"] = node.extra_repr
        assert {k: getattr(node, k) for k in ref} == ref, (name, path)
        parent, _, name_ = path.rpartition(".")
        assert (node.path, node.name, node.index) == (path, name_, position)
        assert node.parent == (None if not path else parent), path
        assert node.depth == (path.count(".") + 1 if path else 0), path
        prefix = f"{path}." if path else ""
        assert node.children == tuple(
            prefix + k for k, c in module._modules.items() if c is not None
        )
        assert node.training is module.training, path
        assert bool(node.hooks) == any(
            getattr(module, a)
            for a in (
                "_forward_hooks",
                "_forward_pre_hooks",
                "_backward_hooks",
                "_backward_pre_hooks",
            )
        ), path
        if not isinstance(module, torch.jit.ScriptModule):
            assert node.forward_patched == ("forward" in module.__dict__), path
        key = _structure_key(tree, module, path, memo)
        # equal structure <=> equal signature (a bijection between keys and signatures)
        assert sig_of.setdefault(key, node.signature) == node.signature, (name, path)
        assert key_of.setdefault(node.signature, key) == key, (name, path)
    assert len(nodes) == len(tree) and all(type(n) is Node for n in nodes)


@pytest.mark.parametrize("build", [tied_weights, shared_module, repeated_blocks, parametrized])
def test_nodes_do_not_depend_on_the_order_they_are_built_in(build) -> None:  # type: ignore[no-untyped-def]
    model = build()
    in_order = walk(model).nodes
    backwards = walk(model)
    paths = [n.path for n in in_order]
    built = {p: backwards[p] for p in reversed(paths)}  # leaves first: the lazy pass runs there
    for node in in_order:
        assert built[node.path] == node  # every field (Node is a frozen dataclass)


class _CountingRepr(nn.Module):
    calls = 0

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def extra_repr(self) -> str:
        type(self).calls += 1
        return "counted"


def test_walk_reads_tensors_and_hyperparameters_once_at_the_first_look() -> None:
    model = nn.Sequential(_CountingRepr(), _CountingRepr())
    _CountingRepr.calls = 0
    tree = walk(model)
    assert _CountingRepr.calls == 0  # the walk itself only records structure and flags
    assert gc.isenabled()
    first = tree["0"]
    assert _CountingRepr.calls == 2 and first.extra_repr == "counted"
    assert gc.isenabled()  # the lazy pass pauses the GC like the walk, and turns it back on
    model.half()  # changed after the first look: the tree stays one consistent snapshot
    assert tree["1.lin"].dtypes == ("float32",) and tree.root.dtypes == ("float32",)
    assert _CountingRepr.calls == 2
    assert walk(model).root.dtypes == ("float16",)


def test_iteration_builds_nodes_one_at_a_time() -> None:
    tree = walk(wide_model(600))
    first = list(itertools.islice(tree, 5))
    assert [n.index for n in first] == [0, 1, 2, 3, 4]
    assert sum(type(r) is Node for r in tree._records) == 5  # the rest are still unbuilt
    assert list(tree) == list(tree.nodes) and tree.nodes is tree.nodes  # built once, then kept
