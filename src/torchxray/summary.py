"""`summary(model, *args, depth=None, **kwargs) -> str`: one copyable text summary, as torchinfo's:
the tree to a depth with each module's class, output shape and parameter count, then the totals
(total / trainable / non-trainable parameters, mult-adds, sizes).

    >>> import torch, torch.nn as nn, torchxray as tx
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> print(tx.summary(model, torch.randn(3, 4)))
    Sequential: 4 modules; probe ok (fake)
    =====================================
    Layer (type)   Output shape   Param #
    =====================================
    Sequential     [3, 2]         --
    ├─0 (Linear)   [3, 8]         40
    ├─1 (ReLU)     [3, 8]         --
    └─2 (Linear)   [3, 2]         18
    =====================================
    Total params: 58
    Trainable params: 58
    Non-trainable params: 0
    Total mult-adds: 144
    =====================================
    Input size: 48 bytes
    Forward/backward pass size: 240 bytes
    Params size: 232 bytes
    Buffers size: 0 bytes
    Estimated total size: 520 bytes
    =====================================
    Forward/backward pass size: torchinfo's estimate, outputs of the layers that hold parameters
    x2; tx.memory(model, x, training=True) measures a training step.

Output shapes come from a fake probe (`probe.probe`: no memory used, nothing computed) when
example inputs are given; an output that is a dict, tuple or ``ModelOutput`` is listed by name
("logits: [1, 16, 30522]"). ``depth`` is how many levels below the model are shown; None picks
the deepest whose rows fit on a screen (80). Runs of identical blocks shown without their
children fold into one row ("layer.0–11 (BertLayer) ×12"). The pieces, in torchinfo's order:
`_summary/records.py` (rows), `_summary/stats.py` (totals, and how they differ from
torchinfo's for tied weights), `_summary/text.py` (text and CSV). ``compile=True`` (or an
Explorer whose compile check has run: ``ex.summary()``) adds a line under the first with the
graph-break count and the modules that break (``tx.compile_check``). `summarize` returns them as
data (`Summary`); ``Summary.text()`` and ``Summary.csv()`` format them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch import nn

from ._compile.records import CompileReport
from ._summary.records import Row, auto_depth, max_depth, rows
from ._summary.stats import Totals, totals
from ._summary.text import csv_text, table
from .compile import compile_check
from .probe import ProbeReport, probe
from .tree import ModelTree, walk

__all__ = ["Summary", "compile_line", "summarize", "summary"]

_MESSAGE_MAX = 160
# What the pass size is (torchinfo's label, torchinfo's rule: `_summary/stats.py`), for a reader
# who takes it for the activation memory of a step.
PASS_NOTE = (
    "Forward/backward pass size: torchinfo's estimate, outputs of the layers that hold parameters\n"
    "x2; tx.memory(model, x, training=True) measures a training step."
)


@dataclass(frozen=True)
class Summary:
    """A summary as data: the rows shown, the totals, and what the text's first line says."""

    cls: str
    depth: int
    deepest: int  # the tree's depth: `depth` below it hides levels
    auto: bool  # the depth was chosen (depth=None)
    rows: tuple[Row, ...]
    totals: Totals
    probe: str  # "probe ok (fake)", "probe failed at bn1 (...)", "no probe: ..."
    probed: bool  # a report gave the output shapes
    no_mult_adds: str  # why there is no mult-adds figure, where there is none
    compile: str = ""  # "compile: 2 graph breaks, in ..." when a compile check was given

    def text(self) -> str:
        t = self.totals
        modules = f"{t.modules:,} module{'s' if t.modules != 1 else ''}"
        notes = []
        if t.shared:
            notes.append(
                f"Shared parameters: {t.shared:,} are held by more than one module (tied "
                "weights) and counted once, as model.parameters() does; torchinfo counts "
                "them again for each module that holds them."
            )
        if any(r.shared or r.shared_with is not None for r in self.rows):
            notes.append(
                "Param # counts each tensor once, at its first row: rows marked * share tensors "
                "counted above ((shared): all of theirs), so the column adds up to Total params."
            )
        if self.probed:
            notes.append(PASS_NOTE)
        if not t.exact:
            notes.append(
                "Uninitialised parameters (a lazy module's before its first forward, any "
                "UninitializedParameter) are counted as 0: materialise them for their sizes."
            )
        if any(r.count > 1 for r in self.rows):
            notes.append("×N: N identical blocks in one row, their figures summed.")
        if self.depth < self.deepest:
            how = "the deepest that fits the screen; " if self.auto else ""
            notes.append(
                f"Depth {self.depth} of {self.deepest} ({how}summary(depth={self.depth + 1}) "
                "shows more)."
            )
        return table(
            self.rows,
            t,
            [f"{self.cls}: {modules}; {self.probe}", *([self.compile] if self.compile else [])],
            probed=self.probed,
            notes=notes,
            no_mult_adds=self.no_mult_adds,
        )

    def csv(self) -> str:
        """The rows as CSV (``summarize(..., fold=False)`` gives one line per module)."""
        return csv_text(self.rows)


def _probe_line(report: ProbeReport | None, note: str) -> str:
    if report is None:
        return note or "no probe (no example inputs: summary(model, x) probes with them)"
    if report.ok:
        return f"probe ok ({report.mode})"
    err = report.error
    if err is None:
        return "probe failed"
    message = _cut(err.message)
    return f"probe failed at {err.path or '(model)'} ({err.cls}): {err.exc_type}: {message}"


def compile_line(report: CompileReport | None) -> str:
    """The summary's line on a compile check: the break count and where ('' without one)."""
    if report is None:
        return ""
    if report.error is not None:
        return f"compile check could not run: {_cut(report.error)}"
    if not report.breaks:
        return f"compile: one graph, no graph break ({report.mode} inputs)"
    n = len(report.breaks)
    where = ", ".join(dict.fromkeys(f"{b.path or '(model)'} ({b.cls})" for b in report.breaks))
    return f"compile: {n} graph break{'s' if n != 1 else ''}, in {_cut(where)}"


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…"


def _no_mult_adds(report: ProbeReport | None) -> str:
    if report is None:
        return "no probe"
    if not report.ok:
        return "the probe failed"
    return "a real probe counts no FLOPs; a fake one does"


def summarize(
    tree: ModelTree,
    report: ProbeReport | None = None,
    *,
    depth: int | None = None,
    fold: bool = True,
    note: str = "",
    compile_report: CompileReport | None = None,
) -> Summary:
    """The summary of a walked model and (optionally) its probe and compile check, as data.
    ``note`` says why there is no report, where there is none (the Explorer's probe note)."""
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 0):
        raise ValueError(f"summary(depth=...) takes an int >= 0 or None, got {depth!r}")
    deepest = max_depth(tree)
    chosen = auto_depth(tree, report) if depth is None else min(depth, deepest)
    return Summary(
        cls=tree.root.cls,
        depth=chosen,
        deepest=deepest,
        auto=depth is None,
        rows=rows(tree, report, chosen, fold),
        totals=totals(tree, report),
        probe=_probe_line(report, note),
        probed=report is not None,
        no_mult_adds=_no_mult_adds(report),
        compile=compile_line(compile_report),
    )


def summary(
    model: nn.Module,
    *args: Any,
    depth: int | None = None,
    compile: bool = False,
    **kwargs: Any,
) -> str:
    """The text summary of ``model``; with example inputs, a fake probe gives the output shapes
    and the mult-adds, and ``compile=True`` adds a line with ``tx.compile_check``'s break count
    and where they are. ``depth`` and ``compile`` are taken by the summary: forward keywords of
    those names cannot be passed through here (``tx.probe`` and `summarize` can).

    The layout is torchinfo's: the tree to a depth, each module's class, output shape and
    "Param #" (each tensor counted once, at the first row that holds it, so the column adds up
    with tied weights), then the totals, mult-adds (half the fake probe's FLOPs) and sizes.

    Args:
        model: The model.
        *args: Example positional inputs; without any, no output shapes or mult-adds.
        depth: How many levels below the model to show; None picks the deepest whose rows fit
            80 lines (runs of identical blocks fold into one row).
        compile: Add a line with `compile_check`'s graph breaks (needs example inputs).
        **kwargs: Example keyword inputs.

    Returns:
        The summary as text.

    Raises:
        TypeError: `model` is not an `nn.Module`, or `compile` is not a bool.
        ValueError: ``compile=True`` without example inputs.

    Examples:
        >>> import torch, torchxray as tx
        >>> from torchxray import demo
        >>> print(tx.summary(demo.resnet_ish(), demo.images(), depth=1))
        ResNetIsh: 35 modules; probe ok (fake)
        =========================================================
        Layer (type)                    Output shape      Param #
        =========================================================
        ResNetIsh                       [2, 10]           --
        ├─conv1 (Conv2d)                [2, 16, 32, 32]   432
        ├─bn1 (BatchNorm2d)             [2, 16, 32, 32]   32
        ├─relu (ReLU)                   [2, 16, 32, 32]   --
        ├─layer1 (Sequential)           [2, 16, 32, 32]   9,344
        ├─layer2 (Sequential)           [2, 32, 16, 16]   33,088
        ├─avgpool (AdaptiveAvgPool2d)   [2, 32, 1, 1]     --
        └─fc (Linear)                   [2, 10]           330
        =========================================================
        Total params: 43,226
        Trainable params: 43,226
        Non-trainable params: 0
        Total mult-adds: 36.54 M (36,536,960)
        =========================================================
        Input size: 24.58 kB (24,576 bytes)
        Forward/backward pass size: 3.93 MB (3,932,320 bytes)
        Params size: 172.90 kB (172,904 bytes)
        Buffers size: 2.00 kB (2,000 bytes)
        Estimated total size: 4.13 MB (4,131,800 bytes)
        =========================================================
        Forward/backward pass size: torchinfo's estimate, outputs of the layers that hold parameters
        x2; tx.memory(model, x, training=True) measures a training step.
        Depth 1 of 4 (summary(depth=2) shows more).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"summary() takes an nn.Module, got {type(model).__name__}")
    if not isinstance(compile, bool):
        raise TypeError(f"summary(compile=...) takes True or False, got {compile!r}")
    if compile and not (args or kwargs):
        raise ValueError(
            "summary(compile=True) needs example inputs: tx.summary(model, x, compile=True)"
        )
    report = probe(model, *args, **kwargs) if args or kwargs else None
    checked = compile_check(model, *args, **kwargs) if compile else None
    return summarize(walk(model), report, depth=depth, compile_report=checked).text()
