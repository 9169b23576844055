"""Every module put back to the objects it held: attributes, parameters and buffers compared by
identity with the run's snapshot (`attributes`), and hooks registered during the run found by
their handle ids wherever they sit (`new_hooks`); `merged` says each write once."""

from __future__ import annotations

import numbers
from typing import Any

import torch
from torch import nn

from .._fake.state import State
from .held import HOOK_SLOTS as _MODULE_HOOK_DICTS
from .writes import ATTRIBUTE, COUNTER, HOOK, SUBMODULE, TENSOR, Write

__all__ = ["attributes", "merged", "new_hooks"]

_TENSOR_HOOK_DICTS = ("_backward_hooks", "_post_accumulate_grad_hooks")
_GONE = object()


def attributes(state: list[State], paths: dict[int, str]) -> list[Write]:
    """Every module's attributes, parameters and buffers back to the objects they were."""
    out: list[Write] = []
    for m, params, buffers, attrs in state:
        path = paths.get(id(m), "?")
        for now, before in ((m._parameters, params), (m._buffers, buffers)):
            if not isinstance(now, dict):  # a ScriptModule's C++-backed view
                continue
            if now.keys() == before.keys() and all(now[k] is v for k, v in before.items()):
                continue
            for k in now.keys() | before.keys():
                if now.get(k, _GONE) is not before.get(k, _GONE):
                    how = "added" if k not in before else "removed" if k not in now else "replaced"
                    out.append(Write(path, k, TENSOR, how))
            now.clear()
            now.update(before)
        d = vars(m)
        if d.keys() == attrs.keys() and all(d[k] is v for k, v in attrs.items()):
            continue
        for k in [k for k in d if k not in attrs]:
            out.append(Write(path, k, ATTRIBUTE, f"set to {_short(d[k])}"))
            del d[k]
        for k, v in attrs.items():
            now_v = d.get(k, _GONE)
            if now_v is v:
                continue
            if now_v is _GONE:
                out.append(Write(path, k, ATTRIBUTE, "deleted"))
            elif _number(v) and _number(now_v):
                out.append(Write(path, k, COUNTER, f"{v} -> {now_v}"))
            else:
                out.append(Write(path, k, ATTRIBUTE, f"{_short(v)} -> {_short(now_v)}"))
            d[k] = v
    return out


def new_hooks(modules: list[nn.Module], paths: dict[int, str], start: int) -> list[Write]:
    """Hooks whose handle ids are `start` or past it (registered during the run) on any module
    or any of its parameters and buffers: removed."""
    out: list[Write] = []
    for m in modules:
        d = vars(m)
        path = paths.get(id(m), "?")
        for name in _MODULE_HOOK_DICTS:
            hooks = d.get(name)
            if hooks:
                new = [k for k in hooks if isinstance(k, int) and k >= start]
                for k in new:
                    del hooks[k]
                if new and not name.endswith(("with_kwargs", "always_called")):
                    out.append(Write(path, name, HOOK, f"{len(new)} registered"))
        for pname, t in (*m._parameters.items(), *m._buffers.items()):
            for name in _TENSOR_HOOK_DICTS:
                hooks = getattr(t, name, None) if t is not None else None
                if isinstance(hooks, dict) and hooks:
                    new = [k for k in hooks if isinstance(k, int) and k >= start]
                    for k in new:
                        del hooks[k]
                    if new:
                        out.append(
                            Write(path, pname, HOOK, f"{len(new)} tensor hook(s) registered")
                        )
    return out


def merged(writes: list[Write]) -> list[Write]:
    """One write per (path, attribute): the lazy submodule pattern (``self.proj = Linear``
    where ``self.proj`` was None) both adds a submodule and drops an attribute."""
    strong = {(w.path, w.attribute) for w in writes if w.kind in (SUBMODULE, TENSOR)}
    out: list[Write] = []
    seen: set[tuple[str, str, str]] = set()
    for w in writes:
        if w.kind == ATTRIBUTE and (w.path, w.attribute) in strong:
            continue
        key = (w.path, w.attribute, w.kind)
        if key in seen:
            continue
        seen.add(key)
        out.append(w)
    writes[:] = out
    return out


def _number(v: Any) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, bool)


def _short(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        return f"{type(v).__name__}{tuple(v.shape)}"
    if isinstance(v, nn.Module):
        return type(v).__name__
    text = repr(v) if isinstance(v, (int, float, str, bool, type(None))) else type(v).__name__
    return text if len(text) <= 40 else text[:39] + "…"
