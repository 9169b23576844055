"""Fake runs (a probe, a memory trace) of models whose weights accelerate offloads
(``dispatch_model`` with a device_map holding "cpu" or "disk"): their `AlignDevicesHook`s keep
those weights on the meta device and load them from a `weights_map` (CPU copies, or files on
disk) around each forward.

A fake run must neither read nor move them: for its duration each offloading hook's ``offload``
flag is turned off (so it loads and unloads nothing, and only sends inputs to its execution
device), and the meta weights it governs are seen as fake tensors on that execution device, of
the same shape and dtype. Both are put back when the run ends; the hooks stay installed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

__all__ = ["execution_devices", "fake_offloaded", "offload_paused", "offloading_hooks"]


def _hooks(module: nn.Module) -> list[Any]:
    hook = module.__dict__.get("_hf_hook")
    if hook is None:
        return []
    return list(getattr(hook, "hooks", None) or [hook])  # accelerate's SequentialHook


def offloading_hooks(module: nn.Module) -> list[Any]:
    """The module's accelerate hooks that offload its weights (``offload=True``)."""
    return [h for h in _hooks(module) if getattr(h, "offload", False) is True]


def _governed(module: nn.Module, hook: Any) -> Iterator[tuple[nn.Module, str, bool]]:
    """(owner, name, is_param) of each tensor the hook loads: its module's own, or its whole
    subtree's with ``place_submodules``; buffers only with ``offload_buffers``."""
    owners = module.modules() if getattr(hook, "place_submodules", False) else (module,)
    for owner in owners:
        for name in owner._parameters:
            yield owner, name, True
        if getattr(hook, "offload_buffers", False):
            for name in owner._buffers:
                yield owner, name, False


def execution_devices(modules: list[nn.Module]) -> dict[int, torch.device]:
    """{id(tensor): device it runs on} for meta tensors held back by offloading hooks."""
    out: dict[int, torch.device] = {}
    # Only modules accelerate hooked (a dict lookup each; the hooks' own checks are calls).
    for m in [m for m in modules if "_hf_hook" in m.__dict__]:
        for hook in offloading_hooks(m):
            device = getattr(hook, "execution_device", None)
            if device is None:
                continue
            device = torch.device(device if not isinstance(device, int) else f"cuda:{device}")
            for owner, name, is_param in _governed(m, hook):
                t = (owner._parameters if is_param else owner._buffers).get(name)
                if t is not None and t.is_meta:
                    out[id(t)] = device
    return out


@contextlib.contextmanager
def offload_paused(modules: list[nn.Module]) -> Iterator[list[Any]]:
    """Offloading hooks load and unload nothing while this lasts (their flag, put back after)."""
    hooks = [h for m in modules for h in offloading_hooks(m)]
    try:
        for h in hooks:
            h.offload = False
        yield hooks
    finally:
        for h in hooks:
            h.offload = True


@contextlib.contextmanager
def fake_offloaded(modules: list[nn.Module], fake_mode: Any) -> Iterator[None]:
    """For a fake run (`fake_mode` not None): offloading paused, and every offloaded (meta)
    weight replaced by a fake tensor on its execution device until the run ends."""
    devices = execution_devices(modules) if fake_mode is not None else {}
    if not devices:  # a real run keeps accelerate's hooks as they are
        yield
        return
    swapped: list[tuple[dict[str, Any], str, Any]] = []
    governed = [g for m in modules for h in offloading_hooks(m) for g in _governed(m, h)]
    with offload_paused(modules):
        try:
            with fake_mode:
                for owner, name, is_param in governed:
                    slots: dict[str, Any] = owner._parameters if is_param else owner._buffers
                    t = slots.get(name)
                    if t is None or id(t) not in devices:
                        continue
                    fake = torch.empty(t.shape, dtype=t.dtype, device=devices[id(t)])
                    if is_param:
                        fake = nn.Parameter(fake, requires_grad=t.requires_grad)
                    swapped.append((slots, name, t))
                    slots[name] = fake
            yield
        finally:
            for slots, name, t in reversed(swapped):
                slots[name] = t
