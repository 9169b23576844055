"""One hand-written model of the zoo: how to build it, its example inputs, one edit that applies.

Every model module of this package fills `CASES` through `case(...)`; `build()` makes a fresh
model (random init, CPU, small) and `inputs()` fresh example arguments, so cases run in any order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

Inputs = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], nn.Module]
    inputs: Callable[[], Inputs]
    # (path, hyperparameter changes) for `PatchLog.edit`: a change that keeps every output shape.
    edit: tuple[str, dict[str, Any]] | None = None
    styles: tuple[str, ...] = ()  # the habits of hand-written code it shows
    train: bool = False  # used in train mode (its forward differs there)
    tags: frozenset[str] = field(default_factory=frozenset)


CASES: dict[str, Case] = {}


def case(
    name: str,
    build: Callable[[], nn.Module],
    inputs: Callable[[], Inputs],
    edit: tuple[str, dict[str, Any]] | None = None,
    styles: str = "",
    train: bool = False,
) -> Case:
    if name in CASES:
        raise ValueError(f"two hand-written cases named {name!r}")
    c = Case(name, build, inputs, edit, tuple(styles.split(", ")) if styles else (), train)
    CASES[name] = c
    return c


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=gen(seed))


def tokens(*shape: int, vocab: int = 50, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, vocab, shape, generator=gen(seed))


def args(*values: Any, **kwargs: Any) -> Callable[[], Inputs]:
    """Inputs made anew on each call from `values` (callables are called)."""

    def make() -> Inputs:
        a = tuple(v() if callable(v) else v for v in values)
        k = {n: (v() if callable(v) else v) for n, v in kwargs.items()}
        return a, k

    return make
