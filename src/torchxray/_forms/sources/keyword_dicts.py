"""Source: a value put in a local dict of keywords that is then spread into calls (``kw =
dict(pad_type=opt.pad_type, activation=opt.activation)`` and ``Block(c, c, 3, **kw)``).

Research code gathers the keywords its blocks share once, then hands them to every block with
``**``: the value reaches each block's parameter named by its key, as if written there. ``spread``
says, for a value node inside such a dict (a ``dict(key=value)`` call or a ``{"key": value}``
literal) assigned once to a local name, the calls that name is spread into and the keyword each
receives (``usage.py`` reads those calls as it reads a call the value is handed to directly).

Read conservatively: the name must be assigned once and never changed in place
(``kw["norm"] = ...``, ``kw.update(...)``), and the key must be a constant.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from ..._signature import resolve
from .code import Code, is_name

__all__ = ["spread", "takes"]


def takes(callee: Any, key: str) -> bool:
    """Whether ``callee`` has a parameter of its own named ``key`` (one a keyword binds)."""
    try:
        p = resolve(callee).parameters.get(key)
    except (TypeError, ValueError):
        return False
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def _key(node: ast.AST, parent: ast.AST | None, code: Code) -> tuple[str, ast.AST] | None:
    """The key ``node`` is given under and the dict expression holding it, or None."""
    if isinstance(parent, ast.keyword) and parent.arg is not None:
        call = code.up.get(parent)
        if (
            isinstance(call, ast.Call)
            and is_name(call.func, "dict")
            and code.scope.get("dict", builtins.dict) is builtins.dict
            and not call.args
        ):
            return parent.arg, call
    if isinstance(parent, ast.Dict) and node in parent.values:
        k = parent.keys[parent.values.index(node)]  # type: ignore[arg-type]
        if isinstance(k, ast.Constant) and isinstance(k.value, str):
            return k.value, parent
    return None


def spread(node: ast.AST, parent: ast.AST | None, code: Code) -> list[tuple[ast.Call, str]]:
    """The calls a local dict holding ``node`` is spread into, each with the keyword ``node``
    reaches it as (see the module doc); [] where ``node`` is in no such dict."""
    got = _key(node, parent, code)
    if got is None:
        return []
    key, holder = got
    stmt = code.up.get(holder)
    if not (
        isinstance(stmt, ast.Assign)
        and stmt.value is holder
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ):
        return []
    name = stmt.targets[0].id
    if len(code.stores.get(name, ())) != 1:
        return []
    out: list[tuple[ast.Call, str]] = []
    for load in code.loads.get(name, ()):
        at = code.up.get(load)
        call = code.up.get(at) if at is not None else None
        if isinstance(at, ast.keyword) and at.arg is None and isinstance(call, ast.Call):
            if any(k.arg == key for k in call.keywords):
                continue  # Block(**kw, activation="tanh"): a TypeError, never this value
            out.append((call, key))
        else:
            return []  # read some other way (kw["norm"] = ..., kw.update(...)): not followed
    return out
