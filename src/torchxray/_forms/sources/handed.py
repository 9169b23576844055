"""A ``**kwargs`` handed on to a layer (``nn.Conv2d(in_channels, out_channels, bias=False,
**kwargs)``): the values the layer that call made holds, less what the call passes itself, read
from the layer's own exact form. The search's first build proves them."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator
from typing import Any

from torch import nn

from ..._signature import original, resolve
from ..values import same
from .base_init import base_kwargs
from .literals import source_tree

__all__ = ["NOT_PASSED", "handed", "is_default", "kept_whole", "spread_bare", "spread_calls"]

NOT_PASSED = ("device", "dtype")


def is_default(value: Any, default: Any) -> bool:
    # torch keeps sizes expanded: dilation (1, 1) is the default 1.
    if type(value) is tuple and value and type(default) is int:
        return all(type(x) is int and x == default for x in value)
    return same(value, default)


# (callee's last name, positional count, keyword names, the ``self.<attr>`` the call is kept
# under or "")
_Call = tuple[str, int, frozenset[str], str]
LATER = -1  # the positional values come with a later call (``partial``): the required ones


def spread_calls(cls: type, name: str) -> tuple[_Call, ...]:
    """(callee's last name, positional count, keyword names, attribute kept under) of each call in
    ``cls.__init__`` that passes ``**name``."""
    return _spread_calls(cls).get(name, ())


@functools.lru_cache(maxsize=512)
def _spread_calls(cls: type) -> dict[str, tuple[_Call, ...]]:
    """``_calls`` of every name ``cls.__init__`` spreads, read in one walk of its tree (asked of
    every argument the search guesses)."""
    tree = source_tree(original(cls.__init__))  # type: ignore[misc]
    out: dict[str, tuple[_Call, ...]] = {}
    kept = _kept_under(tree)
    for node in ast.walk(tree) if tree is not None else ():
        if not isinstance(node, ast.Call):
            continue
        names = {n for k in node.keywords if k.arg is None and (n := _spread(k.value))}
        if not names:
            continue
        callee = _last_name(node.func)
        named = frozenset(k.arg for k in node.keywords if k.arg is not None)
        # A ``*args`` spread alongside passes nothing of its own (the form's args are empty):
        # the layer's positional values are handed by keyword.
        fixed = [a for a in node.args if not isinstance(a, ast.Starred)]
        count = len(fixed)
        if callee == "partial" and fixed:
            # ``partial(Block, **cfg)`` called later with the positional values: the class is
            # the partial's first argument; how many values the later call passes is not read
            # (the required ones come from it, ``LATER``).
            callee, count = _last_name(fixed[0]), LATER
        for n in names:
            out[n] = (*out.get(n, ()), (callee, count, named, kept.get(id(node), "")))
    return out


def _kept_under(tree: ast.AST | None) -> dict[int, str]:
    """The attribute each call assigned straight to ``self.<attr>`` is kept under, by the call
    node's id: the layer a call made whose class has no name to find it by (``self.head =
    HEADS[kind](d, n, **kw)``, a class looked up in a table) is the module's attribute."""
    out: dict[int, str] = {}
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for t in node.targets:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                ):
                    out[id(node.value)] = t.attr
    return out


@functools.lru_cache(maxsize=512)
def _others(cls: type, name: str) -> dict[str, tuple[dict[str, Any], ...]]:
    """The constant keywords of each call in ``cls.__init__`` that does not spread ``**name``, by
    callee: ``Encoder(in_ch, out, apply_pooling=False)`` beside ``Encoder(..., **kwargs)`` in the
    other branch of ``if i == 0``."""
    tree = source_tree(original(cls.__init__))  # type: ignore[misc]
    out: dict[str, tuple[dict[str, Any], ...]] = {}
    for node in ast.walk(tree) if tree is not None else ():
        if not isinstance(node, ast.Call) or any(
            k.arg is None and _spread(k.value) == name for k in node.keywords
        ):
            continue
        lits = {
            k.arg: k.value.value
            for k in node.keywords
            if k.arg is not None and isinstance(k.value, ast.Constant)
        }
        if lits:
            callee = _last_name(node.func)
            out[callee] = (*out.get(callee, ()), lits)
    return out


def _by_other(form: Any, calls: tuple[dict[str, Any], ...]) -> bool:
    """Whether a layer's form holds every constant keyword another call of its class passes
    (``apply_pooling=False``): that call, not the one spreading the keywords, likely made it, and
    its keywords are no part of them."""
    fields = {x.name: x for x in form.fields}

    def made_by(lits: dict[str, Any]) -> bool:
        # A keyword at its default tells no call from another (every layer holds it).
        told = [k for k, v in lits.items() if k in fields and not is_default(v, fields[k].default)]
        return bool(told) and all(k in fields and same(fields[k].value, v) for k, v in lits.items())

    return any(made_by(lits) for lits in calls)


@functools.lru_cache(maxsize=512)
def spread_bare(cls: type, name: str) -> bool:
    """Whether ``cls.__init__`` spreads ``**name`` itself (not ``**(name or {})``): a layer that
    call made says the argument was no None."""
    tree = source_tree(original(cls.__init__))  # type: ignore[misc]
    return any(
        isinstance(node, ast.Call)
        and any(
            k.arg is None and isinstance(k.value, ast.Name) and k.value.id == name
            for k in node.keywords
        )
        for node in (ast.walk(tree) if tree is not None else ())
    )


def _last_name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _spread(value: ast.AST) -> str:
    """The name spread by ``**name`` or ``**(name or {})`` (an unset dict of keywords read as
    empty); "" for anything else."""
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and value.values:
        value = value.values[0]
    return value.id if isinstance(value, ast.Name) else ""


@functools.lru_cache(maxsize=512)
def _read(cls: type, name: str) -> frozenset[str]:
    """The keys ``cls.__init__`` reads from the dict ``name`` itself (``name.get('norm_layer')``,
    ``name['k']``, ``name.pop('k', None)``): a default value there is read, so it was passed."""
    tree = source_tree(original(cls.__init__))  # type: ignore[misc]
    if tree is None:
        return frozenset()
    out = set()
    for node in ast.walk(tree):
        key: ast.AST | None = None
        if isinstance(node, ast.Subscript) and _named(node.value, name):
            key = node.slice
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop")
            and _named(node.func.value, name)
            and node.args
        ):
            key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            out.add(key.value)
    return frozenset(out)


def _named(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def handed(
    cls: type, module: nn.Module, name: str, form: Callable[[nn.Module], Any], every: bool = False
) -> dict[str, Any] | None:
    """The keywords ``**name`` most likely held, or None when no call of ``cls`` hands it on to
    a child layer whose form is exact; ``every``: those at their defaults too."""
    calls = spread_calls(cls, name)
    if not calls:
        return None
    if (own := base_kwargs(cls, module, name)) is not None:
        return own  # handed to a torch base's __init__: read off the module (base_init.py)
    try:
        params = resolve(cls).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    for callee, positional, named, attr in calls:
        for child in _made(module, callee, callee in params, attr):
            try:
                f = form(child)
            except Exception:  # noqa: BLE001 - a layer without a readable form tells nothing
                continue
            if f.inexact or _by_other(f, _others(cls, name).get(callee, ())):
                continue
            plain = [x for x in f.fields if not x.group and x.kind not in ("varargs", "varkw")]
            covered = {x.name for x in plain[: max(positional, 0)]} | named
            if positional == LATER:
                covered |= {x.name for x in plain if x.required}
            read = _read(cls, name)
            out = {
                x.name: x.value
                for x in plain
                if x.name not in covered
                and x.name not in NOT_PASSED
                and (every or x.required or x.name in read or not is_default(x.value, x.default))
            }
            # The layer's own ``**kwargs`` handed on deeper (``Block(d, **kw)`` whose
            # ``**op_kwargs`` reach its mixer): what they hold was handed here too.
            for x in f.fields:
                if x.kind == "varkw" and type(x.value) is dict:
                    out.update({k: v for k, v in x.value.items() if k not in covered})
            return out
    return None


def _made(module: nn.Module, callee: str, held: bool, attr: str = "") -> Iterator[nn.Module]:
    """The layers a call of ``callee`` may have made: children of its class's name, and the
    items of the containers the module holds (``nn.ModuleList([Block(d, **kwargs) for _ in
    range(depth)])``) of that name; for a factory a parameter holds (``block_fn(...)`` in a
    loop), any item of those containers (the blocks it filled); for a class with no name in the
    call (``HEADS[kind](...)``, ``callee`` ""), the layer kept under ``attr``."""
    if not callee:
        child = module._modules.get(attr) if attr else None
        if child is not None:
            yield child
        return
    near: list[nn.Module] = []
    for child in module.children():
        if type(child).__name__ == callee:
            near.append(child)
        elif isinstance(child, (nn.Sequential, nn.ModuleList, nn.ModuleDict)):
            near += [c for c in child.children() if held or type(c).__name__ == callee]
    yield from near
    # A factory handed on (``partial(Block, **cfg)`` given to a stage) makes its layers deeper;
    # those above are not offered twice.
    seen = {id(m) for m in near} | {id(module)}
    yield from (m for m in module.modules() if id(m) not in seen and type(m).__name__ == callee)


def kept_whole(module: nn.Module, use: Any) -> dict[str, Any] | None:
    """``self.kwargs = kwargs``: the dict a ``**kwargs`` kept whole under an attribute holds (a
    copy), where the constructor keeps it so (``use``: its ``usage.Usage``) and nothing else."""
    for attr in use.kept:
        value = module.__dict__.get(attr)
        if type(value) is dict and value and all(isinstance(k, str) for k in value):
            return dict(value)
    return None
