"""What torchxray is compared against: bare torch, torchinfo 1.8.0 and treescope 0.1.10."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn


def named_modules_loop(model: nn.Module) -> int:
    """The least any walk must do: visit every module once."""
    n = 0
    for _path, _m in model.named_modules():
        n += 1
    return n


def bare_forward(model: nn.Module, *args: Any) -> Any:
    """A forward under no_grad, as torchinfo and an inspection probe run it."""
    with torch.no_grad():
        return model(*args)


def on_meta(model: nn.Module, *args: Any) -> tuple[nn.Module, tuple[Any, ...]]:
    """A copy of the model and its inputs on the meta device, for `bare_forward`: the forward
    with every op's output shape computed by torch's meta kernels and nothing else (no mode, no
    record), the least a shape inference that runs those kernels costs. Made once, outside the
    timing; the model itself is not touched."""
    import copy

    from torch.utils._pytree import tree_map

    meta = copy.deepcopy(model).to("meta")
    moved = tree_map(lambda a: a.to("meta") if isinstance(a, torch.Tensor) else a, args)
    return meta, tuple(moved)


def torchinfo_summary(model: nn.Module, *args: Any) -> Any:
    import torchinfo

    return torchinfo.summary(model, input_data=list(args), verbose=0)


def _treescope_compat() -> None:
    # treescope 0.1.10 reads `Tensor.names` (named tensors), which torch 2.13 removed; without
    # this shim render_to_html raises AttributeError on any model with a parameter. Unnamed
    # dimensions are what treescope would have seen from an older torch.
    if not hasattr(torch.Tensor, "names"):
        torch.Tensor.names = property(lambda self: (None,) * self.dim())  # type: ignore[attr-defined]


def treescope_html(model: nn.Module) -> str:
    import treescope

    _treescope_compat()
    return treescope.render_to_html(model)
