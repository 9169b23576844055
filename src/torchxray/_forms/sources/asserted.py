"""Source: two arguments the constructor checks are equal (``assert listener_dim ==
hidden_dim``, ``if a != b: raise ValueError(...)``), read from its AST.

A hand-written constructor often takes one width twice, from two places (a decoder's
``listener_dim`` beside its own ``hidden_dim``), and checks them. Such a pair is moved one field
at a time by the search, and every move that changes one alone fails the check: nothing builds,
and no failure tells which value is right. ``equal_pairs(cls)`` gives the pairs of parameters the
constructor checks are equal, so the search (``candidates/loop.py``) moves each with the other.

Read conservatively: only bare parameters compared with ``==`` (an ``assert``) or ``!=`` (an
``if`` that raises), never rebound in the constructor, in a check every call makes (not one
under an ``if``, an ``else`` or a ``try``).
"""

from __future__ import annotations

import ast
import functools
import types

from .code import code_of, conditional, param_names

__all__ = ["equal_pairs"]


def _pair(test: ast.AST, op: type[ast.cmpop]) -> tuple[str, str] | None:
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], op)
        and isinstance(test.left, ast.Name)
        and isinstance(test.comparators[0], ast.Name)
    ):
        return test.left.id, test.comparators[0].id
    return None


@functools.lru_cache(maxsize=512)
def equal_pairs(cls: type) -> tuple[tuple[str, str], ...]:
    """The pairs of ``cls.__init__``'s parameters it checks are equal (see the module doc)."""
    init = cls.__dict__.get("__init__")
    if not isinstance(init, types.FunctionType):
        return ()
    code = code_of(init)
    if code is None:
        return ()
    params = set(param_names(init)[1:])
    out: list[tuple[str, str]] = []
    for node in ast.walk(code.tree):
        pair = None
        if isinstance(node, ast.Assert):
            pair = _pair(node.test, ast.Eq)
        elif isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body):
            pair = _pair(node.test, ast.NotEq)
        # Only a check every call makes: one under an ``if`` or ``else`` holds on some calls
        # (timm's ``assert dim == dim_out`` where the stride is 1, not where it is 2).
        if conditional(node, code.up):
            continue
        if pair is not None and set(pair) <= params and not set(pair) & set(code.stores):
            out.append(pair)
    return tuple(dict.fromkeys(out))
