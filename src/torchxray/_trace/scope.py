"""`untouched(model)`: a block of torchxray's own work on a live model (a form's check, which
hands the live layers to the constructor it rebuilds with) leaves the model as it found it:
every module taken before (attributes, containers, hooks), parameters and buffers backed up
before an op writes them, torch's flags; all put back when the block ends."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

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
    with trace:
        for m in modules:
            trace.touch(m)
        with trace.guard() if guard else contextlib.nullcontext():
            yield trace
