"""Numeric drift per module: the ONNX model run in onnxruntime against the eager model, every
module's outputs compared (`drift(model, args, kwargs, decomposed, onnx_program)`).

A module's outputs in the ONNX model are found on the program it was translated from: the nodes
inside the module (its path in their ``nn_module_stack``) that a node outside it uses, or the
program returns; the ONNX model names each value after its node. The eager outputs come from one
run of the model with a forward hook per module (its first call; the hooks are removed after,
whatever happens). Each eager output tensor is matched with the boundary value of its shape
(the closest of them where several have it: a rotary embedding's cos and sin);
a module whose output is its input itself (an ``Identity``, a dropout in eval) has no value of
its own and no drift. All the values are computed in one onnxruntime run
(``ONNXProgram.compute_values``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from .nodes import walk_nodes
from .records import Drift

__all__ = ["drift", "onnxruntime_missing"]


def onnxruntime_missing() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return True
    return False


def _paths(node: Any) -> list[str]:
    """Every module path of a node's stack (first calls only: "path@1" is a second call)."""
    stack = node.meta.get("nn_module_stack") or {}
    out = []
    for value in stack.values():
        path = value[0] if isinstance(value, tuple) else str(value)
        if "@" in path:
            return []  # a second call of a module: its first call is the one compared
        out.append(path)
    return out


def _boundaries(decomposed: Any, names: set[str]) -> dict[str, list[tuple[str, tuple[int, ...]]]]:
    """path -> [(value name, shape)] of the module's output values, in graph order."""
    nodes = [n for n in walk_nodes(decomposed.graph_module) if n.graph is decomposed.graph]
    inside: dict[int, set[str]] = {id(n): set(_paths(n)) for n in nodes}
    out: dict[str, list[tuple[str, tuple[int, ...]]]] = defaultdict(list)
    for node in nodes:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or node.name not in names:
            continue
        mine = inside[id(node)]
        for path in mine:
            leaves = any(
                u.op == "output" or path not in inside.get(id(u), set()) for u in node.users
            )
            if leaves:
                out[path].append((node.name, tuple(int(s) for s in val.shape)))
    return out


def _eager(
    model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, list[torch.Tensor]]:
    """Each module's first call's output tensors (detached, on the CPU)."""
    found: dict[str, list[torch.Tensor]] = {}
    handles = []
    for path, module in model.named_modules():

        def keep(_m: nn.Module, _a: Any, output: Any, path: str = path) -> None:
            if path not in found:
                found[path] = [
                    t.detach().to("cpu", copy=True)
                    for t in pytree.tree_leaves(output)
                    if isinstance(t, torch.Tensor)
                ]

        handles.append(module.register_forward_hook(keep))
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return found


def _max_abs(got: torch.Tensor, ref: torch.Tensor) -> float:
    diff = (got.to(torch.float64).reshape(ref.shape) - ref).abs()
    return float(diff.max()) if diff.numel() else 0.0


def _inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], None]:
    """The ONNX model's inputs: the tensors among the call's arguments, flattened in export's
    order; a flag such as ``use_cache=False`` was a constant of the program, no input."""
    leaves = pytree.tree_leaves((args, kwargs))
    return tuple(t for t in leaves if isinstance(t, torch.Tensor)), None


def drift(
    model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], decomposed: Any, program: Any
) -> dict[str, Drift]:
    """path -> `Drift` for every module with an output of its own (see the module docstring).
    Runs the model once and the ONNX model once; raises what they raise."""
    graph = program.model.graph
    produced = {v.name for n in graph for v in n.outputs if v.name}
    bounds = _boundaries(decomposed, produced)
    eager = _eager(model, args, kwargs)
    wanted: dict[str, list[tuple[torch.Tensor, list[str]]]] = {}
    for path, values in bounds.items():
        outs = eager.get(path)
        if not outs:
            continue
        pairs = [(t, [n for n, shape in values if shape == tuple(t.shape)]) for t in outs]
        pairs = [(t, names) for t, names in pairs if names]
        if pairs:
            wanted[path] = pairs
    order = sorted({n for pairs in wanted.values() for _, names in pairs for n in names})
    if not order:
        return {}
    computed = program.compute_values(order, *_inputs(args, kwargs))
    value = dict(zip(order, computed))
    result: dict[str, Drift] = {}
    for path, pairs in wanted.items():
        worst = top = 0.0
        taken: set[str] = set()
        for t, names in pairs:
            # Several outputs of one shape (a rotary embedding's cos and sin): each eager output
            # is compared with the closest of them not taken yet (a swap differs by far more
            # than any lowering does).
            ref = t.to(torch.float64)
            free = [n for n in names if n not in taken] or names
            diffs = {n: _max_abs(value[n], ref) for n in free}
            name = min(diffs, key=lambda n: diffs[n])
            taken.add(name)
            worst = max(worst, diffs[name])
            top = max(top, float(ref.abs().max()) if ref.numel() else 0.0)
        result[path] = Drift(path, worst, worst / top if top else 0.0, len(pairs))
    return result
