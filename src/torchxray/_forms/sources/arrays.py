"""Source: an array argument the constructor converts to a tensor itself (``self.register_buffer("A",
torch.from_numpy(A.astype(np.float32)))``, ``torch.tensor(adj)``), offered as a numpy array
made from the tensor it keeps.

Graph and signal code hands its constant matrices (an adjacency, a filter bank) as numpy arrays
and calls numpy's own methods on them (``.astype``); the same-named buffer the module keeps is a
tensor, which has none of them, so every build from it fails. The tensor's values are the
array's (the conversion keeps them; a cast to another dtype is the constructor's own step, and a
build proves the array gives the same tensor back).
"""

from __future__ import annotations

import ast
import functools
import inspect
from typing import Any

import numpy as np
import torch
from torch import nn

from ..._unwrap import original_class
from .code import code_of

__all__ = ["draft"]


@functools.lru_cache(maxsize=256)
def _converted(cls: type, name: str) -> bool:
    """Whether ``__init__`` calls a numpy-only method on ``name`` (``name.astype(...)``) or hands
    it to ``torch.from_numpy`` / ``np.asarray``-like calls of numpy."""
    init = cls.__dict__.get("__init__")
    code = code_of(init) if init is not None else None
    if code is None:
        return False
    for load in code.loads.get(name, []):
        parent = code.up.get(load)
        if isinstance(parent, ast.Attribute) and parent.value is load:
            if parent.attr == "astype" and isinstance(code.up.get(parent), ast.Call):
                return True
        if isinstance(parent, ast.Call) and load in parent.args:
            f = parent.func
            if isinstance(f, ast.Attribute) and f.attr == "from_numpy":
                return True
    return False


def draft(module: nn.Module, param: inspect.Parameter) -> tuple[Any, str] | None:
    """The same-named tensor as a numpy array, where the constructor converts the argument from
    numpy itself; None otherwise (the attributes' reading then stands)."""
    if not _converted(original_class(type(module)), param.name):
        return None  # the code first: reading an attribute may run a property that raises
    try:
        value = getattr(module, param.name)
    except Exception:  # noqa: BLE001 - missing, or a property that raises: the attributes' turn
        return None
    if not isinstance(value, torch.Tensor) or value.device.type == "meta":
        return None
    return np.array(value.detach().cpu().numpy()), "derived"
