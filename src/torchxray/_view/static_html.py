"""The Explorer's static stand-in: a compact read-only tree as plain HTML, and a one-line summary.

A notebook saved without widget state and reopened without a kernel cannot draw the widget
(JupyterLab says "model not found"). The Explorer therefore also displays this HTML as a second
output: ``<details>`` elements that open and close without any script, the first levels open,
repeated blocks folded as the tree folds them, and a row budget that keeps it small at any model
size. While the widget is live, its CSS hides this stand-in (js/styles.css: ``.tx-static``); the
stand-in's own style hides the "model not found" line of a widget that cannot be drawn.

Everything from the model (names, classes, shapes, reasons) is escaped: it is text, never markup.
"""

from __future__ import annotations

import html
from typing import Any

from ..tree import ModelTree
from .serialize import RowMaker, page

__all__ = ["MAX_ROWS", "static_html", "summary_line"]

MAX_ROWS = 400  # rows drawn at most: ~60 KB whatever the model's size
OPEN_DEPTH = 2  # levels shown open
MAX_DEPTH = 6  # levels drawn at all

_STYLE = """<style>
.tx-static { font: 12px/1.5 var(--jp-code-font-family, monospace); color: var(--jp-ui-font-color1, #222);
  border: 1px solid var(--jp-border-color2, #ddd); border-radius: 4px; padding: 6px 8px; }
.tx-static details > div, .tx-static details > details { margin-left: 16px; }
.tx-static .c { color: var(--jp-mirror-editor-variable-2-color, #05a); }
.tx-static .s, .tx-static .n { color: var(--jp-ui-font-color2, #777); }
.tx-static .m { color: #b35900; }
/* A widget that cannot be drawn without its kernel: keep its error line out of the way. */
.jp-OutputArea-child:has(~ .jp-OutputArea-child .tx-static) .jupyter-widgets:not(:has(.tx-root)) {
  display: none; }
</style>"""


# The tree's row marks as the widget labels them.
_MARKS = {"error": "failed", "fwd": "forward patched", "param": "parametrized", "wrap": "wrapper"}


def _count(n: int) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def summary_line(tree: ModelTree | None, ok: bool | None, failed_at: str | None) -> str:
    """``torchxray Explorer: ResNet, 94 modules, 11.2M params; probe ok`` (the text fallback)."""
    if tree is None:
        return "torchxray Explorer (closed)"
    root = tree.root
    probe = {None: "no probe", True: "probe ok"}.get(ok, f"probe failed at {failed_at or '(root)'}")
    return (
        f"torchxray Explorer: {root.cls}, {len(tree)} modules, "
        f"{_count(root.params_total)} params; {probe}"
    )


class _Writer:
    def __init__(self, tree: ModelTree, rows: RowMaker) -> None:
        self.tree, self.rows = tree, rows
        self.budget = MAX_ROWS
        self.out: list[str] = []

    def line(self, row: dict[str, object], label: str | None = None) -> str:
        esc = html.escape
        parts = [f"<b>{esc(label if label is not None else str(row.get('name') or '(model)'))}</b>"]
        parts.append(f'<span class="c">{esc(str(row.get("cls", "")))}</span>')
        if row.get("out"):
            parts.append(f'<span class="s">→ {esc(str(row["out"]))}</span>')
        elif row.get("not_called"):
            parts.append(f'<span class="s">not called: {esc(str(row["not_called"]))}</span>')
        params = row.get("params")
        if isinstance(params, int) and params:
            parts.append(f'<span class="n">{_count(params)} params</span>')
        for mark in row.get("marks", ()) or ():  # type: ignore[attr-defined]
            parts.append(f'<span class="m">[{esc(_MARKS.get(str(mark), str(mark)))}]</span>')
        return " ".join(parts)

    def node(self, path: str, row: dict[str, object], depth: int, label: str | None = None) -> None:
        self.budget -= 1
        node = self.tree[path]
        text = self.line(row, label)
        if not node.children or depth >= MAX_DEPTH or self.budget <= 0:
            self.out.append(f"<div>{text}</div>")
            return
        opened = " open" if depth < OPEN_DEPTH else ""
        self.out.append(f"<details{opened}><summary>{text}</summary>")
        for raw in page(self.tree, node.path, self.rows)["items"]:
            item: dict[str, Any] = dict(raw)  # a row, a fold or a "more" row
            if self.budget <= 0:
                self.out.append(f"<div>… {len(node.children)} children in all</div>")
                break
            if "fold" in item:
                first, last, count = str(item["first"]), str(item["last"]), item["fold"]
                label = f"{first.rsplit('.', 1)[-1]}–{last.rsplit('.', 1)[-1]} ×{count}"
                self.node(first, dict(self.rows.row(self.tree[first])), depth + 1, label)
            elif "more" in item:
                self.out.append(f"<div>… {item['more']} more</div>")
            else:
                self.node(str(item["path"]), dict(item), depth + 1)
        self.out.append("</details>")


def static_html(tree: ModelTree, rows: RowMaker, headline: str) -> str:
    """The read-only tree (see the module docstring); ``headline`` is ``summary_line``'s text."""
    w = _Writer(tree, rows)
    w.node(tree.root.path, dict(rows.row(tree.root)), 0)
    if w.budget <= 0:
        w.out.append(f"<div>… the first {MAX_ROWS} rows of {len(tree)} modules</div>")
    head = (
        f"<div><b>{html.escape(headline)}</b> — saved view, read-only: "
        "run the cell to explore and edit</div>"
    )
    return f'{_STYLE}<div class="tx-static">{head}{"".join(w.out)}</div>'
