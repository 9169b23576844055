"""A layer argument registered under a name the constructor writes beside it
(``super().__init__(OrderedDict([("backbone", net), ("head", head)]))``,
``nn.ModuleDict({"encoder": enc})``, ``self.add_module("decoder", dec)``): read back as the
layer the module holds under that name.

A wrapper that is itself a container (an ``nn.Sequential`` subclass) often hands the layers it
was given to its base as named entries rather than keeping them under attributes: no
``self.x = arg`` says where the argument went, yet the pair ``("name", arg)``, the dict entry
``{"name": arg}`` or the registration call ``add_module("name", arg)`` says the name it is held
under. Where the module holds a layer under that name, that layer is the argument (a layer is
passed, not copied); a layer that is not there, or not a module, offers nothing. The rebuild
proves it.
"""

from __future__ import annotations

import ast
import inspect

from torch import nn

from .code import code_of

__all__ = ["registered"]

_REGISTERS = frozenset({"add_module", "register_module"})  # (name, layer) registration calls


def _name_beside(node: ast.AST, up: dict[ast.AST, ast.AST]) -> str | None:
    """The string literal ``node`` is registered under, or None: the first item of a pair
    ``("name", node)``, the key of a dict entry ``{"name": node}``, or the name a call
    ``add_module("name", node)`` registers it under."""
    parent = up.get(node)
    if isinstance(parent, ast.Tuple) and len(parent.elts) == 2 and parent.elts[1] is node:
        first = parent.elts[0]
    elif isinstance(parent, ast.Dict) and node in parent.values:
        first = parent.keys[parent.values.index(node)]  # type: ignore[assignment]
    elif (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr in _REGISTERS
        and len(parent.args) == 2
        and parent.args[1] is node
    ):
        first = parent.args[0]
    else:
        return None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def registered(cls: type, module: nn.Module, name: str) -> list[nn.Module]:
    """The layers ``module`` holds under the names ``cls.__init__`` registers its argument
    ``name`` under (see the module doc), in the order the constructor writes them."""
    init = cls.__dict__.get("__init__")
    code = code_of(init) if inspect.isfunction(init) else None
    if code is None or cls.__module__.startswith("torch.") or name in code.stores:
        return []  # a name rebound in the constructor may hold another value there
    out: list[nn.Module] = []
    for node in code.loads.get(name, ()):
        key = _name_beside(node, code.up)
        layer = module._modules.get(key) if key is not None else None
        if isinstance(layer, nn.Module) and not any(layer is o for o in out):
            out.append(layer)
    return out
