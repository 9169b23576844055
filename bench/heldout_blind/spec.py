"""The blind held-out set's record: hand-written models nobody tunes torchxray on.

Written blind, on 2026-12-05, by someone who read none of torchxray's forms code or results (nor
the hand-written zoo or the first held-out set's models). It measures how general the rules are;
no rule may be developed on it, or it stops measuring anything. Run:
``python -m bench.sweep --family blind``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import nn


class Spec(NamedTuple):
    name: str
    build: Callable[[], nn.Module]
    example: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]
    edit: tuple[str, dict[str, Any]] | None = None
    train: bool = False


REGISTRY: list[Spec] = []


def heldout(
    name: str,
    example: Callable[[], Any],
    edit: tuple[str, dict[str, Any]] | None = None,
    train: bool = False,
) -> Callable[[Callable[[], nn.Module]], Callable[[], nn.Module]]:
    """Decorator: the function under it builds the model named `name`."""

    def wrap(build: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
        if any(s.name == name for s in REGISTRY):
            raise ValueError(f"two blind held-out models named {name!r}")
        REGISTRY.append(Spec(name, build, example, edit, train))
        return build

    return wrap


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
