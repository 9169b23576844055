"""Where a node of an exported program comes from: `place(node) -> (path, file, line, source)`.

Export keeps the module path on every node (``node.meta["nn_module_stack"]``: the modules whose
forward was running, outermost first, each as (path, class)) and, unless told not to, the Python
stack that made it (``node.meta["stack_trace"]``); decompositions copy both onto the nodes they
make. The path is the innermost module's; the line is the innermost frame of the user's code
(outside torch and torchxray), else the innermost frame (an op inside torch's own module, such
as ``nn.Linear``'s), else the module's forward.
"""

from __future__ import annotations

import linecache
import os
import re
from typing import Any

import torch

__all__ = ["module_path", "place", "walk_nodes"]

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# torchxray's private modules and packages ("_compile", "_export", ...): its stand-ins' frames
# are never the user's line; its public ones (`torchxray.demo`'s models) may be.
_OWN_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_")
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in ')
_CALL = re.compile(r"@\d+$")  # export names a module's second call "path@1"


def module_path(node: Any) -> str:
    """The innermost module path of `node` ("" for the root, or no record)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    value = list(stack.values())[-1]
    path = value[0] if isinstance(value, tuple) else str(value)
    path = _CALL.sub("", path)
    # A strict export writes the path as attribute code ("L['self'].layers[0]"): as a dotted path.
    if path.startswith("L['self']"):
        path = re.sub(r"\[(\d+)\]", r".\1", path.removeprefix("L['self']")).lstrip(".")
    return path


def _frames(trace: str) -> list[tuple[str, int]]:
    out = []
    for text in trace.splitlines():
        found = _FRAME.match(text)
        if found:
            out.append((found.group(1), int(found.group(2))))
    return out


def place(node: Any) -> tuple[str, str, int, str]:
    """(module path, file, line, the line's text) of `node`; ("", 0) for the line where the node
    carries no stack trace."""
    path = module_path(node)
    frames = _frames(node.meta.get("stack_trace") or "")
    file, line = "", 0
    for name, number in reversed(frames):
        if not name.startswith((_TORCH_DIR, _OWN_DIR)) and not name.startswith("<"):
            file, line = name, number
            break
    if not file and frames:
        file, line = frames[-1]
    text = linecache.getline(file, line).strip() if file else ""
    return path, file, line, text


def walk_nodes(graph_module: Any) -> list[Any]:
    """Every ``call_function`` node of a program's graph and of the graphs it calls (a ``cond``
    branch, a ``while_loop`` body), in order."""
    out: list[Any] = []
    seen: set[int] = set()

    def visit(gm: Any) -> None:
        if id(gm) in seen:
            return
        seen.add(id(gm))
        for node in gm.graph.nodes:
            if node.op == "call_function":
                out.append(node)
            elif node.op == "get_attr":
                sub = getattr(gm, str(node.target), None)
                if isinstance(sub, torch.fx.GraphModule):
                    visit(sub)

    visit(graph_module)
    return out
