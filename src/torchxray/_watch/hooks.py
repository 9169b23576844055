"""What a watch attaches, and taking all of it off again: the model's own pre-hook and hook (what
a replay needs of a step whose gradients are checked: ``capture``), a forward hook per module
while a step is sampled or replayed and a forward pre-hook per module while replayed (``each``;
the gradient hooks it adds go with each step's graph) and the optimizer's step pre/post hooks
(``Optimizer.register_step_pre_hook`` / ``_post_hook``). The hooks of a sampled step and the
capture go straight into the modules' hook tables under two ids of this watch's (the tables
``register_forward_hook(with_kwargs=True)`` fills, without its handles: ``_on_plain`` says why).

Why the modules' hooks come off between the steps that need them: a module with any forward hook
takes ``nn.Module``'s slow call path, a few microseconds a call even when the hook returns at
once, 3% of a small MLP's step (bench/README.md, "Training lens, issue 55"); a step that is not
sampled (nor checked) has nothing to read there, so it runs the model as if unwatched.

``off`` removes every hook and then sweeps the model for hooks of this watch that a patch
copied to a replacement module (``_patch/placement.py`` carries forward hooks over), so that
nothing is left on the model or the optimizer, whatever happened in between (an exception or a
KeyboardInterrupt in the loop, an edit, an undo). ``on_detach`` tells a view (an Explorer that
shows the model) when a watch took its hooks off, so that its rows drop their hook badges.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from torch import nn
from torch.optim import Optimizer
from torch.utils.hooks import RemovableHandle

__all__ = ["Attached", "ForwardHook", "PreHook", "on_detach"]

_TABLES = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called")
_PRE = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs")
# (listener held weakly, fn(listener, model)): told when a watch's hooks come off a model.
_DETACHED: list[tuple[weakref.ref[Any], Callable[[Any, nn.Module], None]]] = []


def on_detach(listener: object, fn: Callable[[Any, nn.Module], None]) -> None:
    """Call ``fn(listener, model)`` after a watch takes its hooks off ``model`` (its close), for
    as long as ``listener`` lives (it is held weakly: a closed view is dropped)."""
    _DETACHED.append((weakref.ref(listener), fn))


def _remove(handles: list[RemovableHandle]) -> None:
    while handles:
        handles.pop().remove()


def _tell_detached(model: nn.Module) -> None:
    for entry in list(_DETACHED):
        who = entry[0]()
        if who is None:
            if entry in _DETACHED:
                _DETACHED.remove(entry)
            continue
        try:
            entry[1](who, model)
        except Exception:  # noqa: BLE001, S112 - a view's trouble must not stop the close
            continue


class ForwardHook:
    """The forward hook of one watch (an object, so a sweep can tell it from the user's)."""

    __slots__ = ("fn", "owner")

    def __init__(self, owner: object, fn: Callable[..., None]) -> None:
        self.owner, self.fn = owner, fn

    def __call__(self, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        self.fn(module, args, kwargs, output)


class PreHook:
    """A forward pre-hook of one watch: the root's (what a replay needs) and the taps."""

    __slots__ = ("fn", "owner")

    def __init__(self, owner: object, fn: Callable[..., Any]) -> None:
        self.owner, self.fn = owner, fn

    def __call__(self, module: nn.Module, args: Any, kwargs: Any) -> Any:
        return self.fn(module, args, kwargs)


class Attached:
    """The handles of one watch on one model and optimizer."""

    def __init__(self, owner: object) -> None:
        self.owner = owner
        self._captured: nn.Module | None = None  # the model holding its own hooks (the capture)
        self._each: list[RemovableHandle] = []  # every module's, while a step needs them
        self._optimizer: list[RemovableHandle] = []
        self._model: nn.Module | None = None
        self._hook: ForwardHook | None = None
        self._pre: PreHook | None = None
        self._root: tuple[PreHook, ForwardHook] | None = None
        self._each_state = (False, False)  # (forward hooks, pre-hooks) on every module
        # Modules holding the sampled step's forward hook under ``_key`` (``_on_plain``): an id
        # taken from torch's handle counter, so that no handle torch makes can share it.
        self._plain: list[nn.Module] = []
        self._all: list[nn.Module] = []  # the model's modules when its hooks were last placed
        # The model's own hooks (``capture``) go under ``_root_key``: the model is one of its
        # modules, so it holds both.
        self._key, self._root_key = RemovableHandle.next_id, RemovableHandle.next_id + 1
        RemovableHandle.next_id += 2

    def modules(
        self,
        model: nn.Module,
        fn: Callable[..., None],
        tap: Callable[..., Any],
        root: tuple[Callable[..., None], ...],
        each: bool = True,
        capture: bool = True,
    ) -> None:
        """Hook the model itself with ``root`` (a pre-hook and a hook, first) when ``capture``,
        and every module of ``model`` with ``fn`` (a forward hook) when ``each``, and ``tap`` (a
        pre-hook) on an armed step; again after an edit: the old hooks go first."""
        self.off_modules(model)
        self._model = model
        self._all = list(model.modules())  # read again by the next ``modules`` (an edit)
        self._hook, self._pre = ForwardHook(self.owner, fn), PreHook(self.owner, tap)
        before, after = root
        self._root = (PreHook(self.owner, before), ForwardHook(self.owner, after))
        try:
            self.capture(capture)
            self.each(each)
        except BaseException:
            self.off_modules(model)
            raise

    def capture(self, on: bool) -> None:
        """The model's own pre-hook and hook (what a replay needs of a step) on or off: on for
        the steps whose gradients are checked, off for the others (they would cost every step
        the model's slow call path). Put first in the model's tables under this watch's id
        (``register_forward_hook(prepend=True)`` without the handles: ``_on_plain`` says why)."""
        model, root = self._model, self._root
        if on == (self._captured is not None) or model is None or root is None:
            return
        if not on:
            self._off_root()
            return
        pre, hook = root
        key = self._root_key
        try:
            self._captured = model
            for table, fn in ((model._forward_pre_hooks, pre), (model._forward_hooks, hook)):
                table[key] = fn
                if isinstance(table, OrderedDict):
                    table.move_to_end(key, last=False)
            model._forward_pre_hooks_with_kwargs[key] = True
            model._forward_hooks_with_kwargs[key] = True
        except BaseException:
            self._off_root()
            raise

    def _off_root(self) -> None:
        model, self._captured = self._captured, None
        if model is not None:
            for name in (*_TABLES[:2], *_PRE):
                getattr(model, name).pop(self._root_key, None)

    def each(self, on: bool, taps: bool = False) -> None:
        """Every module's forward hook on (a sampled step, a replay) or off (other steps); with
        ``taps`` its pre-hook too (a replay alone: a sampled step does not read its inputs)."""
        model, hook, pre = self._model, self._hook, self._pre
        want = (on, on and taps)
        if want == self._each_state or model is None or hook is None or pre is None:
            return
        _remove(self._each)
        self._off_plain()
        self._each_state = (False, False)
        if not on:
            return
        try:
            if taps:
                for m in model.modules():
                    self._each.append(m.register_forward_pre_hook(pre, with_kwargs=True))
                    self._each.append(m.register_forward_hook(hook, with_kwargs=True))
            else:
                self._on_plain(hook)
            self._each_state = want
        except BaseException:
            _remove(self._each)
            self._off_plain()
            raise

    def _on_plain(self, hook: ForwardHook) -> None:
        """Every module's forward hook, put in its tables under one id of this watch's. Why not
        ``register_forward_hook``: a sampled step places and removes a hook per module, and the
        handles' weak references cost a small model 4% of a step's time (bench/README.md,
        issue 55); the tables are the ones ``register_forward_hook(with_kwargs=True)`` fills."""
        key = self._key
        for m in self._all:  # the model's modules, as ``modules`` last read them
            m._forward_hooks[key] = hook
            m._forward_hooks_with_kwargs[key] = True
            self._plain.append(m)

    def _off_plain(self) -> None:
        key, plain = self._key, self._plain
        while plain:
            m = plain.pop()
            m._forward_hooks.pop(key, None)
            m._forward_hooks_with_kwargs.pop(key, None)

    def optimizer(
        self, opt: Optimizer, pre: Callable[..., None], post: Callable[..., None]
    ) -> None:
        self._optimizer.append(opt.register_step_pre_hook(pre))
        self._optimizer.append(opt.register_step_post_hook(post))

    def off_optimizer(self) -> None:
        _remove(self._optimizer)

    def off_modules(self, model: nn.Module | None) -> None:
        _remove(self._each)
        self._off_plain()
        self._each_state = (False, False)
        self._off_root()
        self._model = None
        self._all = []
        self._root = None
        if model is not None:
            self.sweep(model)

    def sweep(self, model: nn.Module) -> int:
        """Remove this watch's hooks that handles do not reach (copies made by a patch)."""
        gone = 0
        for m in model.modules():
            for table, flags in ((m._forward_hooks, _TABLES), (m._forward_pre_hooks, _PRE)):
                mine = [k for k, h in table.items() if getattr(h, "owner", None) is self.owner]
                for key in mine:
                    for name in flags:
                        getattr(m, name, {}).pop(key, None)
                gone += len(mine)
        return gone

    def off(self, model: nn.Module | None) -> None:
        """Everything off, the optimizer's hooks too; safe to call twice."""
        try:
            self.off_optimizer()
        finally:
            self.off_modules(model)
            if model is not None:
                _tell_detached(model)

    @property
    def count(self) -> int:
        root = 2 if self._captured is not None else 0
        return root + len(self._each) + len(self._plain) + len(self._optimizer)
