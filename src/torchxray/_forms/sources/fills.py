"""A number a tensor is filled with (``nn.Parameter(torch.full((1, n), args.init_log_std))``,
``torch.ones(d) * cfg["scale"]``): read back off that tensor, where all its values are still one.

A hand-written constructor often starts a learnt tensor at a value it was given (a policy's log
std, a layer scale, a temperature) and keeps nothing else of it; no layer keeps it as an
attribute, and the module's floats do not hold it. The tensor held under the attribute the
call is assigned to holds it in every item until training moves them: where they are all one
value, that value is a candidate (a float, as ``torch.full`` takes it). The rebuild proves it.
"""

from __future__ import annotations

import ast

import torch
from torch import nn

from .code import kept_under, resolved
from .keyed import reads_at

__all__ = ["filled"]

_FILLS = {torch.full: 1, torch.full_like: 1}  # the fill value's place
_SCALED = (torch.ones, torch.ones_like)  # torch.ones(...) * x


def _filling(
    node: ast.AST, up: dict[ast.AST, ast.AST], scope: dict[str, object]
) -> ast.Call | None:
    """The call that fills a tensor with ``node``: ``torch.full(shape, node)`` or
    ``torch.ones(shape) * node``."""
    parent = up.get(node)
    if isinstance(parent, ast.keyword) and parent.arg == "fill_value":
        parent = up.get(parent)
        return (
            parent
            if isinstance(parent, ast.Call) and resolved(parent.func, scope) in _FILLS
            else None
        )
    if isinstance(parent, ast.Call) and resolved(parent.func, scope) in _FILLS:
        place = _FILLS[resolved(parent.func, scope)]  # type: ignore[index]
        return parent if place < len(parent.args) and parent.args[place] is node else None
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Mult):
        other = parent.left if parent.right is node else parent.right
        if isinstance(other, ast.Call) and resolved(other.func, scope) in _SCALED:
            return other
    return None


def filled(cls: type, module: nn.Module, name: str) -> list[float]:
    """The values the tensors filled with the argument ``name`` (``"args.init_log_std"``: a
    field or key read off a config) hold, where each holds one value throughout."""
    param, _, rest = name.partition(".")
    at = reads_at(cls, param, tuple(rest.split(".")) if rest else ())
    if at is None:
        return []
    code, nodes = at
    out: list[float] = []
    for n in nodes:
        call = _filling(n, code.up, code.scope)
        attr = kept_under(call, code.up) if call is not None else ""
        t = getattr(module, attr, None) if attr else None
        if not isinstance(t, torch.Tensor) or t.is_meta or not t.numel():
            continue
        try:
            flat = t.detach().flatten()
            v = float(flat[0]) if bool((flat == flat[0]).all()) else None
        except (RuntimeError, TypeError, ValueError):  # a complex, quantized or subclass tensor
            continue
        if v is not None and v not in out:
            out.append(v)
    return out
