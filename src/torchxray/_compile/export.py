"""The torch.export half of a check: `export_failures(model, capture) -> ([ExportFailure], notes)`.

``torch.export.export(model, args, kwargs, strict=False)`` runs on the probe's captured root call
(fake tensors in a fake check: export traces on fake tensors of its own, nothing is computed). A
failure is owned by the innermost module whose forward was on the failing stack: non-strict
export runs the forward as Python, so the traceback's frames hold ``self``, and the module is
found by identity, not by code. Its line is the innermost frame outside torch.

Blocks interchangeable with one before them (`_compile.plan`) stand in for themselves from the
start. To find the next failure, the failing module (and every block interchangeable with it,
`_compile.plan`) is stubbed with its recorded output (`_compile.stubs`) and the model exported
again, until it exports, the same failure comes back, or the owner cannot be stubbed (the root,
or a module whose output was not recorded or is not made of tensors): one export per distinct
failure, plus one.

`export_run(model, capture, whole=True, traces=True, dynamic_shapes=...)` is the same loop for
``tx.export_check`` (`torchxray.export_check`), which also needs what export made: the
`ExportRun` keeps the last program exported (the model itself when it exported at once; else the
model with its failing modules stood in for, `ExportRun.stood` naming them), with each node's
stack trace where `traces` asks for it (the ONNX and ExecuTorch targets place an op on its line
from it). `whole` first exports the model with no stand-in at all (an ONNX model must be the
model's own), and stands in for interchangeable blocks only once something failed.
"""

from __future__ import annotations

import contextlib
import io
import os
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .._text import short
from .._unwrap import original_class
from .capture import Capture, Captured
from .owner import defined_at
from .plan import plan
from .records import ExportFailure
from .stubs import Stubs, rebuildable

__all__ = ["ExportRun", "export_failures", "export_run", "kept_attributes"]

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_MAX_ROUNDS = 16


def _silenced(traces: bool = False) -> contextlib.ExitStack:
    """Export's own output kept from the user's cell, and its nodes without stack traces unless
    `traces` asks for them."""
    stack = contextlib.ExitStack()
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
    if not traces:
        stack.enter_context(_no_stack_traces())
    return stack


@contextlib.contextmanager
def _no_stack_traces() -> Iterator[None]:
    """``torch.fx.config.do_not_emit_stack_traces`` for one export, put back after: export
    records the Python stack of every node it makes (``node.meta["stack_trace"]``), which the
    check never reads (a failure is placed from its exception's own frames, `_locate`): 15-19%
    of a 2-layer BERT's or Llama's export. A torch without the setting records them."""
    config = torch.fx.config
    before = getattr(config, "do_not_emit_stack_traces", None)
    if before is None:
        yield
        return
    config.do_not_emit_stack_traces = True
    try:
        yield
    finally:
        config.do_not_emit_stack_traces = before


@contextlib.contextmanager
def kept_attributes(model: nn.Module) -> Iterator[None]:
    """Every module's attributes as they were, the same objects, on leaving: non-strict export
    sets equal copies of some (a convolution's ``kernel_size`` tuple, a timm model's
    ``pretrained_cfg`` dict), and drops none; code that holds the old object, or compares by
    identity, would see another. Attributes export added are removed. Entered inside the
    stand-ins (`Stubs`, `_Unregistered`), which put back their own changes after."""
    saved = [(m, dict(vars(m))) for m in {id(m): m for m in model.modules()}.values()]
    try:
        yield
    finally:
        for module, before in saved:
            now = vars(module)
            for key in [k for k in now if k not in before]:
                del now[key]
            for key, value in before.items():
                if now.get(key, _GONE) is not value:
                    now[key] = value


_GONE = object()


def _frames(exc: BaseException) -> list[Any]:
    """Every frame of the exception and the ones it was raised from, outermost first."""
    chain: list[BaseException] = []
    while exc is not None and exc not in chain and len(chain) < 8:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    out: list[Any] = []
    for link in reversed(chain):  # the original exception's frames are the deepest
        out.extend(f for f, _ in traceback.walk_tb(link.__traceback__))
    return out


def _locate(exc: BaseException, ids: dict[int, nn.Module]) -> tuple[nn.Module | None, str, int]:
    """(owner, file, line): the innermost frame whose ``self`` is one of the model's modules,
    and the innermost frame of the user's code (outside torch and torchxray, and not code torch
    generated, which has no file; a module's forward defined in a notebook cell counts)."""
    owner: nn.Module | None = None
    user: tuple[str, int] | None = None
    for frame in _frames(exc):
        me = frame.f_locals.get("self")
        mine = isinstance(me, nn.Module) and id(me) in ids
        if mine:
            owner = me
        name = frame.f_code.co_filename
        if mine or not (name.startswith((_TORCH_DIR, _OWN_DIR)) or name.startswith("<")):
            user = (name, frame.f_lineno)
    if user is None:
        return owner, "", 0
    return owner, user[0], user[1]


class _Unregistered:
    """For one export, the plain parameters and buffers of stood-in modules (and of their
    submodules) out of their modules' registries, but the one the stand-ins read
    (`stubs.Stubs.reads`); the registries are put back on leaving. Export lifts and fakes every
    registered parameter and buffer whether the forward reads it or not: 23 stood-in blocks of 6
    parameters each cost it about a third of a 24-block export. Code that reads a hidden tensor
    would fail here and not in the real forward: an export whose failure went through such a
    module (a frame whose ``self`` it is, as in ``nn.Module.__getattr__`` or a forward a
    stand-in did not replace) or is an attribute or key lookup is run again with everything
    visible (`_export`): what is reported is export's answer on the model as it is. Subclass
    parameters and buffers (a quantized weight) are never hidden: lifting one may be what
    fails."""

    def __init__(self, stood: list[nn.Module], stubs: Stubs) -> None:
        self._stood = stood
        self._stubs = stubs  # entered first: its `reads` is known then
        self._saved: list[tuple[nn.Module, str, dict[str, Any]]] = []
        self.hid: set[int] = set()  # the modules whose tensors were hidden, by id

    def __enter__(self) -> _Unregistered:
        reads = self._stubs.reads
        keep = set() if reads is None else {id(reads)}
        for module in {id(s): s for m in self._stood for s in m.modules()}.values():
            for attr, plain in (("_parameters", nn.Parameter), ("_buffers", torch.Tensor)):
                held = getattr(module, attr)
                kept = {
                    n: t
                    for n, t in held.items()
                    if t is None or id(t) in keep or type(t) is not plain
                }
                if len(kept) < len(held):
                    self._saved.append((module, attr, held))
                    self.hid.add(id(module))
                    object.__setattr__(module, attr, kept)
        return self

    def __exit__(self, *exc: object) -> None:
        for module, attr, held in reversed(self._saved):
            object.__setattr__(module, attr, held)
        self._saved.clear()


def _touches(exc: BaseException, ids: set[int]) -> bool:
    """Whether a failure may come of parameters `_Unregistered` hid in the modules `ids`."""
    if not ids:
        return False
    if isinstance(exc, (AttributeError, KeyError)) or isinstance(
        exc.__cause__ or exc.__context__, (AttributeError, KeyError)
    ):
        return True
    return any(id(frame.f_locals.get("self")) in ids for frame in _frames(exc))


def _export(
    model: nn.Module,
    root: Any,
    stubbed: list[tuple[nn.Module, Captured]],
    traces: bool = False,
    dynamic_shapes: Any = None,
) -> Any:
    """``torch.export.export`` of the root call with `stubbed` standing in, parameters of the
    stood-in modules hidden (`_Unregistered`) and, where that fails, visible; the program.
    Export prints the partial graph of a failure to stderr itself, and runs the forward as
    Python (its own prints): the check's work, kept out of the user's cell."""
    args, kwargs = tuple(root.args), dict(root.kwargs)
    shapes = {} if dynamic_shapes is None else {"dynamic_shapes": dynamic_shapes}
    stubs = Stubs(stubbed)
    hidden = _Unregistered([m for m, _ in stubbed], stubs)
    try:
        with stubs, hidden, _silenced(traces), kept_attributes(model):
            return torch.export.export(model, args, kwargs, strict=False, **shapes)
    except Exception as exc:
        if not _touches(exc, hidden.hid):
            raise
    with Stubs(stubbed), _silenced(traces), kept_attributes(model):
        return torch.export.export(model, args, kwargs, strict=False, **shapes)


def _reason(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    return short(" ".join(lines[:3]) or type(exc).__name__, 400)


@dataclass
class ExportRun:
    """What `export_run` found: the failures in the order found, the notes on what was not
    checked, and the last program export made (None when nothing exported), with the paths of
    the modules stood in for in it (`stood`: their ops there are the stand-in's, not theirs)
    and of those whose own failure made them stand in (`failed`)."""

    failures: list[ExportFailure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    program: Any = None
    stood: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    exports: int = 0


def export_failures(model: nn.Module, cap: Capture) -> tuple[list[ExportFailure], list[str]]:
    """See the module docstring; call inside `guard.Quiet`."""
    run = export_run(model, cap, whole=False, traces=False)
    return run.failures, run.notes


def export_run(
    model: nn.Module,
    cap: Capture,
    *,
    whole: bool = False,
    traces: bool = False,
    dynamic_shapes: Any = None,
    inputs: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
    explain: Callable[[BaseException], list[ExportFailure]] | None = None,
) -> ExportRun:
    """See the module docstring; call inside `guard.Quiet`. `inputs`: the (args, kwargs) to
    export with instead of the probe's recording of the root call (a real check's own tensors);
    `explain`: for a failure that is not one module's (a dynamic-shape constraint, raised once
    tracing is over), the failures it stands for, which end the loop (standing in for a module
    would not change it); [] leaves it to the usual placing."""
    out = ExportRun()
    root = cap.calls.get(id(model))
    if root is None:
        out.notes.append(
            "torch.export was not tried: the forward did not run on the example inputs"
        )
        return out
    call: Any = root if inputs is None else Captured(root.order, *inputs)
    named = list(model.named_modules())
    ids = {id(m): m for _, m in named}
    path_of = {id(m): p for p, m in named}
    planned = plan(model, cap.calls)
    groups = {p: g for g in planned for p, _ in g.members}
    failures, notes = out.failures, out.notes
    # Interchangeable blocks after the first stand in for themselves from the start: the first
    # one's failures are theirs too (24 identical blocks export as one block and 23 stubs).
    # Static shapes only: a stand-in answers with the example's shapes, which would specialise
    # a dimension the caller asked to keep dynamic.
    copies = [
        (m, cap.calls[id(m)])
        for g in planned
        for _, m in g.members[1:]
        if cap.calls[id(m)].stubbable and rebuildable(cap.calls[id(m)].output)
    ]
    stubbed = [] if whole or dynamic_shapes is not None else list(copies)
    seen: set[tuple[str, str, int]] = set()
    for _ in range(_MAX_ROUNDS):
        try:
            out.exports += 1
            out.program = _export(model, call, stubbed, traces, dynamic_shapes)
            out.stood = [path_of[id(m)] for m, _ in stubbed]
            return out
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none raised
            whole_model = explain(exc) if explain is not None else []
            if whole_model:
                failures.extend(whole_model)
                return out
            found, file, line = _locate(exc, ids)
            owner = model if found is None else found
            path = path_of[id(owner)]
            if not file:
                file, line = defined_at(owner)
            kind = type(exc).__name__
            if (path, file, line) in seen:
                return out
            seen.add((path, file, line))
            group = groups.get(path)
            members = group.members if group is not None else [(path, owner)]
            for member, module in members:  # interchangeable blocks fail alike
                failures.append(
                    ExportFailure(
                        member,
                        original_class(type(module)).__name__,
                        kind,
                        _reason(exc),
                        file,
                        line,
                    )
                )
            calls = [(m, cap.calls[id(m)]) for _, m in members if id(m) in cap.calls]
            if (
                not path
                or not calls
                or any(not c.stubbable or not rebuildable(c.output) for _, c in calls)
            ):
                if path:
                    notes.append(
                        f"torch.export: what follows {path}'s failure was not checked (its "
                        "output could not be stood in for)"
                    )
                return out
            out.failed.extend(member for member, _ in members)
            if not stubbed and whole and dynamic_shapes is None:
                stubbed = [c for c in copies if id(c[0]) not in {id(m) for m, _ in calls}]
            stubbed.extend(calls)
    notes.append(f"torch.export: stopped after {_MAX_ROUNDS} failures")
    return out
