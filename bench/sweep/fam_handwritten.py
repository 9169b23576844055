"""Hand-written models (issue 58, item 4): the zoo of ``tests/handwritten`` (family
"handwritten", the one rules may be developed on) and the held-out set of ``bench/heldout``
(family "heldout", never tuned on: it measures how general the rules are). Small, on the CPU;
each runs the sweep's checks and the extra ones of `bench.sweep.handwritten` (summary, the form of
every class, one edit), on a model never called before (``Entry.fresh``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from .entry import Entry, Inputs

EXTRA = ("summary", "forms", "edit")


def _on(make: Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]) -> Callable[..., Inputs]:
    """The case's example inputs, made anew, on the model's device."""

    def inputs(model: nn.Module, device: torch.device) -> Inputs:
        args, kwargs = make()
        move = lambda v: v.to(device) if isinstance(v, torch.Tensor) else v  # noqa: E731
        return tuple(move(a) for a in args), {k: move(v) for k, v in kwargs.items()}

    return inputs


def handwritten_entries(every: bool = False) -> Iterator[Entry]:
    from tests.handwritten import CASES

    for c in CASES.values():
        group = c.build.__module__.rsplit(".", 1)[-1] if hasattr(c.build, "__module__") else ""
        yield Entry("handwritten", group, c.name, c.build, _on(c.inputs), train=c.train, cpu=True,
                    note=", ".join(c.styles[:2]), fresh=True, extra=EXTRA, edit=c.edit)  # fmt: skip


def _held_out(family: str, package: str) -> Callable[[bool], Iterator[Entry]]:
    """The entries of a held-out set (``package``'s ``REGISTRY`` of ``Spec``), imported when swept."""

    def entries(every: bool = False) -> Iterator[Entry]:
        for s in importlib.import_module(package).REGISTRY:
            group = s.build.__module__.rsplit(".", 1)[-1]
            yield Entry(family, group, s.name, s.build, _on(s.example), train=s.train, cpu=True,
                        fresh=True, extra=EXTRA, edit=s.edit)  # fmt: skip

    return entries


heldout_entries = _held_out("heldout", "bench.heldout")
blind_entries = _held_out("blind", "bench.heldout_blind")
blind2_entries = _held_out("blind2", "bench.heldout_blind2")
blind3_entries = _held_out("blind3", "bench.heldout_blind3")
blind4_entries = _held_out("blind4", "bench.heldout_blind4")
blind5_entries = _held_out("blind5", "bench.heldout_blind5")
blind6_entries = _held_out("blind6", "bench.heldout_blind6")
blind7_entries = _held_out("blind7", "bench.heldout_blind7")
blind8_entries = _held_out("blind8", "bench.heldout_blind8")
