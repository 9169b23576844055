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
    did not build one). `delegated` / `portable`: ExecuTorch's op counts (0 elsewhere)."""

    target: str
    status: str
    message: str = ""
    seconds: float = 0.0
    program: Any = field(default=None, compare=False, repr=False)
    delegated: int = 0
    portable: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True, slots=True)
class Drift:
    """How far a module's outputs in onnxruntime are from the eager module's on the same
    inputs: `max_abs` the largest absolute difference over its output tensors, `max_rel` that
    divided by the largest absolute eager value (0 where that is 0), `outputs` the tensors
    compared."""

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
    drift (None when not measured)."""

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
    checked and why."""

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
