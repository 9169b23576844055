"""``record_init_args()``: remember the constructor arguments of modules built inside it.

Every module's ``__init__`` chain ends in ``nn.Module.__init__``; a wrapper there walks up the
calling frames to the outermost ``__init__`` running on the same object and reads its arguments.
Python has no construction hook, and patching ``__new__`` instead cannot be undone cleanly (CPython
keeps the subclasses' ``tp_new`` slot pointing at the removed function). Arguments are read when
``super().__init__()`` runs, which is usually the first line; values reassigned before it are
recorded as reassigned. ``copy.deepcopy`` never calls ``__init__``, so copies are not recorded.

The record is a deep copy of the arguments as they were then: timm's EfficientNet pops keys from
the block definitions it was given, and a record sharing them would rebuild nothing. Modules,
tensors, classes and functions are kept as they are (identity is their meaning, and copying weights
is costly); an argument that cannot be copied is kept with a note saying so.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import sys
import threading
import weakref
from collections.abc import Iterator
from types import FrameType
from typing import Any

from torch import Tensor, nn

__all__ = ["record_init_args", "recorded_args", "recorded_notes", "remember", "snapshot"]

_lock = threading.RLock()
_depth = 0
_records: weakref.WeakKeyDictionary[nn.Module, tuple[tuple[Any, ...], dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)
_notes: weakref.WeakKeyDictionary[nn.Module, dict[str, str]] = weakref.WeakKeyDictionary()
_saved_init: Any = None
_MAX_FRAMES = 64


def _outermost_init(obj: object, frame: FrameType | None) -> FrameType | None:
    found = None
    for _ in range(_MAX_FRAMES):
        if frame is None:
            break
        code = frame.f_code
        if (
            code.co_name == "__init__"
            and code.co_argcount
            and (frame.f_locals.get(code.co_varnames[0]) is obj)
        ):
            found = frame
        frame = frame.f_back
    return found


def _frame_args(frame: FrameType) -> tuple[tuple[Any, ...], dict[str, Any]]:
    code = frame.f_code
    local = frame.f_locals
    names = code.co_varnames
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    pos_names = names[1:npos]  # without self
    kw_names = names[npos : npos + nkw]
    at = npos + nkw
    varargs: tuple[Any, ...] = ()
    varkw: dict[str, Any] = {}
    if code.co_flags & inspect.CO_VARARGS:
        varargs = tuple(local.get(names[at], ()))
        at += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        varkw = dict(local.get(names[at], {}))
    if varargs:
        args = tuple(local[n] for n in pos_names if n in local) + varargs
        kwargs = {}
    else:
        nposonly = max(code.co_posonlyargcount - 1, 0)
        args = tuple(local[n] for n in pos_names[:nposonly] if n in local)
        kwargs = {n: local[n] for n in pos_names[nposonly:] if n in local}
    kwargs.update({n: local[n] for n in kw_names if n in local})
    kwargs.update(varkw)
    return args, kwargs


def _recording_init(self: nn.Module, *args: Any, **kwargs: Any) -> None:
    _saved_init(self, *args, **kwargs)
    try:
        frame = _outermost_init(self, sys._getframe(1))
        if frame is not None:
            args, kwargs = _frame_args(frame)
            notes: dict[str, str] = {}
            memo: dict[int, Any] = {}
            rec = (
                tuple(_snapshot(v, memo, notes, f"argument {i + 1}") for i, v in enumerate(args)),
                {k: _snapshot(v, memo, notes, k) for k, v in kwargs.items()},
            )
            with _lock:
                _records[self] = rec
                if notes:
                    _notes[self] = notes
    except Exception:  # noqa: BLE001, S110 - recording is best effort; never break construction
        pass


def _kept(value: Any) -> bool:
    """Values recorded by reference: identity is their meaning or they never change."""
    return (
        value is None
        or isinstance(value, (bool, int, float, complex, str, bytes, type, nn.Module, Tensor))
        or callable(value)
    )


def _snapshot(value: Any, memo: dict[int, Any], notes: dict[str, str], name: str) -> Any:
    if _kept(value):
        return value
    if id(value) in memo:
        return memo[id(value)]
    kind = type(value)
    out: Any
    if kind in (list, tuple, set, frozenset):
        items = [_snapshot(v, memo, notes, name) for v in value]
        out = items if kind is list else kind(items)
    elif kind is dict:
        out = {k: _snapshot(v, memo, notes, name) for k, v in value.items()}
    else:
        try:
            out = copy.deepcopy(value, memo)
        except Exception as e:  # noqa: BLE001 - locks, open files, C objects without copy support
            notes[name] = (
                f"{name}: recorded as the object itself ({type(value).__name__} cannot be copied: "
                f"{type(e).__name__}); changes the constructor made to it show in this form"
            )
            return value
    memo[id(value)] = out
    return out


def _install() -> None:
    global _saved_init
    _saved_init = nn.Module.__dict__["__init__"]
    nn.Module.__init__ = _recording_init  # type: ignore[method-assign]


def _uninstall() -> None:
    nn.Module.__init__ = _saved_init  # type: ignore[method-assign]


@contextlib.contextmanager
def record_init_args() -> Iterator[None]:
    """Record the constructor arguments of every ``nn.Module`` created inside the block.

    Their forms then read ``origin="recorded"``. Records are kept weakly per module and outlive
    the block; nesting and concurrent use from several threads are fine (the hook is installed
    once and removed when the last block exits).
    """
    global _depth
    with _lock:
        if _depth == 0:
            _install()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _uninstall()


def recorded_args(module: nn.Module) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The (args, kwargs) a module was constructed with, if it was built while recording."""
    with _lock:
        return _records.get(module)


def snapshot(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Copies of constructor arguments as a record keeps them (modules, tensors, classes and
    functions shared): a constructor that mutates what it is given leaves the original alone."""
    memo: dict[int, Any] = {}
    notes: dict[str, str] = {}
    return (
        tuple(_snapshot(v, memo, notes, "") for v in args),
        {k: _snapshot(v, memo, notes, k) for k, v in kwargs.items()},
    )


def recorded_notes(module: nn.Module) -> dict[str, str]:
    """Per argument, why its record is the live object rather than a copy."""
    with _lock:
        return dict(_notes.get(module, {}))


def remember(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Record arguments known another way (``Form.build`` knows exactly what it passed)."""
    with _lock:
        _records[module] = (tuple(args), dict(kwargs))
