"""Which module a collective belongs to, by the rule torch's ``CommDebugMode`` counts its
module-level collectives with (``torch/distributed/tensor/debug/_comm_mode.py``), so that a plan's
per-module counts are the ones a user gets from it (tests/test_ranks_comm_debug.py compares them):

- forward: the module from its forward pre-hook until the last of its forward hooks has run. Its
  own hooks count: a ``RowwiseParallel`` linear all-reduces its partial output in a forward hook
  that ``parallelize_module`` registered on it, which runs after ``ModTracker``'s (global) post-hook
  has already left the module (the all-reduce then went to the parent). CommDebugMode registers a
  hook on the module in every pre-hook, so that it runs last; so does ``Where``.
- backward: the module whose backward began last (the gradient reached its outputs: a tensor it
  returned, or one of the tuple it returned), never left.
  Not the innermost module of ``ModTracker``'s set: a colwise q/k/v leave that set only once the
  gradient of the input all three read is complete, so all three input-gradient all-reduces went to
  whichever of them the set named first. CommDebugMode learns that a backward began from full
  backward pre-hooks, which wrap every module's inputs and outputs in an autograd function (and
  refuse a module that changes its input in place, ``ReLU(inplace=True)``); ``Where`` takes the
  moment from a gradient hook on each output instead, put in the order the wrapping gives: a
  module's hook fires before the hooks registered on the tensor while the module ran (FSDP2's
  pre-backward all-gather) and after those registered once it had returned (an enclosing module's).
- the modules a count is included in: the module and the modules whose forward was running when it
  first ran (``ModTracker``'s parents then), as CommDebugMode sums a module's counts into them.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import nn
from torch.distributed._tools.mod_tracker import ModTracker
from torch.nn.modules.module import register_module_forward_pre_hook
from torch.utils.hooks import RemovableHandle

__all__ = ["OUTSIDE", "Where"]

# The path a collective outside every module's forward and backward is kept under (CommDebugMode's
# "Global" alone): not a module's, so that no module's counts hold it.
OUTSIDE = "<outside every module>"


class _Began:
    """A gradient hook on a module's output: the module's backward began."""

    __slots__ = ("path", "where")

    def __init__(self, where: Where, path: str) -> None:
        self.where, self.path = where, path

    def __call__(self, grad: Any) -> None:
        self.where.name = self.path


class Where:
    """The module a collective running now belongs to (``name``; None: outside every module) and
    each module's enclosing modules (``within``). Enter after ``tracker``."""

    def __init__(self, tracker: ModTracker, paths: dict[nn.Module, str]) -> None:
        self.tracker = tracker
        self.paths = paths
        self.name: str | None = None
        self.within: dict[str, tuple[str, ...]] = {}
        self._stack: list[str | None] = [None]
        self._last: dict[str, RemovableHandle] = {}
        self._pre: RemovableHandle | None = None
        # an output's gradient hooks (its dict, weakly: autograd holds it after the tensor dies) by
        # the dict's id -> (the dict, the ids of its hooks in the order given)
        self._ordered: dict[int, tuple[weakref.ref[Any], list[int]]] = {}

    def __enter__(self) -> Where:
        self._pre = register_module_forward_pre_hook(self._begin)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pre is not None:
            self._pre.remove()
            self._pre = None
        for handle in self._last.values():
            handle.remove()
        self._last.clear()
        self._ordered.clear()

    def _begin(self, module: nn.Module, args: Any) -> None:
        path = self.paths.get(module)
        if path is None:  # not the model's (a module the step made): it names nothing
            return
        self.name = path
        if self.tracker.is_bw:  # run again in the backward (activation checkpointing)
            return
        if path not in self.within:
            self.within[path] = tuple(
                p for p in self.tracker.parents if p != "Global" and p != path
            )
        self._stack.append(path)
        old = self._last.pop(path, None)
        if old is not None:
            old.remove()
        self._last[path] = module.register_forward_hook(self._end)

    def _end(self, module: nn.Module, args: Any, output: Any) -> None:
        if self.tracker.is_bw:
            return
        path = self.paths.get(module)
        if len(self._stack) > 1:
            self._stack.pop()
        self.name = self._stack[-1]
        if path is None or not torch.is_grad_enabled():
            return
        # The outputs a backward hook sees (torch's BackwardHook): a tensor, or the tensors of a
        # tuple; of a dict or a ModelOutput none, so such a module's backward never begins there.
        outs = output if isinstance(output, tuple) else (output,)
        for t in outs:
            if isinstance(t, torch.Tensor) and t.requires_grad:
                self._hook(t, path)

    def _hook(self, t: torch.Tensor, path: str) -> None:
        handle = t.register_hook(_Began(self, path))
        if t._backward_hooks is not None:  # made by register_hook
            self._order(t._backward_hooks, [handle.id])

    def _order(self, hooks: Any, first: list[int]) -> None:
        """Put ``first``, then the hooks registered since the last module returned the tensor,
        then the order given then: a stack of wrappers, unwound outermost first."""
        seen = self._ordered.get(id(hooks))
        before = seen[1] if seen is not None and seen[0]() is hooks else []
        known = set(before) | set(first)
        order = [*first, *(k for k in hooks if k not in known), *(k for k in before if k in hooks)]
        # Popped and put back, not move_to_end: autograd walks the dict itself (PyDict_Next),
        # which an OrderedDict's own order does not change.
        fns = [(key, hooks.pop(key)) for key in order]
        for key, fn in fns:
            hooks[key] = fn
        self._ordered[id(hooks)] = (weakref.ref(hooks), order)

    def settle(self) -> None:
        """Before the backward: the hooks registered on an output after the last module that
        returned it (an enclosing module's that returns no tensor or tuple, FSDP2's pre-backward
        on a ModelOutput's logits) fire before that module's backward begins."""
        for ref, _ in list(self._ordered.values()):
            hooks = ref()
            if hooks is not None:
                self._order(hooks, [])
