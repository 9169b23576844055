"""No import cycle, in the package or in js/, type-only imports included (docs/ARCHITECTURE.md's
rules): a module that needs one that imports it takes a Protocol (`_view/host.py`) instead."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

import torchxray as tx

ROOT = Path(__file__).parents[1]


def _cycle(graph: Mapping[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (module -> the modules it imports), or []."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u: str) -> list[str]:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                return [*stack[stack.index(v) :], v]
            if v not in state and (found := visit(v)):
                return found
        stack.pop()
        state[u] = 2
        return []

    for u in sorted(graph):
        if u not in state and (found := visit(u)):
            return found
    return []


def _python_graph() -> dict[str, set[str]]:
    src = Path(tx.__file__).parent
    names = {}
    for p in src.rglob("*.py"):
        parts = p.relative_to(src.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    graph: dict[str, set[str]] = {}
    for name, p in names.items():
        package = name if p.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join([*base, node.module] if node.module else base)
                if not node.level:
                    mod = node.module or ""
                for alias in node.names:
                    full = f"{mod}.{alias.name}"
                    deps.add(full if full in names else mod)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
        graph[name] = {d for d in deps if d in names and d != name}
    return graph


def _ts_graph() -> dict[str, set[str]]:
    js = ROOT / "js"
    graph: dict[str, set[str]] = {}
    for p in js.rglob("*.ts"):
        deps = set()
        for spec in re.findall(
            r'^\s*(?:import|export)\b[^;]*?from\s+"(\.[^"]+)"', p.read_text("utf-8"), re.M | re.S
        ):
            target = (p.parent / spec).resolve().with_suffix(".ts")
            if target.exists():
                deps.add(target.relative_to(js).as_posix())
        graph[p.relative_to(js).as_posix()] = deps
    return graph


def test_the_checker_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_import_cycle() -> None:
    graph = _python_graph()
    assert "torchxray._view.session" in graph["torchxray.widget"]  # the graph sees imports
    assert _cycle(graph) == []


def test_the_frontend_has_no_import_cycle() -> None:
    graph = _ts_graph()
    assert "protocol_gen.ts" in graph["protocol.ts"]
    assert _cycle(graph) == []
