"""The meta copy the dry run shards: the user's module tree with every parameter and buffer
replaced by a meta tensor of the same shape, dtype and ``requires_grad`` (ties kept: one meta
tensor per original), so that ``parallelize`` can do anything to it and the user's model, and its
plain tensors, stay as they were. ``copy.deepcopy`` with a pre-filled memo copies the modules'
Python state as the user's classes define it without ever copying a weight's data.
"""

from __future__ import annotations

import copy
import re
import traceback
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

__all__ = ["ParallelizeError", "innermost_module", "meta_copy", "parallelized"]


class ParallelizeError(RuntimeError):
    """The user's parallelize function (or torch inside it) refused the model."""


def meta_copy(model: nn.Module) -> nn.Module:
    memo: dict[int, Any] = {}
    for t in [*model.parameters(), *model.buffers()]:
        if id(t) in memo:
            continue
        m = torch.empty_like(t, device="meta")
        memo[id(t)] = (
            nn.Parameter(m, requires_grad=t.requires_grad) if isinstance(t, nn.Parameter) else m
        )
    return copy.deepcopy(model, memo)


def innermost_module(exc: BaseException, paths: dict[int, str]) -> str | None:
    """The path of the innermost module of the copy that a frame of the traceback was working on
    (a local variable holding it): the module torch or the user's code refused."""
    found = None
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        for value in frame.f_locals.values():
            if isinstance(value, nn.Module) and id(value) in paths:
                found = paths[id(value)]
    return found


def parallelized(copy_: nn.Module, parallelize: Callable[..., Any], mesh: Any) -> nn.Module:
    """``parallelize(copy_, mesh)``; its result (or the copy when it returns None)."""
    paths = {id(m): p for p, m in copy_.named_modules(remove_duplicate=False)}
    names = tuple(mesh.mesh_dim_names or ())
    try:
        out = parallelize(copy_, mesh)
    except KeyError as exc:
        key = exc.args[0] if exc.args else None
        # DeviceMesh says "Invalid mesh_dim_names ('pp',) specified. ..." for a name it lacks
        asked = re.findall(r"'([^']+)'", key.split("specified")[0]) if isinstance(key, str) else []
        missing = [k for k in asked if k not in names]
        if missing and "mesh_dim" in str(key):
            raise ParallelizeError(
                f"parallelize asked for mesh dimension {missing[0]!r}, but the mesh has "
                f"{', '.join(map(repr, names))}: add it to mesh= or use one of those."
            ) from exc
        raise _refused(exc, paths) from exc
    except Exception as exc:
        raise _refused(exc, paths) from exc
    if out is None:
        return copy_
    if not isinstance(out, nn.Module):
        raise ParallelizeError(
            f"parallelize returned a {type(out).__name__}, not the module: return the model (or None)."
        )
    return out


def _refused(exc: BaseException, paths: dict[int, str]) -> ParallelizeError:
    where = innermost_module(exc, paths)
    place = (
        "the model" if where is None else "the root module" if where == "" else f"module {where!r}"
    )
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return ParallelizeError(f"parallelize failed on {place}: {type(exc).__name__}: {first}")
