"""Per-class facts for the walk (names, whether a class is the user's, container kind), the names
of TorchScript modules, parametrizations and hook callables, and the placeholder for a value whose
computation raised. Cached by class: everything here runs once per module of a possibly huge model.
"""

from __future__ import annotations

import functools
import re
import sys
import weakref
from typing import Any, NamedTuple

import torch.nn as nn

from .._unwrap import is_parametrized_class, original_class

PLACEHOLDER = "<unavailable: {what} raised {exc}>"


def placeholder(what: str, exc: BaseException) -> str:
    """Text shown instead of a value whose computation raised (never re-raises)."""
    try:
        detail = f"{type(exc).__name__}: {exc}"
    except Exception:  # an exception whose __str__ raises too
        detail = type(exc).__name__
    return PLACEHOLDER.format(what=what, exc=detail[:200])


class ClassFacts(NamedTuple):
    name: str
    qualname: str
    is_custom: bool
    container: str | None
    wrap_attr: str | None  # registered child that a wrapper (compile / DataParallel / DDP) wraps
    parametrized: bool
    script: bool
    # torch layers declare their hyperparameters in __constants__ (TorchScript relies on it) and
    # their extra_repr is a function of those and of which tensors exist; for them the walk
    # memoises extra_repr (LayerNorm's alone costs too much at 100,000 modules).
    repr_keys: tuple[str, ...] | None
    # extra_repr is nn.Module's own (always ""): containers, Identity, most custom blocks.
    plain_repr: bool


_CONTAINERS: tuple[tuple[type, str], ...] = (
    (nn.Sequential, "Sequential"),
    (nn.ModuleList, "ModuleList"),
    (nn.ModuleDict, "ModuleDict"),
    (nn.ParameterList, "ParameterList"),
    (nn.ParameterDict, "ParameterDict"),
)

# Weak: a cache must not keep a user's (e.g. notebook-defined) class alive. Walks copy what they
# use into a plain dict for the walk's duration (a WeakKeyDictionary lookup costs far more).
FACTS: weakref.WeakKeyDictionary[type, ClassFacts] = weakref.WeakKeyDictionary()


def _is_torch_module(modname: str) -> bool:
    return modname == "torch" or modname.startswith("torch.")


def _subclass_of_loaded(cls: type, module: str, name: str) -> bool:
    """issubclass against a class in `module`, without importing it: if torch's dynamo / fx / jit
    was never imported, no instance of its classes can exist (and importing dynamo costs seconds)."""
    mod = sys.modules.get(module)
    target = getattr(mod, name, None) if mod is not None else None
    return isinstance(target, type) and issubclass(cls, target)


def class_facts(cls: type) -> ClassFacts:
    facts = FACTS.get(cls)
    if facts is None:
        facts = FACTS[cls] = _compute_facts(cls)
    return facts


def _compute_facts(cls: type) -> ClassFacts:
    shown = cls
    parametrized = False
    # torch.nn.utils.parametrize swaps the instance's class for a generated subclass
    # "Parametrized<Original>"; users want to see the original class.
    if is_parametrized_class(cls):
        shown = original_class(cls)
        parametrized = True
    script = _subclass_of_loaded(cls, "torch.jit._script", "RecursiveScriptModule")
    if _subclass_of_loaded(cls, "torch.fx.graph_module", "GraphModule"):
        # fx generates one class per traced instance and renames it after the traced class.
        import torch.fx

        shown = torch.fx.GraphModule
    name = shown.__name__
    qualname = f"{shown.__module__}.{shown.__qualname__}"
    container = next((label for base, label in _CONTAINERS if issubclass(cls, base)), None)
    wrap_attr: str | None = None
    if _subclass_of_loaded(cls, "torch._dynamo.eval_frame", "OptimizedModule"):
        wrap_attr = "_orig_mod"
    elif issubclass(cls, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
        wrap_attr = "module"
    consts = getattr(cls, "__constants__", None)
    repr_owner = next((c for c in cls.__mro__ if "extra_repr" in c.__dict__), nn.Module)
    memo = (
        _is_torch_module(cls.__module__)
        and _is_torch_module(repr_owner.__module__)
        and isinstance(consts, (list, tuple))
        and all(isinstance(c, str) for c in consts)
        and not (parametrized or script)
        # one-flag layers (ReLU(inplace)) print faster than a memo key can be built
        and len(consts) >= 2
    )
    return ClassFacts(
        name=name,
        qualname=qualname,
        is_custom=not _is_torch_module(shown.__module__),
        container=container,
        wrap_attr=wrap_attr,
        parametrized=parametrized,
        script=script,
        repr_keys=tuple(consts) if memo and consts else None,
        plain_repr=repr_owner is nn.Module and not script,
    )


_MANGLE = re.compile(r"\.___torch_mangle_\d+")
_SCRIPT_CONTAINERS = {
    f"torch.nn.modules.container.{label}": label
    for label in ("Sequential", "ModuleList", "ModuleDict")
}


def script_names(module: Any) -> tuple[str, str, bool, str | None]:
    """(name, qualname, is_custom, container) of the class a ScriptModule was compiled from."""
    try:
        qualified = str(module._c._type().qualified_name())
    except Exception:
        qualified = ""
    # TorchScript mangles a class scripted again in one process ("...___torch_mangle_2.Sequential").
    qualified = _MANGLE.sub("", qualified.removeprefix("__torch__."))
    try:
        name = str(module.original_name)
    except Exception:
        name = qualified.rsplit(".", 1)[-1] or type(module).__name__
    if not qualified:
        return name, f"{type(module).__module__}.{type(module).__qualname__}", False, None
    return name, qualified, not _is_torch_module(qualified), _SCRIPT_CONTAINERS.get(qualified)


def parametrization_names(modules: Any) -> tuple[str, ...]:
    """("weight: Symmetric", ...) from a parametrized module's `parametrizations` ModuleDict."""
    holder = modules.get("parametrizations")
    if holder is None:
        return ()
    out = []
    for tensor_name, plist in holder._modules.items():
        kinds = ", ".join(type(p).__name__ for p in plist._modules.values())
        out.append(f"{tensor_name}: {kinds}")
    return tuple(out)


def callable_name(fn: Any) -> str:
    """A short human name for a hook: "log_forward", "Owner.on_forward", "partial(f)", "<lambda>"."""
    try:
        if isinstance(fn, functools.partial):
            return f"partial({callable_name(fn.func)})"
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
        if isinstance(name, str):
            # "outer.<locals>.inner" -> "inner": the enclosing function only adds noise.
            return name.rsplit(".<locals>.", 1)[-1]
        return type(fn).__qualname__
    except Exception as exc:
        return placeholder("hook name", exc)
