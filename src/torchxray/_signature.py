"""The signature a caller really meets, behind what libraries wrap functions in.

``inspect.signature`` follows ``__wrapped__`` and stops there. Libraries also wrap without
``functools.wraps``: the ``kernels`` package (pulled in by transformers 5.25) replaces a decorated
class's ``__init__`` with ``new_init(self, *args, **kwargs)``, which calls the original held in its
closure, so ``inspect.signature`` of ``LlamaAttention`` reads ``(*args, **kwargs)``. `resolve` sees
through, in this order: a hand-set ``__signature__``; ``functools.partial`` and ``partialmethod``;
``__wrapped__`` chains; a wrapper taking only ``*args, **kwargs`` that holds the original in its
closure cells or defaults; ``super().__init__(*args, **kwargs)`` handed on whole (a class decorator
that returns a subclass); and, for a class whose ``__init__`` was replaced and none of the above
finds the original, the ``def __init__`` of the class's own source. When none of these finds the
real signature it raises `SignatureUnknown` (a ``TypeError``) with one sentence saying why: it
never guesses. Every signature torchxray reads of user code goes through here.

    >>> import functools
    >>> def deco(fn):
    ...     def inner(*args, **kwargs):  # no functools.wraps
    ...         return fn(*args, **kwargs)
    ...     return inner
    >>> class Block:
    ...     @deco
    ...     def __init__(self, width: int, depth: int = 2): ...
    >>> str(resolve(Block))
    '(width: int, depth: int = 2)'
    >>> str(resolve(functools.partial(Block, 8)))
    '(depth: int = 2)'
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import types
import weakref
from collections.abc import Callable
from typing import Any, TypeGuard

from ._signature_keys import from_ast, own_keywords, with_keywords

__all__ = ["SignatureUnknown", "original", "resolve", "source_tree"]

_P = inspect.Parameter
_STAR = (_P.VAR_POSITIONAL, _P.VAR_KEYWORD)
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
_DEPTH = 16  # wrappers of wrappers; a chain longer than this is a cycle in practice
# function -> {name it stands for: its resolved signature, or the SignatureUnknown it raised}.
_CACHE: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


class SignatureUnknown(TypeError):
    """The real signature cannot be found (one sentence says why); nothing is guessed."""


def resolve(obj: Any) -> inspect.Signature:
    """The signature a call of `obj` meets: a class's constructor (without ``self``), a bound
    method's (without ``self``), a function's, a partial's. Raises `SignatureUnknown`."""
    if isinstance(obj, types.MethodType):
        return _drop_first(_callable(obj.__func__, _name_in(obj.__self__, obj.__func__), 0))
    return _callable(obj, None, 0)


def original(func: Any) -> Any:
    """The innermost Python function behind wrappers (`resolve`'s rules), or `func` itself."""
    for _ in range(_DEPTH):
        if isinstance(func, (types.MethodType, staticmethod, classmethod)):
            func = func.__func__
        elif isinstance(func, (functools.partial, functools.partialmethod)):
            func = func.func
        elif getattr(func, "__wrapped__", None) is not None:
            func = func.__wrapped__
        elif isinstance(func, types.FunctionType) and _opaque(_plain(func)):
            try:
                held = _pick(func, func.__name__)
            except SignatureUnknown:
                held = None
            if held is None:
                return func
            func = held
        else:
            return func
    return func


# --- classes -----------------------------------------------------------------------------------


def _class_init(cls: type) -> inspect.Signature:
    """``cls``'s constructor without ``self``, or its own ``__signature__``."""
    own = cls.__dict__.get("__signature__")
    if isinstance(own, inspect.Signature):
        return own
    return _init_from(cls.__mro__)


def _init_from(mro: tuple[type, ...]) -> inspect.Signature:
    """The constructor the first class of `mro` with an ``__init__`` of its own takes."""
    for at, klass in enumerate(mro):
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        try:
            sig = _callable(init, "__init__", 0)
        except SignatureUnknown as e:
            return _drop_first(_from_source(klass, str(e)))
        spreads = any(p.kind in _STAR for p in sig.parameters.values())
        if spreads and not _opaque(sig) and _hands_on(init, "__init__", lead=False):
            # ``def __init__(self, mask_type, *args, **kwargs)`` handing ``*args, **kwargs``
            # whole to ``super().__init__``: its own parameters, then the parent's.
            return _joined(_drop_first(sig), _init_from(mro[at + 1 :]))
        if not _opaque(sig):
            return _drop_first(sig)
        own_keys = _own_keys(init)
        parent = _init_from(mro[at + 1 :]) if own_keys is not None else None
        if own_keys and parent is not None and set(own_keys) - set(parent.parameters):
            # ``super().__init__(*args, **kwargs)`` after reading keywords of its own out of
            # ``kwargs`` (``kwargs.pop("return_mask", False)``): the parent's, then those. Not
            # where it only peeks at the parent's (``kwargs.get("device")``): as before.
            return with_keywords(parent, own_keys)
        if _hands_on(init, "__init__"):
            # ``super().__init__(*args, **kwargs)`` and nothing else of them (a subclass a class
            # decorator made, a masked layer): what the next class in the MRO takes.
            continue
        if _replaced(klass, init):
            # A wrapper none of the rules saw through: the class's own ``def __init__``.
            why = f"{_name(klass)}.__init__ is replaced by {_name(init)} (*args, **kwargs)"
            return _drop_first(_from_source(klass, why))
        return _drop_first(sig)
    return inspect.signature(mro[0])  # no Python __init__ in the MRO: object's, or a C type's


def _joined(own: inspect.Signature, parent: inspect.Signature) -> inspect.Signature:
    """``own`` (its plain parameters, its stars dropped) then ``parent``'s: positionally where
    that is a valid signature, else the parent's by keyword (which ``**kwargs`` hands on)."""
    mine = [p for p in own.parameters.values() if p.kind not in _STAR]
    names = {p.name for p in mine}
    theirs = [p for p in parent.parameters.values() if p.name not in names]
    if any(p.default is not _P.empty for p in mine):
        theirs = [p.replace(kind=_P.KEYWORD_ONLY) if p.kind in _POSITIONAL else p for p in theirs]
    try:
        return own.replace(parameters=[*mine, *theirs])
    except ValueError:
        return own


def _replaced(klass: type, init: Any) -> bool:
    """`init` is not the ``def __init__`` written in `klass`'s body (a decorator put it there)."""
    func = init.__func__ if isinstance(init, (staticmethod, classmethod)) else init
    qual = getattr(func, "__qualname__", "")
    return qual != f"{klass.__qualname__}.__init__"


def _from_source(klass: type, why: str) -> inspect.Signature:
    """The ``def __init__`` of `klass`'s own source, its defaults literals; else refuse."""
    try:
        text = textwrap.dedent(inspect.getsource(klass))
        tree = ast.parse(text)
    except (OSError, TypeError, SyntaxError) as e:
        raise SignatureUnknown(f"{why}, and the source of {_name(klass)} is not available") from e
    body = tree.body[0] if tree.body and isinstance(tree.body[0], ast.ClassDef) else None
    defs = [n for n in (body.body if body else []) if isinstance(n, ast.FunctionDef)]
    defs = [n for n in defs if n.name == "__init__"]
    if not defs:
        raise SignatureUnknown(f"{why}, and the source of {_name(klass)} has no def __init__")
    try:
        return from_ast(defs[-1].args)  # the last def in a class body is the one that counts
    except ValueError as e:
        raise SignatureUnknown(f"{why}, and in its source's def __init__ {e}") from None


# --- callables ---------------------------------------------------------------------------------


def _callable(obj: Any, name: str | None, depth: int) -> inspect.Signature:
    if depth > _DEPTH:
        raise SignatureUnknown(f"{_name(obj)} is wrapped more than {_DEPTH} times deep")
    own = getattr(obj, "__signature__", None) if not isinstance(obj, type) else None
    if isinstance(own, inspect.Signature):  # set by hand: what the author says the call takes
        return own
    if isinstance(obj, (staticmethod, classmethod)):
        return _callable(obj.__func__, name, depth + 1)
    if isinstance(obj, functools.partialmethod):
        inner = _callable(obj.func, name, depth + 1)
        first, rest = _split_first(inner)
        bound = _partial(rest, obj.args, obj.keywords)
        return bound.replace(parameters=[*first, *bound.parameters.values()])
    if isinstance(obj, functools.partial):
        return _partial(_callable(obj.func, name, depth + 1), obj.args, obj.keywords)
    if isinstance(obj, types.MethodType):
        return _drop_first(_callable(obj.__func__, name, depth + 1))
    if isinstance(obj, type):
        return _class_init(obj)
    wrapped = getattr(obj, "__wrapped__", None)
    if wrapped is not None:
        return _callable(wrapped, name, depth + 1)
    if not isinstance(obj, types.FunctionType):
        try:
            return inspect.signature(obj, follow_wrapped=False)
        except ValueError as e:
            raise SignatureUnknown(f"{_name(obj)} has no signature Python can read ({e})") from e
    per_name = _CACHE.get(obj)
    if per_name is None:
        per_name = _CACHE[obj] = {}
    hit = per_name.get(name)
    if hit is None:
        try:
            hit = _function(obj, name, depth)
        except SignatureUnknown as e:
            hit = e
        per_name[name] = hit
    if isinstance(hit, SignatureUnknown):
        raise SignatureUnknown(str(hit))
    return hit


def _function(func: types.FunctionType, name: str | None, depth: int) -> inspect.Signature:
    sig = _plain(func)
    if not _opaque(sig):
        return sig
    held = _pick(func, name or func.__name__)
    if held is not None:
        return _callable(held, name, depth + 1)
    return sig  # takes (*args, **kwargs) itself and holds no function: its real signature


def _plain(func: Any) -> inspect.Signature:
    try:
        return inspect.signature(func, follow_wrapped=False, eval_str=True)
    except Exception:  # noqa: BLE001 - an annotation naming what is not importable stays a string
        return inspect.signature(func, follow_wrapped=False)


def _opaque(sig: inspect.Signature) -> bool:
    """Takes ``*args`` and/or ``**kwargs`` and at most one plain leading parameter (``self``),
    leaving out parameters whose default is a function (a wrapper's way to hold the original)."""
    params = [p for p in sig.parameters.values() if not _is_function(p.default)]
    stars = [p for p in params if p.kind in _STAR]
    others = [p for p in params if p.kind not in _STAR]
    return bool(stars) and len(others) <= 1 and all(p.kind in _POSITIONAL for p in others)


def _is_function(value: Any) -> bool:
    return isinstance(value, (types.FunctionType, functools.partial, types.MethodType))


def _held(func: types.FunctionType) -> dict[str, Any]:
    """The functions `func` holds: its closure cells and its defaults, by variable name."""
    out: dict[str, Any] = {}
    for var, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if _is_function(value) and value is not func:
            out[var] = value
    for p in _plain(func).parameters.values():
        if _is_function(p.default):
            out[p.name] = p.default
    return out


def _pick(func: types.FunctionType, name: str) -> Any:
    """The function a ``(*args, **kwargs)`` wrapper hands its call to, or None when it is no
    wrapper. Chosen by what the wrapper stands in for, never by position: the held function of
    that name (``new_init`` holds the class's ``__init__``; a decorator's ``inner`` holds
    ``forward``), else the one its own source calls with its whole ``*args, **kwargs``. A
    function that holds functions but hands its call whole to none of them is no wrapper (its
    own signature is the real one); several candidates, or no source to tell, and it is refused."""
    held = _held(func)
    if not held:
        return None
    # A wrapper's own name says nothing (``new_init``, ``inner``); the name it stands in for
    # does: the class's ``__init__`` that kernels' ``new_init`` holds as ``orig_init``.
    named = [f for f in held.values() if getattr(original(f), "__name__", None) == name]
    if len(named) == 1:
        return named[0]
    calls = _passthrough_calls(func)
    names = ", ".join(sorted(held))
    if calls is None:
        raise SignatureUnknown(
            f"{_name(func)} takes only *args/**kwargs and holds {names}, and without its source "
            f"nothing tells which of them is the {name} it stands for"
        )
    called = list(dict.fromkeys(v for v in calls if v in held))
    if not called:
        return None
    if len(called) == 1:
        return held[called[0]]
    raise SignatureUnknown(
        f"{_name(func)} takes only *args/**kwargs and hands them to {', '.join(called)}: "
        f"nothing tells which is the {name} it stands for"
    )


def _passthrough_calls(func: types.FunctionType) -> list[str] | None:
    """Names `func`'s body calls with its own ``*args`` and ``**kwargs`` (after, at most, its
    own leading parameters), from its source; None where that is not available."""
    tree = _def_of(func)
    if tree is None:
        return None
    star, dstar, lead = _stars(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if _hands_all(node, star, dstar, lead):
                out.append(node.func.id)
    return out


def _hands_all(call: ast.Call, star: str | None, dstar: str | None, lead: set[str]) -> bool:
    args = list(call.args)
    while args and isinstance(args[0], ast.Name) and args[0].id in lead:
        args = args[1:]
    want_star = [] if star is None else [star]
    got_star = [_name_id(a.value) for a in args if isinstance(a, ast.Starred)]
    if len(args) != len(want_star) or got_star != want_star:
        return False
    kws = call.keywords
    if dstar is None:
        return not kws
    return len(kws) == 1 and kws[0].arg is None and _name_id(kws[0].value) == dstar


def _name_id(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _hands_on(func: Any, name: str, lead: bool = True) -> bool:
    """`func` calls ``super().<name>(*args, **kwargs)`` and uses its ``*args``/``**kwargs`` for
    nothing else: what it accepts is what the next class's `name` accepts. ``lead=False``: its
    own leading parameters are not handed on (the call is ``(*args, **kwargs)`` alone)."""
    if not isinstance(func, types.FunctionType):
        return False
    tree = _def_of(func)
    if tree is None:
        return False
    star, dstar, params = _stars(tree)
    leads = params if lead else {"self"}
    hits, uses = 0, 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in (star, dstar):
            uses += 1
        if _super_call(node, name) and _hands_all(node, star, dstar, leads - {"self"}):
            hits += 1
    return hits == 1 and uses == (star is not None) + (dstar is not None)


def _super_call(node: ast.AST, name: str) -> TypeGuard[ast.Call]:
    """``node`` is a call ``super().<name>(...)``."""
    f = getattr(node, "func", None)
    return (
        isinstance(node, ast.Call)
        and isinstance(f, ast.Attribute)
        and f.attr == name
        and isinstance(f.value, ast.Call)
        and _name_id(f.value.func) == "super"
    )


def _own_keys(func: Any) -> dict[str, Any] | None:
    """The keywords ``func`` reads out of its own ``**kwargs`` before its one
    ``super().__init__(*args, **kwargs)`` (``_signature_keys.py``), or None."""
    if not isinstance(func, types.FunctionType):
        return None
    tree = _def_of(func)
    if tree is None:
        return None
    star, dstar, _ = _stars(tree)
    if dstar is None:
        return None
    hands = [
        n
        for n in ast.walk(tree)
        if _super_call(n, "__init__") and _hands_all(n, star, dstar, set())
    ]
    return own_keywords(tree, star, dstar, hands[0]) if len(hands) == 1 else None


@functools.lru_cache(maxsize=512)
def source_tree(fn: Callable[..., Any]) -> ast.Module | None:
    """The parsed source of ``fn``, or None where it cannot be read; cached: the resolver reads
    the same constructors again for every form, and the forms' readers hand their values to the
    same few functions (a layer registry's)."""
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None


def _def_of(func: types.FunctionType) -> ast.FunctionDef | None:
    tree = source_tree(func)
    node = tree.body[0] if tree is not None and tree.body else None
    return node if isinstance(node, ast.FunctionDef) else None


def _stars(tree: ast.FunctionDef) -> tuple[str | None, str | None, set[str]]:
    """A definition's ``*args`` and ``**kwargs`` names and its leading parameters' names."""
    a = tree.args
    star = a.vararg.arg if a.vararg else None
    dstar = a.kwarg.arg if a.kwarg else None
    return star, dstar, {x.arg for x in [*a.posonlyargs, *a.args]}


# --- signature arithmetic ----------------------------------------------------------------------


def _partial(
    sig: inspect.Signature, args: tuple[Any, ...], kw: dict[str, Any]
) -> inspect.Signature:
    """`sig` with `args` and `kw` given in advance, as ``functools.partial`` gives them:
    ``inspect`` does the arithmetic on a stand-in carrying `sig`."""

    def stand_in(*a: Any, **k: Any) -> None: ...

    stand_in.__signature__ = sig  # type: ignore[attr-defined]
    try:
        return inspect.signature(functools.partial(stand_in, *args, **kw))
    except ValueError as e:
        raise SignatureUnknown(f"the partial's arguments do not fit {sig} ({e})") from e


def _split_first(sig: inspect.Signature) -> tuple[list[inspect.Parameter], inspect.Signature]:
    params = list(sig.parameters.values())
    if params and params[0].kind in _POSITIONAL:
        return params[:1], sig.replace(parameters=params[1:])
    return [], sig


def _drop_first(sig: inspect.Signature) -> inspect.Signature:
    """Without ``self``: what a bound method or a class call takes."""
    return _split_first(sig)[1]


def _name_in(owner: Any, func: Callable[..., Any]) -> str | None:
    """The attribute name `func` is found under on `owner`'s class (a wrapper keeps its own)."""
    for klass in type(owner).__mro__:
        for key, value in vars(klass).items():
            if value is func:
                return key
    return None


def _name(obj: Any) -> str:
    return getattr(obj, "__qualname__", None) or type(obj).__qualname__
