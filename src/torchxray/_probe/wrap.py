"""Routing every module call of the probed model through the recorder (`_probe.calls`), and undoing it.

Not forward hooks: any hook, global or per module, sends *every* module call through the slow
path of ``nn.Module._call_impl``; on many small modules, two empty global hooks alone cost a
large part of a bare forward. Instead, for the probe's duration:

- Each module of the probed model that has no hooks of its own gets an instance attribute
  ``_call_impl``: one recording function, bound to it, that records the call around
  ``module.forward(*args, **kwargs)``, which is all ``_call_impl`` does for such a module
  (outside TorchScript tracing). ``nn.Module.__call__`` (``_wrapped_call_impl``) looks
  ``self._call_impl`` up, so the instance attribute serves it, and a bound ``__call__`` taken
  before the probe (torch.compile's OptimizedModule holds ``_orig_mod.__call__``) too. Nothing
  on nn.Module itself is assigned: assigning any attribute of a class makes CPython invalidate
  the method caches of every subclass, and a dunder also updates that slot in each; with a
  model library imported nn.Module has thousands of subclasses, a fixed cost per probe that
  dominated small models (bench/README.md, "The fake probe's fixed cost"). Modules outside the probed model run
  untouched.
- The modules that path cannot serve exactly get an instance attribute ``forward`` that records
  the call instead, and are called the usual way: a module with hooks of its own (they run as
  usual, around the recording), a module compiled in place (``module.compile()``), a class with
  its own ``__call__`` or ``_call_impl`` (or an instance that has one), and every module while
  global module hooks are registered (``register_module_forward_hook`` and friends).

A library may register hooks on a module during the run, before that module's first call
(transformers installs its output-capturing hooks on its layers at the model's first call with
``output_hidden_states=True``): a direct module would skip them, and ``hidden_states`` came back
empty under the probe where the person's own forward fills it (issue 58). At each module's first
call (`Patches.first_call`), a direct module that has gained hooks of its own, or any module
once global hooks exist, moves to the instance path, and that call goes through nn.Module's own
``_call_impl`` with its hooks, as the person's forward would.

`undo` puts back exactly what was there, and one lock keeps two probes in two threads from
interleaving their patches.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from typing import Any

from torch import nn

from .._fake.memo import global_hooks
from .calls import Recorder

_MISSING = object()
_LOCK = threading.RLock()
_MODULE_CALL = nn.Module.__call__
_CALL_IMPL = nn.Module._call_impl
_WRAPPED_CALL_IMPL = nn.Module._wrapped_call_impl


def _plain_call(cls: type) -> bool:
    """Instances of `cls` are called through nn.Module's own ``__call__`` and ``_call_impl``,
    the latter found on nn.Module itself (a class that names it, even as nn.Module's own
    function, would not see the replacement)."""
    return (
        cls.__call__ is _MODULE_CALL  # type: ignore[comparison-overlap]
        and getattr(cls, "_call_impl", None) is _CALL_IMPL
        and getattr(cls, "_wrapped_call_impl", None) is _WRAPPED_CALL_IMPL
        and not any("_call_impl" in vars(k) for k in cls.__mro__ if k is not nn.Module)
    )


def _this_thread(get: Callable[[int], str | None]) -> Callable[[int], str | None]:
    """`get` for calls from the probing thread only: a forward that runs meanwhile in another
    thread (the user's cell, while the Explorer probes in the background) is not recorded."""
    owner, ident = threading.get_ident(), threading.get_ident

    def path_of(key: int) -> str | None:
        return get(key) if ident() == owner else None

    return path_of


class Patches:
    """Where each module of one probe is recorded, and the patches that make it so.
    `ProbeRun._walk` fills `direct` and `instances`: a module goes to `direct` when its class
    passes `direct_class` and it has no hooks of its own and is not compiled in place."""

    def __init__(self) -> None:
        # id(module) -> path (every module's: the walk's own dict; only the direct ones look a
        # path up in it), and the modules recorded by an instance attribute `_call_impl`
        self.direct: dict[int, str] = {}
        self.direct_modules: list[nn.Module] = []
        # id(module) -> (module, path): recorded by an instance attribute `forward`
        self.instances: dict[int, tuple[nn.Module, str]] = {}
        self.stubs: list[tuple[nn.Module, Callable[..., Any]]] = []
        self._any_global = global_hooks()
        self._saved_inst: list[tuple[nn.Module, Any]] = []
        self._calls_set = 0  # how many of direct_modules have their `_call_impl`
        self._locked = False
        self._recorder: Recorder | None = None

    def direct_class(self, cls: type) -> bool:
        """Whether instances of `cls` can be recorded by an instance ``_call_impl`` (when they
        have no hooks of their own and are not compiled in place)."""
        return _plain_call(cls) and not self._any_global

    def stub(self, m: nn.Module, forward: Callable[..., Any]) -> None:
        """Give `m` the instance ``forward`` `forward` (a memo stub) for the probe; it is still
        recorded as `m`'s call."""
        self.stubs.append((m, forward))

    def install(self, recorder: Recorder) -> None:
        """Install: stubs first, then the instance recorders (each wraps whatever ``m.forward``
        is then), then the instance ``_call_impl`` of every direct module."""
        _LOCK.acquire()
        self._locked = True
        self._recorder = recorder
        try:
            for m, forward in self.stubs:
                self._set_forward(m, forward)
            for m, path in self.instances.values():
                self._record_instance(m, path, recorder)
            if self.direct_modules:
                call = recorder.function(
                    _CALL_IMPL, _this_thread(self.direct.get), call_forward=True
                )
                call.__name__ = call.__qualname__ = "_call_impl"
                method = types.MethodType
                for m in self.direct_modules:
                    m.__dict__["_call_impl"] = method(call, m)
                    self._calls_set += 1
        except BaseException:
            self.undo()
            raise

    def first_call(self, m: nn.Module) -> bool:
        """`m` is about to run for the first time in this run: if it is a direct module that has
        gained hooks since `install` (or global hooks now exist), it moves to the instance path
        and True says the caller must call it through nn.Module's ``_call_impl`` (module
        docstring)."""
        d = m.__dict__
        if "_call_impl" not in d or self._recorder is None:
            return False
        if not (
            d.get("_forward_hooks")
            or d.get("_forward_pre_hooks")
            or d.get("_backward_hooks")
            or d.get("_backward_pre_hooks")
            or global_hooks()
        ):
            return False
        path = self.direct.pop(id(m), None)
        if path is None:
            return False
        del d["_call_impl"]
        self.instances[id(m)] = (m, path)
        self._record_instance(m, path, self._recorder)
        return True

    def _set_forward(self, m: nn.Module, forward: Callable[..., Any]) -> None:
        self._saved_inst.append((m, m.__dict__.get("forward", _MISSING)))
        m.__dict__["forward"] = forward

    def _record_instance(self, m: nn.Module, path: str, recorder: Recorder) -> None:
        forward = m.forward

        def unbound(_module: nn.Module, *args: Any, **kwargs: Any) -> Any:
            return forward(*args, **kwargs)

        recorded = recorder.function(unbound, _this_thread({id(m): path}.get), call_forward=False)
        inner = getattr(forward, "__func__", None)
        if inner is not None:
            # inspect.signature(module.forward), which some forwards consult, still sees the
            # module's own signature.
            recorded.__wrapped__ = inner  # type: ignore[attr-defined]
        self._set_forward(m, types.MethodType(recorded, m))

    def undo(self) -> None:
        try:
            if self._calls_set:
                for m in self.direct_modules[: self._calls_set]:
                    m.__dict__.pop("_call_impl", None)
                self._calls_set = 0
            while self._saved_inst:
                m, old = self._saved_inst.pop()
                if old is _MISSING:
                    m.__dict__.pop("forward", None)
                else:
                    m.__dict__["forward"] = old
        finally:
            if self._locked:
                self._locked = False
                _LOCK.release()
