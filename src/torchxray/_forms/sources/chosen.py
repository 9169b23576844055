"""Source: a collection of names that chooses which of a constructor's layers are made another
kind, read back off which layers are that kind.

LoRA and adapter code written by hand takes the projections to adapt as names (PEFT's
``target_modules``): ``for name in ("q", "k", "v", "o"): if name in lora.targets: lin =
LoRALinear(...) else: lin = nn.Linear(...); setattr(self, name, lin)``. Nothing keeps the
names; the layers show them: the ones held as the class the ``if`` branch makes. ``chosen(cls,
module, name, path)`` reads the constructor's loops over a literal of strings whose variable is
tested ``in`` the argument (or a field read off it: ``lora.targets``) and names the layer set
with ``setattr(self, v, ...)`` (or kept as ``self.<v>``), and offers the names whose live layer
is of the class the tested branch makes (``not in``: the others), in the loop's order, as a
tuple, a list or a set like the field's value.

Read conservatively: a branch that makes no layer class, or one whose layer the other branch
makes too, says nothing, and a name whose layer is missing leaves the reading out.
"""

from __future__ import annotations

import ast
import types
from typing import Any

from torch import nn

from ..._unwrap import original_class
from .code import Code, code_of, is_name, resolved

__all__ = ["chosen"]


def _tested(node: ast.AST, param: str, path: tuple[str, ...]) -> bool:
    """Whether ``node`` is ``param`` or the field path read off it (``lora.targets``)."""
    for attr in reversed(path):
        if not (isinstance(node, ast.Attribute) and node.attr == attr):
            return False
        node = node.value
    return is_name(node, param)


def _made(body: list[ast.stmt], scope: dict[str, Any]) -> type | None:
    """The one layer class a branch calls."""
    found = {
        c
        for stmt in body
        for n in ast.walk(stmt)
        if isinstance(n, ast.Call)
        and isinstance(c := resolved(n.func, scope), type)
        and issubclass(c, nn.Module)
    }
    return found.pop() if len(found) == 1 else None


def _sets_by_name(loop: ast.For, var: str) -> bool:
    """The loop sets ``self.<var>``: ``setattr(self, var, x)`` or ``self.add_module(var, x)``."""
    for n in ast.walk(loop):
        if isinstance(n, ast.Call) and is_name(n.func, "setattr") and len(n.args) == 3:
            if is_name(n.args[0], "self") and is_name(n.args[1], var):
                return True
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "add_module"
            and is_name(n.func.value, "self")
            and n.args
            and is_name(n.args[0], var)
        ):
            return True
    return False


def _readings(code: Code, param: str, path: tuple[str, ...]) -> list[tuple[list[str], type, bool]]:
    """(the loop's names, the class the tested branch makes, whether the test is ``not in``)."""
    out: list[tuple[list[str], type, bool]] = []
    for loop in ast.walk(code.tree):
        if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)):
            continue
        if not isinstance(loop.iter, (ast.Tuple, ast.List, ast.Set)):
            continue
        names: list[Any] = [e.value for e in loop.iter.elts if isinstance(e, ast.Constant)]
        if len(names) != len(loop.iter.elts) or not all(isinstance(n, str) for n in names):
            continue
        names = [str(n) for n in names]
        var = loop.target.id
        if not _sets_by_name(loop, var):
            continue
        for test in ast.walk(loop):
            if not (isinstance(test, ast.If) and isinstance(test.test, ast.Compare)):
                continue
            cmp = test.test
            if not (is_name(cmp.left, var) and len(cmp.ops) == 1):
                continue
            if not isinstance(cmp.ops[0], (ast.In, ast.NotIn)):
                continue
            if not _tested(cmp.comparators[0], param, path):
                continue
            made, other = _made(test.body, code.scope), _made(test.orelse, code.scope)
            if made is not None and made is not other:
                out.append((names, made, isinstance(cmp.ops[0], ast.NotIn)))
    return out


def chosen(cls: type, module: nn.Module, name: str, like: Any = ()) -> list[Any]:
    """The names the argument (``"lora.targets"``: a field read off it) chose, read off the
    module's layers (see the module doc), made the kind of collection ``like`` is."""
    param, *rest = name.split(".")
    init = cls.__dict__.get("__init__")
    code = code_of(init) if isinstance(init, types.FunctionType) else None
    if code is None:
        return []
    try:
        found = _readings(code, param, tuple(rest))
    except (TypeError, ValueError, RecursionError):
        return []
    make = type(like) if isinstance(like, (list, set, frozenset)) else tuple
    out: list[Any] = []
    for names, made, negated in found:
        layers = [module._modules.get(n) for n in names]
        if any(layer is None for layer in layers):
            continue
        picked = [n for n, m in zip(names, layers) if (original_class(type(m)) is made) != negated]
        value = make(picked)
        if value not in out:
            out.append(value)
    return out
