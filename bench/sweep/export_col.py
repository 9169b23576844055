"""The sweep's export column: `tx.export_check`'s ONNX readiness, and whether it names the same
missing ops as ``torch.onnx.export(..., dynamo=True, report=True)``.

On each timm, torchvision and transformers model that runs on the CPU, `tx.export_check(model,
*args, options={"targets": ("export", "onnx"), "drift": False}, **kwargs)` runs in the sweep's
process, under its guards (so "untouched", "nothing_fake" and "python_state" judge it too); then
a forked child process runs ``torch.onnx.export(model, args, kwargs=kwargs, dynamo=True,
report=True, optimize=False)`` into a temporary folder and sends back the ops its markdown report
lists under "Errors grouped by operator" (its own analysis, ``_analysis.analyze``), and whether
its capture (torch.export, then its fallbacks) got a program at all. A transformers model is
given ``use_cache=False`` by both sides (a cache object in the outputs is no pytree ONNX takes).

The text is the readiness: "ready" or the failing modules per target. The status is the
agreement:

- torch's capture got a program: "ok" when the set of ops ours lists for ONNX (``target ==
  "onnx"``) is the set torch's report lists; ours read them from the whole model, or, where
  torch.export failed on a value, from draft export's program, as torch's exporter does;
- torch's capture failed: "ok" when ours has a torch.export failure too;
- "fail" otherwise, or when the check raised or could not run (``rep.error``).

"n/a" on another family, on a model on meta, or when torch's exporter itself crashed in a way that
wrote no report.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import multiprocessing as mp
import os
import re
import signal
import tempfile
import traceback
from pathlib import Path
from typing import Any

import torch
from torch import nn

import torchxray as tx

COMPARED = ("timm", "torchvision", "transformers")
ONNX_TIMEOUT_S = 600
_OP = re.compile(r"^- `([^`]+)`:", re.M)


def report_ops(text: str) -> list[str]:
    """The ops a ``report=True`` markdown report lists as missing an ONNX function."""
    if "Errors grouped by operator:" not in text:
        return []
    return sorted(set(_OP.findall(text.split("Errors grouped by operator:", 1)[1])))


def _onnx_child(conn: Any, model: nn.Module, args: tuple[Any, ...], kwargs: dict) -> None:
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    torch.set_num_threads(1)  # OpenMP's thread team does not survive a fork: one thread
    try:
        import warnings

        with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            error = ""
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                try:
                    torch.onnx.export(model, args, kwargs=kwargs, dynamo=True, report=True,
                                      artifacts_dir=folder, verbose=False, optimize=False)  # fmt: skip
                except Exception as exc:  # noqa: BLE001 - the report says what failed
                    error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
            text = "".join(p.read_text() for p in Path(folder).glob("*.md"))
        captured = "## Model Information" in text or not error
        conn.send({"ops": report_ops(text), "captured": captured, "error": error,
                   "report": bool(text)})  # fmt: skip
    except BaseException as exc:  # noqa: BLE001 - anything: sent back as text
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" ({tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
        conn.send({"crash": f"{type(exc).__name__}: {str(exc)[:200]}{where}"})
    finally:
        conn.close()
        os._exit(0)


def onnx_in_child(model: nn.Module, args: tuple[Any, ...], kwargs: dict) -> dict[str, Any]:
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_onnx_child, args=(send, model, args, kwargs), daemon=True)
    child.start()
    send.close()
    try:
        if recv.poll(ONNX_TIMEOUT_S):
            try:
                return recv.recv()
            except EOFError:
                pass
            child.join(5)
            return {
                "crash": f"torch.onnx.export's process ended without an answer ({child.exitcode})"
            }
        return {"crash": f"torch.onnx.export took more than {ONNX_TIMEOUT_S} s"}
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        recv.close()


def _kwargs(family: str, model: nn.Module, kwargs: dict) -> dict:
    if family != "transformers" or "use_cache" in kwargs:
        return kwargs
    try:
        takes = "use_cache" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        takes = False
    return {**kwargs, "use_cache": False} if takes else kwargs


def ours(model: nn.Module, args: tuple[Any, ...], kwargs: dict) -> dict[str, Any]:
    rep = tx.export_check(
        model, *args, options={"targets": ("export", "onnx"), "drift": False}, **kwargs
    )
    failing: dict[str, list[str]] = {}
    for i in rep.failures:
        paths = failing.setdefault(i.target, [])
        if (i.path or "(root)") not in paths:
            paths.append(i.path or "(root)")
    return {
        "ok": rep.ok,
        "error": rep.error,
        "export_fails": any(i.target == "export" for i in rep.failures),
        "onnx_ops": sorted({i.op for i in rep.failures if i.target == "onnx"}),
        "failing": failing,
        "targets": {k: v.status for k, v in rep.targets.items()},
        "ms": round(rep.wall_ms),
        "notes": [n[:200] for n in rep.notes],
    }


def judge(mine: dict[str, Any], theirs: dict[str, Any]) -> tuple[str, str]:
    if "crash" in theirs:
        return "n/a", f"torch.onnx.export crashed: {theirs['crash']}"
    if mine["error"] is not None:
        return "fail", f"ours: {mine['error'][:200]}"
    ready = (
        "ready"
        if mine["ok"]
        else "; ".join(
            f"{t}: {', '.join(paths[:4])}{'...' if len(paths) > 4 else ''}"
            for t, paths in mine["failing"].items()
        )
        or "; ".join(f"{t} {s}" for t, s in mine["targets"].items() if s != "ok")
    )
    if not theirs["captured"]:
        agree = mine["export_fails"]
        said = f"torch: no program ({theirs['error'][:120]})"
    else:
        agree = set(mine["onnx_ops"]) == set(theirs["ops"])
        said = f"torch's report: {', '.join(theirs['ops']) or 'no missing op'}"
    return ("ok" if agree else "fail"), f"{ready} | {said}"


def export_column(
    family: str, cpu: bool, model: nn.Module, args: tuple[Any, ...], kwargs: dict, guarded: Any
) -> tuple[tuple[str, str] | None, dict[str, Any] | None]:
    """The column's (status, text) and the details kept in the outcome's JSON."""
    if family not in COMPARED:
        return ("n/a", f"compared on {', '.join(COMPARED)}"), None
    if not cpu:
        return ("n/a", "meta: torch.onnx.export's report needs real weights"), None
    kwargs = _kwargs(family, model, kwargs)
    mine = guarded("export", lambda: ours(model, args, kwargs))
    if mine is None:  # export_check raised: `guarded` has written the failure
        return None, None
    theirs = onnx_in_child(model, args, kwargs)
    status, text = judge(mine, theirs)
    return (status, text), {"ours": mine, "torch": theirs}
