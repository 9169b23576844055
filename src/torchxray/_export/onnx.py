"""The ONNX target: every op of an exported program the dynamo ONNX exporter cannot translate,
and the ONNX model where none is missing (`onnx_ops`, `onnx_model`).

It runs the exporter's own steps on the program torch.export made (`_compile.export`): the
decomposition into the ops the ONNX registry implements (``ONNXRegistry.from_torchlib()``, the
registry ``torch.onnx.export(..., dynamo=True)`` builds), then the dispatch of every node against
that registry, the test ``torch.onnx.export(..., report=True)``'s analysis makes for its list of
missing ops (``_analysis.analyze``): the same list, with each op placed on its module and line
(`_export.nodes`). Unlike the exporter, it goes on past the first missing op, and never writes a
file. Nothing of it reads a weight's values: a model on the meta device is checked as any other.

These are private modules of torch.onnx (its public function stops at the first failure and
prints its report to a file): a torch whose exporter lacks them says so in one sentence.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

from .nodes import place, walk_nodes

__all__ = ["OnnxOp", "missing", "onnx_model", "onnx_ops"]

OnnxOp = tuple[str, str, str, int, str, str]  # (path, op, file, line, source, reason)


def missing() -> str | None:
    """Why the ONNX target cannot run here (a package not installed, a torch without the
    exporter's steps), or None."""
    for name in ("onnx", "onnxscript"):
        try:
            __import__(name)
        except ImportError:
            return "not installed: pip install torchxray[export]"
    try:
        from torch.onnx._internal.exporter import (  # noqa: F401
            _core,
            _dispatching,
            _registration,
        )
    except ImportError as exc:
        return f"this torch's ONNX exporter has no dynamo steps to check with ({exc})"
    return None


_REGISTRY: list[Any] = []


def _registry() -> Any:
    """The torchlib registry, built once (it reads every torchlib function: ~0.5 s) and never
    changed by the check: each check reads it only."""
    if not _REGISTRY:
        from torch.onnx._internal.exporter import _registration

        _REGISTRY.append(_registration.ONNXRegistry.from_torchlib())
    return _REGISTRY[0]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def onnx_ops(program: Any) -> tuple[Any, list[OnnxOp]]:
    """(the decomposed program, [one entry per node without an ONNX function]); `program` is
    left as it was (the decomposition makes a new one)."""
    from torch.onnx._internal.exporter import _core, _dispatching

    registry = _registry()
    with _quiet():
        decomposed = _core._prepare_exported_program_for_export(program, registry=registry)
    out: list[OnnxOp] = []
    for node in walk_nodes(decomposed.graph_module):
        try:
            function, message = _dispatching.dispatch(node, registry)
        except Exception as exc:  # noqa: BLE001 - the exporter's own analysis counts it as missing
            function, message = None, f"the dispatcher failed: {type(exc).__name__}: {exc}"
        if function is None:
            path, file, line, text = place(node)
            out.append((path, str(node.target), file, line, text, str(message)))
    return decomposed, out


def onnx_model(decomposed: Any) -> Any:
    """The ``ONNXProgram`` of a decomposed program every node of which dispatches (as
    ``torch.onnx.export`` makes it, without its optional graph optimisation)."""
    from torch.onnx._internal.exporter import _core

    with _quiet():
        return _core._exported_program_to_onnx_program(decomposed, registry=_registry())
