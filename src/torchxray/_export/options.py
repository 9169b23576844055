"""``export_check``'s ``options=``: `parse_options(options, model, args, kwargs) -> Options`, one
clear sentence for anything it cannot take."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from .._text import closest
from .records import TARGETS

__all__ = ["DEFAULT_TARGETS", "Options", "parse_options"]

DEFAULT_TARGETS = ("export", "onnx")
_KEYS = ("targets", "dynamic_shapes", "mode", "drift")


@dataclass(frozen=True)
class Options:
    targets: tuple[str, ...]
    dynamic_shapes: Any
    mode: str
    drift: bool


def _on_meta(model: nn.Module, args: Any, kwargs: Any) -> bool:
    tensors = [*model.parameters(), *model.buffers()]
    tensors += [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    return any(t.is_meta for t in tensors)


def parse_options(options: Any, model: nn.Module, args: Any, kwargs: Any) -> Options:
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise TypeError(
            "export_check(options=...) takes a dict such as {'targets': ('export', 'onnx')}, "
            f"got {type(options).__name__}"
        )
    for key in options:
        if key not in _KEYS:
            near = closest(str(key), _KEYS)
            also = f" (did you mean {near[0]!r}?)" if near else ""
            raise TypeError(
                f"export_check has no option {key!r}{also}; its options are {list(_KEYS)}"
            )
    targets = options.get("targets", DEFAULT_TARGETS)
    if isinstance(targets, str):
        targets = (targets,)
    if not isinstance(targets, (tuple, list)) or not targets:
        raise ValueError(
            f"export_check option 'targets' takes a tuple of {TARGETS}, got {targets!r}"
        )
    for name in targets:
        if name not in TARGETS:
            near = closest(str(name), TARGETS)
            also = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(f"unknown export target {name!r}{also}; the targets are {TARGETS}")
    ordered = tuple(t for t in TARGETS if t in targets or t == "export")
    meta = _on_meta(model, args, kwargs)
    mode = options.get("mode")
    if mode is None:
        mode = "fake" if meta else "real"
    elif mode not in ("fake", "real"):
        raise ValueError(f"export_check option 'mode' takes 'fake' or 'real', got {mode!r}")
    elif mode == "real" and meta:
        raise ValueError(
            "export_check option mode='real' needs real weights and inputs, and this model or its "
            "inputs are on the meta device; leave 'mode' out (or 'fake') to check it without them"
        )
    drift = options.get("drift", True)
    if not isinstance(drift, bool):
        raise ValueError(f"export_check option 'drift' takes True or False, got {drift!r}")
    return Options(ordered, options.get("dynamic_shapes"), mode, drift)
