"""The summary's rows, as plain data: one `Row` per module shown at a depth, in the tree's order.

A row's ``params`` is what torchinfo's "Param #" column shows, so that the column adds up to the
total: a row whose children are rows too shows its own parameters, any other row its whole
subtree's. A tensor two rows hold (a module reached by two paths, tied weights) counts once, at
the first of them; the later ones count the rest and say how much they left out (``shared``,
`_summary/counted.py`). Runs of at least `FOLD_MIN` identical siblings
(equal ``Node.signature`` and outputs) that are shown without their children fold into one row
("layer.0–11 ×12"), whose figures are the run's sums; the CSV asks for them unfolded.

    >>> import torch, torch.nn as nn
    >>> from torchxray import probe, walk
    >>> model = nn.Sequential(nn.Linear(4, 8), *[nn.Linear(8, 8) for _ in range(3)])
    >>> shown = rows(walk(model), probe(model, torch.randn(2, 4)), depth=1)
    >>> [(r.name, r.count, r.params, r.outputs[0].shape) for r in shown]
    [('', 1, 0, (2, 8)), ('0', 1, 40, (2, 8)), ('1–3', 3, 216, (2, 8))]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..probe import TensorInfo
from .counted import Counted

if TYPE_CHECKING:
    from ..probe import ProbeReport
    from ..tree import ModelTree, Node

__all__ = ["AUTO_ROWS", "FOLD_MIN", "Output", "Row", "auto_depth", "max_depth", "rows"]

FOLD_MIN = 3  # as the widget's tree folds runs of identical siblings
AUTO_ROWS = 80  # depth=None: the deepest level whose rows stay within this many


@dataclass(frozen=True, slots=True)
class Output:
    """One tensor a module returned (first call): where it sat ("logits", "[0]", "" for a plain
    tensor), its shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True, slots=True)
class Row:
    path: str  # the module's path (a folded run: its first block's)
    name: str  # the last path component, "" for the model; a folded run: "0–11"
    cls: str
    depth: int  # 0 for the model
    last: bool  # the last row among its parent's rows (the tree's └─)
    expanded: bool  # its children are rows below it
    count: int  # modules the row stands for: 1, or a folded run's length
    params: int  # the "Param #" column (see the module docstring)
    params_own: int
    params_total: int  # a folded run: the sum over its blocks
    trainable: int  # parameters of the subtree that require grad (a run: the sum)
    shared_with: str | None  # a module registered at an earlier path: that path
    calls: int  # calls the probe recorded (0: it did not run, or there was no probe)
    outputs: tuple[Output, ...]  # tensors it returned, first call (a run: the first block's)
    other_outputs: int  # leaves that were not tensors (None, ints, a cache object)
    flops: int | None  # FLOPs of all its calls (a run: all blocks), None when not counted
    # Parameters it holds that a row above counts (not in ``params``): tied weights, a module
    # reached twice, a tensor two blocks of a run share.
    shared: int = 0


def max_depth(tree: ModelTree) -> int:
    return max(node.depth for node in tree.nodes)


def auto_depth(tree: ModelTree, report: ProbeReport | None, budget: int = AUTO_ROWS) -> int:
    """The deepest level whose folded rows stay within `budget` (at least 1)."""
    deepest = max_depth(tree)
    best = 1
    for depth in range(2, deepest + 1):
        if len(_walk(tree, report, depth, fold=True, stop=budget + 1)) > budget:
            break
        best = depth
    return min(best, max(deepest, 1))


def rows(
    tree: ModelTree, report: ProbeReport | None, depth: int, fold: bool = True
) -> tuple[Row, ...]:
    """The rows of every module down to `depth` (0: the model alone), pre-order."""
    if depth < 0:
        raise ValueError(f"depth must be >= 0 or None, got {depth}")
    return tuple(_walk(tree, report, depth, fold, book=Counted.of(tree)))


def _record(
    report: ProbeReport | None, path: str
) -> tuple[int, tuple[Output, ...], int, int | None]:
    if report is None or path not in report:
        return 0, (), 0, None
    rec = report[path]
    outs = tuple(Output(o.name, o.shape, o.dtype) for o in rec.outputs if isinstance(o, TensorInfo))
    return rec.calls, outs, len(rec.outputs) - len(outs), rec.flops


def _runs(tree: ModelTree, report: ProbeReport | None, kids: list[str]) -> list[list[str]]:
    """Siblings as runs: identical ones (not aliases) next to each other together."""
    runs: list[list[str]] = []
    key_of_last: object = None
    for path in kids:
        node = tree[path]
        key: object = None
        if node.path == path:
            key = (node.signature, node.cls, _record(report, path)[1])
        if key is not None and key == key_of_last:
            runs[-1].append(path)
        else:
            runs.append([path])
        key_of_last = key
    out: list[list[str]] = []
    for run in runs:  # a run shorter than FOLD_MIN stays as separate rows
        out.extend([run] if len(run) >= FOLD_MIN else [[p] for p in run])
    return out


def _walk(
    tree: ModelTree,
    report: ProbeReport | None,
    depth: int,
    fold: bool,
    stop: int | None = None,
    book: Counted | None = None,
) -> list[Row]:
    out: list[Row] = []
    # (paths of the run, depth, last among its siblings); an explicit stack: models nest deeply.
    stack: list[tuple[list[str], int, bool]] = [([""], 0, True)]
    while stack:
        run, level, last = stack.pop()
        first = tree[run[0]]
        alias = first.path != run[0]
        expanded = level < depth and bool(first.children) and not alias and len(run) == 1
        out.append(_row(tree, report, run, first, level, last, expanded, alias, book))
        if stop is not None and len(out) >= stop:
            break
        if not expanded:
            continue
        # Only rows shown collapsed fold: children at the depth limit, and leaves.
        kids = list(first.children)
        if not fold:
            runs = [[p] for p in kids]
        elif level + 1 >= depth:
            runs = _runs(tree, report, kids)
        else:
            runs = _leaf_runs(tree, report, kids)
        for i in range(len(runs) - 1, -1, -1):
            stack.append((runs[i], level + 1, i == len(runs) - 1))
    return out


def _leaf_runs(tree: ModelTree, report: ProbeReport | None, kids: list[str]) -> list[list[str]]:
    """Children that will be expanded stay one row each; runs of leaves still fold."""
    out: list[list[str]] = []
    leaves: list[str] = []
    for path in kids:
        if tree[path].children:
            out.extend(_runs(tree, report, leaves))
            leaves = []
            out.append([path])
        else:
            leaves.append(path)
    out.extend(_runs(tree, report, leaves))
    return out


def _row(
    tree: ModelTree,
    report: ProbeReport | None,
    run: list[str],
    first: Node,
    level: int,
    last: bool,
    expanded: bool,
    alias: bool,
    book: Counted | None,
) -> Row:
    path = run[0]
    name = path.rpartition(".")[2]
    calls, outputs, other, flops = _record(report, path)
    params_total, trainable = first.params_total, first.trainable_total
    if len(run) > 1:
        name = f"{name}–{run[-1].rpartition('.')[2]}"
        blocks = [tree[p] for p in run]
        params_total = sum(b.params_total for b in blocks)
        trainable = sum(b.trainable_total for b in blocks)
        counted = [_record(report, p) for p in run]
        calls = sum(c[0] for c in counted)
        each = [c[3] for c in counted]
        flops = None if any(f is None for f in each) else sum(f for f in each if f is not None)
    params = first.params_own if expanded else params_total
    shared = 0
    if book is not None:  # rows hold tensors in common: each counted at its first row
        params, shared = book.take(run, own_only=expanded)
    return Row(
        path=path,
        name=name,
        cls=first.cls,
        depth=level,
        last=last,
        expanded=expanded,
        count=len(run),
        params=params,
        params_own=first.params_own,
        params_total=params_total,
        trainable=trainable,
        shared_with=first.path if alias else None,
        calls=calls,
        outputs=outputs,
        other_outputs=other,
        flops=flops,
        shared=shared,
    )
