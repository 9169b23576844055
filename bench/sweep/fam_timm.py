"""timm: every architecture of `timm.list_models()`, grouped by the module that defines it (timm's
own notion of a family: ``resnet``, ``vision_transformer``, ``maxxvit``...). By default one model
per family, the smallest by its name (``tiny`` before ``base``); ``every=True`` lists all."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from .entry import Entry, Inputs

# Name parts that tell a model's size, smallest first: the default pick of a family is the first.
_SIZES = ("atto", "femto", "pico", "nano", "tiny", "mini", "xxs", "xs", "small", "s", "18", "lite")


def _rank(name: str) -> tuple[int, int, str]:
    parts = re.split(r"[_\-.]", name)
    for i, size in enumerate(_SIZES):
        if size in parts:
            return (i, len(name), name)
    return (len(_SIZES), len(name), name)


def _make(name: str) -> Any:
    def make() -> nn.Module:
        import timm

        return timm.create_model(name, pretrained=False)

    return make


def _inputs(model: nn.Module, device: torch.device) -> Inputs:
    cfg = getattr(model, "pretrained_cfg", None) or {}
    # The size the model was made for: a smaller one breaks architectures whose blocks need
    # the feature map to divide evenly (HaloNet's 8x8 blocks at 256).
    c, h, w = cfg.get("input_size") or (3, 224, 224)
    # Two images: a training step (tx.memory) through a BatchNorm after global pooling needs
    # more than one value per channel.
    g = torch.Generator().manual_seed(0)
    return (torch.randn(2, c, h, w, generator=g).to(device),), {}


def entries(every: bool = False) -> Iterator[Entry]:
    import timm
    from timm.models import _registry

    families: dict[str, list[str]] = {}
    for name in timm.list_models():
        families.setdefault(_registry._model_to_module.get(name, "?"), []).append(name)
    for family, names in sorted(families.items()):
        chosen = sorted(names, key=_rank) if every else [min(names, key=_rank)]
        for name in chosen:
            yield Entry("timm", family, name, _make(name), _inputs)
