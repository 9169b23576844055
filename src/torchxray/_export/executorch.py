"""The ExecuTorch target: `executorch_ops(program) -> (edge program, [EtOp], {path: counts})`.

The program torch.export made is lowered as ExecuTorch's own flow does for a phone's CPU
(``to_edge_transform_and_lower`` with the ``XnnpackPartitioner``), with the edge dialect's IR
check off so that every op is looked at, not the first one outside the set. Then:

- each op left outside a delegate runs on ExecuTorch's portable kernels; one outside the Core
  ATen set has none to run on (the edge verifier's own test, ``EXIRATenDialectVerifier``'s
  ``check_valid_op``, run op by op): an issue of its own;
- an op left to the portable kernels is "not delegated to XNNPACK", with the partitioner's own
  reason where it logs one (``WhyNoPartition`` records, caught from its logger at DEBUG for the
  duration and put back), and "no XNNPACK config for this op" where it gives none;
- the ops inside each delegate (``get_lowered_submodules``: the lowered module's original
  graph) count as delegated for their module.

Each op is placed on its module and line by its node's ``nn_module_stack`` and stack trace
(`_export.nodes`). Importing ExecuTorch registers its own ops and types with torch once, as any
import of it does.
"""

from __future__ import annotations

import contextlib
import io
import logging
import operator
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import torch

from .nodes import place

__all__ = ["EtOp", "executorch_ops", "missing"]

EtOp = tuple[str, str, str, int, str, str, bool]  # (path, op, file, line, source, reason, core)
NO_CONFIG = "no XNNPACK config for this op"
_LOGGER = "executorch.backends.xnnpack"


def missing() -> str | None:
    try:
        import executorch.exir  # noqa: F401
        from executorch.backends.xnnpack.partition import xnnpack_partitioner  # noqa: F401
    except ImportError:
        return "not installed: pip install torchxray[export] (ExecuTorch: torchxray[export,executorch])"
    except Exception as exc:  # noqa: BLE001 - a broken install: said, never raised
        return f"executorch cannot be imported here ({type(exc).__name__}: {exc})"
    return None


@contextlib.contextmanager
def _reasons() -> Iterator[dict[str, str]]:
    """The partitioner's reasons, by node name, while inside; its logger as it was after."""
    from executorch.exir.backend.utils import WhyNoPartition

    found: dict[str, str] = {}

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            why = record.msg
            if isinstance(why, WhyNoPartition) and why.node is not None:
                found.setdefault(why.node.name, str(why.reason))

    logger = logging.getLogger(_LOGGER)
    level, propagate = logger.level, logger.propagate
    handler = Catch(logging.DEBUG)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # the check's debug records stay out of the user's log
    try:
        yield found
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def _name(target: Any) -> str:
    inner = getattr(target, "_op", None)
    return str(inner if inner is not None else target)


def executorch_ops(
    program: Any, delegate: bool = True
) -> tuple[Any, list[EtOp], dict[str, list[int]]]:
    """(the lowered edge program manager, the ops not delegated, {path: [delegated, portable]}).
    Without `delegate` (weights on the meta device, which XNNPACK's packing reads), the edge
    program alone: its ops checked against the Core ATen set, none counted."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import EdgeCompileConfig, to_edge, to_edge_transform_and_lower
    from executorch.exir.lowered_backend_module import get_lowered_submodules
    from executorch.exir.verification.verifier import EXIRATenDialectVerifier

    config = EdgeCompileConfig(_check_ir_validity=False)
    with (
        _reasons() as reasons,
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        if delegate:
            lowered = to_edge_transform_and_lower(
                program, partitioner=[XnnpackPartitioner()], compile_config=config
            )
        else:
            lowered = to_edge(program, compile_config=config)
    verifier = EXIRATenDialectVerifier(EdgeCompileConfig(), class_only=False)
    graph_module = lowered.exported_program().graph_module
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    ops: list[EtOp] = []
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        name = getattr(node.target, "__name__", "")
        if name == "executorch_call_delegate":
            continue
        inner = getattr(node.target, "_op", node.target)
        if not isinstance(inner, torch._ops.OpOverload):
            continue  # symbolic-int arithmetic and other calls that are no operator
        path, file, line, text = place(node)
        core = True
        reason = reasons.get(node.name, NO_CONFIG)
        try:
            verifier.check_valid_op(inner)
        except Exception as exc:  # noqa: BLE001 - the verifier's SpecViolationError
            core = False
            reason = str(exc).strip().splitlines()[0]
        if core and not delegate:
            continue
        counts[path][1] += 1
        ops.append((path, _name(node.target), file, line, text, reason, core))
    for _, lowered_module, _node in get_lowered_submodules(graph_module):
        for node in lowered_module.original_module.graph.nodes:
            if node.op == "call_function" and node.target is not operator.getitem:
                counts[place(node)[0]][0] += 1
    return lowered, ops, dict(counts)
