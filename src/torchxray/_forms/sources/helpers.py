"""The class's own helper methods an argument is handed to, read as the constructor's own code.

Research code builds its layers in methods of its own class: ``self.conv_block =
self.build_conv_block(dim, padding_type, norm_layer, use_dropout, use_bias)`` (CycleGAN's
ResnetBlock), ``self.layer1 = self._make_layer(block, 64, layers[0])``, ``self.add_task(name,
n_out)`` in a loop. What such a method does with its parameter is what the constructor does with
the argument (it runs on the same ``self``, once per build), so ``usage.py`` reads it whole, not
one call deep and only for the layers it makes, as it reads a plain function of the module (a
function may take several kinds of value: ``to_2tuple``). ``method_of`` names the method a call
reaches (``self.m``, ``self.__class__.m``, ``type(self).m``; a plain, static or class method of
the class or its bases, never torch's own ``nn.Module`` methods), ``base_method`` the base's
method a ``super().__init__(...)`` reaches (a subclass that hands its arguments up runs its
base's constructor on the same ``self``: the same reading holds), ``merged`` puts its reading
into the constructor's (a layer it makes is kept under the attribute its result is assigned to),
and ``local_dict`` names the dict literal a local name holds (``pads = {"reflect": ...};
pads[padding_type]``), which ``usage.py`` and ``literals.py`` read as a table of the argument's
values.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .uses import Handed, Usage

__all__ = ["base_method", "local_dict", "merged", "method_of"]

MAX_HOPS = 3  # methods followed one inside another (``_make_layer`` calling ``_block``)


def _self(node: ast.AST) -> bool:
    """``self``, ``type(self)`` or ``self.__class__``: the instance's class reached."""
    if isinstance(node, ast.Name):
        return node.id == "self"
    if isinstance(node, ast.Attribute) and node.attr == "__class__":
        return _self(node.value)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "type"
        and len(node.args) == 1
        and _self(node.args[0])
    )


def method_of(func: ast.AST, owner: type | None) -> tuple[Callable[..., Any], Any] | None:
    """The function behind ``self.name(...)`` on ``owner`` and the callee whose signature the
    call meets (a bound method, without the ``self`` or ``cls`` the call does not pass; the
    function itself for a static method, or a plain one called on the class), or None where the call reaches no method of the
    class's own code."""
    if owner is None or not isinstance(func, ast.Attribute) or not _self(func.value):
        return None
    try:
        raw = inspect.getattr_static(owner, func.attr)
    except AttributeError:
        return None
    # ``type(self).m(self, x)`` hands a plain method its self itself; ``self.m(x)`` does not
    return _callee(raw, owner, through_class=not isinstance(func.value, ast.Name))


def _callee(raw: Any, owner: type, through_class: bool) -> tuple[Callable[..., Any], Any] | None:
    """``raw`` (a class's attribute, as its ``__dict__`` holds it) as ``method_of`` gives it: the
    function and the callee whose signature the call meets; None for anything but the user's
    own function (a property, a layer, or nn.Module's own: add_module, register_buffer)."""
    fn = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    if not isinstance(fn, types.FunctionType) or (fn.__module__ or "").startswith("torch."):
        return None
    if isinstance(raw, staticmethod) or (through_class and not isinstance(raw, classmethod)):
        return fn, fn
    return fn, types.MethodType(fn, owner)  # the signature without its first parameter


def _written_in(fn: Callable[..., Any]) -> type | None:
    """The class ``fn`` was written in, as a zero-argument ``super()`` in it finds it: its
    ``__class__`` cell (through a decorator's ``__wrapped__``), None where it has none."""
    try:
        fn = inspect.unwrap(fn)
    except ValueError:  # a __wrapped__ chain that loops
        return None
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None)
    if code is None or not cells or "__class__" not in code.co_freevars:
        return None
    try:
        held = cells[code.co_freevars.index("__class__")].cell_contents
    except ValueError:  # an empty cell
        return None
    return held if isinstance(held, type) else None


def base_method(
    func: ast.AST, owner: type | None, fn: Callable[..., Any], scope: Mapping[str, Any]
) -> tuple[Callable[..., Any], Any] | None:
    """The base class's method behind ``super().name(...)`` (``super(C, self)`` too) or
    ``Base.name(self, ...)`` in ``fn``, a function of ``owner``'s code (``scope``: its
    globals), as ``method_of`` gives it; None where the call reaches none, or reaches torch's
    own code (``nn.Module.__init__``, a torch layer's: the module's attributes say what those
    were given, ``base_init.py``).

    A subclass that hands its arguments up (``super().__init__(depth, width, norm=norm)``) runs
    its base's constructor on the same ``self``: what that constructor does with each parameter
    is what the subclass's does with the argument handed to it (paper code's ``CCF(F)``). The
    class a ``super()`` starts after is the one Python's own would: the class ``fn`` was written
    in, or the ``C`` its module names, looked up along ``owner``'s MRO (a base's ``super()``,
    read for a subclass, reaches the base's base; a diamond, the MRO's next class)."""
    if owner is None or not isinstance(func, ast.Attribute):
        return None
    mro, on, name = owner.__mro__, func.value, func.attr
    if isinstance(on, ast.Call) and isinstance(on.func, ast.Name) and on.func.id == "super":
        first = on.args[0] if on.args else None
        if first is not None and not isinstance(first, ast.Name):
            return None  # super(type(self), self): not the class it was written in
        after = scope.get(first.id) if first is not None else _written_in(fn)
        if not isinstance(after, type) or after not in mro:
            return None
        along, through_class = mro[mro.index(after) + 1 :], False
    elif isinstance(on, ast.Name) and isinstance(scope.get(on.id), type):
        base = scope[on.id]
        if base not in mro[1:]:
            return None
        along, through_class = base.__mro__, True  # Base.__init__(self, ...): self passed
    else:
        return None
    raw = next((c.__dict__[name] for c in along if name in c.__dict__), None)
    return _callee(raw, owner, through_class)


def merged(outer: Any, inner: Usage, kept: str) -> None:
    """``inner`` (how a helper method uses its parameter) put into ``outer`` (the constructor's
    reader, ``usage._Reader``); the layers it makes and nothing keeps inside it are kept under
    ``kept``, the attribute the method's result is assigned to."""

    def under(hs: Iterable[Handed]) -> list[Handed]:
        return [dataclasses.replace(h, kept=h.kept or kept) for h in hs]

    outer.kept += inner.kept
    flags = ("number", "sequence", "measured", "called", "tested", "unpacks", "condition")
    for flag in (*flags, "scales", "indexed"):
        setattr(outer, flag, getattr(outer, flag) or getattr(inner, flag))
    outer.mapping = outer.mapping or inner.mapping
    outer.unpacked = outer.unpacked or inner.unpacked
    outer.fields.update(dict.fromkeys(inner.fields))
    outer.keys.update(dict.fromkeys(inner.keys))
    if not outer.table[0] and inner.table:
        outer.table = (inner.table, inner.table_values)
    outer.handed += under(inner.handed)
    outer.items_handed += under(inner.items_handed)
    outer.attrs = outer.attrs or inner.items_kept
    outer.within += inner.within


def local_dict(node: ast.AST, stores: Mapping[str, list[ast.expr]]) -> ast.AST:
    """The dict literal a local name is assigned once (``pads = {...}``), else ``node``."""
    if isinstance(node, ast.Name):
        values = stores.get(node.id, ())
        if len(values) == 1 and isinstance(values[0], ast.Dict):
            return values[0]
    return node


def stores_of(tree: ast.AST) -> dict[str, list[ast.expr]]:
    """The values each bare name is assigned (``code.Code.stores``, for a tree read alone)."""
    out: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            if isinstance(node.targets[0], ast.Name):
                out.setdefault(node.targets[0].id, []).append(node.value)
    return out
