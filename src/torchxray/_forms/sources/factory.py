"""A whole model's arguments read from the function that made it (issue 40, item 4): the function
of the class's own module that the model is named after, called again on meta and stopped as soon
as it calls the class's constructor.

A model zoo builds each model by a function named for it, in the module that defines the model's
class, and the model keeps that name (timm's ``efficientnet_b0()`` returns an ``EfficientNet``
whose ``pretrained_cfg`` says ``architecture='efficientnet_b0'``). What the function computes
before it calls the constructor (block lists decoded from arch strings, a cfg dataclass taken
from a table, per-stage widths scaled by a multiplier) is what the model keeps no attribute for.
So: a function is called when it is defined in the class's own module, that module belongs to
an installed library (never the person's own code: a function of a notebook or a script runs
whatever it does before it makes the model, for real; ``_forms/sources/installed.py``), is named exactly
as a string the model keeps (an attribute, or a value of a dict attribute), makes the class (its
return annotation names the class, a subclass or a base; without one, its code or that of a
function of the module it calls names the class) and needs no argument. It runs on meta
(``_forms/rebuild/meta.py``), under a profile function of this thread only (``sys.setprofile``; none
while a profiler runs) that reads the arguments of the first call to the class's ``__init__`` on
an instance of exactly that class, before its first line runs; the build then stops at its next
submodule. Nothing is built past that point, nothing is recorded, no other thread is touched;
what the function does before that point (a library's factory: decoding arch strings, looking up
a cfg) runs for real.

The arguments found are the search's start (``_forms/sources/__init__.py``, ``leads``), and the gate
decides: a value the person passed when making the model (``num_classes=10``) is read back from
the build's differences, and a model these values do not rebuild exactly stays refused by the
part that differs. The call has its own allowance of work (``FACTORY_WORK``, counted like a
build's, so the same on every call; one call that stops before the model's first layer takes
~2 ms), apart from the search's budget and not charged to it, under the form's safety ceiling.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

from torch import nn

from ..._signature import original, resolve
from ..field import Field
from ..rebuild.meta import meta_build
from ..record import frame_args
from ..values import same
from .installed import installed

__all__ = ["FACTORY_WORK", "named_factory_args", "started_from"]

_EMPTY = inspect.Parameter.empty
# The call's own allowance of work (torch calls, modules and tensors made, as a build's), apart
# from the search's: it stops before the model's first layer; a factory that does more before it
# calls the class gives no reading. Counted, not timed, so the reading is the same on every call.
FACTORY_WORK = 2_000


def _names(module: nn.Module) -> list[str]:
    """The strings the module keeps that could name a function: attributes and the values of
    dict attributes (``pretrained_cfg['architecture']``), in order, once each."""
    out: list[str] = []
    for v in vars(module).values():
        items = list(v.values()) if type(v) is dict else [v]
        out += [s for s in items if type(s) is str and s.isidentifier() and not s.startswith("_")]
    return list(dict.fromkeys(out))


def _names_in(code: types.CodeType) -> set[str]:
    """The global names a function's code reads, its nested functions' and comprehensions'
    included."""
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names_in(c)
    return out


def _calls_class(fn: Any, cls: type, home: types.ModuleType, depth: int = 2) -> bool:
    """Whether ``fn``'s code names ``cls``, or a function of ``home`` whose code does (timm's
    ``fastvit_t8`` calls ``_create_fastvit``, which hands ``FastVit`` to its builder)."""
    names = _names_in(fn.__code__)
    if any(vars(home).get(n) is cls for n in names):
        return True
    inner = [vars(home).get(n) for n in names] if depth > 1 else []
    return any(
        inspect.isfunction(g) and g.__module__ == home.__name__ and _calls_class(g, cls, home, 1)
        for g in inner
    )


def _makes(fn: Any, cls: type, home: types.ModuleType) -> bool:
    """Whether ``fn`` says it returns ``cls`` (a return annotation naming it, a subclass, or a
    base of the library's own that the function may return instead: ``-> Levit`` for
    ``LevitDistilled``), or, without an annotation, names it in its code."""
    try:
        ann = typing.get_type_hints(fn).get("return", _EMPTY)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: read its text
        ann = getattr(fn, "__annotations__", {}).get("return", _EMPTY)
        return isinstance(ann, str) and ann.rpartition(".")[2] == cls.__name__
    if ann is _EMPTY:
        return _calls_class(fn, cls, home)
    if not isinstance(ann, type) or ann.__module__.partition(".")[0] == "torch":
        return False
    return issubclass(ann, cls) or issubclass(cls, ann)


def _no_arguments(fn: Callable[..., Any]) -> bool:
    try:
        ps = resolve(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not _EMPTY or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in ps)


def factories(module: nn.Module, cls: type) -> list[Callable[..., Any]]:
    """The functions of ``cls``'s module named as a string ``module`` keeps, that make ``cls``
    (``_makes``) and take no required argument."""
    home = sys.modules.get(cls.__module__)
    out: list[Callable[..., Any]] = []
    if home is None or not installed(getattr(home, "__file__", None)):
        return out  # the person's own code is never run (``_forms/sources/installed.py``)
    for name in _names(module):
        fn = vars(home).get(name)
        if (
            inspect.isfunction(fn)
            and fn.__module__ == cls.__module__
            and _makes(fn, cls, home)
            and _no_arguments(fn)
        ):
            out.append(fn)
    return out


def _first_call(
    fn: Callable[..., Any], cls: type, deadline: float
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The arguments ``fn()`` passes to ``cls``'s constructor, read as it is entered; None when
    it raised before, never called it, ran past ``deadline``, or a profiler is on."""
    init = original(cls.__init__)  # type: ignore[misc]
    code = getattr(init, "__code__", None)
    if code is None or not code.co_argcount:
        return None
    got: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    builds: list[Any] = []  # the build's ``Count``, once it has begun

    def watch(frame: types.FrameType, event: str, arg: Any) -> None:
        if event != "call" or got or frame.f_code is not code:
            return
        if type(frame.f_locals.get(code.co_varnames[0])) is cls:
            got.append(frame_args(frame))
            sys.setprofile(None)
            if builds:
                builds[0].cap = -1  # the build stops at its next submodule

    outer = sys.getprofile()
    if outer is not None:
        return None  # a profiler runs (cProfile): it is not swapped out, and there is no reading
    try:
        with meta_build(1 << 16, deadline, FACTORY_WORK) as count:
            builds.append(count)
            sys.setprofile(watch)
            fn()
    except Exception:  # noqa: BLE001 - stopped on purpose, or a factory that fails on meta
        pass
    finally:
        sys.setprofile(None)
    return got[0] if got else None


def named_factory_args(
    module: nn.Module, cls: type, sig: inspect.Signature, deadline: float
) -> dict[str, Any]:
    """The constructor values (parameter name -> value) the function ``module`` is named after
    passes to ``cls`` (see the module doc); {} when there is no such function."""
    for fn in factories(module, cls):
        found = _first_call(fn, cls, deadline)
        if found is None:
            continue
        try:
            bound = sig.bind(*found[0], **found[1])
        except TypeError:
            continue
        return dict(bound.arguments)
    return {}


def started_from(
    module: nn.Module,
    cls: type,
    sig: inspect.Signature,
    fields: list[Field],
    guessed: Callable[[Field], bool],
    deadline: float,
) -> tuple[list[Field], dict[str, Any]]:
    """``fields`` for the search, each holding the value the function ``module`` is named after
    passes where it differs: the guessed ones, and those read from an attribute that holds
    another value (MobileNetV3 keeps the last block's width as ``num_features``, and is given
    the head's). Those become guesses the search may move: a value the person passed to the
    function (``num_classes=10``) is read back from the build's differences, and one the gate
    cannot see keeps the attribute's value, flagged (``_forms/candidates/ambiguous.py``). Also every value
    found, by parameter name: a ``**kwargs`` passed on (``VisionTransformerDistilled(*args,
    **kwargs)``) is given whole (``_forms/sources/handed.py``, as a ``**kwargs`` handed on to a layer)."""
    found = named_factory_args(module, cls, sig, deadline)
    out = []
    for f in fields:
        v = found.get(f.name, f)
        plain = f.kind not in ("varargs", "varkw") and f.name not in ("device", "dtype")
        if v is not f and plain and not same(v, f.value):
            if guessed(f) or f.origin in ("attribute", "derived"):
                f = dataclasses.replace(f, value=v, origin="default")
        out.append(f)
    return out, found
