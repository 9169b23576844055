"""The probe's run: one context manager that sets up everything a probe changes and undoes it.

`ProbeRun(model, mode, device, ...)` walks the model once when made: paths in ``named_modules``
order, class names, train/eval flags, modules holding uninitialised tensors, and which forwards to route
through the recorder (`_probe.wrap`). Entering it forks the RNG, enters ``torch.no_grad`` (and
``FakeTensorMode`` in fake mode, and the FLOP counter when FLOPs are counted), keeps the buffers
of a real run and installs the recording forwards; every module stays in its own train/eval
mode. Leaving it, whatever happened (exception, KeyboardInterrupt, CUDA OOM), undoes each of those
in reverse order: no replaced forward, flag, buffer value or RNG state outlives the probe.
"""

from __future__ import annotations

import contextlib
import operator
from itertools import chain
from typing import Any

import torch
from torch import nn
from torch._subclasses.fake_tensor import CONSTANT_NUMEL_LIMIT

from .._fake.mode import quiet_fake_logs
from .._fake.offload import fake_offloaded
from .._fake.pool import borrowed
from .._fake.state import kept_state, set_training, snapshot_state
from .._trace import Trace
from . import cancel
from .calls import Call, Recorder
from .flops import FlopCount
from .fsdp import fsdp_kept, fsdp_resharded
from .memo import Memo
from .wrap import Patches

__all__ = ["ProbeRun"]


class ProbeRun:
    """Context manager running one probe; see the module docstring for what it guarantees."""

    def __init__(
        self,
        model: nn.Module,
        mode: str,
        device: torch.device,
        memoise: bool = True,
        flops: bool = True,
    ) -> None:
        self.model = model
        self.mode = mode
        self.device = device
        self.memoise = memoise and mode == "fake"
        self.memo: Any = None
        self.flops = flops
        self.modules: list[nn.Module] = []
        self.paths: dict[int, str] = {}
        # Another path of a module object already reached (model.b = model.a): alias -> first path.
        self.aliases: dict[str, str] = {}
        self.names: dict[str, str] = {}
        self.lazy: str | None = None  # the first module holding uninitialised tensors
        self.flags: list[bool] = []  # each module's train/eval flag, as `modules`
        self.patches = Patches()
        self._walk(model)
        self.recorder = Recorder(timed=mode == "real", device=device)
        self.stack: list[Call] = self.recorder.stack
        self.log: list[Call] = self.recorder.log
        self.fake_mode: Any = None
        self.trace: Trace | None = None  # what the forward writes (`_trace`), made on entering
        self._exit = contextlib.ExitStack()

    def _walk(self, model: nn.Module) -> None:
        """Pre-order, each module object once at its first path: what ``named_modules`` yields.
        One loop does all per-module work, kept lean: at 10,000 small modules it is the largest
        part of a real probe's cost after the forward itself."""
        paths, names, modules, flags = self.paths, self.names, self.modules, self.flags
        aliases = self.aliases
        patches = self.patches
        instances = patches.instances
        direct_modules = patches.direct_modules
        # Per class, once: its name, whether its instances can be recorded by an instance
        # `_call_impl` (`_probe.wrap`).
        kinds: dict[type, tuple[str, bool]] = {}
        todo: list[tuple[str, nn.Module]] = [("", model)]
        pop, push = todo.pop, todo.append
        while todo:
            path, m = pop()
            key = id(m)
            if key in paths:
                aliases[path] = paths[key]
                continue
            paths[key] = path
            cls = type(m)
            kind = kinds.get(cls)
            if kind is None:
                kind = kinds[cls] = (cls.__name__, patches.direct_class(cls))
            name, plain = kind
            names[path] = name
            modules.append(m)
            d = m.__dict__
            flag = d["training"] if "training" in d else m.training
            flags.append(flag)
            # Inline rather than a call to Patches.direct_instance: this runs for every module.
            if plain and not (
                d.get("_forward_hooks")
                or d.get("_forward_pre_hooks")
                or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks")
                or d.get("_compiled_call_impl") is not None
                or "_call_impl" in d
            ):
                direct_modules.append(m)
            else:
                instances[key] = (m, path)
            children = d.get("_modules")
            if children:
                prefix = path + "." if path else ""
                for name, child in reversed(children.items()):
                    if child is not None:
                        push((prefix + name, child))
        # A direct module's path is its path: the walk's own dict serves the routing (`_probe.wrap`;
        # a second dict of 100,000 ids cost the walk a tenth more at 100,000 modules, where each
        # such dict misses the caches: bench/README.md, "Issue 55").
        patches.direct = paths
        self.classes = tuple(kinds)  # each module class once (`_probe.fsdp` looks for units)
        # Any uninitialised tensor, a lazy module's or one set on a plain module, has no shape:
        # the probe refuses the model before running it (`_probe.inputs.first_lazy`). The types
        # of every tensor first, by C loops: a per-module check in the loop above cost a tenth
        # of the walk at 100,000 modules.
        tables = chain(map(_PARAMS, modules), map(_BUFFERS, modules))
        values = map(operator.methodcaller("values"), tables)  # a ScriptModule's are not dicts
        kinds_held = set(map(type, chain.from_iterable(values)))
        if any(issubclass(t, _UNINITIALISED) for t in kinds_held):
            self.lazy = next(
                (p for p, m in zip(paths.values(), modules) if _holds_lazy(m.__dict__)), None
            )

    # -- setup / teardown ---------------------------------------------------------------------
    def __enter__(self) -> ProbeRun:
        es = self._exit
        try:
            # The forward runs in the model's own train/eval mode, as the user's call would (a
            # train-mode detector returns its losses); what that changes is put back after: the
            # flags (a forward may flip one), the RNG (dropout), buffers updated in place
            # (BatchNorm's running statistics) in a real run. Fake runs update fake copies only.
            es.callback(_restore_training, self.modules, self.flags)
            # A model on a GPU has initialised CUDA already; its generator is forked too.
            on_gpu = self.device.type == "cuda" and torch.cuda.is_initialized()
            cuda = [self.device.index or 0] if on_gpu else []
            es.enter_context(torch.random.fork_rng(devices=cuda))
            es.enter_context(torch.no_grad())
            # Fake mode computes one-element tensors for real (FakeTensorMode keeps them as
            # constants): BatchNorm's num_batches_tracked counts up in a fake train-mode run too.
            limit = None if self.mode == "real" else CONSTANT_NUMEL_LIMIT
            # One snapshot serves both kept_state and, in fake mode, undo_fake_state.
            state = snapshot_state(self.modules)
            # A fake run's own tensors left on the model are undone there too (`undo_fake_state`).
            fake = self.mode == "fake"
            # Everything else a forward writes (attributes, containers, hooks, in-place weights,
            # torch's flags), put back before the buffers below and said in `report.writes`;
            # entered further down, past FSDP's lazy initialisation (hooks it keeps for good).
            self.trace = trace = Trace(self.modules, self.paths, state, real=not fake)
            held = _buffers(self.modules, limit)
            checked = trace.attributes_done
            wrote = trace.buffer_write if not fake else None
            es.enter_context(kept_state(self.modules, held, state, fake, checked, wrote))
            self.recorder.touch, self.recorder.touched = trace.touch, trace.touched
            self.recorder.rehome = self.patches.first_call
            cancel.check("setting up")  # each step takes seconds on 100,000 modules
            if fake:
                # FSDP2 units: lazily initialised for real, their bookkeeping put back after.
                es.enter_context(fsdp_kept(self.modules, self.classes))
                # Non-fake inputs allowed: the model's real parameters are converted lazily to
                # fake views (one per tensor, `_fake.convert`) on first use - no copy of their
                # data, no new memory. A mode kept from an earlier run (`_fake.pool`).
                self.fake_mode = es.enter_context(borrowed())
                if getattr(self.fake_mode, "fakes", None) is not None:
                    trace.swaps.after_swap = self.fake_mode.fakes.swapped
                # accelerate's offloaded weights as fakes on their execution devices, offloading
                # paused: torchxray's own change, undone after the trace has compared.
                es.enter_context(fake_offloaded(self.modules, self.fake_mode))
                es.enter_context(quiet_fake_logs())  # the report carries a kernel's error
            else:
                # FSDP2 units sharded before the run are sharded again after it.
                es.enter_context(fsdp_resharded(self.modules, self.classes))
            es.enter_context(trace)
            if not fake:
                es.enter_context(trace.guard())
            if self.mode == "fake" or self.flops:
                # In fake mode the counter also hands FakeTensorMode fake views of the weights,
                # as the fake mode's front (no dispatch mode of its own: `_fake.mode`).
                counter = FlopCount(
                    self.stack,
                    self.fake_mode,
                    count=self.flops,
                    produced=self.recorder.produced,
                    wrote=trace.fake_write,
                )
                if self.fake_mode is not None:
                    self.fake_mode.front = counter.front
                    es.callback(setattr, self.fake_mode, "front", None)
                else:
                    es.enter_context(counter.mode())
            cancel.check("setting up")
            if self.memoise:
                # No alias met by the walk: no module is reached by a second path.
                unshared = not self.aliases
                self.memo = Memo(self.model, self.modules, self.paths, self.recorder, unshared)
                for m, stub in self.memo.stubs():
                    self.patches.stub(m, stub)
                    trace.stubbed.add(id(m))
            cancel.check("setting up")
            es.callback(self.recorder.release)  # the last tensor it read, held until now
            es.callback(self.patches.undo)
            self.patches.install(self.recorder)
            if self.recorder.cuda:
                # Events record on the current device's stream: make it the model's device.
                es.enter_context(torch.cuda.device(self.device))
                torch.cuda.synchronize(self.device)
        except BaseException:
            es.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.recorder.cuda:
                with contextlib.suppress(Exception):  # a broken device must not mask the real error
                    torch.cuda.synchronize(self.device)
                    self.recorder.cuda_times()
        finally:
            self._exit.close()


def _buffers(modules: list[nn.Module], numel: int | None = None) -> list[torch.Tensor]:
    """Every buffer once (a buffer shared by two modules is one tensor), those of at most
    `numel` elements only if given."""
    seen: dict[int, torch.Tensor] = {}
    for m in modules:
        for b in m._buffers.values():
            if b is not None and (numel is None or b.numel() <= numel):
                seen.setdefault(id(b), b)
    return list(seen.values())


_PARAMS, _BUFFERS = operator.attrgetter("_parameters"), operator.attrgetter("_buffers")
# What ``torch.nn.parameter.is_lazy`` tests (its mixin is not in torch's type stubs).
_UNINITIALISED = (nn.UninitializedParameter, nn.UninitializedBuffer)


def _holds_lazy(d: dict[str, Any]) -> bool:
    """A module (its ``__dict__``) holds an uninitialised tensor (``is_lazy``). Plain loops over
    the two dicts: this runs for every module of every probe."""
    for group in (d.get("_parameters"), d.get("_buffers")):
        if group:
            for t in group.values():
                if isinstance(t, _UNINITIALISED):
                    return True
    return False


_TRAINING = operator.attrgetter("training")


def _restore_training(modules: list[nn.Module], flags: list[bool]) -> None:
    """Every module's flag as it was (a forward may have flipped one during the probe too).
    First all of them read and compared by C loops (``map``, ``operator.is_``): the usual run
    flips none, and a Python loop over 100,000 modules cost ~3% of their probe."""
    if all(map(operator.is_, map(_TRAINING, modules), flags)):
        return
    for m, training in zip(modules, flags):
        d = m.__dict__
        if (d["training"] if "training" in d else m.training) is not training:
            set_training(m, training)
