"""Finding ``class``/``def`` statements in source text with ``ast``: every definition with the
``__qualname__`` Python would give it, and the code objects a class or function defines."""

from __future__ import annotations

import ast
import functools
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["defs", "find_def", "first_line", "is_func", "node_text", "own_code", "parse"]


def is_func(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))


def defs(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    """Every class/def with the ``__qualname__`` Python would give it."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef) or is_func(node):
            qual = prefix + node.name  # type: ignore[attr-defined]
            yield qual, node
            yield from defs(node, qual + (".<locals>." if is_func(node) else "."))
        else:
            yield from defs(node, prefix)


@functools.lru_cache(maxsize=512)
def parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):  # a raw cell with IPython magics, or a half-typed one
        return None


def find_def(text: str, qualname: str, line: int | None) -> ast.AST | None:
    tree = parse(text)
    if tree is None:
        return None
    matches = [node for qual, node in defs(tree) if qual == qualname]
    if line is not None:
        inside = [n for n in matches if first_line(n) <= line <= (n.end_lineno or 0)]  # type: ignore[attr-defined]
        return inside[-1] if inside else None
    return matches[-1] if matches else None  # a later definition in a cell replaces earlier ones


def first_line(node: Any) -> int:
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


def node_text(text: str, node: Any) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[first_line(node) - 1 : node.end_lineno])


def own_code(obj: Any) -> Iterator[tuple[str, int]]:
    """(file, first line) of the Python functions defined directly on a class, or of a function."""
    members = vars(obj).values() if isinstance(obj, type) else [obj]
    for member in members:
        if isinstance(member, property):
            member = member.fget
        member = getattr(member, "__func__", member)
        code = getattr(member, "__code__", None)
        if isinstance(code, types.CodeType):
            yield code.co_filename, code.co_firstlineno
