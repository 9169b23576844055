"""Long stacks of identical blocks (80 decoder layers), stepped on a few: the training step of a
stack of `n` blocks is measured on copies of the model cut to 4 and to 5 of them (the first, the
middle and the last blocks behave differently under FSDP: the last is not resharded after forward,
a block's backward prefetches the one before it), so that the two runs differ by one middle block,
and extended to `n`: each phase's (forward, backward, step) peak and each part of memory grows by
the 5-block run's excess over the 4-block run per extra block (the peak is the highest phase), and every middle block sends what the 5-block run's last middle block sent. The placements and
local shapes are still read from the whole sharded model; ``plan.notes`` says when this was used.

Opt-in (``tx.ranks(..., sample_blocks=True)``): it is exact where every part of the step grows
block by block (FSDP2 on a 10-layer Llama: the same peak as stepping every block), but not where
it does not (the torchtitan-style plan on the same model: 19% under), which is why it is no default.
"""

from __future__ import annotations

import re
from typing import Any

from torch import nn

from .step import Measured

__all__ = ["MIN_BLOCKS", "SMALL", "cut", "extend", "grows", "repeated_stack"]

MIN_BLOCKS = 8  # below this, stepping every block costs little
SMALL = 4  # the steps run on SMALL and SMALL + 1 blocks: a first, middles and a last (3 and 4 were not linear yet)


def _signature(block: nn.Module) -> tuple[Any, ...]:
    tensors = [*block.named_parameters(), *block.named_buffers()]
    return (type(block), tuple((n, tuple(t.shape), t.dtype, t.requires_grad) for n, t in tensors))


def repeated_stack(model: nn.Module) -> tuple[str, int] | None:
    """The path and length of the longest ModuleList of at least `MIN_BLOCKS` blocks of one class
    with the same parameters, or None."""
    best: tuple[str, int] | None = None
    for path, mod in model.named_modules():
        if not isinstance(mod, nn.ModuleList) or len(mod) < MIN_BLOCKS:
            continue
        sig = _signature(mod[0])
        if all(_signature(b) == sig for b in mod) and (best is None or len(mod) > best[1]):
            best = (path, len(mod))
    return best


def cut(model: nn.Module, path: str, keep: int) -> None:
    """Keep the first `keep` blocks of the ModuleList at `path` (on the dry run's own copy)."""
    stack = model.get_submodule(path)
    assert isinstance(stack, nn.ModuleList)
    del stack[keep:]


def grows(two: Measured, three: Measured) -> bool:
    """Whether the bigger run needed at least as much of every part as the smaller one: if not,
    memory does not grow block by block here and cannot be extended."""
    parts = ("params", "grads", "optimizer", "activations")
    return all(getattr(three, p) >= getattr(two, p) for p in parts) and all(
        three.phase_peaks.get(k, 0) >= v for k, v in two.phase_peaks.items()
    )


def extend(two: Measured, three: Measured, path: str, n: int) -> Measured:
    """The step of `n` blocks from the steps of `SMALL` and `SMALL` + 1 of them."""
    extra = n - SMALL - 1

    def grow(a: int, b: int) -> int:
        return b + extra * (b - a)

    prefix = re.compile(rf"^{re.escape(path)}\.(\d+)(\.|$)" if path else r"^(\d+)(\.|$)")
    comms: dict[tuple[str, str, str, str], tuple[int, int]] = {}
    for (where, phase, op, dim), (count, nbytes) in three.comms.items():
        m = prefix.match(where)
        if m is None:
            comms[(where, phase, op, dim)] = (count, nbytes)
            continue
        i = int(m.group(1))
        rest = where[m.end(1) :]
        last = SMALL  # the bigger run's last block
        targets = (
            [0]
            if i == 0
            else [n - 1]
            if i == last
            else [i]
            if i < last - 1
            else range(last - 1, n - 1)
        )
        for j in targets:
            key = (f"{path + '.' if path else ''}{j}{rest}", phase, op, dim)
            comms[key] = (count, nbytes)
    phases = {p: grow(two.phase_peaks.get(p, 0), b) for p, b in three.phase_peaks.items()}
    return Measured(
        comms,
        grow(two.params, three.params),
        grow(two.buffers, three.buffers),
        grow(two.grads, three.grads),
        grow(two.optimizer, three.optimizer),
        grow(two.activations, three.activations),
        max(phases.values(), default=grow(two.peak, three.peak)),
        phases,
    )
