"""A constructor's source as ``usage.py`` reads it: the tree, each node's parent, the names each
parameter is read under and the names its code sees (``code_of``, read once per function), and the
questions asked of an expression there (which object a callee names, which parameter a call hands
a value to, which attribute keeps a call's result or an unpacked item)."""

from __future__ import annotations

import ast
import builtins
import functools
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..._signature import resolve, source_tree

__all__ = [
    "NUMBER_OPS", "Code", "annotation_of", "attrs_of", "bound", "code_of", "conditional",
    "constant_index", "counted", "func_name", "global_table", "is_name", "other_operand",
    "ranged", "rebound_literals",
    "kept_items", "kept_under", "names_of", "offset_of", "param_names", "resolved", "table_of",
    "truth_test",
]  # fmt: skip


def conditional(node: ast.AST, up: dict[ast.AST, ast.AST]) -> bool:
    """Whether ``node`` runs only on some calls: under an ``if`` or in a ``try`` that handles
    errors (``try: ph, pw = patch`` / ``except TypeError: ph = pw = patch`` takes an int too)."""
    at = up.get(node)
    while at is not None and not isinstance(at, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(at, (ast.If, ast.IfExp)) or (isinstance(at, ast.Try) and at.handlers):
            return True
        at = up.get(at)
    return False


def is_name(node: ast.AST | None, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def resolved(node: ast.AST, scope: dict[str, Any]) -> Any:
    """The object a callee's expression names (``nn.Conv1d``, ``Generator``), or None."""
    if isinstance(node, ast.Name):
        return scope.get(node.id, getattr(builtins, node.id, None))
    if isinstance(node, ast.Attribute):
        owner = resolved(node.value, scope)
        if isinstance(owner, (types.ModuleType, type)):
            return getattr(owner, node.attr, None)
    return None


def func_name(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "math":
        return "math"
    return ""


def kept_under(call: ast.Call, up: dict[ast.AST, ast.AST]) -> str:
    """The attribute ``self.X`` whose layer holds a call's result: the nearest assignment to
    ``self.X`` around it (``self.conv1 = weight_norm(nn.Conv1d(...))``, ``self.net =
    nn.Sequential(nn.Linear(...), ...)``), a call of a method of ``self.X`` around it
    (``self.layers.append(...)``) or the name given to ``self.add_module("name", ...)``."""
    node: ast.AST = call
    parent = up.get(node)
    while parent is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute):
            owner = parent.func.value
            if isinstance(owner, ast.Attribute) and is_name(owner.value, "self"):
                return owner.attr  # self.layers.append(...)
            if (
                is_name(owner, "self")
                and parent.func.attr == "add_module"
                and parent.args
                and isinstance(parent.args[0], ast.Constant)
                and isinstance(parent.args[0].value, str)
            ):
                return parent.args[0].value
        node, parent = parent, up.get(parent)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        t = parent.targets[0]
        if isinstance(t, ast.Attribute) and is_name(t.value, "self"):
            return t.attr
    return _gathered(node, parent, up)


def _gathered(node: ast.AST, stmt: ast.AST | None, up: dict[ast.AST, ast.AST]) -> str:
    """``layers += [nn.Linear(a, b), act()]`` / ``layers.append(...)`` and later ``self.net =
    nn.Sequential(*layers)``: the attribute the local list is spread into, where one is."""
    name = ""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        name = stmt.target.id
    elif isinstance(stmt, ast.Expr) and isinstance(call := stmt.value, ast.Call):
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr in ("append", "extend"):
            name = f.value.id if isinstance(f.value, ast.Name) else ""
    root: ast.AST | None = stmt
    while root is not None and not isinstance(root, ast.FunctionDef):
        root = up.get(root)
    if not name or root is None:
        return ""
    kept = {
        a.targets[0].attr
        for a in ast.walk(root)
        if isinstance(a, ast.Assign)
        and len(a.targets) == 1
        and isinstance(a.targets[0], ast.Attribute)
        and is_name(a.targets[0].value, "self")
        and any(isinstance(s, ast.Starred) and is_name(s.value, name) for s in ast.walk(a.value))
    }
    return kept.pop() if len(kept) == 1 else ""


def bound(
    call: ast.Call, what: ast.AST | str, callee: Any, into_kwargs: bool = False
) -> tuple[str, int] | None:
    """The parameter of ``callee`` that ``call`` hands ``what`` to (a node of the call, or a
    bare name), with its place among the values a ``*args`` parameter collects (-1 for a
    parameter of its own). With ``into_kwargs``, a keyword no parameter takes that ``**kwargs``
    collects gives its own name (``MoELayer(d, act=act)`` into ``**expert_kw``: ``"act"``)."""

    def given(a: ast.AST) -> bool:
        return is_name(a, what) if isinstance(what, str) else a is what

    try:
        # The one resolver (through wrappers), not stage 1: a source never calls back.
        sig = resolve(callee)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            return None  # positions after a *spread are unknown
        if not given(a):
            continue
        if i < len(params) and params[i].kind <= params[i].POSITIONAL_OR_KEYWORD:
            return params[i].name, -1
        spread = [j for j, p in enumerate(params[: i + 1]) if p.kind == p.VAR_POSITIONAL]
        if spread:
            return params[spread[0]].name, i - spread[0]
    collects = into_kwargs and any(p.kind == p.VAR_KEYWORD for p in params)
    for k in call.keywords:
        if k.arg is not None and given(k.value) and (k.arg in sig.parameters or collects):
            return k.arg, -1
    return None


def table_of(node: ast.AST, scope: dict[str, Any]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The constant keys of a dict literal, and the objects its values name (None where a value
    is an expression)."""
    if not isinstance(node, ast.Dict):
        return (), ()
    keys, values = [], []
    for k, v in zip(node.keys, node.values):
        if not isinstance(k, ast.Constant):
            return (), ()
        keys.append(k.value)
        values.append(resolved(v, scope) if v is not None else None)
    return tuple(keys), tuple(values)


_TABLE_KEYS = (bool, int, float, str)
MAX_TABLE = 64  # keys of a module's own table of configurations read as a parameter's choices


def global_table(node: ast.AST, code: Code) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The keys and values of a dict the constructor's module defines (``configs[net_size]``,
    ``configs = {0.5: {...}, 1: {...}}`` beside the class), where ``node`` names one no local
    name shadows, its keys are plain constants and no two of its entries are equal; ``((), ())``
    otherwise."""
    if (
        isinstance(node, ast.Attribute)
        and is_name(node.value, "self")
        and isinstance(owner := code.scope.get("__class__"), type)
    ):
        # A table the class defines (``self.POOLS[pool]``): the class a zero-argument
        # ``super()`` names, its attribute as the class holds it.
        table = next((vars(k)[node.attr] for k in owner.__mro__ if node.attr in vars(k)), None)
    elif not isinstance(node, ast.Name) or node.id in code.stores:
        return (), ()
    else:
        table = code.scope.get(node.id)
    if not isinstance(table, dict) or not 0 < len(table) <= MAX_TABLE:
        return (), ()
    if not all(type(k) in _TABLE_KEYS for k in table):
        return (), ()
    # Two keys of one entry rebuild alike: neither could be told from the other, so none is read.
    values = list(table.values())
    try:
        if any(a == b for i, a in enumerate(values) for b in values[i + 1 :]):
            return (), ()
    except Exception:  # noqa: BLE001 - entries that cannot be compared (arrays): not read
        return (), ()
    return tuple(table), tuple(values)


def names_of(target: ast.AST) -> tuple[str, ...]:
    elts = getattr(target, "elts", [])
    names = tuple(e.id for e in elts if isinstance(e, ast.Name))
    return names if len(names) == len(elts) else ()


def kept_items(tree: ast.AST, names: tuple[str, ...]) -> tuple[str, ...]:
    """The attributes that keep each of ``names`` (``self.ph, self.pw = ph, pw``), in their
    order; () unless every one is kept."""
    kept: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        t, v = node.targets[0], node.value
        pairs = (
            list(zip(t.elts, v.elts))
            if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts)
            else [(t, v)]
        )
        for target, value in pairs:
            if (
                isinstance(target, ast.Attribute)
                and is_name(target.value, "self")
                and isinstance(value, ast.Name)
                and value.id in names
            ):
                kept.setdefault(value.id, target.attr)
    return tuple(kept[n] for n in names) if all(n in kept for n in names) else ()


def attrs_of(target: ast.Tuple | ast.List) -> tuple[str, ...]:
    """The attributes ``self.a, self.b = x`` keeps the items under; () unless each is one."""
    out = tuple(
        t.attr for t in target.elts if isinstance(t, ast.Attribute) and is_name(t.value, "self")
    )
    return out if len(out) == len(target.elts) else ()


def offset_of(key: ast.AST) -> int | None:
    """The place an index names against a loop's variable: ``x[i]`` 0, ``x[i + 1]`` 1,
    ``x[i - 1]`` -1; None for a constant or any other index."""
    if isinstance(key, ast.Name):
        return 0
    if (
        isinstance(key, ast.BinOp)
        and isinstance(key.op, (ast.Add, ast.Sub))
        and isinstance(key.left, ast.Name)
        and isinstance(key.right, ast.Constant)
        and type(key.right.value) is int
    ):
        return key.right.value if isinstance(key.op, ast.Add) else -key.right.value
    return None


def constant_index(key: ast.AST) -> bool:
    """``x[0]``, ``x[-1]``: a constant whole-number index, which a sequence takes (a dict keyed
    by numbers would too; a number never, and the search offers a sequence for it)."""
    if isinstance(key, ast.UnaryOp) and isinstance(key.op, ast.USub):
        key = key.operand
    return isinstance(key, ast.Constant) and type(key.value) is int


def param_names(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The names of ``fn``'s parameters, ``self`` too (never one a sum reads)."""
    c = fn.__code__
    return c.co_varnames[: c.co_argcount + c.co_kwonlyargcount]


def annotation_of(cls: type, param: str) -> Any:
    try:
        return resolve(cls).parameters[param].annotation
    except (TypeError, ValueError, KeyError):
        return None


@dataclass(frozen=True)
class Code:
    """A function's source read once for all its parameters: its tree, each node's parent, the
    names each parameter is read under, and the names its code sees (its module's, its closure's,
    and what it imports itself from modules already loaded: ``from transformers import
    CLIPVisionModel``; reading the code imports nothing)."""

    tree: ast.AST
    up: dict[ast.AST, ast.AST]
    loads: dict[str, list[ast.Name]]
    scope: dict[str, Any]
    # The values assigned to each bare name (``x = [False, False]``), in the source's order.
    stores: dict[str, list[ast.expr]]


@functools.lru_cache(maxsize=512)
def code_of(fn: Callable[..., Any]) -> Code | None:
    tree = source_tree(fn)
    if tree is None:
        return None
    scope: dict[str, Any] = dict(getattr(fn, "__globals__", {}))
    closure = getattr(fn, "__closure__", None) or ()
    for var, cell in zip(fn.__code__.co_freevars, closure):
        try:
            scope[var] = cell.cell_contents
        except ValueError:
            pass
    up: dict[ast.AST, ast.AST] = {}
    loads: dict[str, list[ast.Name]] = {}
    stores: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            up[child] = node
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads.setdefault(node.id, []).append(node)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            if isinstance(node.targets[0], ast.Name):
                stores.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            loaded = sys.modules.get(node.module)
            for alias in node.names if loaded is not None else ():
                if hasattr(loaded, alias.name):
                    scope[alias.asname or alias.name] = getattr(loaded, alias.name)
    return Code(tree, up, loads, scope, stores)


def truth_test(node: ast.AST, parent: ast.AST | None) -> bool:
    """``if x:``, ``a if x else b``, ``not x``: the argument taken as a truth (``x or {}`` is a
    default for a value of any kind, not a flag)."""
    if isinstance(parent, (ast.If, ast.IfExp, ast.While)):
        return parent.test is node
    return isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)


NUMBER_OPS = (ast.FloorDiv, ast.Div, ast.Sub, ast.Mod, ast.Pow)


def ranged(node: ast.AST, parent: ast.AST | None, up: dict[ast.AST, ast.AST]) -> int | None:
    """``k`` where the argument is the count of a loop ``range(x - k)`` (``range(x)``: 0), the
    loop making one layer a turn as often as not; None else."""
    k = 0
    if (
        isinstance(parent, ast.BinOp)
        and isinstance(parent.op, ast.Sub)
        and parent.left is node
        and isinstance(parent.right, ast.Constant)
        and type(parent.right.value) is int
    ):
        k, node, parent = parent.right.value, parent, up.get(parent)
    if (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id == "range"
        and parent.args == [node]
    ):
        return k
    return None


def rebound_literals(values: Iterable[ast.expr]) -> tuple[Any, ...]:
    """The literal lists, tuples and numbers the constructor sets the parameter to itself
    (``if x is None: x = [False, False, False]``, the value an unset argument stands for)."""
    out: list[Any] = []
    for node in values:
        try:
            value = ast.literal_eval(node)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, (list, tuple, bool, int, float)) and value not in out:
            out.append(value)
    return tuple(out)


def other_operand(op: ast.BinOp, node: ast.AST) -> ast.AST:
    return op.right if op.left is node else op.left


def counted(op: ast.BinOp, node: ast.AST) -> bool:
    """``x + 1``, ``x + i * k`` (a sequence adds only sequences), ``[0.0] * x`` (a count of
    items) and ``x * 0.5`` (a sequence repeats by a whole number only)."""
    other = other_operand(op, node)
    if isinstance(op.op, ast.Add):
        number = isinstance(other, ast.Constant) and type(other.value) in (int, float)
        return (
            number or isinstance(other, ast.BinOp) and isinstance(other.op, (ast.Mult, *NUMBER_OPS))
        )
    if isinstance(op.op, ast.Mult):
        if isinstance(other, (ast.List, ast.Tuple)):
            return True
        return isinstance(other, ast.Constant) and type(other.value) is float
    return False
