"""How a replacement is fitted to the module it replaces: device, dtype, mode, hooks, weights.

The rules are documented in ``patch.py``. Everything here works on the replacement, not on the
model (a wrapper around a model layer is moved with it, a no-op on the same device), so it runs
before the model is touched.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn as nn
from torch.nn.parameter import is_lazy
from torch.nn.utils import parametrize

from .._cast import to_like
from .._forms.rebuild.hooked import norm_hooks, rewrap
from .._forms.rebuild.parts import logical, tensor_kind
from .._unwrap import original_class
from .paths import SlotIndex, holds_meta, tensors

# Hook tables copied from a replaced module to its replacement (flags included so a hook keeps its
# calling convention). Backward hooks are left out: they belong to autograd of the old weights.
_HOOK_TABLES = {
    "_forward_hooks": ("_forward_hooks_with_kwargs", "_forward_hooks_always_called"),
    "_forward_pre_hooks": ("_forward_pre_hooks_with_kwargs",),
}


def users_hook(hook: Any, old: nn.Module) -> bool:
    """False for hooks that are part of the old module itself: its own bound methods (lazy modules
    initialise through one, and it would run on the replacement and fail) and torch's hook objects
    (old-style weight_norm / spectral_norm, which need the old module's extra tensors)."""
    if getattr(hook, "__self__", None) is old:
        return False
    return not type(hook).__module__.startswith("torch.")


def place(new: nn.Module, old: nn.Module, index: SlotIndex, path: str, cast: bool) -> None:
    """Give ``new`` the device, dtype, mode and forward hooks of ``old`` (rules: patch.py docs)."""
    wraps_model = any(index.contains(m) for m in new.modules())
    if cast and not holds_meta(new):
        for ref in index.ancestors(path):
            found = list(tensors(ref))
            if found:
                floats = [t for t in found if t.is_floating_point()]
                to_like(new, found[0].device, floats[0].dtype if floats else None)
                break
    if wraps_model:
        for m in new.modules():
            if not index.contains(m):
                m.training = old.training
        return
    new.train(old.training)
    for table, flag_tables in _HOOK_TABLES.items():
        for hook_id, hook in getattr(old, table).items():
            if not users_hook(hook, old):
                continue
            getattr(new, table)[hook_id] = hook
            for flags in flag_tables:  # getattr default: older torch lacks always_called
                src, dst = getattr(old, flags, {}), getattr(new, flags, None)
                if hook_id in src and dst is not None:
                    dst[hook_id] = src[hook_id]


def reparametrize(new: nn.Module, old: nn.Module, made: nn.Module | None = None) -> None:
    """Give ``new``'s submodules the parametrizations (weight_norm, spectral_norm, ...) that the
    same-path submodules of ``old`` gained after construction: copies of the parametrization
    modules, registered on a tensor of the same name and shape, and the legacy hook-based
    wrappings applied again; ``carry`` then copies the originals.

    ``made``: the old module built again unchanged (an edit's), where it could be: a wrapping it
    holds too is the constructor's, which the new values may have turned off (``weight_norm(conv)
    if use_norm else conv``), and is not applied again. Without it, a wrapping the new module
    lacks is taken for one added after construction."""
    mine = dict(new.named_modules())
    ctor = dict(made.named_modules()) if made is not None else {}
    for path, m in old.named_modules():
        target = mine.get(path)
        if target is None or original_class(type(target)) is not original_class(type(m)):
            continue
        by_ctor = ctor.get(path)
        if by_ctor is None or not norm_hooks(by_ctor):
            rewrap(target, m)  # the legacy hook-based weight_norm / spectral_norm (``hooked.py``)
        if not parametrize.is_parametrized(m):
            continue
        for name, plist in m.parametrizations.items():
            if parametrize.is_parametrized(target, name):
                continue  # the constructor made it (a class that weight-norms its layers)
            if by_ctor is not None and parametrize.is_parametrized(by_ctor, name):
                continue  # the constructor made it, and the new values did not
            t = getattr(target, name, None)
            # The live tensor's shape from meta copies: reading m.weight would run the
            # parametrization on the live module (spectral_norm updates its buffers doing so).
            shape = logical(m, name)
            if not isinstance(t, torch.Tensor) or shape is None or t.shape != shape.shape:
                continue
            # Registered unsafe (the check would run the parametrization: spectral_norm's power
            # iteration moves its buffers), then given the live list's own flag, which
            # ``register_parametrization`` keeps and a rebuild must keep too.
            for p in plist:
                parametrize.register_parametrization(target, name, copy.deepcopy(p), unsafe=True)
            target.parametrizations[name].unsafe = getattr(plist, "unsafe", False)


def _set(module: nn.Module, name: str, value: torch.Tensor) -> None:
    owner, _, leaf = name.rpartition(".")
    m = module.get_submodule(owner)
    if leaf in m._parameters:
        m._parameters[leaf] = nn.Parameter(value, requires_grad=value.requires_grad)
    else:
        m._buffers[leaf] = value


@torch.no_grad()
def carry(
    new: nn.Module, old: nn.Module, made: nn.Module | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Copy parameters/buffers whose name and shape match from ``old`` into ``new``; a tensor
    subclass (a torchao-quantized weight) is carried as a copy of itself, not cast into the new
    module's plain tensor. Parametrizations ``old`` gained after construction (those ``made``,
    ``old`` built again unchanged, lacks) are re-applied
    first (``reparametrize``)."""
    reparametrize(new, old, made)
    src: dict[str, torch.Tensor] = dict(old.named_parameters())
    src.update(old.named_buffers())
    kept, fresh = [], []
    for name, t in [*new.named_parameters(), *new.named_buffers()]:
        s = src.get(name)
        if s is None or is_lazy(s) or is_lazy(t) or s.shape != t.shape:
            fresh.append(name)
            continue
        if tensor_kind(s):
            try:
                if s.dtype != t.dtype:
                    raise TypeError("a subclass in another dtype than the rebuilt tensor")
                copied = s.detach().clone().requires_grad_(s.requires_grad)
            except Exception:  # noqa: BLE001, S112 - a subclass without clone: left fresh; the
                fresh.append(name)  # edit's gate then names the tensor that lost its kind
                continue
            _set(new, name, copied)
            kept.append(name)
            continue
        t.copy_(s)
        if isinstance(t, nn.Parameter):
            t.requires_grad_(s.requires_grad)
        kept.append(name)
    return tuple(kept), tuple(fresh)
