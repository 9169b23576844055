"""Source: a dict config read by constant string keys (``cfg["stem_w"]``, ``cfg.get("block", "x")``,
``hparams["encoder"]["z_size"]``), the keys' counterpart of a namespace read by its fields.

A hand-written constructor often takes its hyperparameters as one plain dict and keeps nothing of
it: its layers keep what was read. Like a namespace (``nested.py``), such a dict is replaced, for
the search, by one sub-field per key read, made a ``dict`` again for each build; a dict inside it
read by keys too (``cfg["enc"]["dim"]``, or ``dec = cfg["decoder"]`` then ``dec["size"]``) is a
group of its own. Read here:

- ``step``: the reads of one key or field off a set of reads (``usage.py`` follows a path of
  them: ``usage(cls, "cfg", ("decoder", "size"))``), through a name it is bound to once;
- ``keyed``: whether an argument is such a dict (only constant string keys read off it: a
  ``cfg.x`` beside a ``cfg["y"]``, a ``**cfg`` or a ``cfg.items()`` leaves it whole);
- ``Keys``: what the keys of one level are, in the order read, with what each stands for where
  it is left out.

Decisions, where the code read cannot say:

- ``cfg.get("k", d)``: ``d`` is the sub-field's default, and the key is always put in the dict
  made (its value ``d`` unless the search moves it): a constructor that reads it by ``get``
  builds the same either way, and the form then shows the knob.
- a key read only inside a ``raise`` statement is left out: a build that succeeds never reads it
  (a key read in an ``assert``'s test is read by every build, and is a sub-field like any other).
- a key read under ``if "k" in cfg`` (or tested so anywhere) is optional: its sub-field's None
  stands for "left out of the dict" (``Keys.optional``), since its presence alone may change the
  layers made.
- a dict handed on whole with ``**`` to a class (``Encoder(n, **cfg["encoder"])``) holds the
  class's parameters that the call does not give otherwise, each with the class's default: the
  keys a person could have put there (the ones equal to their default build the same left out).
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from ..._signature import resolve
from ..._unwrap import torch_own
from .code import Code, bound, code_of, resolved

__all__ = ["Keys", "key_of", "keys_of", "reads_at", "step", "table_keys"]

_MISSING = inspect.Parameter.empty


def key_of(node: ast.AST) -> str | None:
    """A constant string key (``"k"``), or None."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _read_of(node: ast.AST, up: dict[ast.AST, ast.AST], name: str) -> ast.AST | None:
    """The expression that reads ``name`` off ``node``: ``node.name``, ``node["name"]`` or
    ``node.get("name", ...)``; None where ``node`` is used otherwise."""
    parent = up.get(node)
    if isinstance(parent, ast.Attribute) and parent.value is node:
        call = up.get(parent)
        if parent.attr == "get" and isinstance(call, ast.Call) and call.func is parent:
            return call if call.args and key_of(call.args[0]) == name else None
        return parent if parent.attr == name else None
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return parent if key_of(parent.slice) == name else None
    return None


def _aliased(node: ast.AST, code: Code) -> list[ast.AST]:
    """``dec = cfg["decoder"]`` (or ``enc, dec = cfg["encoder"], cfg["decoder"]``): the loads of
    ``dec`` (bound once, never rebound) stand for the read; the read itself otherwise."""
    parent, t = code.up.get(node), None
    if isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1:
        t = parent.targets[0]
    elif isinstance(parent, ast.Tuple) and isinstance(at := code.up.get(parent), ast.Assign):
        target = at.targets[0] if len(at.targets) == 1 and at.value is parent else None
        if isinstance(target, ast.Tuple) and len(target.elts) == len(parent.elts):
            t = target.elts[parent.elts.index(node)]  # type: ignore[arg-type]
    if isinstance(t, ast.Name) and _stored(code, t.id) == 1:
        return list(code.loads.get(t.id, ()))
    return [node]


def _stored(code: Code, name: str) -> int:
    """How many times the function binds ``name``."""
    return sum(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ast.walk(code.tree)
    )


def step(code: Code, nodes: list[ast.AST], name: str) -> list[ast.AST]:
    """The reads of the field or key ``name`` off ``nodes`` (see ``_read_of``), through a name
    each is bound to once."""
    out: list[ast.AST] = []
    for n in nodes:
        read = _read_of(n, code.up, name)
        if read is not None:
            out += _aliased(read, code)
    return out


def _raised(node: ast.AST, up: dict[ast.AST, ast.AST]) -> bool:
    """Whether ``node`` is read only when an error is raised: in a ``raise`` or an ``assert``'s
    message."""
    at: ast.AST | None = node
    while at is not None and not isinstance(at, ast.stmt):
        parent = up.get(at)
        if isinstance(parent, ast.Assert) and parent.msg is at:
            return True
        at = parent
    return isinstance(at, ast.Raise)


def _tested(node: ast.AST, up: dict[ast.AST, ast.AST]) -> str | None:
    """``"k" in node`` / ``"k" not in node``: the key tested."""
    parent = up.get(node)
    if (
        isinstance(parent, ast.Compare)
        and len(parent.ops) == 1
        and isinstance(parent.ops[0], (ast.In, ast.NotIn))
        and parent.comparators[0] is node
    ):
        return key_of(parent.left)
    return None


@dataclass
class Keys:
    """One level of a dict read by keys: its keys in the order read, each one's default where a
    ``get`` or a class it is spread into names one, the optional ones (None: left out), and for
    a dict spread with ``**`` into a class, that class and its parameter per key (``spread``)."""

    names: list[str] = field(default_factory=list)
    defaults: dict[str, Any] = field(default_factory=dict)
    optional: set[str] = field(default_factory=set)
    spread: dict[str, tuple[type, str]] = field(default_factory=dict)
    other: bool = False  # used otherwise too (a field, a method, iterated, **x into a function)
    # Handed whole to a class of the user's (``QFormerLayer(cfg, i)``): the class and its
    # parameter, whose own reads are the dict's too (``nested.py`` reads them).
    handed: list[tuple[type, str]] = field(default_factory=list)


def _handed_whole(node: ast.AST, code: Code) -> tuple[type, str] | None:
    """``Block(cfg, i)`` / ``Block(config=cfg)``: the class of the user's (a module, not
    torch's) the dict is handed to whole, and the parameter it is bound to."""
    parent = code.up.get(node)
    call = code.up.get(parent) if isinstance(parent, ast.keyword) and parent.arg else parent
    if not isinstance(call, ast.Call) or call.func is node:
        return None
    callee = resolved(call.func, code.scope)
    if not (isinstance(callee, type) and issubclass(callee, nn.Module)):
        return None
    if torch_own(callee):
        return None
    got = bound(call, node, callee)
    return (callee, got[0]) if got is not None and got[1] < 0 else None


def _spread_into(call: ast.Call, code: Code) -> tuple[type, list[inspect.Parameter]] | None:
    """The class ``Cls(..., **x)`` makes and its parameters the call does not give otherwise."""
    callee = resolved(call.func, code.scope)
    if not isinstance(callee, type):
        return None
    try:
        params = list(resolve(callee).parameters.values())
    except (TypeError, ValueError):
        return None
    if (
        any(isinstance(a, ast.Starred) for a in call.args)
        or sum(k.arg is None for k in call.keywords) != 1
    ):
        return None
    given = {k.arg for k in call.keywords if k.arg is not None}
    rest = [
        p
        for i, p in enumerate(params)
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and not (i < len(call.args) and p.kind == p.POSITIONAL_OR_KEYWORD)
        and p.name not in given
    ]
    return callee, rest


def keys_of(code: Code, nodes: list[ast.AST]) -> Keys:
    """The keys read off ``nodes`` (the reads of one dict, ``step``'s), see ``Keys``."""
    k = Keys()
    read: dict[str, bool] = {}  # key -> read outside an error's path too
    for n in sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        parent = code.up.get(n)
        tested = _tested(n, code.up)
        if tested is not None:
            k.optional.add(tested)
            continue
        if isinstance(parent, ast.keyword) and parent.arg is None:
            call = code.up.get(parent)
            got = _spread_into(call, code) if isinstance(call, ast.Call) else None
            if got is None:
                k.other = True
                continue
            for p in got[1]:
                read.setdefault(p.name, True)
                k.spread[p.name] = (got[0], p.name)
                if p.default is not _MISSING:
                    k.defaults.setdefault(p.name, p.default)
            continue
        name = None
        if (whole := _handed_whole(n, code)) is not None:
            k.handed.append(whole)
            continue
        if isinstance(parent, ast.Subscript) and parent.value is n:
            name = key_of(parent.slice)
        elif isinstance(parent, ast.Attribute) and parent.value is n and parent.attr == "get":
            call = code.up.get(parent)
            if isinstance(call, ast.Call) and call.func is parent and call.args:
                name = key_of(call.args[0])
                if name is not None and len(call.args) > 1:
                    try:
                        k.defaults.setdefault(name, ast.literal_eval(call.args[1]))
                    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                        k.other = True  # a default computed: not a value a field can show
                elif name is not None:
                    k.defaults.setdefault(name, None)
        if name is None:
            k.other = True
            continue
        read[name] = read.get(name, False) or not _raised(parent or n, code.up)
    k.names = [n for n, outside in read.items() if outside]
    k.names += [n for n in k.optional if n not in read]
    return k


def table_keys(code: Code, nodes: list[ast.AST]) -> tuple[str, ...]:
    """``BLOCKS[cfg.get("block", "x")]``: the string keys of the dict the reads ``nodes`` look
    up, where it is a name of the constructor's module (the key's choices)."""
    for n in nodes:
        parent = code.up.get(n)
        if isinstance(parent, ast.Subscript) and parent.slice is n:
            table = resolved(parent.value, code.scope)
            if isinstance(table, dict) and table and all(isinstance(k, str) for k in table):
                return tuple(table)
    return ()


def reads_at(cls: type, param: str, path: tuple[str, ...]) -> tuple[Code, list[ast.AST]] | None:
    """The reads of ``param.path`` (fields or keys, ``step``) in ``cls.__init__``."""
    init = cls.__dict__.get("__init__")
    code = code_of(init) if inspect.isfunction(init) else None
    if code is None or cls.__module__.startswith("torch."):
        return None
    nodes: list[ast.AST] = list(code.loads.get(param, ()))
    for name in path:
        nodes = step(code, nodes, name)
    return code, nodes
