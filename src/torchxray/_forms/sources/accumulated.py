"""Source: a width a constructor accumulates, an optional argument added to it only where it
was given, read from the AST.

A constructor that may take a second input often starts a width at one argument and adds the
other under a test that it was given::

    cond_dim = embed_dim
    if global_cond_dim is not None:
        cond_dim += global_cond_dim

The layers that width reaches show only the sum; an argument left at ``None`` adds nothing. So
where the search holds the sum in the first argument alone (``embed_dim`` 52, the other None),
a layer that shows the first argument by itself (``embed_dim`` 32) is fixed only by moving both:
the first to the live value, the optional one from None to what the sum then lacks
(``rules/optional_term.py``). ``accumulated(cls)`` reads each such pair as an ``Accumulated``:
the local name, the arguments it starts at (a linear start read as ``sums.py`` reads one: a
plain name or a whole-number multiple), and the argument added under its test (``if x is not
None``, ``if x``).

Read conservatively: only ``+=`` (or ``w = w + x``) of a bare parameter, inside an ``if`` whose
test is that parameter's truth or its ``is not None``; the local name assigned once, a plain name
(a parameter, or a local name assigned once that leads to one).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from ..._signature import original
from .code import code_of, param_names

__all__ = ["Accumulated", "accumulated"]

_INLINED = 3  # local names followed to the parameter a width starts at, as ``sums.py`` does


@dataclass(frozen=True)
class Accumulated:
    """``local = start`` then ``if added is not None: local += added``."""

    local: str
    start: str  # the parameter the width starts at
    added: str  # the optional parameter added where it is given


def _given(test: ast.AST, name: str) -> bool:
    """``name is not None`` or ``name`` itself: the branch runs where the argument was given."""
    if isinstance(test, ast.Name):
        return test.id == name
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == name
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _added(stmt: ast.stmt) -> tuple[str, str] | None:
    """(local, added) for ``local += added`` or ``local = local + added``."""
    if (
        isinstance(stmt, ast.AugAssign)
        and isinstance(stmt.op, ast.Add)
        and isinstance(stmt.target, ast.Name)
        and isinstance(stmt.value, ast.Name)
    ):
        return stmt.target.id, stmt.value.id
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.BinOp)
        and isinstance(stmt.value.op, ast.Add)
        and isinstance(stmt.value.left, ast.Name)
        and stmt.value.left.id == stmt.targets[0].id
        and isinstance(stmt.value.right, ast.Name)
    ):
        return stmt.targets[0].id, stmt.value.right.id
    return None


@functools.lru_cache(maxsize=512)
def accumulated(cls: type) -> tuple[Accumulated, ...]:
    """Every width ``cls.__init__`` starts at one parameter and adds an optional one to where it
    was given (see the module doc); () where its source cannot be read."""
    init = original(cls.__init__)  # type: ignore[misc]
    code = code_of(init)
    if code is None:
        return ()
    params = frozenset(param_names(init)) - {"self"}
    out: dict[Accumulated, None] = {}
    for node in ast.walk(code.tree):
        if not isinstance(node, ast.If) or node.orelse:
            continue
        for stmt in node.body:
            got = _added(stmt)
            if got is None or got[1] not in params or not _given(node.test, got[1]):
                continue
            local, added = got
            start = _start(local, code.stores, params)
            if start is not None and start != added:
                out[Accumulated(local, start, added)] = None
    return tuple(out)


def _grows(value: ast.expr, local: str) -> bool:
    return (
        isinstance(value, ast.BinOp) and isinstance(value.left, ast.Name) and value.left.id == local
    )


def _start(local: str, stores: dict[str, list[ast.expr]], params: frozenset[str]) -> str | None:
    """The parameter ``local`` is assigned once (``cond_dim = dsed``), through local names each
    assigned once (``dsed = diffusion_step_embed_dim``), ``_INLINED`` deep at most."""
    name = local
    for _ in range(_INLINED):
        # ``w = w + x`` is the addition read, not a start.
        stored = [v for v in stores.get(name, ()) if not _grows(v, name)]
        if len(stored) != 1 or not isinstance(stored[0], ast.Name):
            return None
        name = stored[0].id
        if name in params:
            return name
    return None
