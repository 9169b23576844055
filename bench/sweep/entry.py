"""One model of the sweep: how to build it (on a device) and how to make its example inputs.

Every family module (`bench.sweep.families`) yields `Entry` objects; nothing is built or imported
until `Entry.build` runs, so listing the sweep costs nothing and a library that is missing only
empties its own family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

Inputs = tuple[tuple[Any, ...], dict[str, Any]]

# Above this many parameters a model runs on the meta device only: its fake probe, its memory
# estimate and its walk are checked, and the checks that need values (real probe, diff) are not.
CPU_PARAMS = 40_000_000


@dataclass(frozen=True)
class Entry:
    family: str  # "timm", "torchvision", "diffusers", "transformers", "open_clip", ...
    group: str  # the kind within the family: timm's module, "detection", "causal-lm", ...
    name: str
    make: Callable[[], nn.Module]  # builds on the current default device (meta or cpu)
    inputs: Callable[[nn.Module, torch.device], Inputs]
    train: bool = False  # the model is used in train mode (a detector given its targets)
    cpu: bool | None = None  # None: decided by the parameter count on meta; False: meta only
    note: str = ""
    # Tried when this one does not build or its bare forward fails (a default config on meta).
    fallback: Entry | None = None
    # Hand-written models (issue 58): the bare forward runs on a twin built with the same seed,
    # and torchxray meets a model never called before, as a person exploring it first does.
    fresh: bool = False
    # The checks only some families run ("summary", "forms", "edit": `bench.sweep.handwritten`).
    extra: tuple[str, ...] = ()
    # (path, changes) for the "edit" check: `PatchLog.edit(path, **changes)`, then a real probe.
    edit: tuple[str, dict[str, Any]] | None = None

    @property
    def key(self) -> str:
        return f"{self.family}/{self.name}"

    def build(self, device: str) -> nn.Module:
        """The model on `device` ("meta" or "cpu"), in eval mode unless `train`."""
        torch.manual_seed(0)
        with torch.device(device):
            model = self.make()
        return model.train(self.train)


def count_params(model: nn.Module) -> int:
    seen: set[int] = set()
    total = 0
    # nn.Module's own walk of the registered parameters: a class may override ``parameters()``
    # to hand its optimizer a subset (a MAML learner's fast weights), and the tree holds them all.
    for p in nn.Module.parameters(model):
        # A lazy layer's parameter has no size until its first call: none counted yet.
        if isinstance(p, nn.parameter.UninitializedTensorMixin):
            continue
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def image(channels: int = 3, size: int | tuple[int, int] = 224, batch: int = 1) -> Callable:
    """Inputs of one image batch on the model's device (random values)."""
    h, w = (size, size) if isinstance(size, int) else size

    def inputs(model: nn.Module, device: torch.device) -> Inputs:
        g = torch.Generator().manual_seed(0)
        x = torch.randn(batch, channels, h, w, generator=g)
        return (x.to(device),), {}

    return inputs
