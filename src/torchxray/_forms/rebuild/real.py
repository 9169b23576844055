"""A constructor that computes with tensor values, built for real: ``Rebuild``.

Most constructors make tensors and never read their values, and build on meta in
milliseconds (``meta.py``). Some read them: a drop-path schedule ``[x.item() for x in
torch.linspace(0, rate, n)]``, a frequency ``freqs[-1].item()`` kept as an attribute, a mask
``.tolist()``ed into a loop. On meta that raises ("Tensor.item() cannot be called on meta
tensors"), and no value of the search could build it, so the form was refused. Such a module is
built again on the CPU, initialised, with the random generator kept as found, by the search
(``_forms/candidates/``) and the gate (``_forms/exact/``) alike, so that what the search calls
exact the gate agrees with.

Bounded: only where the meta build failed for that reason (``data_dependent``) and the live
module is small (``small``: at most ``REAL_ELEMENTS`` tensor elements and ``REAL_MODULES``
submodules), since every candidate the search tries then costs a real build.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from torch import nn
from torch.nn.parameter import is_lazy

from .meta import Count, meta_build

__all__ = ["REAL_ELEMENTS", "REAL_MODULES", "Rebuild", "data_dependent", "small"]

T = TypeVar("T")

# A real build initialises every tensor: on 2 shared CPUs (load ~3, torch threads 1, 2026-12-05)
# a conv, two linears and a norm of 235,000 float32 elements build in 1.2 ms of CPU against
# 0.37 ms on meta (~4 ns an element more), so a search of ~300 builds costs ~0.3 s more at
# most, within the form's budget and far below its safety ceiling (``_forms/budget.py``). The
# zoo's tensor-computing constructors (a ConvNeXt with a linspace drop-path schedule, random
# Fourier features) hold 2,000 to 30,000 elements.
REAL_ELEMENTS = 250_000
# And few submodules: each costs the constructor's Python on every build, as on meta.
REAL_MODULES = 256

# What torch raises where a constructor reads a meta tensor's values.
_DATA = (
    "cannot be called on meta tensors",  # .item(), int(t), float(t), bool(t)
    "Cannot copy out of meta tensor",  # .tolist(), .cpu()
    "meta device type tensor to numpy",  # .numpy()
    "data-independent implementation does not exist",  # nonzero, unique, masked_select
    # A tensor the constructor made on the CPU where the meta build cannot reach (the legacy
    # ``torch.Tensor(rgb_mean)``, a numpy array) mixed with the layer's meta tensors:
    # ``self.weight.data = torch.eye(3) / std`` (EDSR's MeanShift), ``self.bias + t``.
    "is not on the expected device meta",
    "`variable` and `tensor` have incompatible tensor type",  # .data = a CPU tensor
)


def data_dependent(e: BaseException) -> bool:
    """Whether ``e`` is a constructor reading a meta tensor's values, or mixing them with
    tensors it made on the CPU."""
    text = str(e)
    return any(d in text for d in _DATA)


def small(module: nn.Module) -> bool:
    """Whether ``module`` is small enough to be built for real, candidate after candidate."""
    elements, modules = 0, 0
    for m in module.modules():
        modules += 1
        for t in (*m._parameters.values(), *m._buffers.values()):
            if t is not None and not is_lazy(t):
                elements += t.numel()
        if modules > REAL_MODULES or elements > REAL_ELEMENTS:
            return False
    return True


class Rebuild:
    """One build: on meta (``meta.meta_build``), and where that fails because the constructor
    reads tensor values and ``real_ok`` (the live module is ``small``), again on the CPU.
    ``count`` is the last attempt's; ``work`` both attempts'; ``real`` says the CPU built it."""

    def __init__(
        self,
        cap: int = 1 << 30,
        deadline: float = float("inf"),
        limit: float = float("inf"),
        real_ok: bool = False,
    ) -> None:
        self.cap, self.deadline, self.limit, self.real_ok = cap, deadline, limit, real_ok
        self.count = Count(cap, limit, deadline)
        self.spent = 0
        self.real = False

    @property
    def work(self) -> int:
        return self.spent + self.count.work

    def run(self, make: Callable[[], T]) -> T:
        try:
            with meta_build(self.cap, self.deadline, self.limit) as self.count:
                return make()
        except Exception as e:
            if not (self.real_ok and data_dependent(e)):
                raise
        self.spent, self.real = self.count.work, True
        with meta_build(self.cap, self.deadline, self.limit, real=True) as self.count:
            return make()
