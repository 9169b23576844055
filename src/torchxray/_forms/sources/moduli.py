"""A remainder test (``index % cfg["every"] == 0``): the two arguments a constructor reads
through ``i % k``, each named as the form names it (``"index"``, ``"cfg.every"``). Only bare
names on both sides are read (not ``(i + 1) % k``), but for a literal period (``(depth - 4) %
6``: ``moduli``); a number read only in tests is tried one above and below anyway
(``branches.tested``, ``candidates/ambiguous.py``).

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


def _period(node: ast.AST) -> int | None:
    """A whole-number period: a literal of 2 or more (``% 6``)."""
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 2:
        return node.value
    return None


def _shifted(node: ast.AST, params: frozenset[str]) -> str:
    """``_named`` of ``i``, ``i - c`` or ``i + c`` (``c`` a literal): a shift keeps the period."""
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, (ast.Add, ast.Sub))
        and isinstance(node.right, ast.Constant)
        and type(node.right.value) is int
    ):
        node = node.left
    return _named(node, params)


@functools.lru_cache(maxsize=512)
def moduli(cls: type) -> tuple[tuple[str, str | int], ...]:
    """(``i``, ``k``) of each ``i % k`` in ``cls.__init__`` whose sides are both read off its
    parameters (see the module doc); and (``i``, ``K``) of each ``(i - c) % K`` with ``K`` a
    literal (Wide-ResNet's ``assert (depth - 4) % 6 == 0``): ``i + K`` passes the same test,
    and where the layers do not tell the two apart (``depth`` 4 and 10 each make one block per
    stage: ``[stride] + [1] * (n - 1)``), ``candidates/ambiguous.py`` flags the value found."""
    init = cls.__dict__.get("__init__")
    if not inspect.isfunction(init) or cls.__module__.startswith("torch."):
        return ()
    code = code_of(init)
    if code is None:
        return ()
    params = frozenset(inspect.signature(init).parameters) - {"self"}
    out: dict[tuple[str, str | int], None] = {}
    for node in ast.walk(code.tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            left, right = _named(node.left, params), _named(node.right, params)
            if left and right:
                out[(left, right)] = None
            period, shifted = _period(node.right), _shifted(node.left, params)
            if period is not None and shifted:
                out[(shifted, period)] = None
    return tuple(out)
