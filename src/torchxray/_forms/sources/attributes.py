"""Source: the module's attributes. A constructor keeps most of what it is given under the
parameter's own name (``self.eps = eps``), or in a layer it makes from it (``self.dropout =
nn.Dropout(dropout)`` keeps the rate as ``dropout.p``); its layers keep the same values under the
same names or well-known aliases (``hidden_size`` for ``dim``).

- ``draft``: the value of the module's same-named attribute (origin "attribute"; or, where it
  has none, a plain value kept under the name made private: ``self._k = k``), a flag read
  from an optional tensor, a rate read from the layer under the parameter's name (origin
  "derived"), or None to leave the parameter to the next source.
- ``same_named``: candidates for the search: the same-named (or aliased) attributes of the module
  and its layers, level by level.
"""

from __future__ import annotations

import ast
import functools
import inspect
from typing import Any

import torch
from torch import nn

from ..field import Field
from .code import code_of
from .layout import descendants
from .tensor_lists import as_lists

__all__ = ["ALIASES", "attr", "draft", "named_object", "same_named", "set_apart"]

_MISSING = inspect.Parameter.empty
_PRIVATE_PLAIN = (bool, int, float, str, tuple, list)

# Parameter name -> attribute names that hold the same value in common libraries.
ALIASES: dict[str, tuple[str, ...]] = {
    "eps": ("variance_epsilon", "epsilon", "layer_norm_eps", "norm_eps"),
    "dim": ("hidden_size", "embed_dim", "num_features", "in_features", "in_channels", "channels"),
    "hidden_size": ("dim", "embed_dim", "num_features", "hidden_dim"),
    "in_chs": ("in_channels", "in_features", "dim", "in_dim"),
    "out_chs": ("out_channels", "out_features", "dim", "out_dim"),
    "in_channels": ("in_chs", "in_features", "dim"),
    "input_channels": ("in_channels", "in_chs", "in_features"),
    "output_channels": ("out_channels", "out_chs", "out_features"),
    "out_channels": ("out_chs", "out_features", "dim"),
    "in_features": ("in_chs", "in_channels", "dim"),
    "out_features": ("out_chs", "out_channels"),
    "num_heads": ("heads", "n_head", "num_attention_heads"),
    "drop_path": ("drop_prob", "drop_path_rate"),
    "drop_prob": ("drop_path",),
    "num_classes": ("out_features",),
    "init_values": ("init_value",),
}


def attr(obj: Any, name: str) -> Any:
    """``obj.name`` (its own first), or None where it has none or a property raises."""
    try:
        return obj.__dict__.get(name, getattr(obj, name, None))
    except Exception:  # noqa: BLE001 - a property that raises
        return None


def draft(module: nn.Module, param: inspect.Parameter) -> tuple[Any, str] | None:
    """The parameter's value as the module's attributes hold it, with its origin; None where
    they hold none (the default then stands: ``_forms/sources/defaults.py``)."""
    name = param.name
    guess = (param.default if param.default is not _MISSING else None), "default"
    try:
        value = getattr(module, name)
    except Exception:  # noqa: BLE001 - missing, or a property that raises: fall back to a guess
        # Kept under the name made private (``self._use_path = use_path``), a plain value as
        # given: the argument; a layer or a tensor there was made from it (the other readers').
        value = module.__dict__.get(f"_{name}", _MISSING)
        if not isinstance(value, _PRIVATE_PLAIN):
            return None
    wants_bool = param.annotation is bool or isinstance(param.default, bool)
    if (isinstance(value, torch.Tensor) or value is None) and wants_bool:
        return value is not None, "derived"
    if wants_bool and callable(value) and not isinstance(value, (bool, nn.Module)):
        # A flag whose name is reused for what it chose (``self.residual = lambda x: 0`` under
        # ``if not residual``): not the flag; a guess the search goes on from.
        return guess
    wants_number = param.annotation in (float, int) or type(param.default) in (float, int)
    if isinstance(value, nn.Module) and (wants_number or "drop" in name):
        # `self.dropout = nn.Dropout(dropout)`: the number lives on the submodule (``p``, or a
        # drop path's ``drop_prob``); `DropPath(rate) if rate > 0 else Identity()` keeps none.
        p = getattr(value, "p", getattr(value, "drop_prob", None))
        if type(p) in (int, float) and "drop" in name:
            return p, "derived"
        if "drop" in name and param.default is _MISSING and p is None:
            return 0.0, "default"  # a first guess the search goes on from
        return guess
    if isinstance(value, nn.Module) and isinstance(param.default, (tuple, list, str, bool)):
        # A layer made from a plain default (``downsample=('', 1)`` made `self.downsample`) is
        # not the argument: a guess the search goes on from.
        return guess
    if callable(value) and inspect.ismethod(value):
        return None
    if named_object(param, value):
        # A name by its default, kept as what it names (``self.act = choose(act)`` holds
        # ``torch.tanh`` for ``"tanh"``): not the argument as given; a guess the search goes on
        # from, among the strings the code compares it with (``literals.py``).
        return guess
    if isinstance(value, torch.Tensor) and isinstance(param.default, (tuple, list)):
        # A sequence by its default, kept as a tensor (``torch.tensor(anchors).view(nl, -1,
        # 2)``): not the argument as given; the lists it may have been (``tensor_lists.py``),
        # a first guess the search goes on from.
        lists = as_lists([value])
        if param.default and not any(isinstance(x, (tuple, list)) for x in param.default):
            # A flat default (``mean=(0.5, 0.5, 0.5)`` kept as ``view(1, 3, 1, 1)``): flat.
            lists = [x for x in lists if not any(isinstance(y, list) for y in x)]
        return (lists[0], "derived") if lists else guess
    return value, "attribute"


def named_object(param: inspect.Parameter, value: Any) -> bool:
    """Whether ``value``, what the module keeps under the parameter's name, is what a name
    names rather than the name (a string by its default, a function or a class kept): two
    names may name one object (``{"sigmoid": torch.sigmoid, "logistic": torch.sigmoid}``),
    so the one a search finds is flagged where another rebuilds alike."""
    return isinstance(param.default, str) and callable(value) and not isinstance(value, str)


def _even(v: Any) -> bool:
    return type(v) is tuple and len(v) > 1 and all(type(x) is int and x == v[0] for x in v)


def same_named(module: nn.Module, f: Field, name: str) -> tuple[list[Any], set[str]]:
    """The values of attributes named like the field (or an alias) on the module and its
    layers, and the names the module's nearest layer holds itself."""
    low = name.lower()
    first: list[Any] = []
    own_names: set[str] = set()
    for m in [module, *descendants(module)]:
        for a in (name, *ALIASES.get(name, ())):
            if m is module and a == f.name:
                continue  # the form already tried the module's own same-named attribute
            if a in m.__dict__ or (m is not module and hasattr(type(m), a)):
                first.append(attr(m, a))
                if _even(first[-1]) and f.kind == "int":
                    first.append(first[-1][0])  # a conv's stride (2, 2) for an int stride
                if a == name and not first[:-1]:
                    own_names.add(a)
    if low.startswith("out"):
        first.reverse()  # an output width is the last layer's
    return first, own_names


@functools.lru_cache(maxsize=512)
def set_apart(cls: type, name: str) -> bool:
    """Whether ``cls.__init__`` sets ``self.<name>`` only to values that read none of its
    parameters, nor any local name (Social-GAN's ``self.mlp_dim = 1024`` beside an argument
    ``mlp_dim``): the same-named attribute then says nothing of the argument, and is not shown
    as read."""
    init = cls.__dict__.get("__init__")
    if not inspect.isfunction(init):
        return False
    code = code_of(init)
    if code is None:
        return False
    names = list(inspect.signature(init).parameters)
    if not names:
        return False
    me, params = names[0], frozenset(names[1:])
    values = [
        node.value
        for node in ast.walk(code.tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        and node.value is not None
        and any(
            isinstance(t, ast.Attribute) and t.attr == name and isinstance(t.value, ast.Name)
            and t.value.id == me
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
    ]  # fmt: skip
    # Only names of the module's own (constants, classes), never a parameter, nor a local that
    # may hold one (``orig = return_layers``; a loop's variable): read conservatively.
    reads = (n.id for v in values for n in ast.walk(v) if isinstance(n, ast.Name))
    apart = (r in code.scope and r not in params and r not in code.stores for r in reads)
    return bool(values) and all(apart)
