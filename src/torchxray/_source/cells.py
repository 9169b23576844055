"""Notebook cells as a source of code: IPython keeps every cell's code in ``linecache`` (under
``<ipython-input-…>`` or ``/tmp/ipykernel_…/….py``) and in its input history; a class or function
defined in a cell is found there by its ``class``/``def`` statement."""

from __future__ import annotations

import linecache
import re
import sys
from collections.abc import Iterable
from typing import Any, NamedTuple

from .defs import find_def, first_line, node_text, own_code

__all__ = ["CELL_NAME", "Cell", "cell_label", "find_in_cells", "notebook_cells"]


class Cell(NamedTuple):
    """One notebook cell's code. ``file`` is the name its code was compiled under, if known."""

    file: str | None
    text: str
    label: str | None = None


# Names IPython (``<ipython-input-N-hash>``) and ipykernel (``…/ipykernel_PID/HASH.py``) compile
# cells under; used when IPython's own filename map is not reachable.
CELL_NAME = re.compile(r"^<ipython-input-\d+-[0-9a-f]+>$|[/\\]ipykernel_\d+[/\\][^/\\]+\.py$")


def notebook_cells() -> list[Cell]:
    """The running IPython's cell code, newest first (empty outside IPython)."""
    found: list[Cell] = []
    seen: set[str] = set()
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    filename_map = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    for name, number in sorted(filename_map.items(), key=lambda kv: kv[1], reverse=True):
        if name in linecache.cache:
            seen.add(name)
            found.append(Cell(name, "".join(linecache.getlines(name)), f"In [{number}]"))
    for name in reversed(list(linecache.cache)):
        if name not in seen and isinstance(name, str) and CELL_NAME.search(name):
            found.append(Cell(name, "".join(linecache.getlines(name))))
    history = getattr(getattr(shell, "history_manager", None), "input_hist_parsed", None) or []
    for number in range(len(history) - 1, 0, -1):
        if isinstance(history[number], str) and history[number].strip():
            found.append(Cell(None, history[number], f"In [{number}]"))
    return found


def find_in_cells(
    cls_or_func: Any, cells: Iterable[Any] | None
) -> tuple[str, str | None, int, str | None] | None:
    """Find a ``class``/``def`` statement for an interactively defined object."""
    own = list(own_code(cls_or_func))
    # The files its own functions were compiled from hold the definition: exact, and fast.
    for file, line in own:
        text = "".join(linecache.getlines(file))
        node = find_def(text, cls_or_func.__qualname__, line)
        if node is not None:
            return node_text(text, node), file, first_line(node), cell_label(file)
    module = sys.modules.get(cls_or_func.__module__)
    if cls_or_func.__module__ != "__main__" and getattr(module, "__file__", None):
        return None  # a library object: a notebook cell defining the same name is not its source
    for cell in cells if cells is not None else notebook_cells():
        cell = Cell(*cell)
        hint = next((line for file, line in own if file == cell.file), None)
        node = find_def(cell.text, cls_or_func.__qualname__, hint)
        if node is not None:
            return node_text(cell.text, node), cell.file, first_line(node), cell.label
    return None


def cell_label(file: str) -> str | None:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    number = (getattr(getattr(shell, "compile", None), "_filename_map", None) or {}).get(file)
    if number is not None:
        return f"In [{number}]"
    return "notebook cell" if CELL_NAME.search(file) else None
