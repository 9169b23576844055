"""A remainder test (``index % cfg["every"] == 0``): the two arguments a constructor reads
through ``i % k``, each named as the form names it (``"index"``, ``"cfg.every"``). Only bare
names on both sides are read (not ``(i + 1) % k``); a number read only in tests is tried one
above and below anyway (``branches.tested``, ``candidates/ambiguous.py``).

A block told its place in a stack and a period (every k-th block reads a memory, has a
cross-attention) shows only whether ``i % k`` is zero: ``i`` and ``i + k`` build alike, and so do
every ``k`` that divides ``i`` (1 always). The search stops at the first pair that rebuilds, so
the values it found are one of many unless the builds tell them apart;
``candidates/ambiguous.py`` tries those rivals (``i + k``; ``k + 1`` and 1) and flags what
rebuilds as exactly. Read: a parameter, or a key or field read off one (``cfg["k"]``, ``cfg.k``).
"""

from __future__ import annotations

import ast
import functools
import inspect

from .code import code_of
from .keyed import key_of

__all__ = ["moduli"]


def _named(node: ast.AST, params: frozenset[str]) -> str:
    """The form's name of ``node``: a parameter, ``p["k"]`` / ``p.k`` (``"p.k"``); else ""."""
    if isinstance(node, ast.Name):
        return node.id if node.id in params else ""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        key = key_of(node.slice)
        return f"{node.value.id}.{key}" if key and node.value.id in params else ""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}" if node.value.id in params else ""
    return ""


@functools.lru_cache(maxsize=512)
def moduli(cls: type) -> tuple[tuple[str, str], ...]:
    """(``i``, ``k``) of each ``i % k`` in ``cls.__init__`` whose sides are both read off its
    parameters (see the module doc)."""
    init = cls.__dict__.get("__init__")
    if not inspect.isfunction(init) or cls.__module__.startswith("torch."):
        return ()
    code = code_of(init)
    if code is None:
        return ()
    params = frozenset(inspect.signature(init).parameters) - {"self"}
    out: dict[tuple[str, str], None] = {}
    for node in ast.walk(code.tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            left, right = _named(node.left, params), _named(node.right, params)
            if left and right:
                out[(left, right)] = None
    return tuple(out)
