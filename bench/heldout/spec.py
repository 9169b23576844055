"""The held-out set's record: one hand-written model nobody tunes torchxray on (issue 58, item 4).

Written after the zoo (tests/handwritten) and before any result was read, by other habits: type
hints and keyword-only arguments, registries and string specs, nested namespaces, recursion,
lazy layers, raw parameter dicts. It measures how general the rules are; developing a rule on it
spoils it. Run: ``python -m bench.sweep --family heldout``.
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

Register = Callable[..., Callable[[Callable[[], nn.Module]], Callable[[], nn.Module]]]


def registrar(registry: list[Spec]) -> Register:
    """The decorator that adds a model to ``registry`` (each set of models has its own)."""

    def heldout(
        name: str,
        example: Callable[[], Any],
        edit: tuple[str, dict[str, Any]] | None = None,
        train: bool = False,
    ) -> Callable[[Callable[[], nn.Module]], Callable[[], nn.Module]]:
        """Decorator: the function under it builds the model named `name`."""

        def wrap(build: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
            if any(s.name == name for s in registry):
                raise ValueError(f"two held-out models named {name!r}")
            registry.append(Spec(name, build, example, edit, train))
            return build

        return wrap

    return heldout


heldout = registrar(REGISTRY)


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
