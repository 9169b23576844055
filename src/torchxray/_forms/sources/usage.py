"""Source: how ``__init__`` uses each argument, read from its AST before a value's kind is chosen.

A hand-written constructor says what it was given by what it does with it, where no annotation
does: ``a, b = size`` takes a pair, ``for c in tokens`` and ``len(labels)`` a sequence,
``range(n_layer)`` and ``math.log2(img_size)`` a number, ``args.n_embd`` an object with that
field, ``cfg["encoder"]`` a dict, ``{"batch": ..., "layer": ...}[norm]`` one of those keys,
``self.chars = tokens`` keeps it under another name, ``nn.Conv1d(n_inputs, ...)`` hands it to
a layer whose own form holds it (``passed.py`` reads those layers), and ``if flags is None: flags
= [False, False, False]`` says the kind and length of the value it takes where it is given. ``usage(cls, name)`` reads
that once per class and parameter into a ``Usage``; ``fits(usage, value)`` says whether a value
could be the argument (an int for an argument it iterates could not): the search's candidates
are the sources' readings that fit (``pools.py``).

Read conservatively: a use that both a number and a sequence allow (``x * 2``, ``x + y``,
``x == y``) says nothing, a name rebound in the constructor is read as the argument all along
(its first use is the argument's), and a function of the same file it is handed to is followed
one call deep (a person's helpers: ``pair(image_size)``, ``Normalize(in_channels)``; a library's
are many, and an annotation says more of them).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any

from torch import nn

from .code import (
    NUMBER_OPS,
    Code,
    annotation_of,
    attrs_of,
    bound,
    code_of,
    conditional,
    constant_index,
    counted,
    func_name,
    global_table,
    is_name,
    kept_items,
    kept_under,
    names_of,
    offset_of,
    other_operand,
    ranged,
    rebound_literals,
    resolved,
    table_of,
    truth_test,
)
from .expressions import handed_expressions
from .handed_kind import handed_kind
from .helpers import MAX_HOPS, base_method, local_dict, merged, method_of
from .keyed import key_of, step
from .keyword_dicts import spread, takes
from .local_names import always_called, called_as, local_def, or_empty
from .pairs import in_loop, zipped
from .uses import Handed, Usage, fits  # fits: whether a value could be the argument

__all__ = ["Handed", "Usage", "fits", "usage"]


DEPTH = 2  # calls followed: the constructor, and a function it hands the argument to

# Builtins and math functions that take a number, or iterate a sequence.
_NUMBER_CALLS = frozenset({"range", "int", "float", "round", "abs", "divmod", "math"})
_SEQUENCE_CALLS = frozenset(
    {"len", "enumerate", "zip", "sorted", "reversed", "list", "tuple", "set", "sum", "iter"}
)
_SEQUENCE_METHODS = frozenset({"reverse", "append", "extend", "insert", "index", "count", "sort"})
# Methods only a string has (``rnn_unit.upper()``, ``cfg_text.startswith("spade")``): the
# argument is text, never the class or function a same-named attribute holds.
_TEXT_METHODS = frozenset(
    {
        "upper", "lower", "casefold", "capitalize", "title", "swapcase", "strip", "lstrip",
        "rstrip", "startswith", "endswith", "split", "rsplit", "splitlines", "partition",
        "rpartition", "removeprefix", "removesuffix", "replace", "format", "isdigit",
        "isalpha", "isnumeric", "isalnum", "isupper", "islower", "zfill", "ljust", "rjust",
    }
)  # fmt: skip
_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


_NOTHING = Usage()  # nothing is known (``uses.py``: ``Usage.known``)


class _Reader:
    """One pass over a function's AST for the uses of one parameter."""

    def __init__(
        self, fn: Callable[..., Any], name: str, depth: int, code: Code, path: tuple[str, ...] = ()
    ) -> None:
        self.fn, self.name, self.depth, self.code, self.path = fn, name, depth, code, path
        self.owner: type | None = None  # the class whose helper methods are read (``helpers.py``)
        self.hops = 0
        self.scope = code.scope
        self.kept: list[str] = []
        self.fields: dict[str, None] = {}
        self.keys: dict[str, None] = {}
        self.number = self.sequence = self.measured = self.called = self.tested = False
        self.indexed = False
        self.unpacked = 0
        self.items: tuple[str, ...] = ()  # the names it is unpacked to
        self.table: tuple[tuple[Any, ...], tuple[Any, ...]] = ((), ())
        self.handed: list[Handed] = []
        self.items_handed: list[Handed] = []
        self.unpacks = False
        self.attrs: tuple[str, ...] = ()
        self.within: list[tuple[str, Any]] = []
        self.condition = False
        self.mapping = False
        self.scales = False
        self.text = False
        self.counts: list[int] = []

    def read(self) -> Usage:
        up = self.code.up
        for node in self._nodes():
            self._use(*or_empty(node, up), up)  # x or []: read as x
        items = self.attrs or (kept_items(self.code.tree, self.items) if self.items else ())
        rebound = () if self.path else rebound_literals(self.code.stores.get(self.name, ()))
        return Usage(
            tuple(dict.fromkeys(self.kept)),
            self.number,
            self.sequence,
            self.measured,
            self.unpacked,
            tuple(self.fields),
            tuple(self.keys),
            *self.table,
            self.called,
            self.tested,
            tuple(dict.fromkeys(self.handed)),
            items,
            rebound,
            tuple(dict.fromkeys(self.items_handed)),
            self.unpacks,
            (),
            tuple(dict.fromkeys(self.within)),
            self.condition,
            self.mapping,
            self.scales,
            self.indexed,
            self.text,
            tuple(dict.fromkeys(self.counts)),
        )

    def _nodes(self) -> list[ast.AST]:
        """The argument's loads, or where a path is read, the ends of ``name.a.b`` read off
        them (``cfg.model.dropout`` for the path ``("model", "dropout")``)."""
        nodes: list[ast.AST] = list(self.code.loads.get(self.name, ()))
        for attr in self.path:  # a field or a string key (``keyed.py``: cfg["dec"]["size"])
            nodes = step(self.code, nodes, attr)
        return nodes

    def _use(self, node: ast.AST, parent: ast.AST | None, up: dict[ast.AST, ast.AST]) -> None:
        if not self.path:
            self._within(node, parent, up)
        if (k := ranged(node, parent, up)) is not None and self.name not in self.code.stores:
            self.counts.append(k)
        if truth_test(node, parent):
            self.condition = True
        self.called = self.called or called_as(node, up, self.code)  # act = a if c else b; act()
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Mult):
            self.scales = self.scales or not isinstance(other_operand(parent, node), ast.Constant)
        if isinstance(parent, ast.keyword) and parent.arg is None:
            self.mapping = True  # f(**x), read on below as any keyword is
        if isinstance(parent, ast.Assign) and parent.value is node:
            for t in parent.targets:
                if isinstance(t, ast.Attribute) and is_name(t.value, "self"):
                    self.kept.append(t.attr)
                elif isinstance(t, (ast.Tuple, ast.List)):
                    self.unpacked = len(t.elts)
                    self.items = names_of(t)
                    # Never rebound first (``x = to_2tuple(x)`` takes an int too), on every call.
                    self.unpacks = self.name not in self.code.stores and not conditional(parent, up)
                    # self.hidden_act, self.out_act = acts: each item kept as it is
                    self.attrs = attrs_of(t)
        elif isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
            self.sequence = True
            self._loop_items(parent.target, up)
        elif isinstance(parent, ast.Starred):
            self.sequence = True
        elif isinstance(parent, ast.Attribute) and parent.value is node:
            call = up.get(parent)
            if isinstance(call, ast.Call) and call.func is parent:
                if parent.attr in ("items", "keys", "values"):
                    self.mapping = True
                if parent.attr in _SEQUENCE_METHODS:
                    self.sequence = True
                elif parent.attr in _TEXT_METHODS and self.name not in self.code.stores:
                    self.text = True  # never rebound first (``x = str(x)`` takes anything)
                elif parent.attr == "get" and call.args and isinstance(call.args[0], ast.Constant):
                    self.keys.setdefault(str(call.args[0].value), None)
            else:
                self.fields.setdefault(parent.attr, None)
        elif isinstance(parent, ast.Subscript) and parent.value is node:
            key = parent.slice
            if isinstance(key, ast.Slice):
                self.sequence = True
                if (pair := zipped(parent, up)) is not None:  # zip(x[:-1], x[1:]): ``pairs.py``
                    self._loop_items(pair[0], up, pair[1])
            elif (offset := offset_of(key)) is not None:
                self._item(parent, offset, up)
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                self.keys.setdefault(key.value, None)
            elif constant_index(key) and self.name not in self.code.stores:
                # x[0], x[-1]: an item, never a number (never rebound: ``to_2tuple(x)[0]``)
                self.indexed = self.indexed or not conditional(parent, up)
        elif isinstance(parent, ast.Subscript) and parent.slice is node:
            self.table = table_of(local_dict(parent.value, self.code.stores), self.scope)
            # A table its module defines (``configs[net_size]``): its keys are the choices.
            self.table = self.table if self.table[0] else global_table(parent.value, self.code)
        elif isinstance(parent, ast.BinOp) and isinstance(parent.op, NUMBER_OPS):
            self.number = True
        elif isinstance(parent, ast.BinOp) and counted(parent, node):
            self.number = True
        elif isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub):
            self.number = True
        elif isinstance(parent, ast.Compare) and any(isinstance(o, _ORDER) for o in parent.ops):
            self.number = True
        elif (
            isinstance(parent, ast.Compare)
            and node in parent.comparators
            and isinstance(parent.ops[parent.comparators.index(node)], (ast.In, ast.NotIn))
            and not key_of(parent.left)
        ):
            self.sequence = True  # res in attn_resolutions ("k" in cfg: a dict's too, keyed.py)
        elif isinstance(parent, ast.Call):
            self._call(parent, node, up)
        elif targets := spread(node, parent, self.code):
            for call, word in targets:  # kw = dict(act=x); Block(c, **kw): ``keyword_dicts.py``
                callee = resolved(call.func, self.scope)
                if callee is not None and takes(callee, word):
                    self._handed_to(call, callee, word, -1, up)
        elif isinstance(parent, ast.keyword) and isinstance(up.get(parent), ast.Call):
            self._call(typing.cast(ast.Call, up[parent]), node, up)  # f(width=x)

    def _within(self, node: ast.AST, parent: ast.AST | None, up: dict[ast.AST, ast.AST]) -> None:
        """``self.x = {"k": arg}`` / ``(arg, b)`` / ``lambda v: arg(v)``: where it is kept."""
        key: Any = None
        holder: ast.AST | None
        if isinstance(parent, ast.Dict) and node in parent.values:
            k = parent.keys[parent.values.index(node)]
            if not isinstance(k, ast.Constant):
                return
            key, holder = k.value, parent
        elif isinstance(parent, (ast.Tuple, ast.List)) and isinstance(parent.ctx, ast.Load):
            if any(isinstance(e, ast.Starred) for e in parent.elts):
                return  # (*extra, act): no fixed place
            key, holder = parent.elts.index(typing.cast(ast.expr, node)), parent
        else:
            holder = parent
            while holder is not None and not isinstance(holder, (ast.Lambda, ast.stmt)):
                holder = up.get(holder)
            if not isinstance(holder, ast.Lambda):
                return
            key = ("cell", self.name)
        at = up.get(holder)
        if isinstance(at, ast.Assign) and at.value is holder and len(at.targets) == 1:
            t = at.targets[0]
            if isinstance(t, ast.Attribute) and is_name(t.value, "self"):
                self.within.append((t.attr, key))

    def _loop_items(self, target: ast.AST, up: dict[ast.AST, ast.AST], offset: int = 0) -> None:
        """The loop variable's uses: each a turn's item (``for n in cards``)."""
        if isinstance(target, ast.Name):
            for load in in_loop(self.code.loads.get(target.id, []), target, up):
                self._item(load, offset, up)

    def _item(self, node: ast.AST, offset: int, up: dict[ast.AST, ast.AST]) -> None:
        """An item (``cards[i]``, a loop's ``n``) handed to a layer: which layer, which
        parameter, kept under which attribute."""
        parent = up.get(node)
        if isinstance(parent, ast.keyword):
            parent = up.get(parent)
        if not isinstance(parent, ast.Call) or parent.func is node:
            return
        if (inner := self._method(parent, node)) is not None:  # self.add(n): ``helpers.py``
            kept = kept_under(parent, up)
            hs = [h for h in inner.handed if h.index < 0]
            self.items_handed += [Handed(h.callee, h.param, h.kept or kept, -1, offset) for h in hs]
            return
        callee = resolved(parent.func, self.scope)
        if not (isinstance(callee, type) and issubclass(callee, nn.Module)):
            return
        got = bound(parent, node, callee)
        if got is not None and got[1] < 0:
            self.items_handed.append(Handed(callee, got[0], kept_under(parent, up), -1, offset))

    def _call(self, call: ast.Call, node: ast.AST, up: dict[ast.AST, ast.AST]) -> None:
        if call.func is node:
            self.called = True
            return
        word = func_name(call)
        if word in _NUMBER_CALLS:
            self.number = True
            return
        if word in _SEQUENCE_CALLS:
            self.sequence = True
            self.measured = self.measured or word == "len"
            loop = up.get(call)
            if word in ("zip", "enumerate") and isinstance(loop, (ast.For, ast.comprehension)):
                # for ch, k in zip(channels, kernels) / for i, n in enumerate(cards)
                at = call.args.index(node) if word == "zip" and node in call.args else 1
                target = loop.target
                if loop.iter is call and isinstance(target, ast.Tuple) and at < len(target.elts):
                    self._loop_items(target.elts[at], up)
            return
        if isinstance(call.func, ast.Attribute) and call.func.attr == "get" and call.args:
            if call.args[0] is node:  # {...}.get(x)
                self.table = table_of(call.func.value, self.scope)
            return
        if (inner := self._method(call, node) or self._local(call, node)) is not None:
            merged(self, inner, kept_under(call, up))  # a helper method, a function defined here
            return
        callee = resolved(call.func, self.scope)
        if callee is isinstance and call.args and call.args[0] is node:
            self.tested = True  # isinstance(x, tuple): it takes more than one kind of value
            return
        if callee is None or callee in (getattr, hasattr, print, id, type, super):
            return
        got = bound(call, node, callee, into_kwargs=True)
        if got is not None:
            self._handed_to(call, callee, *got, up)

    def _handed_to(
        self, call: ast.Call, callee: Any, param: str, index: int, up: dict[ast.AST, ast.AST]
    ) -> None:
        """``call`` hands the argument to ``callee``'s ``param`` (at ``index`` among its
        ``*args``, -1 for a parameter of its own): a layer's, or what a function makes of it."""
        up_call = up.get(call)
        if isinstance(up_call, ast.Assign) and isinstance(
            up_call.targets[0], (ast.Tuple, ast.List)
        ):
            # a, b = pair(x): the function's result is unpacked; so may its argument be.
            self.unpacked = self.unpacked or len(up_call.targets[0].elts)
            self.items = self.items or names_of(up_call.targets[0])
        if isinstance(callee, type) and issubclass(callee, nn.Module):
            self.handed.append(Handed(callee, param, kept_under(call, up), index))
            annotated = annotation_of(callee, param)
            self.number = self.number or annotated in (int, float)
        elif (
            isinstance(callee, types.FunctionType)
            and index < 0
            and self.depth < DEPTH
            and callee.__module__ == getattr(self.fn, "__module__", None)
        ):
            # What a function it is handed to makes of it (``Normalize(in_channels)``); not
            # how that function reads it: helpers take several kinds of value (``to_2tuple``).
            inner = _read(callee, param, self.depth + 1)
            self.handed += [Handed(h.callee, h.param) for h in inner.handed]
            self.condition = self.condition or inner.condition
            self.called = self.called or always_called(callee, param)  # mlp(sizes, act)

    def _local(self, call: ast.Call, node: ast.AST) -> Usage | None:
        """How a function defined inside the constructor uses the parameter ``call`` hands
        ``node`` to (``local_names.py``), or None where ``call`` reaches none."""
        code = local_def(call, node, self.code) if self.hops < MAX_HOPS else None
        if code is None:
            return None
        reader = _Reader(self.fn, "__local__", self.depth, code)
        reader.owner, reader.hops = self.owner, self.hops + 1
        return reader.read()

    def _method(self, call: ast.Call, node: ast.AST) -> Usage | None:
        """How a method of the class's own (``self.build(dim)``), or the base's ``__init__`` the
        argument is handed up to (``super().__init__(dim)``), uses the parameter it is handed
        ``node`` as (``helpers.py``), or None where ``call`` reaches none."""
        method = (
            method_of(call.func, self.owner)
            or base_method(call.func, self.owner, self.fn, self.scope)
            if not self.path
            else None
        )
        if method is None or self.hops >= MAX_HOPS:
            return None
        got = bound(call, node, method[1])
        if got is None or got[1] >= 0:
            return _NOTHING
        return _read(method[0], got[0], self.depth, (), self.owner, self.hops + 1)


def _read(
    fn: Callable[..., Any],
    name: str,
    depth: int,
    path: tuple[str, ...] = (),
    owner: type | None = None,
    hops: int = 0,
) -> Usage:
    code = code_of(fn)
    if code is None:
        return _NOTHING
    reader = _Reader(fn, name, depth, code, path)
    reader.owner, reader.hops = owner, hops
    return reader.read()


@functools.lru_cache(maxsize=1024)
def usage(cls: type, name: str, path: tuple[str, ...] = ()) -> Usage:
    """How ``cls.__init__`` uses its parameter ``name`` (see the module doc), or with ``path``
    the field read off it (``usage(cls, "cfg", ("model", "dropout"))``: ``cfg.model.dropout``);
    an empty ``Usage`` where its source cannot be read (a builtin, a class made in a notebook
    cell that is gone) or the class is torch's own (its attributes say what it was given)."""
    return _usage(cls, name, frozenset({(cls, name)}), path)


def _usage(
    cls: type, name: str, seen: frozenset[tuple[type, str]], path: tuple[str, ...] = ()
) -> Usage:
    init = cls.__dict__.get("__init__")
    if not isinstance(init, types.FunctionType) or cls.__module__.startswith("torch."):
        return _NOTHING
    try:
        read = _read(init, name, 1, path, cls)
        if path:
            return read
        read = handed_kind(read, seen, _usage)
        found = tuple(s for s in handed_expressions(init) if name in s.names)
        return dataclasses.replace(read, sums=found) if found else read
    except (RecursionError, ValueError, TypeError):
        return _NOTHING
