"""One dispatch mode that watches a training step on one rank, the same way in the dry run (fake
tensors, fake process group) and in `verify` (real tensors, gloo), so the two compare like for
like:

- collectives: each call of a c10d or functional-collective op (the op sets CommDebugMode counts,
  imported from it) with its bytes, charged to the module CommDebugMode charges it to (`where.py`:
  the module whose forward, its own hooks included, is running, or whose backward began last) and
  to the phase ("forward", "backward", "step");
- live bytes: every storage an op makes, alive until its Python object dies (as
  `_memory.cpu_meter`), plus the storages alive when the step began (weights, inputs), and the
  storage resizes FSDP2 makes outside the dispatcher (its all-gather buffers), which
  `UntypedStorage.resize_` is wrapped for while the meter runs (torch's MemTracker does the same);
  not the tensors DTensor makes to work out an op's output shape (fake, of the global shape: the
  whole embedding's, where a rank holds an eighth of it), which only a rank that has not met the op
  before makes, so that counting them made a cold run's peak higher than a warm one's (+14% on the
  tiny Llama's optimizer step).

It returns NotImplemented for DTensor arguments, so that DTensor unwraps them and the local ops
and collectives it runs come back through the meter (CommDebugMode's own trick).
"""

from __future__ import annotations

import re
import weakref
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.distributed import ProcessGroup
from torch.distributed._tools.mod_tracker import ModTracker
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.debug._comm_mode import NATIVE_TO_PY_MAPPING, c10d_collective_ops
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from .where import OUTSIDE, Where

__all__ = ["COLLECTIVES", "StepMeter", "op_name"]

COLLECTIVES = {*c10d_collective_ops, *NATIVE_TO_PY_MAPPING, *NATIVE_TO_PY_MAPPING.values()}
if hasattr(torch.ops, "_dtensor") and hasattr(torch.ops._dtensor, "shard_dim_alltoall"):
    COLLECTIVES.add(torch.ops._dtensor.shard_dim_alltoall)

_NAMES = {
    "allgather": "all_gather",
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "allreduce": "all_reduce",
    "all_reduce": "all_reduce",
    "alltoall": "all_to_all",
    "all_to_all": "all_to_all",
    "shard_dim_alltoall": "all_to_all",
    "broadcast": "broadcast",
    "gather": "gather",
    "scatter": "scatter",
    "reduce": "reduce",
}


def op_name(packet: Any) -> str:
    """``c10d._allgather_base_`` and ``_c10d_functional.all_gather_into_tensor`` are both "all_gather"."""
    base = packet.__name__.strip("_")
    for key in sorted(_NAMES, key=len, reverse=True):
        if base.startswith(key):
            return _NAMES[key]
    return base


def _tensor_bytes(x: Any) -> int:
    total = 0
    for t in pytree.tree_leaves(x):
        if isinstance(t, torch.Tensor):
            total += t.numel() * t.element_size()
    return total


def _group_name(args: Any, kwargs: Any, known: dict[str, str]) -> str | None:
    for a in pytree.tree_leaves((args, kwargs)):
        if isinstance(a, torch.ScriptObject):  # the c10d ops carry the group boxed
            try:
                a = ProcessGroup.unbox(a)
            except Exception:
                continue
        name = getattr(a, "group_name", None)
        if isinstance(name, str):
            return name
    # the functional collectives take the group's registered name as a string
    for a in pytree.tree_leaves((args, kwargs)):
        if isinstance(a, str) and a in known:
            return a
    return None


class StepMeter(TorchDispatchMode):
    def __init__(
        self, model: nn.Module, groups: dict[str, str], stack: tuple[str, int] | None = None
    ) -> None:
        super().__init__()
        self.groups = groups  # process group name -> mesh dimension label ("dp", "tp", "dp,tp")
        self._phase = "forward"
        self.phase_peaks: dict[str, int] = {}  # phase -> the highest live bytes while it ran
        # with a stack of blocks (path, length): ("forward", role) -> the highest live bytes while
        # the forward was in or after its first, a middle or its last block ("none": before any
        # block), so that `blocks.extend` grows each such peak by itself: the forward's peak is the
        # highest of them, and which one is highest changes with the number of blocks. Not kept for
        # the backward: which block ModTracker says is running when FSDP2's hooks allocate moves
        # between runs there (a 5-block run's peak "in the last block" came out under the 4-block's)
        self.spot_peaks: dict[tuple[str, str], int] = {}
        self._stack = stack
        self._block_re = (
            re.compile(rf"^{re.escape(stack[0])}\.(\d+)(\.|$)" if stack[0] else r"^(\d+)(\.|$)")
            if stack is not None
            else None
        )
        self._role = "none"
        self.tracker = ModTracker()
        # name modules by their paths in the model (ModTracker would prefix its class name)
        paths: dict[nn.Module, str] = {}
        for path, mod in model.named_modules(remove_duplicate=False):
            self.tracker._known_modules[mod] = path
            self.tracker._seen_modules.add(mod)
            paths.setdefault(mod, path)
        self.where = Where(self.tracker, paths)  # the module a collective belongs to
        # (path, phase, op, mesh dim) -> [count, bytes]
        self.comms: dict[tuple[str, str, str, str], list[int]] = defaultdict(lambda: [0, 0])
        self.now = 0
        self.peak = 0
        self.alive: dict[int, int] = {}
        self._orig_resize: Any = None
        self._quiet = 0  # > 0 while DTensor works out an op's output shape: not the step's memory
        self._prop: Any = None
        # where the first failing op ran: ModTracker's hooks have unwound by the time it is caught
        self.failed_at: tuple[str, str] | None = None

    @property
    def phase(self) -> str:
        return self._phase

    @phase.setter
    def phase(self, value: str) -> None:
        if value == "backward":
            self.where.settle()
        self._phase = value
        self._role = "none"
        self.phase_peaks[value] = max(self.phase_peaks.get(value, 0), self.now)

    def _bump(self) -> None:
        self.peak = max(self.peak, self.now)
        if self.now > self.phase_peaks.get(self._phase, 0):
            self.phase_peaks[self._phase] = self.now
        if self._stack is not None and self._phase == "forward":
            key = (self._phase, self._spot())
            if self.now > self.spot_peaks.get(key, 0):
                self.spot_peaks[key] = self.now

    def _spot(self) -> str:
        """The role of the block of the stack the phase is in, or was last in."""
        assert self._stack is not None and self._block_re is not None
        m = self._block_re.match(self.module())
        if m is not None:
            i, n = int(m.group(1)), self._stack[1]
            self._role = "first" if i == 0 else "last" if i == n - 1 else "middle"
        return self._role

    # -- live bytes ------------------------------------------------------------------------------
    def track(self, tensors: Iterable[torch.Tensor]) -> None:
        """Count storages alive before the step (weights, gradients, inputs)."""
        for t in tensors:
            if isinstance(t, DTensor):
                t = t._local_tensor
            self._add(t.untyped_storage())

    def _add(self, st: Any) -> None:
        key = st._cdata
        if key in self.alive:
            return
        nbytes = st.nbytes()
        self.alive[key] = nbytes
        self.now += nbytes
        self._bump()
        weakref.finalize(st, self._freed, key)

    def _freed(self, key: int) -> None:
        self.now -= self.alive.pop(key, 0)

    def _resized(self, st: Any) -> None:
        key = st._cdata
        if key not in self.alive:
            self._add(st)
            return
        new = st.nbytes()
        self.now += new - self.alive[key]
        self.alive[key] = new
        self._bump()

    def _hush_shape_rules(self) -> None:
        """While DTensor runs an op on global-shape fake tensors to learn its output's shape, the
        meter lets its ops pass uncounted (an instance attribute shadows the method)."""
        prop = self._prop = DTensor._op_dispatcher.sharding_propagator
        shape_rule = prop._propagate_tensor_meta_non_cached
        meter = self

        def quiet(schema: Any) -> Any:
            meter._quiet += 1
            try:
                return shape_rule(schema)
            finally:
                meter._quiet -= 1

        prop._propagate_tensor_meta_non_cached = quiet  # type: ignore[method-assign,assignment]

    def __enter__(self) -> StepMeter:
        self._orig_resize = orig = torch.UntypedStorage.resize_
        meter = self

        def resize_(st: Any, size: int) -> Any:
            out = orig(st, size)
            meter._resized(st)
            return out

        torch.UntypedStorage.resize_ = resize_  # type: ignore[method-assign,assignment]
        self._hush_shape_rules()
        self.tracker.__enter__()
        try:
            self.where.__enter__()
            super().__enter__()
        except BaseException:
            self.where.__exit__(None, None, None)
            self.tracker.__exit__(None, None, None)
            self._unhush()
            torch.UntypedStorage.resize_ = orig  # type: ignore[method-assign]
            raise
        return self

    def _unhush(self) -> None:
        if self._prop is not None:
            del self._prop._propagate_tensor_meta_non_cached
            self._prop = None

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)
        finally:
            try:
                self.where.__exit__(*exc)
                self.tracker.__exit__(*exc)
            finally:
                self._unhush()
                torch.UntypedStorage.resize_ = self._orig_resize  # type: ignore[method-assign]

    # -- where we are ----------------------------------------------------------------------------
    def module(self) -> str:
        parents = [p for p in self.tracker.parents if p != "Global"]
        if not parents:
            return ""
        return max(parents, key=lambda p: (p.count(".") + 1 if p else 0, len(p)))

    def current_phase(self) -> str:
        if self.phase == "step":
            return "step"
        return "backward" if self.tracker.is_bw else "forward"

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if any(issubclass(t, DTensor) for t in types):
            return NotImplemented
        try:
            return self._dispatch(func, args, kwargs)
        except BaseException:
            if self.failed_at is None:
                self.failed_at = (self.module(), self.current_phase())
            raise

    def _dispatch(self, func: Any, args: Any, kwargs: Any) -> Any:
        if self._quiet:
            return func(*args, **kwargs)
        packet = func._overloadpacket
        if packet in COLLECTIVES:
            group = _group_name(args, kwargs, self.groups)
            dim = self.groups.get(group, "?") if group is not None else "?"
            out = func(*args, **kwargs)
            moved = max(_tensor_bytes(args[:1]), _tensor_bytes(args[1:2]), _tensor_bytes(out))
            at = self.where.name
            rec = self.comms[
                (OUTSIDE if at is None else at, self.current_phase(), op_name(packet), dim)
            ]
            rec[0] += 1
            rec[1] += moved
        else:
            out = func(*args, **kwargs)
        known = None
        for t in pytree.tree_leaves(out):
            if not isinstance(t, torch.Tensor) or isinstance(t, DTensor):
                continue
            try:
                st = t.untyped_storage()
            except Exception:  # a wrapper subclass without a storage of its own
                continue
            if st._cdata in self.alive:
                continue
            if known is None:
                known = {
                    a.untyped_storage()._cdata
                    for a in pytree.tree_leaves((args, kwargs))
                    if isinstance(a, torch.Tensor) and not isinstance(a, DTensor)
                }
            if st._cdata in known:
                continue  # an in-place op or a view: not new
            self._add(st)
        return out
