"""``record_init_args()``: remember the constructor arguments of modules built inside it.

Every module's ``__init__`` chain ends in ``nn.Module.__init__``; a wrapper there walks up the
calling frames to the outermost ``__init__`` running on the same object and reads its arguments.
Python has no construction hook, and patching ``__new__`` instead cannot be undone cleanly (CPython
keeps the subclasses' ``tp_new`` slot pointing at the removed function). Arguments are read when
``super().__init__()`` runs, which is usually the first line; values reassigned before it are
recorded as reassigned. ``copy.deepcopy`` never calls ``__init__``, so copies are not recorded.

The record is a deep copy of the arguments as they were then: timm's EfficientNet pops keys from
the block definitions it was given, and a record sharing them would rebuild nothing. Classes and
functions are kept as they are (identity is their meaning); an argument that cannot be copied is
kept with a note saying so.

What a record keeps alive: the copies of its module's plain arguments (numbers, strings, lists,
configs), until the module is collected. Never a tensor or a module: those arguments (and methods
bound to a module) are held by weak reference, so a record neither keeps the user's weights alive
nor ties a module to itself through its parent; a record whose tensor or module is gone is no
longer used (the form infers the values instead, as without recording).

``record_everything()`` (``%load_ext torchxray``) records every module built from then on, the
whole notebook in one line; ``record_init_args()`` records one block.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import sys
import threading
import weakref
from collections.abc import Iterator
from types import FrameType, MethodType
from typing import Any, cast

from torch import Tensor, nn

__all__ = [
    "record_everything",
    "record_init_args",
    "recorded_args",
    "recorded_notes",
    "frame_args",
    "recording",
    "remember",
    "snapshot",
]

_lock = threading.RLock()
_depth = 0
_records: weakref.WeakKeyDictionary[nn.Module, tuple[tuple[Any, ...], dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)
_notes: weakref.WeakKeyDictionary[nn.Module, dict[str, str]] = weakref.WeakKeyDictionary()
_saved_init: Any = None
_forever = False  # record_everything() is on
_MAX_FRAMES = 64


class _Weak:
    """A record's weak hold on a tensor, a module or a method bound to one."""

    __slots__ = ("ref",)

    def __init__(self, value: Any) -> None:
        self.ref = weakref.WeakMethod(value) if inspect.ismethod(value) else weakref.ref(value)

    def __hash__(self) -> int:
        return id(self)


class _Gone(Exception):
    """A weakly held argument was collected: the record cannot rebuild its module."""


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


def frame_args(frame: FrameType) -> tuple[tuple[Any, ...], dict[str, Any]]:
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
            args, kwargs = frame_args(frame)
            notes: dict[str, str] = {}
            memo: dict[int, Any] = {}
            rec = (
                tuple(
                    _snapshot(v, memo, notes, f"argument {i + 1}", weak=True)
                    for i, v in enumerate(args)
                ),
                {k: _snapshot(v, memo, notes, k, weak=True) for k, v in kwargs.items()},
            )
            with _lock:
                _records[self] = rec
                if notes:
                    _notes[self] = notes
    except Exception:  # noqa: BLE001, S110 - recording is best effort; never break construction
        pass


# Type tests go through type(value): isinstance() falls back to reading `value.__class__`, which a
# config class with its own __getattribute__ (transformers') answers in Python, and every
# argument of every module built while recording is tested.
_BY_REFERENCE = (bool, int, float, complex, str, bytes, type, nn.Module, Tensor)
_HELD_WEAKLY = (nn.Module, Tensor)


def _kept(value: Any) -> bool:
    """Values recorded by reference: identity is their meaning or they never change."""
    return value is None or issubclass(type(value), _BY_REFERENCE) or callable(value)


# id(object) -> (weak reference to it, its last copy): one config is given to every layer of a
# transformers model, and copying it once per layer was a third of a meta build's time.
_copies: dict[int, tuple[weakref.ref[Any], Any]] = {}


def _same_state(a: Any, b: Any) -> bool:
    try:
        state = object.__getattribute__  # the instance dict, past a class's own __getattribute__
        return type(a) is type(b) and bool(state(a, "__dict__") == state(b, "__dict__"))
    except Exception:  # noqa: BLE001 - no __dict__, or values that refuse ==
        return False


def _shared_copy(value: Any) -> Any:
    """The copy made for an earlier record of the same object, if the object has not changed
    since (compared with the copy, attribute by attribute)."""
    with _lock:
        got = _copies.get(id(value))
    if got is None or got[0]() is not value or not _same_state(value, got[1]):
        return None
    return got[1]


def _forget(copies: dict[int, Any], key: int, _: Any) -> None:
    # Bound to the dict itself: at interpreter exit the module's globals may already be None.
    copies.pop(key, None)


def _share(value: Any, out: Any) -> None:
    key = id(value)
    try:
        ref = weakref.ref(value, functools.partial(_forget, _copies, key))
    except TypeError:  # an object without weak references is copied every time
        return
    with _lock:
        _copies[key] = (ref, out)


def _weakly(value: Any) -> bool:
    kind = type(value)
    return issubclass(kind, _HELD_WEAKLY) or (
        kind is MethodType and issubclass(type(value.__self__), _HELD_WEAKLY)
    )


# Most constructor arguments: kept as they are without the checks below (every module built
# while recording passes each of its arguments through here).
_PLAIN = frozenset({type(None), bool, int, float, str})


def _snapshot(
    value: Any, memo: dict[int, Any], notes: dict[str, str], name: str, weak: bool = False
) -> Any:
    if type(value) in _PLAIN:
        return value
    if weak and _weakly(value):
        try:
            return _Weak(value)
        except TypeError:  # a tensor type without weak references: held as before
            return value
    if _kept(value):
        return value
    if id(value) in memo:
        return memo[id(value)]
    kind = type(value)
    out: Any
    if kind in (list, tuple, set, frozenset):
        items = [_snapshot(v, memo, notes, name, weak) for v in value]
        out = items if kind is list else kind(items)
    elif kind is dict:
        out = {k: _snapshot(v, memo, notes, name, weak) for k, v in value.items()}
    elif isinstance(value, dict) and getattr(value, "__dict__", None) is value:
        # A dict whose fields are its items (``self.__dict__ = self``, an "AttrDict"): a deep
        # copy sets its state before its items and loses the fields; made again the same way.
        mapping = cast("dict[Any, Any]", value)
        out = dict.__new__(kind)
        memo[id(value)] = out
        dict.update(out, {k: _snapshot(v, memo, notes, name, weak) for k, v in mapping.items()})
        out.__dict__ = out
    elif (shared := _shared_copy(value)) is not None:
        out = shared
    else:
        try:
            out = copy.deepcopy(value, memo)
            _share(value, out)
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


def record_everything(on: bool = True) -> None:
    """Record the constructor arguments of every ``nn.Module`` built from now on, in every thread,
    until ``record_everything(False)``: the whole notebook's forms read ``origin="recorded"``.
    ``%load_ext torchxray`` calls it. Costs a few percent of a model's construction (bench:
    ``python -m bench.recording``); what a record keeps alive is in this module's doc.

    Args:
        on: True to start recording (a second call changes nothing), False to stop.

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> tx.record_everything()
        >>> block = nn.Sequential(nn.Linear(4, 8))
        >>> tx.record_everything(False)
        >>> tx.form(block[0])["in_features"].origin
        'recorded'
    """
    global _depth, _forever
    with _lock:
        if bool(on) == _forever:
            return
        _forever = bool(on)
        if on:
            if _depth == 0:
                _install()
            _depth += 1
        else:
            _depth -= 1
            if _depth == 0:
                _uninstall()


def recording() -> bool:
    """Whether modules built now are recorded (inside ``record_init_args()`` or after
    ``record_everything()``)."""
    with _lock:
        return _depth > 0


@contextlib.contextmanager
def record_init_args() -> Iterator[None]:
    """Record the constructor arguments of every ``nn.Module`` created inside the block.

    Their forms then read ``origin="recorded"``. Records are kept weakly per module and outlive
    the block; nesting and concurrent use from several threads are fine (the hook is installed
    once and removed when the last block exits).

    Returns:
        A context manager; nothing is bound by ``as``.

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> class Block(nn.Module):
        ...     def __init__(self, width: int, scale: float = 2.0) -> None:
        ...         super().__init__()
        ...         self.fc = nn.Linear(width, int(width * scale))
        >>> with tx.record_init_args():
        ...     block = Block(8, scale=3.0)
        >>> f = tx.form(block)
        >>> f["scale"].value, f["scale"].origin
        (3.0, 'recorded')
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


def _resolve(value: Any) -> Any:
    if type(value) is _Weak:
        got = value.ref()
        if got is None:
            raise _Gone
        return got
    kind = type(value)
    if kind in (list, tuple, set, frozenset):
        items = [_resolve(v) for v in value]
        return items if kind is list else kind(items)
    if kind is dict:
        return {k: _resolve(v) for k, v in value.items()}
    return value


def recorded_args(module: nn.Module) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The (args, kwargs) a module was constructed with, if it was built while recording (None
    too when a tensor or module it was given has been collected since)."""
    with _lock:
        rec = _records.get(module)
    if rec is None:
        return None
    try:
        return tuple(_resolve(v) for v in rec[0]), {k: _resolve(v) for k, v in rec[1].items()}
    except _Gone:
        return None


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
    memo: dict[int, Any] = {}
    notes: dict[str, str] = {}
    rec = (
        tuple(_snapshot(v, memo, notes, "", weak=True) for v in args),
        {k: _snapshot(v, memo, notes, k, weak=True) for k, v in kwargs.items()},
    )
    with _lock:
        _records[module] = rec
