"""The sweep's compile column: `tx.compile_check`'s verdict against torch's own.

On each timm, transformers and hand-written model that runs on the CPU, `tx.compile_check(model, *args,
options={"export": False}, **kwargs)` (fake inputs, the default) runs in the sweep's process,
under its guards (so "untouched", "nothing_fake" and "python_state" judge it too); then a forked
child process runs ``torch._dynamo.explain(model)(*args, **kwargs)`` on the real CPU tensors and
sends back what torch saw. explain calls ``torch._dynamo.reset()``, which would drop every
compiled function of the process: in a child it touches nothing the sweep keeps.

The rule (documented in README and bench/README):

- **verdict**: ours is "breaks" when ``rep.breaks`` is not empty (a check that could not finish,
  ``rep.error``, is a disagreement, never skipped); torch's is "breaks" when the explain run saw a
  graph break: ``graph_break_count > 0``, a ``break_reasons`` entry, or an entry in dynamo's
  graph-break counter during that run (``counters["graph_break"]``: explain counts compiled graphs
  minus one, so a break before any op of a frame reads 0 there though torch.compile splits the
  frame all the same), or an entry in dynamo's "unimplemented" counter (what dynamo could not
  trace: a frame whose first op is an ``nn.GRU`` call is skipped whole, the GRU runs eagerly,
  and neither of the others moves; issue 58's hand-written FiLM model). The column is "ok"
  when the verdicts agree.
- **places** (shown, not rated): explain deduplicates by code object (identical blocks share one
  frame: 24 blocks that each break read one break) and reports every break of a frame, while the
  check reports each module's first break, once per module. So places compare as sets of source
  lines: "same" when both name the same lines, "ours within torch's" when every line the check
  names is one explain names (explain goes on past a forward's first break), else "differ".

"n/a" where it does not apply: another family, a model on meta (explain needs real tensors), or
explain itself failing (the comparison needs both to run).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import traceback
from typing import Any

import torch
from torch import nn

import torchxray as tx

COMPARED = (
    "timm",
    "transformers",
    "handwritten",
    "heldout",
    "blind",
    "blind2",
    "blind3",
    "blind4",
    "blind5",
    "blind6",
    "blind7",
    "blind8",
)
EXPLAIN_TIMEOUT_S = 300


def _lines_of_reasons(reasons: list[Any]) -> list[str]:
    """file:line of each explain break reason's innermost user frame."""
    out = []
    for r in reasons:
        stack = list(getattr(r, "user_stack", None) or [])
        if stack:
            f = stack[-1]
            out.append(f"{f.filename}:{f.lineno}")
    return out


def _explain_child(conn: Any, model: nn.Module, args: tuple[Any, ...], kwargs: dict) -> None:
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the parent's deadline handler is not ours
    torch.set_num_threads(1)  # OpenMP's thread team does not survive a fork: one thread
    try:
        import warnings

        from torch._dynamo.utils import counters

        counters.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ex = torch._dynamo.explain(model)(*args, **kwargs)
        counted = dict(counters["graph_break"])
        unimplemented = dict(counters["unimplemented"])
        conn.send(
            {
                "graph_breaks": int(ex.graph_break_count),
                "graphs": int(ex.graph_count),
                "reasons": [str(r.reason).splitlines()[0][:200] for r in ex.break_reasons],
                "lines": _lines_of_reasons(ex.break_reasons),
                "counted": sum(counted.values()),
                "counted_kinds": [k.splitlines()[0][:120] for k in counted],
                "unimplemented": sum(unimplemented.values()),
                "unimplemented_kinds": [k.splitlines()[0][:120] for k in unimplemented],
            }
        )
    except BaseException as exc:  # noqa: BLE001 - anything: sent back as text
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" ({tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
        text = str(exc).strip().splitlines()
        conn.send({"error": f"{type(exc).__name__}: {text[0] if text else ''}"[:300] + where})
    finally:
        conn.close()
        os._exit(0)


def explain_in_child(
    model: nn.Module, args: tuple[Any, ...], kwargs: dict, timeout: int = EXPLAIN_TIMEOUT_S
) -> dict[str, Any]:
    """What ``torch._dynamo.explain`` saw, run in a forked child; {"error": text} on failure."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_explain_child, args=(send, model, args, kwargs), daemon=True)
    child.start()
    send.close()
    try:
        if recv.poll(timeout):
            try:
                return recv.recv()
            except EOFError:
                pass
            child.join(5)
            return {"error": f"explain's process ended without an answer (exit {child.exitcode})"}
        return {"error": f"explain took more than {timeout} s"}
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        recv.close()


def ours(model: nn.Module, args: tuple[Any, ...], kwargs: dict) -> dict[str, Any]:
    rep = tx.compile_check(model, *args, options={"export": False}, **kwargs)
    return {
        "ok": rep.ok,
        "error": rep.error,
        "breaks": [f"{b.path or '(root)'}: {b.kind}" for b in rep.breaks],
        "lines": sorted({f"{b.file}:{b.line}" for b in rep.breaks}),
        "checked": rep.checked,
        "modules": rep.modules,
        "ms": round(rep.wall_ms),
        "notes": [n[:200] for n in rep.notes],
    }


def judge(mine: dict[str, Any], theirs: dict[str, Any]) -> tuple[str, str, str]:
    """(status, text, places) of one model: see the module docstring for the rule."""
    if "error" in theirs and "graphs" not in theirs:
        return "n/a", f"explain failed: {theirs['error']}", ""
    unimplemented = theirs.get("unimplemented", 0)
    torch_breaks = bool(
        theirs["graph_breaks"] > 0 or theirs["reasons"] or theirs["counted"] or unimplemented
    )
    said = (
        f"torch: {theirs['graph_breaks']} break(s) in explain's count, "
        f"{theirs['counted']} in dynamo's counter"
        + (f" ({'; '.join(theirs['counted_kinds'][:2])})" if theirs["counted_kinds"] else "")
        + (
            f", {unimplemented} not traced ({'; '.join(theirs['unimplemented_kinds'][:2])})"
            if unimplemented
            else ""
        )
    )
    if mine["error"] is not None:
        return "fail", f"ours: {mine['error'][:200]} | {said}", ""
    we = f"ours: {len(mine['breaks'])} break(s)" + (
        f" ({'; '.join(mine['breaks'][:3])})" if mine["breaks"] else ""
    )
    agree = (not mine["ok"]) == torch_breaks
    places = ""
    if mine["lines"] or theirs["lines"]:
        a, b = set(mine["lines"]), set(theirs["lines"])
        places = "same" if a == b else "ours within torch's" if a <= b else "differ"
    return ("ok" if agree else "fail"), f"{we} | {said}", places


def compile_column(
    family: str, cpu: bool, model: nn.Module, args: tuple[Any, ...], kwargs: dict, guarded: Any
) -> tuple[tuple[str, str], dict[str, Any] | None]:
    """The column's (status, text) and the details kept in the outcome's JSON."""
    if family not in COMPARED:
        return ("n/a", f"compared on {', '.join(COMPARED)}"), None
    if not cpu:
        return ("n/a", "meta: explain needs real tensors"), None
    mine = guarded("compile", lambda: ours(model, args, kwargs))
    if mine is None:  # compile_check raised: `guarded` has written the failure
        return None, None  # type: ignore[return-value]
    theirs = explain_in_child(model, args, kwargs)
    status, text, places = judge(mine, theirs)
    return (status, text), {"ours": mine, "torch": theirs, "places": places}
