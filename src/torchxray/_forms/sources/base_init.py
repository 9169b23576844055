"""Source: a ``**kwargs`` a subclass of a torch layer hands to its base's constructor
(``nn.Embedding.__init__(self, num_embeddings, embedding_dim, **kwargs)``), read off the module
itself as that base keeps it.

LoRA written by hand subclasses ``nn.Linear`` and ``nn.Embedding`` and passes what it does not
take itself on to the base: ``LoRAEmbedding(vocab, dim, r=4, padding_idx=0)``. No child layer
holds those keywords (``handed.py`` reads a child's form): the module is the layer the call
made. torch's layers keep their arguments under their names (``padding_idx``), so the base's
parameters the call does not pass itself are read off the module, and those that differ from
the base's defaults are the keywords.

Read conservatively: only a base of torch's (a user's base keeps what it likes), never a private
parameter (``_weight``, ``_freeze``: what the subclass's own code sets, never passed by hand)
nor ``device``/``dtype``, and a parameter the module keeps no attribute for leaves the reading
out.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

from torch import nn

from ..._signature import original, resolve, source_tree
from .code import resolved

__all__ = ["base_kwargs"]

_SKIP = ("device", "dtype")


def _base_of(call: ast.Call, cls: type, scope: dict[str, Any]) -> tuple[type, int] | None:
    """The base class whose ``__init__`` the call runs, and how many positional values of its
    own it hands (``self`` left out)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "__init__"):
        return None
    fixed = len([a for a in call.args if not isinstance(a, ast.Starred)])
    owner = func.value
    if isinstance(owner, ast.Call) and getattr(owner.func, "id", "") == "super":
        bases = [b for b in cls.__mro__[1:] if "__init__" in b.__dict__]
        return (bases[0], fixed) if bases else None
    base = resolved(owner, scope)
    if isinstance(base, type) and base in cls.__mro__[1:]:
        return base, fixed - 1  # Base.__init__(self, ...)
    return None


def base_kwargs(cls: type, module: nn.Module, name: str) -> dict[str, Any] | None:
    """The keywords ``**name`` held where ``cls.__init__`` hands it to a torch base's
    ``__init__`` (see the module doc); None where it hands it to none."""
    init = cls.__dict__.get("__init__")
    tree = source_tree(original(init)) if init is not None else None
    if tree is None:
        return None
    scope = dict(getattr(init, "__globals__", {}))
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        spreads = [k for k in call.keywords if k.arg is None]
        if not any(isinstance(k.value, ast.Name) and k.value.id == name for k in spreads):
            continue
        found = _base_of(call, cls, scope)
        if found is None or not found[0].__module__.startswith("torch."):
            continue
        base, fixed = found
        try:
            params = list(resolve(base).parameters.values())
        except (TypeError, ValueError):
            return None
        named = {k.arg for k in call.keywords if k.arg is not None}
        out: dict[str, Any] = {}
        for p in params[fixed:]:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in named:
                continue
            if p.name.startswith("_") or p.name in _SKIP or p.default is inspect.Parameter.empty:
                continue
            if p.name not in vars(module):
                return None  # a parameter it keeps nowhere: the keywords are not known
            value = vars(module)[p.name]
            if not _same(value, p.default):
                out[p.name] = value
        return out
    return None


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - an attribute that compares oddly is no default
        return False
