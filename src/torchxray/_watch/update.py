"""A sampled step's weights (``_watch/record.py``): each weight's norm and, for the weights the
optimizer updates, the norm of the update ``optimizer.step()`` makes, both 0-d tensors read with
the step's other figures at its end, where they become each module's weight norm and update
ratio ||w_after - w_before|| / ||w_before||.

The update needs a copy of the weights for the step's duration: all of a tensor up to ``EXACT``
values, else ``SAMPLE`` of them a prime stride apart (``spread``), each standing for its share.
A copied weight's norm is its copy's (the same values, already read: not a second pass).

>>> import torch
>>> w = torch.nn.Parameter(torch.ones(4))
>>> ws = Weighing()
>>> ws.take([(w, "fc")], [(w, "fc")], {id(w)})
>>> with torch.no_grad():
...     _ = w.mul_(2.0)
>>> ws.updated()
>>> ws.figures([float(t) for t in ws.tensors()])
({'fc': 2.0}, {'fc': 1.0})
"""

from __future__ import annotations

import functools
import math

import torch
from torch import nn

from .shards import local

__all__ = ["EXACT", "SAMPLE", "Views", "Weighing", "spread"]

# The update ratio reads every value of a tensor up to EXACT values, else SAMPLE evenly spaced
# ones (a prime stride, ``stride``): copying all the weights each sampled step cost more than the
# step's own SGD update on a ResNet-50 (bench/README.md). Values one by one, not runs of a cache
# line (which read less memory): an embedding's update lands on the rows of the tokens seen, and
# runs that skip whole rows put a Llama's update ratio 12% off. On the six models of
# ``python -m bench.watch_sample`` the sampled update ratio is within 6% of every value's and a
# weight's norm (read from the same sample on a sampled step) within 2%; a NaN is looked for in
# every value (``record.py``, ``_spoilt``).
EXACT = 16_384
SAMPLE = 16_384

Weights = list[tuple[nn.Parameter, str]]  # each trainable weight with its module's path


def spread(p: torch.Tensor) -> tuple[torch.Tensor, float]:
    """The values of ``p`` the update ratio reads, and how many values each stands for."""
    flat = p.detach().reshape(-1)
    n = flat.numel()
    if n <= EXACT:
        return flat, 1.0
    picked = flat[:: stride(n // SAMPLE, p.shape)]
    return picked, n / picked.numel()


@functools.lru_cache(maxsize=1024)
def stride(least: int, shape: tuple[int, ...]) -> int:
    """The first prime from ``least`` that divides no size of ``shape``: a step through the
    flat values that meets every position of every dimension in turn. A stride sharing a factor
    with a size meets some positions only: 36 through a 3x3 convolution's weight (9 a kernel)
    read its corners alone, and put a ResNet-50's update ratio 37% off (bench/README.md)."""
    k = max(2, least)
    while not _prime(k) or any(size % k == 0 for size in shape):
        k += 1
    return k


def _prime(k: int) -> bool:
    return k >= 2 and all(k % d for d in range(2, math.isqrt(k) + 1))


class Views:
    """How ``spread`` reads each weight a sampled step copies (its step through the flat values
    and the share each stands for), kept from one sampled step to the next while the same
    weights move with the same storages and shapes; the views themselves are made anew each
    time (one ``as_strided`` of the weight's detached alias), so that no storage is held past
    its step (a weight moved to another device, or swapped with ``p.data = ...``, is freed as
    it would be unwatched). Working the steps out again cost a small model's sampled step more
    than copying the values (bench/README.md, issue 55)."""

    def __init__(self) -> None:
        self._key: tuple[list[int], list[tuple[int, ...]]] | None = None
        self._how: list[tuple[int, int, float]] = []  # (values read, step, share) per weight

    def of(
        self, moving: Weights, keys: list[tuple[int, ...]]
    ) -> tuple[list[torch.Tensor], list[float]]:
        """The views of ``moving`` (``keys``: each one's storage and shape, ``_keys``) and the
        share each value stands for."""
        if any(k[0] == -1 for k in keys):  # a weight not contiguous: spread's own copy, unkept
            self.clear()
            picked = [spread(local(p)) for p, _ in moving]
            return [v for v, _ in picked], [share for _, share in picked]
        key = ([id(p) for p, _ in moving], keys)
        if key != self._key:
            self._how = []
            for p, _ in moving:
                view, share = spread(local(p))
                k = view.stride()[0] if view.dim() == 1 and view.numel() > 1 else 1
                self._how.append((view.numel(), k, share))
            self._key = key
        views = []
        for (p, _), (m, k, _) in zip(moving, self._how, strict=True):
            t = local(p).detach()
            views.append(t.as_strided((m,), (k,), t.storage_offset()))
        return views, [h[2] for h in self._how]

    def clear(self) -> None:
        self._key, self._how = None, []


def _keys(moving: Weights) -> list[tuple[int, ...]]:
    """Each weight's storage and shape (storage -1 for one that is not contiguous: its flat
    values are a copy, read anew)."""
    out = []
    for p, _ in moving:
        t = local(p)
        out.append((t.data_ptr() if t.is_contiguous() else -1, *t.shape))
    return out


class Weighing:
    """One sampled step's weight norms and update norms, from ``take`` (after the backward)
    and ``updated`` (after ``optimizer.step()``) to ``figures`` (at the step's end)."""

    def __init__(self) -> None:
        self.moving: Weights = []  # the weights the optimizer updates, copied
        self.views: list[torch.Tensor] = []  # the values of each read (views of the weight)
        self.shares: list[float] = []  # how many values each read value stands for
        self.ptrs: list[tuple[int, ...]] = []  # each weight's storage and shape (``_keys``)
        self.before: list[torch.Tensor] | None = None
        self.norms: list[tuple[str, float, torch.Tensor]] = []  # (module, share, 0-d norm)
        self.deltas: list[torch.Tensor] = []  # 0-d norms of the updates, as ``moving``

    def take(
        self,
        weights: Weights,
        have: Weights,
        optimizer_params: set[int] | None,
        views: Views | None = None,
    ) -> None:
        """Norms of ``weights``; a copy of those in ``have`` (with a gradient) the optimizer
        holds (``optimizer_params``: ids; None: no update ratio), read through ``views``.
        (No ``no_grad``: every tensor here is detached, and the context costs a sampled step.)"""
        moving = (
            [(p, path) for p, path in have if id(p) in optimizer_params]
            if optimizer_params is not None
            else []
        )
        if moving:
            # Views of the live weights (optimizers update in place): read again after the
            # step, unless a weight's storage was swapped (``p.data = ...``; ``updated``).
            self.ptrs = _keys(moving)
            self.views, self.shares = (views or Views()).of(moving, self.ptrs)
            self.moving = moving
            self.before = list(torch._foreach_mul(self.views, 1.0))  # one copy op
            norms = torch._foreach_norm(self.before)
            self.norms = [
                (path, share, n) for (_, path), share, n in zip(moving, self.shares, norms)
            ]
        rest: Weights = []  # ``moving`` is of ``weights``: every weight moves when as many do
        if len(moving) != len(weights):
            copied = {id(p) for p, _ in moving}
            rest = [(p, path) for p, path in weights if id(p) not in copied]
        if rest:
            norms = torch._foreach_norm([local(p).detach() for p, _ in rest])
            self.norms += [(path, 1.0, n) for (_, path), n in zip(rest, norms)]

    def updated(self) -> None:
        """After ``optimizer.step()``: the norm of each copied weight's update."""
        before, self.before = self.before, None
        if not before:
            return
        views = self.views
        if _keys(self.moving) != self.ptrs or any(k[0] == -1 for k in self.ptrs):
            # A storage swapped, or a weight not contiguous (its flat values were a copy): anew.
            views = [spread(local(p))[0] for p, _ in self.moving]
        # (no no_grad: every tensor here is detached, and its context costs a sampled step)
        torch._foreach_sub_(before, views)
        self.deltas = list(torch._foreach_norm(before))

    def tensors(self) -> list[torch.Tensor]:
        """The 0-d tensors to read: the weight norms, then the update norms."""
        return [*(n for _, _, n in self.norms), *self.deltas]

    def figures(self, got: list[float]) -> tuple[dict[str, float], dict[str, float]]:
        """Each module's weight norm and update ratio, from ``tensors()`` read as ``got``."""
        sq: dict[str, float] = {}
        for (path, share, _), v in zip(self.norms, got[: len(self.norms)], strict=True):
            sq[path] = sq.get(path, 0.0) + share * v * v
        norms = {p: math.sqrt(v) for p, v in sq.items()}
        sq = {}
        done = got[len(self.norms) :]
        if len(done) == len(self.moving) == len(self.shares):  # else the update never ran
            for (_, path), share, v in zip(self.moving, self.shares, done, strict=True):
                sq[path] = sq.get(path, 0.0) + share * v * v
        updates = {p: math.sqrt(v) / norms[p] for p, v in sq.items() if norms.get(p)}
        return norms, updates
