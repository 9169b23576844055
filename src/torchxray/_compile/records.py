"""The frozen records `compile_check` returns: `GraphBreak`, `ExportFailure`, `CompileReport`.

Plain data: no tensor, module or exception is kept, so a report can be held, compared and sent to
the view without keeping a model alive.
"""

from __future__ import annotations

from dataclasses import dataclass


def _at(file: str, line: int) -> str:
    return f"{file}:{line}" if file else "(no Python source)"


@dataclass(frozen=True, slots=True)
class GraphBreak:
    """One place where torch.compile would split the forward into two graphs.

    `path` / `cls`: the innermost module whose own forward holds the break ("" is the root).
    `kind`: torch's graph-break type ("Data-dependent branching", "Failed to trace builtin
    operator", ...); `reason` its explanation, `hint` its hints (one per line), `url` the
    graph-break page where torch names one. `file` / `line`: the source line that breaks, the
    innermost frame of the user's code (a torch file only when the break is inside torch);
    `source` that line's text.

    Attributes:
        path: The innermost module whose own forward holds the break (``""`` is the root).
        cls: Its class name.
        kind: torch's graph-break type, e.g. ``"Data-dependent branching"``.
        reason: torch's explanation.
        hint: torch's hints, one per line.
        url: torch's graph-break page for this kind, where torch names one.
        file: The file of the line that breaks (the user's code; torch's only when the break is
            inside torch).
        line: Its line number.
        source: That line's text.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> class Chatty(nn.Module):
        ...     def forward(self, x):
        ...         print("shape", x.shape)
        ...         return x * 2
        >>> b = tx.compile_check(Chatty(), torch.randn(2), options={"export": False}).breaks[0]
        shape torch.Size([2])
        >>> b.path, b.cls, b.source
        ('', 'Chatty', 'print("shape", x.shape)')
    """

    path: str
    cls: str
    kind: str
    reason: str
    hint: str
    url: str
    file: str
    line: int
    source: str = ""

    def __str__(self) -> str:
        where = f"{self.path or '(root)'} ({self.cls})"
        return f"{where}: {self.kind} at {_at(self.file, self.line)}"


@dataclass(frozen=True, slots=True)
class ExportFailure:
    """Where ``torch.export.export(module, args, strict=False)`` of the model fails: the
    innermost module whose forward was running, the exception type as `kind`, its first lines as
    `reason`, and the user's source line.

    Attributes:
        path: The innermost module whose forward was running (``""`` is the root).
        cls: Its class name.
        kind: The exception's type, e.g. ``"UserError"``.
        reason: Its first lines.
        file: The user's source file at that point.
        line: Its line number.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> class Branchy(nn.Module):
        ...     def forward(self, x):
        ...         if x.sum() > 0:  # a branch on a value: export cannot choose
        ...             return x
        ...         return -x
        >>> rep = tx.compile_check(nn.Sequential(nn.Linear(4, 4), Branchy()), torch.randn(2, 4))
        >>> failure = rep.export[0]
        >>> failure.path, failure.cls, failure.kind, rep.export_ok
        ('1', 'Branchy', 'GuardOnDataDependentSymNode', False)
    """

    path: str
    cls: str
    kind: str
    reason: str
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.path or '(root)'} ({self.cls}): {self.kind} at {_at(self.file, self.line)}"


@dataclass(frozen=True, slots=True)
class CompileReport:
    """What `compile_check` found. `ok`: torch.compile would capture the whole forward in one
    graph (no break, and tracing finished). `breaks`: in forward order. `export`: torch.export's
    failures (empty when it exports, or when `export_checked` is False). `error`: a sentence when
    the check itself could not run or finish (a model dynamo cannot trace at all, a torch too old,
    a forward that fails on the example inputs); `notes`: what was not checked and why.

    ``rep[path]`` gives the breaks inside the module at `path` and its subtree; ``str(rep)`` the
    report in a few lines.

    Attributes:
        ok: True when torch.compile would capture the whole forward in one graph.
        mode: ``"fake"`` or ``"real"`` (the probe the check ran on).
        breaks: Every `GraphBreak`, in forward order.
        export: torch.export's failures (`ExportFailure`).
        export_checked: Whether torch.export was tried (``options={"export": False}`` skips it).
        error: Why the check could not run or finish, in a sentence; else None.
        notes: What was not checked and why, one sentence each.
        checked: Distinct (module, inputs) traces run.
        modules: Modules whose forward the example inputs reached.
        wall_ms: The check's wall time.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> rep = tx.compile_check(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), torch.randn(2, 4))
        >>> rep.ok, rep.breaks, rep.export_ok, rep["0"]
        (True, (), True, ())
        >>> print(rep)
        compile check (fake): one graph, no break
        export: ok
    """

    ok: bool
    mode: str
    breaks: tuple[GraphBreak, ...]
    export: tuple[ExportFailure, ...]
    export_checked: bool
    error: str | None
    notes: tuple[str, ...]
    checked: int  # distinct (module, inputs) traces run
    modules: int  # modules whose forward the example inputs reached
    wall_ms: float

    @property
    def export_ok(self) -> bool:
        """torch.export exports the whole model (False when not checked)."""
        return self.export_checked and not self.export and self.error is None

    def __getitem__(self, path: str) -> tuple[GraphBreak, ...]:
        """The breaks inside the module at `path` and its subtree ("" is the whole model)."""
        if not isinstance(path, str):
            raise TypeError(f"a report is indexed by a module path (str), got {path!r}")
        prefix = path + "."
        return tuple(
            b for b in self.breaks if not path or b.path == path or b.path.startswith(prefix)
        )

    def __str__(self) -> str:
        if self.error is not None:
            return f"compile check: {self.error}"
        head = "one graph, no break" if self.ok else f"{len(self.breaks)} graph break(s)"
        lines = [f"compile check ({self.mode}): {head}"]
        lines += [f"  {b}" for b in self.breaks]
        if self.export_checked:
            lines.append("export: ok" if not self.export else "export fails:")
            lines += [f"  {f}" for f in self.export]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)
