"""Routing every module call of the probed model through the recorder (`_probe.calls`), and undoing it.

Not forward hooks: any hook, global or per module, sends *every* module call through the slow
path of ``nn.Module._call_impl``; on many small modules, two empty global hooks alone cost a
large part of a bare forward. Instead, for the probe's duration:

- ``nn.Module._call_impl`` is replaced by one recording function. For a module of the probed
  model that has no hooks of its own it records the call around ``module.forward(*args,
  **kwargs)``, which is all ``_call_impl`` does for such a module (outside TorchScript tracing);
  every other module goes to the original ``_call_impl``. One patch instead of one per module.
  Not ``nn.Module.__call__``: assigning a type's dunder method makes CPython update that slot in
  every subclass, and with a model library imported nn.Module has thousands of them (a fixed
  cost per probe that dominated small models; bench/README.md), while a plain attribute only
  invalidates the method caches.
- The modules that path cannot serve exactly get an instance attribute ``forward`` that records
  the call instead, and are called the usual way: a module with hooks of its own (they run as
  usual, around the recording), a module compiled in place (``module.compile()``), a class with
  its own ``__call__`` or ``_call_impl``, and every module while global module hooks are
  registered (``register_module_forward_hook`` and friends).

`undo` puts back exactly what was there, and one lock keeps two probes in two threads from
interleaving their patches.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from typing import Any

from torch import nn
from torch.nn.modules import module as nn_module

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


def global_hooks() -> bool:
    return bool(
        nn_module._global_forward_hooks
        or nn_module._global_forward_pre_hooks
        or nn_module._global_backward_hooks
        or nn_module._global_backward_pre_hooks
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
        self.direct: dict[int, str] = {}  # id(module) -> path: recorded in nn.Module._call_impl
        # id(module) -> (module, path): recorded by an instance attribute `forward`
        self.instances: dict[int, tuple[nn.Module, str]] = {}
        self.stubs: list[tuple[nn.Module, Callable[..., Any]]] = []
        self._any_global = global_hooks()
        self._saved_inst: list[tuple[nn.Module, Any]] = []
        self._call_patched = False
        self._locked = False

    def direct_class(self, cls: type) -> bool:
        """Whether instances of `cls` can be recorded in ``nn.Module._call_impl`` (when they have
        no hooks of their own and are not compiled in place)."""
        return _plain_call(cls) and not self._any_global

    def stub(self, m: nn.Module, forward: Callable[..., Any]) -> None:
        """Give `m` the instance ``forward`` `forward` (a memo stub) for the probe; it is still
        recorded as `m`'s call."""
        self.stubs.append((m, forward))

    def install(self, recorder: Recorder) -> None:
        """Install: stubs first, then the instance recorders (each wraps whatever ``m.forward``
        is then), then ``nn.Module._call_impl``."""
        _LOCK.acquire()
        self._locked = True
        try:
            for m, forward in self.stubs:
                self._set_forward(m, forward)
            for m, path in self.instances.values():
                self._record_instance(m, path, recorder)
            if self.direct:
                call = recorder.function(
                    _CALL_IMPL, _this_thread(self.direct.get), call_forward=True
                )
                call.__name__ = call.__qualname__ = "_call_impl"
                type.__setattr__(nn.Module, "_call_impl", call)
                self._call_patched = True
        except BaseException:
            self.undo()
            raise

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
            if self._call_patched:
                type.__setattr__(nn.Module, "_call_impl", _CALL_IMPL)
                self._call_patched = False
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
