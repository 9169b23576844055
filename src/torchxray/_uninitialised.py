"""Uninitialised tensors (``torch.nn.parameter.is_lazy``): an ``UninitializedParameter`` or
``UninitializedBuffer`` has a dtype and a device but no shape and no values until something
materialises it. A lazy module (``nn.LazyLinear``) materialises its own on its first forward; any
other module can hold one too (``m.w = nn.UninitializedParameter()``), materialised by code of the
user's. Runs that read shapes (the probe, the memory step) refuse such a model rather than fail
inside torch or initialise the tensor themselves, which would change the model: these are the
tensors they name and the sentence that says what to do.

A shared helper: imports nothing of torchxray.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import is_lazy

__all__ = ["uninitialised", "uninitialised_message"]


def uninitialised(modules: Iterable[tuple[str, nn.Module]]) -> tuple[str, ...]:
    """Paths ("block.w") of the uninitialised parameters and buffers of ``modules`` (pairs as
    ``named_modules`` gives them), each tensor once, in that order."""
    seen: set[int] = set()
    out: list[str] = []
    for path, m in modules:
        prefix = path + "." if path else ""
        for name, t in (*m._parameters.items(), *m._buffers.items()):
            if t is not None and is_lazy(t) and id(t) not in seen:
                seen.add(id(t))
                out.append(prefix + name)
    return tuple(out)


def uninitialised_message(model: nn.Module, paths: tuple[str, ...], run: str) -> tuple[str, str]:
    """(what is wrong, what to do) for a ``run`` ("a probe", "memory()") refused because of the
    uninitialised tensors at ``paths`` (non-empty) in ``model``."""
    shown = ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")
    one = len(paths) == 1
    # A lazy module materialises its tensors in its own forward; anything else needs the code
    # that owns the tensor (or the user) to materialise it: say which applies.
    owners = {p.rpartition(".")[0] for p in paths}
    lazy = all(isinstance(model.get_submodule(o), LazyModuleMixin) for o in owners)
    kinds = sorted({type(_tensor(model, p)).__name__ for p in paths})
    what = (
        f"{shown} {'is' if one else 'are'} uninitialised ({' / '.join(kinds)}: no shape or "
        f"values yet); {run} must not initialise {'it' if one else 'them'}, because that "
        "changes the model"
    )
    if lazy:
        how = (
            "run the model once yourself (model(*example_inputs)) to initialise its lazy "
            "modules, then try again"
        )
    else:
        how = (
            f"initialise {'it' if one else 'them'} first: materialise "
            f"{'it' if one else 'each'} ({paths[0]}.materialize(shape)) or assign a real "
            "nn.Parameter / buffer, or run the forward or code that does, then try again"
        )
    return what, how


def _tensor(model: nn.Module, path: str) -> object:
    owner, _, name = path.rpartition(".")
    m = model.get_submodule(owner)
    return m._parameters.get(name, m._buffers.get(name))
