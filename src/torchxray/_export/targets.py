"""Each target after torch.export, on the program it made: `onnx_target`, `executorch_target`,
`aoti_target`, each giving (`TargetResult`, its issues, what else it found). `Stage` carries what
they share: the program, the modules stood in for in it (interchangeable blocks in a fake check,
modules torch.export failed in), and the blocks whose issues are copied onto their copies."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import executorch as et
from . import onnx as ox
from .aoti import aoti_issues
from .assemble import copied, inside, merge
from .records import NO_ONNX, NOT_CORE_ATEN, NOT_DELEGATED, ExportIssue, TargetResult

__all__ = ["Stage", "aoti_target", "executorch_target", "onnx_target"]


@dataclass
class Stage:
    program: Any
    stood: list[str]  # paths stood in for in `program`: their ops are not theirs
    failed: list[str]  # of those, the ones torch.export failed in (their ops never seen)
    copies: dict[str, list[str]]  # a block -> the blocks that stood in as its copies
    modules: dict[str, str]  # path -> class name, every module reached
    exported: bool  # torch.export took the whole model
    counts: dict[str, list[int]] = field(default_factory=dict)  # ExecuTorch: [delegated, portable]
    decomposed: Any = None  # the ONNX decomposition (drift reads it)


def _unavailable(name: str, why: str) -> TargetResult:
    return TargetResult(name, "not installed" if why.startswith("not installed") else "error", why)


def _failed(name: str, what: str, exc: BaseException, start: float) -> TargetResult:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return TargetResult(name, "error", f"{what} failed: {type(exc).__name__}: {text}"[:500],
                        time.perf_counter() - start)  # fmt: skip


def onnx_target(stage: Stage) -> tuple[TargetResult, list[ExportIssue]]:
    start = time.perf_counter()
    why = ox.missing()
    if why is not None:
        return _unavailable("onnx", why), []
    try:
        decomposed, ops = ox.onnx_ops(stage.program)
    except Exception as exc:  # noqa: BLE001 - the decomposition itself failed: said
        return _failed("onnx", "the ONNX decomposition", exc, start), []
    found = [ExportIssue("onnx", p, stage.modules.get(p, ""), op, NO_ONNX, reason, f, ln, src)
             for p, op, f, ln, src, reason in ops if not inside(p, stage.stood)]  # fmt: skip
    found = copied(merge(found), stage.copies, stage.modules)
    built, message = None, ""
    if found:
        message = f"{len(found)} op(s) without an ONNX translation"
    elif not stage.exported:
        message = "torch.export fails first; the rest has a translation for every op"
    elif stage.stood:
        message = "checked with interchangeable blocks standing in (fake mode): no ONNX model built"
    else:
        try:
            built = ox.onnx_model(decomposed)
        except Exception as exc:  # noqa: BLE001 - translation failed past dispatch: said
            return _failed("onnx", "the ONNX translation", exc, start), []
        stage.decomposed = decomposed
    status = "fails" if found else "ok" if stage.exported else "not checked"
    return TargetResult("onnx", status, message, time.perf_counter() - start, built), found


def executorch_target(stage: Stage) -> tuple[TargetResult, list[ExportIssue]]:
    start = time.perf_counter()
    why = et.missing()
    if why is not None:
        return _unavailable("executorch", why), []
    if not stage.exported:
        return TargetResult(
            "executorch", "not checked", "torch.export fails first (see its issues)"
        ), []
    meta = any(t.is_meta for t in (*stage.program.parameters(), *stage.program.buffers()))
    try:
        lowered, ops, counts = et.executorch_ops(stage.program, delegate=not meta)
    except Exception as exc:  # noqa: BLE001 - lowering failed as a whole: said
        return _failed("executorch", "ExecuTorch lowering", exc, start), []
    found = [ExportIssue("executorch", p, stage.modules.get(p, ""), op,
                         NOT_DELEGATED if core else NOT_CORE_ATEN, reason, f, ln, src)
             for p, op, f, ln, src, reason, core in ops if not inside(p, stage.stood)]  # fmt: skip
    found = copied(merge(found), stage.copies, stage.modules)
    kept = {p: c for p, c in counts.items() if not inside(p, stage.stood)}
    for first, others in stage.copies.items():
        for p, c in list(kept.items()):
            if inside(p, [first]) and first:
                for other in others:
                    kept[other + p[len(first) :]] = list(c)
    stage.counts = kept
    hard = [i for i in found if i.kind != NOT_DELEGATED]
    d, q = sum(c[0] for c in kept.values()), sum(c[1] for c in kept.values())
    message = f"{len(hard)} op(s) outside the Core ATen set" if hard else ""
    if meta:
        why = "XNNPACK delegation not checked: it packs the weights, which are on the meta device"
        message = "; ".join(filter(None, [message, why]))
    result = TargetResult(
        "executorch", "fails" if hard else "ok", message,
        time.perf_counter() - start, lowered if not hard and not stage.stood else None, d, q,
    )  # fmt: skip
    return result, found


def aoti_target(stage: Stage) -> tuple[TargetResult, list[ExportIssue]]:
    start = time.perf_counter()
    if not stage.exported:
        return TargetResult("aoti", "not checked", "torch.export fails first (see its issues)"), []
    if stage.stood:
        return TargetResult("aoti", "not checked", "AOTInductor compiles the whole model, with "
                            "its weights: options={'mode': 'real'} runs it"), []  # fmt: skip
    found, package, error = aoti_issues(stage.program, stage.modules)
    status = "error" if error else "fails" if found else "ok"
    message = error or (f"{len(found)} failure(s)" if found else "")
    return TargetResult("aoti", status, message, time.perf_counter() - start, package), found


RUNNERS: dict[str, Callable[[Stage], tuple[TargetResult, list[ExportIssue]]]] = {
    "onnx": onnx_target,
    "executorch": executorch_target,
    "aoti": aoti_target,
}
