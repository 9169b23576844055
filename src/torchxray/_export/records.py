"""The frozen records `export_check` returns: `ExportIssue`, `TargetResult`, `Drift`,
`ModuleExport` (one row, ``rep[path]``) and `ExportReport`, whose ``print(rep)`` is a text table.

Plain data but for `TargetResult.program`, which holds what the target built (the
``ExportedProgram``, the ``ONNXProgram``, ExecuTorch's edge program) as the issue asks: the
rest never keeps a tensor, module or exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DATA_DEPENDENT",
    "DYNAMIC_SHAPE",
    "KINDS",
    "NOT_CORE_ATEN",
    "NOT_DELEGATED",
    "NO_ONNX",
    "TARGETS",
    "UNTRACEABLE",
    "AOTI_FAILS",
    "Drift",
    "ExportIssue",
    "ExportReport",
    "ModuleExport",
    "TargetResult",
]

TARGETS = ("export", "onnx", "executorch", "aoti")

# The kinds of issue (`ExportIssue.kind`), one sentence-sized name each.
DATA_DEPENDENT = "data-dependent control flow"
UNTRACEABLE = "export cannot trace"
DYNAMIC_SHAPE = "dynamic shape constraint violated"
NO_ONNX = "no ONNX translation"
NOT_CORE_ATEN = "outside the Core ATen set"
NOT_DELEGATED = "not delegated to XNNPACK"
AOTI_FAILS = "AOTInductor cannot compile"
KINDS = (
    DATA_DEPENDENT,
    UNTRACEABLE,
    DYNAMIC_SHAPE,
    NO_ONNX,
    NOT_CORE_ATEN,
    NOT_DELEGATED,
    AOTI_FAILS,
)


def _at(file: str, line: int) -> str:
    return f"{file}:{line}" if file else "(no Python source)"


@dataclass(frozen=True, slots=True)
class ExportIssue:
    """One op (or construct) a target cannot take, on the innermost module that holds it.

    `target`: "export", "onnx", "executorch" or "aoti". `path` / `cls`: the innermost module whose
    forward runs it ("" is the root). `op`: the operator (``aten.linalg_qr.default``) or, for an
    export failure, what failed (the data-dependent expression, the exception type). `kind`: one
    of `KINDS`. `reason`: the backend's own words. `file` / `line`: the user's source line (a
    torch file only where the op is inside torch's own module code); `source`: its text;
    `count`: how many nodes of the program it stands for (the same op on the same line).
    ``str(issue)`` is one line: target, module, kind, op and ``file:line``.

    Attributes:
        target: The target that cannot take it: ``"export"``, ``"onnx"``, ``"executorch"`` or
            ``"aoti"``.
        path: The innermost module whose forward runs it (``""`` is the root).
        cls: Its class name.
        op: The operator, e.g. ``"aten.linalg_qr.default"``; for a torch.export failure, what
            failed (the data-dependent expression, the exception's type).
        kind: One of the kinds: ``"data-dependent control flow"``, ``"export cannot trace"``,
            ``"dynamic shape constraint violated"``, ``"no ONNX translation"``, ``"outside the
            Core ATen set"``, ``"not delegated to XNNPACK"`` (the op runs on ExecuTorch's
            portable kernels: listed, not blocking) or ``"AOTInductor cannot compile"``.
        reason: The backend's own words.
        file: The user's source file of the op (torch's only where the op is inside torch's own
            module code); ``""`` when it has no Python source.
        line: Its line number.
        source: That line's text.
        count: How many nodes of the program it stands for (the same op on the same line).

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> class RunningMax(nn.Module):
        ...     def forward(self, x):
        ...         return torch.cummax(x, 0)[0]
        >>> model = nn.Sequential(nn.Linear(4, 4), RunningMax()).eval()
        >>> issue = tx.export_check(model, torch.randn(2, 4)).failures[0]
        >>> issue.target, issue.path, issue.cls, issue.op, issue.kind
        ('onnx', '1', 'RunningMax', 'aten.cummax.default', 'no ONNX translation')
        >>> issue.source, issue.count
        ('return torch.cummax(x, 0)[0]', 1)
    """

    target: str
    path: str
    cls: str
    op: str
    kind: str
    reason: str
    file: str
    line: int
    source: str = ""
    count: int = 1

    def __str__(self) -> str:
        where = f"{self.path or '(root)'} ({self.cls})"
        times = f" x{self.count}" if self.count > 1 else ""
        return (
            f"[{self.target}] {where}: {self.kind}: {self.op}{times} at {_at(self.file, self.line)}"
        )


@dataclass(frozen=True, slots=True)
class TargetResult:
    """One target's outcome. `status`: "ok", "fails", "not installed", "not checked" (a stage
    before it failed, or it was not asked for) or "error" (the check itself could not finish:
    `message` says why). `seconds`: its own wall time. `program`: what it built (None when it
    did not build one). `delegated` / `portable`: ExecuTorch's op counts (0 elsewhere).

    Attributes:
        target: ``"export"``, ``"onnx"``, ``"executorch"`` or ``"aoti"``.
        status: ``"ok"``, ``"fails"``, ``"not installed"`` (its package is missing: `message`
            says which extra installs it), ``"not checked"`` (a stage before it failed) or
            ``"error"`` (the check itself could not finish the target).
        message: What the status means here, in a few words (``"1 op(s) without an ONNX
            translation"``); ``""`` when there is nothing to add.
        seconds: The target's own wall time.
        program: What the target built: torch.export's ``ExportedProgram``, the
            ``ONNXProgram``, ExecuTorch's edge program; None where it built none (it fails, or
            only the ops were read). Left out of comparisons and of the repr.
        delegated: ExecuTorch: the ops delegated to XNNPACK (0 for the other targets).
        portable: ExecuTorch: the ops left to its portable kernels (0 for the other targets).

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
        >>> rep = tx.export_check(model, torch.randn(2, 4), options={"drift": False})
        >>> onnx = rep.targets["onnx"]
        >>> onnx.ok, onnx.status, type(onnx.program).__name__
        (True, 'ok', 'ONNXProgram')
        >>> type(rep.targets["export"].program).__name__
        'ExportedProgram'
    """

    target: str
    status: str
    message: str = ""
    seconds: float = 0.0
    program: Any = field(default=None, compare=False, repr=False)
    delegated: int = 0
    portable: int = 0

    @property
    def ok(self) -> bool:
        """The target takes the model (`status` is ``"ok"``)."""
        return self.status == "ok"


@dataclass(frozen=True, slots=True)
class Drift:
    """How far a module's outputs in onnxruntime are from the eager module's on the same
    inputs: `max_abs` the largest absolute difference over its output tensors, `max_rel` that
    divided by the largest absolute eager value (0 where that is 0), `outputs` the tensors
    compared. Measured on real weights in eval mode, where the ONNX model was built
    (``rep.drift[path]``, ``rep[path].drift``).

    Attributes:
        path: The module's path (``""`` is the root).
        max_abs: The largest absolute difference over its output tensors.
        max_rel: `max_abs` divided by the largest absolute eager value of those outputs (0 where
            that is 0).
        outputs: How many output tensors were compared.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> _ = torch.manual_seed(0)
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).eval()
        >>> rep = tx.export_check(model, torch.randn(3, 4))
        >>> sorted(rep.drift)
        ['', '0', '1', '2']
        >>> d = rep.drift["2"]
        >>> d.path, d.outputs, d.max_abs < 1e-5, d.max_rel < 1e-5
        ('2', 1, True, True)
    """

    path: str
    max_abs: float
    max_rel: float
    outputs: int

    def __str__(self) -> str:
        return f"{self.path or '(root)'}: max abs {self.max_abs:.3g}, rel {self.max_rel:.3g}"


@dataclass(frozen=True, slots=True)
class ModuleExport:
    """One module's view of a report (``rep[path]``): `own` its own forward's issues, `issues`
    those of its subtree too, `ok` no issue in the subtree (an op left to ExecuTorch's portable
    kernels is listed, and runs: not one), `status` per target checked ("ok", "fails", "not
    checked", and for ExecuTorch "delegated", "portable" or "partly delegated"), `drift` its own
    drift (None when not measured).

    Attributes:
        path: The module's path (``""`` is the root).
        cls: Its class name.
        own: The `ExportIssue`s of its own forward (not its children's).
        issues: The `ExportIssue`s of its whole subtree, itself included.
        status: Per target checked: ``"ok"``, ``"fails"``, ``"not checked"``, and for
            ExecuTorch ``"delegated"``, ``"portable"`` or ``"partly delegated"``.
        drift: Its own `Drift`; None when it was not measured.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> class RunningMax(nn.Module):
        ...     def forward(self, x):
        ...         return torch.cummax(x, 0)[0]
        >>> model = nn.Sequential(nn.Linear(4, 4), RunningMax()).eval()
        >>> rep = tx.export_check(model, torch.randn(2, 4))
        >>> row = rep["1"]
        >>> row.cls, row.ok, row.status, [i.op for i in row.own], row.drift
        ('RunningMax', False, {'export': 'ok', 'onnx': 'fails'}, ['aten.cummax.default'], None)
        >>> rep["0"].ok, rep[""].own, len(rep[""].issues)
        (True, (), 1)
    """

    path: str
    cls: str
    own: tuple[ExportIssue, ...]
    issues: tuple[ExportIssue, ...]
    status: Mapping[str, str]
    drift: Drift | None

    @property
    def ok(self) -> bool:
        """No issue in the subtree but ops left to ExecuTorch's portable kernels (they run)."""
        return all(i.kind == NOT_DELEGATED for i in self.issues)


@dataclass(frozen=True)
class ExportReport:
    """What `export_check` found. `ok`: every target asked for takes the model. `targets`: per
    target, `TargetResult`. `failures`: every issue found, in target then forward order. `drift`:
    per module path, `Drift` (empty unless an ONNX model was built and run). `error`: a sentence
    when the check could not run (the forward fails on the inputs, say); `notes`: what was not
    checked and why.

    ``rep[path]`` gives one module's view (`ModuleExport`; KeyError naming the closest path for
    a module the forward did not reach); ``print(rep)`` the report as a text table.

    Attributes:
        ok: Every target asked for takes the model (an op left to ExecuTorch's portable kernels
            runs, and does not make it False).
        mode: ``"real"`` or ``"fake"``: the probe the check ran on.
        targets: Target name -> `TargetResult`, in the order ``"export"``, ``"onnx"``,
            ``"executorch"``, ``"aoti"``; ``"export"`` is always there (empty only when `error`
            is set).
        failures: Every `ExportIssue` found, target by target, in forward order.
        drift: Module path -> `Drift`; empty unless an ONNX model was built and run on real
            weights in eval mode.
        error: Why the check could not run (the forward fails on the inputs, say), in a
            sentence; else None.
        notes: What was not checked and why, one sentence each.
        modules: Every module the forward reached: path -> class name.
        status: Module path -> target -> its status there (see `ModuleExport.status`).
        wall_ms: The check's wall time, in milliseconds.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> class RunningMax(nn.Module):
        ...     def forward(self, x):
        ...         return torch.cummax(x, 0)[0]
        >>> model = nn.Sequential(nn.Linear(4, 4), RunningMax()).eval()
        >>> rep = tx.export_check(model, torch.randn(2, 4))
        >>> rep.ok, rep.mode, rep.error, {name: t.status for name, t in rep.targets.items()}
        (False, 'real', None, {'export': 'ok', 'onnx': 'fails'})
        >>> rep.modules
        {'': 'Sequential', '0': 'Linear', '1': 'RunningMax'}
        >>> rep.status["1"], len(rep.failures), rep.drift
        ({'export': 'ok', 'onnx': 'fails'}, 1, {})
        >>> print(rep)  # doctest: +ELLIPSIS
        export check (real): 1 issue(s)
        <BLANKLINE>
        target  status  seconds  what
        ------  ------  -------  -----------------------------------
        export  ok      ...
        onnx    fails   ... 1 op(s) without an ONNX translation
        <BLANKLINE>
        module  class       export  onnx   drift (max abs)
        ------  ----------  ------  -----  ---------------
        (root)  Sequential  ok      FAILS
        1       RunningMax  ok      FAILS
        <BLANKLINE>
        issues:
          [onnx] 1 (RunningMax): no ONNX translation: aten.cummax.default at ...
    """

    ok: bool
    mode: str
    targets: Mapping[str, TargetResult]
    failures: tuple[ExportIssue, ...]
    drift: Mapping[str, Drift]
    error: str | None
    notes: tuple[str, ...]
    modules: Mapping[str, str]  # every module the forward reached: path -> class name
    status: Mapping[str, Mapping[str, str]] = field(
        default_factory=dict
    )  # path -> target -> status
    wall_ms: float = 0.0

    def __getitem__(self, path: str) -> ModuleExport:
        """The module at `path`'s view of the report ("" is the whole model)."""
        if not isinstance(path, str):
            raise TypeError(f"a report is indexed by a module path (str), got {path!r}")
        if path not in self.modules:
            from .._text import closest

            near = closest(path, list(self.modules))
            also = f"; did you mean {near[0]!r}?" if near else ""
            raise KeyError(f"no module {path!r} was reached by the forward{also}")
        prefix = path + "."
        own = tuple(f for f in self.failures if f.path == path)
        sub = tuple(
            f for f in self.failures if not path or f.path == path or f.path.startswith(prefix)
        )
        return ModuleExport(
            path,
            self.modules[path],
            own,
            sub,
            dict(self.status.get(path, {})),
            self.drift.get(path),
        )

    def __str__(self) -> str:
        return _report_text(self)


# -- print(rep): a plain-text table for a terminal or a log ---------------------------------------
MAX_ROWS = 40
_MARK = {
    "ok": "ok",
    "fails": "FAILS",
    "delegated": "delegated",
    "portable": "portable",
    "partly delegated": "partly",
    "not reached": "-",
    "not checked": "?",
}


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, row in enumerate(rows):
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def _report_text(rep: ExportReport) -> str:
    """``print(rep)``: the verdict, the targets, the modules with an issue or drift, the issues."""
    if rep.error is not None:
        return f"export check: {rep.error}"
    asked = list(rep.targets)
    blocking = [f for f in rep.failures if f.kind != NOT_DELEGATED]
    head = "every target takes the model" if rep.ok else f"{len(blocking)} issue(s)"
    lines = [f"export check ({rep.mode}): {head}", ""]
    rows = [["target", "status", "seconds", "what"]]
    for name, t in rep.targets.items():
        what = t.message
        if name == "executorch" and t.status == "ok":
            what = f"{t.delegated} op(s) delegated to XNNPACK, {t.portable} portable" + (
                f"; {what}" if what else ""
            )
        rows.append([name, t.status, f"{t.seconds:.2f}", what])
    lines += _table(rows)
    shown = [
        p
        for p in rep.modules
        if rep.status.get(p)
        and any(s not in ("ok", "not reached") for s in rep.status[p].values())
        or p in rep.drift
    ]
    if shown:
        lines.append("")
        cols = [t for t in asked if t in ("export", "onnx", "executorch", "aoti")]
        rows = [["module", "class", *cols, "drift (max abs)"]]
        for p in shown[:MAX_ROWS]:
            st = rep.status.get(p, {})
            d = rep.drift.get(p)
            rows.append(
                [p or "(root)", rep.modules[p], *(_MARK.get(st.get(c, ""), st.get(c, "")) for c in cols),
                 f"{d.max_abs:.2e}" if d is not None else ""]
            )  # fmt: skip
        lines += _table(rows)
        if len(shown) > MAX_ROWS:
            lines.append(f"... {len(shown) - MAX_ROWS} more module(s): rep[path] has each")
    hard = [f for f in rep.failures if f.kind != NOT_DELEGATED]
    if hard:
        lines += ["", "issues:"]
        lines += [f"  {f}" for f in hard]
    soft: dict[tuple[str, str], list[str]] = {}
    for f in rep.failures:
        if f.kind == NOT_DELEGATED:
            names = soft.setdefault((f.path, f.cls), [])
            names += [f.op.removeprefix("aten.").split(".")[0]] * f.count
    if soft:
        lines += ["", "left to ExecuTorch's portable kernels (not delegated to XNNPACK):"]
        for (path, cls), names in soft.items():
            kinds = ", ".join(dict.fromkeys(names))
            lines.append(f"  {path or '(root)'} ({cls}): {len(names)} op(s): {kinds}")
    lines += [f"note: {n}" for n in rep.notes]
    return "\n".join(lines)
