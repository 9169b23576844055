"""The AOTInductor target: `aoti_issues(program, modules) -> (issues, package path, error)`.

``torch._inductor.aoti_compile_and_package`` compiles the exported program into a ``.pt2``
package in a temporary directory (removed after): C++ code generated and compiled, seconds for a
small model, minutes for a large one, so it is never a default target. Where it fails, the node
inductor was lowering is found in the failing frames (``GraphLowering.run_node``'s ``n``) and
placed on its module and line like any other (`_export.nodes`); a failure on no node is the
target's error.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import tempfile
import traceback
from collections.abc import Mapping
from typing import Any

import torch
import torch._inductor

from .nodes import place
from .records import AOTI_FAILS, ExportIssue

__all__ = ["aoti_issues"]


def _node_of(exc: BaseException) -> Any:
    found = None
    link: BaseException | None = exc
    seen: list[BaseException] = []
    while link is not None and link not in seen and len(seen) < 8:
        seen.append(link)
        for frame, _ in traceback.walk_tb(link.__traceback__):
            n = frame.f_locals.get("n", frame.f_locals.get("node"))
            if isinstance(n, torch.fx.Node) and n.op == "call_function":
                found = n
        link = link.__cause__ or link.__context__
    return found


def aoti_issues(program: Any, modules: Mapping[str, str]) -> tuple[list[ExportIssue], Any, str]:
    where = tempfile.mkdtemp(prefix="torchxray-aoti-")
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            torch._inductor.aoti_compile_and_package(program, package_path=f"{where}/model.pt2")
        return [], None, ""
    except Exception as exc:  # noqa: BLE001 - every failure is reported, none raised
        lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
        reason = " ".join(lines[:2])[:400] or type(exc).__name__
        node = _node_of(exc)
        if node is None:
            return [], None, f"AOTInductor failed: {type(exc).__name__}: {reason}"
        path, file, line, text = place(node)
        issue = ExportIssue("aoti", path, modules.get(path, ""), str(node.target), AOTI_FAILS,
                            reason, file, line, text)  # fmt: skip
        return [issue], None, ""
    finally:
        shutil.rmtree(where, ignore_errors=True)
