"""`untouched(model)`: a block of torchxray's own work on a live model (a form's check, which
hands the live layers to the constructor it rebuilds with) leaves the model as it found it:
every module taken before (attributes, containers, hooks), parameters and buffers backed up
before an op writes them, torch's flags, the random number generators; all put back when the
block ends."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from .._fake.state import snapshot_state
from .trace import Trace

__all__ = ["untouched"]


@contextlib.contextmanager
def untouched(model: nn.Module, guard: bool = True) -> Iterator[Trace]:
    """`guard`: back parameters and buffers up by a dispatch mode seeing every op; False where
    the caller backs them up itself through ``trace.backups.before_write`` (a form's meta
    builds, whose function mode sees every in-place call at no extra cost)."""
    modules: list[nn.Module] = []
    paths: dict[int, str] = {}
    for path, m in model.named_modules():
        modules.append(m)
        paths[id(m)] = path
    trace = Trace(modules, paths, snapshot_state(modules), real=True)
    # A constructor rebuilt on meta may still draw random numbers: a tensor made without the
    # device (``torch.FloatTensor(n, m).uniform_()``, ``torch.randn(...)`` in a numpy-style
    # init) is a CPU one, and drawing it moves the user's generator, so the next dropout mask
    # or initialisation after opening a form would differ (issue 58). Forked as the probe does.
    cuda: list[int] = []
    if torch.cuda.is_initialized():
        cuda = sorted({t.device.index or 0 for m in modules for t in _tensors(m) if t.is_cuda})
    with torch.random.fork_rng(devices=cuda), trace:
        for m in modules:
            trace.touch(m)
        with trace.guard() if guard else contextlib.nullcontext():
            yield trace


def _tensors(m: nn.Module) -> list[torch.Tensor]:
    return [t for t in (*m._parameters.values(), *m._buffers.values()) if t is not None]
