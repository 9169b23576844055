"""Whether a class's constructor can wrap layers in a parametrization itself.

A parametrization (``nn.utils.parametrizations.weight_norm``, ``spectral_norm``, ``orthogonal``,
``parametrize.register_parametrization``) is most often added after a model is built (a LoRA
library, a training script's ``weight_norm(model.conv)``), and then no constructor argument makes
it: the form of the module around it is exact without it, and an edit puts it back
(``_patch/placement.py``). But a constructor may add one itself, by a flag
(``self.conv = weight_norm(conv) if use_norm else conv``); then a form that shows the flag off
would rebuild a plain layer where the live one is wrapped, and still pass the gate.

``wraps_layers(cls)`` tells the two apart by reading code, not values: whether the names the
constructor's bytecode reads, or those of the functions and module classes of the user's it
reaches through its globals and closures (a helper ``def wn_conv(...)``, a block class), include
a parametrization function. Where they do, ``parts.py`` names each parametrization below the
module in its tensor's text, as it does for the legacy hook-based functions (``hooked.py``), so
the gate and the search compare it; elsewhere a parametrization stays what came after. Bytecode,
not the AST: it needs no source file (a notebook's class has one only while its cell is kept).
"""

from __future__ import annotations

import functools
import types
import weakref
from typing import Any

from torch import nn

from ..._signature import original
from ..._unwrap import torch_own

__all__ = ["wraps_layers"]

# The functions that add a parametrization (new-style and the legacy hook-based ones).
_MAKERS = frozenset({"weight_norm", "spectral_norm", "orthogonal", "register_parametrization"})
_DEPTH = 4  # how many calls deep the user's helpers are followed


def _codes(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and the code of the functions, lambdas and comprehensions written inside it."""
    out = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out += _codes(const)
    return out


def _function_reaches(fn: types.FunctionType, seen: set[Any], depth: int) -> bool:
    if fn.__code__ in seen or depth > _DEPTH:
        return False
    seen.add(fn.__code__)
    scope: dict[str, Any] = dict(fn.__globals__)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            scope[name] = cell.cell_contents
        except ValueError:  # an empty cell: a name not yet bound
            continue
    for code in _codes(fn.__code__):
        names = set(code.co_names) | set(code.co_freevars)
        if names & _MAKERS:
            return True
        for name in names:
            if _reaches(scope.get(name), seen, depth + 1):
                return True
    return False


def _reaches(obj: Any, seen: set[Any], depth: int) -> bool:
    """Whether ``obj`` (a function or class the code names) is, or can call, a parametrization
    function. Torch's own code is not read: only its makers' names count."""
    if obj is None or depth > _DEPTH:
        return False
    if torch_own(obj):
        return getattr(obj, "__name__", None) in _MAKERS
    if isinstance(obj, functools.partial):
        return _reaches(obj.func, seen, depth)
    if isinstance(obj, types.FunctionType):
        return _function_reaches(obj, seen, depth)
    if isinstance(obj, type) and issubclass(obj, nn.Module):
        for klass in obj.__mro__:
            init = klass.__dict__.get("__init__")
            if torch_own(klass) or init is None:
                continue
            init = original(init)  # the one resolver's rules: ``__wrapped__``, decorators
            if isinstance(init, types.FunctionType) and _function_reaches(init, seen, depth):
                return True
    return False


# Read once per class, held weakly: a notebook cell run again makes a new class, and the old
# one must be collected (tests/zoo/test_memory.py). Every form's gate asks (``parts.py``).
_READ: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def wraps_layers(cls: type) -> bool:
    """Whether ``cls``'s constructor, or code of the user's it reaches, adds a parametrization."""
    try:
        return _READ[cls]
    except (KeyError, TypeError):
        pass
    try:
        got = _reaches(cls, set(), 0)
    except Exception:  # noqa: BLE001 - unreadable code: the wrapping is taken as made later
        got = False
    try:
        _READ[cls] = got
    except TypeError:  # a class that cannot be referenced weakly: read each time
        pass
    return got
