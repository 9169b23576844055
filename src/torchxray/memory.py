"""`memory(model, *args, training=False, optimizer=None) -> MemoryReport`: what a forward (or a
training step) costs in bytes, measured on fake tensors: nothing is allocated, so it works on
meta models of any size, and on CPU and CUDA models without touching their memory.

    >>> import torch, torch.nn as nn
    >>> model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    >>> rep = memory(model, torch.randn(32, 512), training=True, optimizer="adamw")
    >>> rep.params == rep.grads == sum(p.numel() * 4 for p in model.parameters())
    True
    >>> rep.optimizer == 2 * rep.params, rep["0"].activations > 0
    (True, True)

Weights (`params`, `buffers`) count each tensor once, however often it is shared or tied, as it is
stored: a quantized weight (torchao) by its inner tensors, not by its shape and dtype.
`grads` are the gradients of the trainable parameters the fake backward reaches (one used only
through a rounding to integers, or not at all, gets none, as in a real step) and `optimizer` the
optimizer's state for those (see `_memory.optim`), both only when `training`. `activations` are
the bytes autograd saves for backward, measured with saved-tensor hooks during a fake forward
(each storage once; weights excluded), charged to the innermost module whose forward saved them.
`peak` is the highest live total of a fake forward (and backward, plus the optimizer state, when
training): weights, inputs, activations and every temporary an op makes, freed when the run lets
go of it.

A forward's repeated identical blocks (80 decoder layers) are traced twice and the rest replayed
from what those two did (`_memory.memo`, listed in `report.memoised`), with the same figures as
tracing every block; a training step traces every block.

Where fake tensors cannot run an op whose result depends on values (a detector's ``nonzero``), a
CPU model's step runs for real on the CPU instead, its bytes counted from every storage its ops
make (`_memory.cpu_meter`), the model put back as it was; ``report.notes`` says so.

``mode="real"`` runs the step for real on a CUDA model and measures the same fields with the
allocator, defined so that they compare with the fake ones (`_memory.real`); the model is left
as it was. Other devices get a ValueError: the CPU has no allocator peak to read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from . import _gc
from ._fake.values import op_text
from ._memory import real
from ._memory.inputs import refuse_sharded, unique, values_on_cpu, with_batch
from ._memory.optim import state_bytes
from ._memory.step import fake_step
from ._memory.trace import StepTrace
from ._memory.weights import subtree_bytes
from ._trace.report import unrestored
from ._uninitialised import uninitialised, uninitialised_message

__all__ = ["MemoryRecord", "MemoryReport", "memory"]


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One module's bytes: its whole subtree, each tensor once. `activations_own` are those
    saved while this module's own code ran (not a child's); `peak` is the highest live total of
    the whole run while this module's forward was running (0 when it was not called).

    Attributes:
        path: The module's dotted path.
        cls: Its class name.
        params: Bytes of the subtree's parameters, as stored.
        buffers: Bytes of its buffers.
        grads: Bytes of the gradients a training step gives its parameters.
        optimizer: Bytes of the optimizer's state for them.
        activations: Bytes autograd saves for backward while the subtree runs.
        activations_own: Those saved while this module's own code ran (not a child's).
        peak: The highest live total of the whole run while this module's forward ran.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        >>> rec = tx.memory(model, torch.randn(2, 4), training=True, optimizer="sgd")["0"]
        >>> rec.params, rec.grads, rec.optimizer, rec.total
        (160, 160, 160, 512)
    """

    path: str
    cls: str
    params: int
    buffers: int
    grads: int
    optimizer: int
    activations: int
    activations_own: int
    peak: int

    @property
    def total(self) -> int:
        """Weights, gradients, optimizer state and saved activations together, in bytes."""
        return self.params + self.buffers + self.grads + self.optimizer + self.activations


@dataclass(frozen=True)
class MemoryReport:
    """Bytes of the whole model (see the module docstring); `report[path]` gives a module's
    `MemoryRecord`. `fits(capacity)` compares the peak with a size in bytes or a device.

    Attributes:
        training: Whether a training step was measured (else a forward).
        optimizer_name: The optimizer whose state was counted, or None.
        device: The model's device.
        dtypes: Its tensors' dtypes.
        params: Bytes of the parameters, each tensor once, as stored (a quantized weight by its
            inner tensors).
        buffers: Bytes of the buffers.
        grads: Bytes of the gradients of the trainable parameters the backward reaches.
        optimizer: Bytes of the optimizer's state for those.
        activations: Bytes autograd saves for backward (each storage once, weights excluded).
        peak: The highest live total of the run: weights, inputs, activations and temporaries.
        records: Path -> `MemoryRecord`.
        aliases: Alias path -> the first path of its module.
        memoised: Blocks whose figures were replayed from an identical earlier one.
        mode: ``"fake"``, or ``"real"`` (measured with the CUDA allocator).
        notes: Where the measurement departed from a plain fake step, one sentence each.
        error: Why no step ran (uninitialised tensors), or None.
        writes: What the forward wrote to the model, put back (`Write`).

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> rep = tx.memory(nn.Linear(1024, 1024), torch.randn(8, 1024))
        >>> rep.params, rep.grads, rep.fits(2**20), rep.fits(2**30)
        (4198400, 0, False, True)
        >>> rep.summary()
        'forward on cpu: peak 4.1 MiB (params 4.0 MiB)'
    """

    training: bool
    optimizer_name: str | None
    device: str
    dtypes: tuple[str, ...]
    params: int
    buffers: int
    grads: int
    optimizer: int
    activations: int
    peak: int
    records: Mapping[str, MemoryRecord] = field(repr=False)
    aliases: Mapping[str, str] = field(repr=False, default_factory=dict)
    # Blocks whose figures were replayed from an identical earlier one (`_memory.memo`).
    memoised: tuple[str, ...] = field(repr=False, default=())
    mode: str = "fake"  # "real": measured with the CUDA allocator (`_memory.real`)
    # How the step was measured where it departed from a plain fake step, one sentence each.
    notes: tuple[str, ...] = field(repr=False, default=())
    # Why no step ran (the model holds uninitialised tensors, which have no size): the weights
    # it could count are there, every other figure is 0.
    error: str | None = field(repr=False, default=None)
    writes: tuple[Any, ...] = field(repr=False, default=())  # what the forward wrote (`tx.Write`)

    @property
    def total(self) -> int:
        """Weights, gradients, optimizer state and saved activations together, in bytes."""
        return self.params + self.buffers + self.grads + self.optimizer + self.activations

    def __getitem__(self, path: str) -> MemoryRecord:
        path = self.aliases.get(path, path)
        try:
            return self.records[path]
        except KeyError:
            close = [p for p in self.records if p.startswith(path.rsplit(".", 1)[0])][:3]
            raise KeyError(
                f"no module at path {path!r}; paths are dotted as in model.named_modules()"
                + (f", e.g. {', '.join(map(repr, close))}" if close else "")
            ) from None

    def __iter__(self) -> Iterator[MemoryRecord]:
        return iter(self.records.values())

    def __len__(self) -> int:
        return len(self.records)

    def fits(self, capacity: int | str | torch.device) -> bool:
        """Whether the peak fits in `capacity`: bytes, or a CUDA device ("cuda:0") whose total
        memory is read from the driver.

        Args:
            capacity: A size in bytes, or a CUDA device.

        Returns:
            True when `peak` is at most `capacity`.

        Raises:
            ValueError: `capacity` names a device that is not CUDA.
        """
        if isinstance(capacity, (str, torch.device)):
            dev = torch.device(capacity)
            if dev.type != "cuda":
                raise ValueError(f"fits() reads the size of CUDA devices only, got {dev}")
            capacity = torch.cuda.get_device_properties(dev).total_memory
        return self.peak <= int(capacity)

    def summary(self) -> str:
        """The report in one line: what was measured, where, the peak and its parts.

        Returns:
            E.g. ``"training step on cpu: peak 2.1 MiB (params 1.0 MiB, grads 1.0 MiB, ...)"``, or
            ``"not measured: ..."`` with the reason.
        """
        if self.error is not None:
            return f"not measured: {self.error}"
        parts = [
            f"{k} {_human(getattr(self, k))}"
            for k in ("params", "buffers", "grads", "optimizer", "activations")
            if getattr(self, k)
        ]
        what = "training step" if self.training else "forward"
        what = f"{what} measured" if self.mode == "real" else what
        return f"{what} on {self.device}: peak {_human(self.peak)} ({', '.join(parts)})"

    def __repr__(self) -> str:
        return f"MemoryReport({self.summary()})"


# What a note says of a step the fake run could not take: measured instead by a real CPU run.
_RAN_ON_CPU = (
    "this step ran for real on the CPU, its bytes counted from every storage its ops made (the "
    "CPU has no allocator to read), the model put back as it was"
)


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover


def memory(
    model: nn.Module,
    *args: Any,
    training: bool = False,
    optimizer: str | torch.optim.Optimizer | None = None,
    batch: Any = None,
    mode: str = "fake",
    **kwargs: Any,
) -> MemoryReport:
    """Measure `model(*args, **kwargs)` (a forward, or with ``training=True`` a training step)
    on fake tensors; see the module docstring for the fields. ``optimizer``: one of
    "adamw", "adam", "sgd" (with momentum), "rmsprop", "adagrad", or a `torch.optim.Optimizer`
    whose state layout is read; None counts no optimizer state. ``batch``: inputs as a loader
    gives them, a mapping of keyword inputs (a tokenizer's output) or a tensor or tuple of
    positional ones, added to ``args``/``kwargs`` (a forward that takes its own ``training``,
    ``optimizer``, ``batch`` or ``mode`` argument gets it this way). ``mode``: "fake", or
    "real" to run the step on a CUDA model and read the allocator (`_memory.real`). Raises
    ValueError when the forward fails; a model holding uninitialised tensors (a lazy module
    before its first forward, an ``UninitializedParameter``) runs no step: its report's `error`
    names them and its figures are the weights that have a size.

    Nothing is allocated in fake mode, so it measures a 70B model on meta as well as a CPU one,
    and the model is left as it was.

    Args:
        model: The model to measure.
        *args: Its positional inputs.
        training: Measure a training step (forward, backward, optimizer state) instead of a
            forward.
        optimizer: ``"adamw"``, ``"adam"``, ``"sgd"`` (with momentum), ``"rmsprop"``,
            ``"adagrad"``, or a `torch.optim.Optimizer` whose state layout is read; None counts
            no optimizer state.
        batch: Inputs as a loader gives them (a mapping of keyword inputs, a tensor or a tuple),
            added to `args` / `kwargs`.
        mode: ``"fake"``, or ``"real"`` to run the step on a CUDA model and read the allocator.
        **kwargs: Its keyword inputs.

    Returns:
        The `MemoryReport`, in bytes.

    Raises:
        ValueError: The forward fails on these inputs, or ``mode="real"`` on a model that is not
            on CUDA.
        TypeError: `model` is not an `nn.Module`.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        >>> rep = tx.memory(model, torch.randn(32, 512), training=True, optimizer="adamw")
        >>> rep.optimizer == 2 * rep.params, rep.grads == rep.params
        (True, True)
        >>> print(rep.summary())
        training step on cpu: peak 4.2 MiB (params 1.0 MiB, grads 1.0 MiB, optimizer 2.0 MiB, activations 128.0 KiB)
    """
    return run_memory(
        model, args, kwargs, training=training, optimizer=optimizer, batch=batch, mode=mode
    )


def run_memory(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    training: bool = False,
    optimizer: str | torch.optim.Optimizer | None = None,
    batch: Any = None,
    memoise: bool = True,
    mode: str = "fake",
) -> MemoryReport:
    """`memory()` with its inputs as a tuple and a dict; ``memoise=False`` traces every block
    (the reference the memo is tested against, `_memory.memo`)."""
    if mode not in ("fake", "real"):
        raise ValueError(
            f"memory(mode={mode!r}): use 'fake' (the default: an estimate on fake tensors, any "
            "device) or 'real' (the step run and measured with the CUDA allocator)"
        )
    # No cyclic collection meanwhile: with torch's large heap its passes over the objects a run
    # makes cost more than the run (as in the probe, `_gc.paused`).
    with _gc.paused():
        return _run_memory(model, args, kwargs, training, optimizer, batch, memoise, mode)


def _run_memory(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    training: bool,
    optimizer: str | torch.optim.Optimizer | None,
    batch: Any,
    memoise: bool,
    mode: str = "fake",
) -> MemoryReport:
    if not isinstance(model, nn.Module):
        raise TypeError(f"memory() needs a torch.nn.Module, got {type(model).__name__}")
    if isinstance(model, torch.jit.ScriptModule):
        raise ValueError(
            "memory() swaps a model's weights for fake ones, which TorchScript modules do not "
            "allow: measure the eager model (before torch.jit.script) instead"
        )
    if optimizer is not None and not training:
        raise ValueError(
            "memory(optimizer=...) counts optimizer state, which exists only when training: "
            "pass training=True too"
        )
    args, kwargs = with_batch(args, kwargs, batch)
    modules = list(model.named_modules())
    lazy = uninitialised(modules)
    if lazy:
        return _refused(model, modules, lazy, training, optimizer, mode)
    params = unique(model.parameters())
    refuse_sharded(params)
    buffers = unique(model.buffers())
    trainable = [p for p in params if p.requires_grad] if training else []
    if optimizer is not None:
        state_bytes(optimizer, [])  # a bad name or type is refused before the run
    if mode == "real":
        step = real.measure(model, modules, params, buffers, args, kwargs, training, optimizer)
        trace, grad_ids, opt = step.trace, step.grad_ids, step.opt
    else:
        trace = fake_step(model, modules, args, kwargs, training, memoise)
        # Gradients and optimizer state only for the weights the fake backward reached, as a
        # real step gives them (`_memory.real`).
        reached = trace.graded
        graded = [p for p in trainable if reached is None or id(p) in reached]
        opt = state_bytes(optimizer, graded) if optimizer is not None else {}
        grad_ids = {id(p) for p in graded}
    notes: tuple[str, ...] = ()

    def on_cpu() -> Any:  # the step for real on the CPU, where the fake run could not go
        return real.measure(
            model, modules, params, buffers, args, kwargs, training, optimizer, cpu=True
        )

    op = trace.data_dependent
    if mode == "fake" and trace.error is not None and op is not None:
        where = f"{trace.where!r}" if trace.where else "the model's forward"
        stopped = (
            f"fake tensors cannot run {op_text(op)} in {where}: its result depends on tensor values"
        )
        if not values_on_cpu([*params, *buffers]):
            raise ValueError(
                f"memory(): {stopped}, which fake tensors do not hold; on a CUDA model measure "
                "it with mode='real', on a meta model build it on the CPU first"
            )
        step = on_cpu()
        if step.trace.error is not None:
            raise ValueError(
                f"memory(): {stopped}; running the step for real on the CPU failed too: "
                f"{step.trace.error}"
            )
        trace, grad_ids, opt = step.trace, step.grad_ids, step.opt
        notes = (f"{stopped}, which fake tensors do not hold: {_RAN_ON_CPU}",)
    elif mode == "fake" and trace.error is not None and values_on_cpu([*params, *buffers]):
        # A fake run that fails where the step runs for real is torchxray's (or fake tensors')
        # failure, not the inputs': torch's nn.Module.to() of a layer made in the forward
        # (``nn.LayerNorm(x.shape[1:]).to(x.device)(x)``) cannot swap its fake weights. The step
        # runs for real on the CPU, and the note says why.
        failed = trace.error
        step = on_cpu()
        trace, grad_ids, opt = step.trace, step.grad_ids, step.opt
        if trace.error is None:
            notes = (f"the fake run failed ({failed}) where the step runs for real: {_RAN_ON_CPU}",)
    if trace.error is not None:
        raise ValueError(
            f"memory(): the {mode} forward failed: {trace.error}. Check the example inputs "
            "(tx.probe(model, ...) shows the shapes each layer receives)"
        )
    if trainable and not grad_ids:
        notes = (
            *notes,
            "no trainable weight gets a gradient in this step (no float output depends on one "
            "through autograd), so it counts no gradients and no optimizer state",
        )
    records = _records(modules, grad_ids, opt, trace)
    root = records[""]
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in (*params, *buffers)})
    aliases = {}
    seen: dict[int, str] = {}
    for path, m in model.named_modules(remove_duplicate=False):
        if id(m) in seen and seen[id(m)] != path:
            aliases[path] = seen[id(m)]
        seen.setdefault(id(m), path)
    return MemoryReport(
        training=training,
        optimizer_name=(
            None
            if optimizer is None
            else optimizer
            if isinstance(optimizer, str)
            else type(optimizer).__name__
        ),
        device=trace.device,
        dtypes=tuple(dtypes),
        params=root.params,
        buffers=root.buffers,
        grads=root.grads,
        optimizer=root.optimizer,
        activations=root.activations,
        peak=trace.peak + (root.optimizer if training else 0),
        records=records,
        aliases=aliases,
        memoised=tuple(trace.memoised),
        mode=mode,
        notes=(*notes, *unrestored(trace.writes)),
        writes=tuple(trace.writes),
    )


def _refused(
    model: nn.Module,
    modules: list[tuple[str, nn.Module]],
    lazy: tuple[str, ...],
    training: bool,
    optimizer: str | torch.optim.Optimizer | None,
    mode: str,
) -> MemoryReport:
    """The report of a model holding uninitialised tensors: no step runs (their sizes are
    unknown, and initialising them would change the model); the weights that have a size are
    counted, `error` says which tensors have none and what to do."""
    what, how = uninitialised_message(model, lazy, "memory()")
    sums = subtree_bytes(modules, set(), {})
    records = {
        path: MemoryRecord(path, type(m).__name__, p, b, 0, 0, 0, 0, 0)
        for (path, m), (p, b, _, _) in zip(modules, sums)
    }
    root = records[""]
    tensors = [*model.parameters(), *model.buffers()]
    return MemoryReport(
        training=training,
        optimizer_name=optimizer
        if isinstance(optimizer, str) or optimizer is None
        else type(optimizer).__name__,
        device=str(tensors[0].device) if tensors else "cpu",
        dtypes=tuple(sorted({str(t.dtype).removeprefix("torch.") for t in tensors})),
        params=root.params,
        buffers=root.buffers,
        grads=0,
        optimizer=0,
        activations=0,
        peak=0,
        records=records,
        mode=mode,
        error=f"{what}. {how[0].upper()}{how[1:]}",
    )


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _records(
    modules: list[tuple[str, nn.Module]],
    grad_ids: set[int],
    opt: dict[int, int],
    trace: StepTrace,
) -> dict[str, MemoryRecord]:
    index = {p: i for i, (p, _) in enumerate(modules)}
    own = [trace.saved.get(p, 0) for p, _ in modules]
    acts = list(own)
    for i in range(len(modules) - 1, 0, -1):  # pre-order: children after their parent
        path = modules[i][0]
        parent = index[path.rsplit(".", 1)[0] if "." in path else ""]
        acts[parent] += acts[i]
    out = {}
    sums = subtree_bytes(modules, grad_ids, opt)
    for i, (path, m) in enumerate(modules):
        params, buffers, grads, optimizer = sums[i]
        out[path] = MemoryRecord(
            path=path,
            cls=type(m).__name__,
            params=params,
            buffers=buffers,
            grads=grads,
            optimizer=optimizer,
            activations=acts[i],
            activations_own=own[i],
            peak=trace.peaks.get(path, 0),
        )
    return out
