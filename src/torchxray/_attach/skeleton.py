"""A stand-in of a job's model, built from the tree the job published (``_attach/publish.py``,
``tree_of``): for ``tx.explore(job)`` when the notebook has no copy of the model.

Each module is an ``nn.Module`` of a class named as the job's (same name, qualname and module,
made here: it has no forward and no source), holding its weights and buffers as meta tensors of
their global shapes, so that the tree shows the paths, classes and parameter counts the job has,
with no memory taken.

    >>> import json
    >>> tree = {"v": 1, "modules": [["", "Net", "train", "Net", [], []],
    ...         ["fc", "Linear", "torch.nn.modules.linear", "Linear", [["weight", [4, 2], "float32", True]], []]]}
    >>> m = skeleton(tree)
    >>> type(m).__name__, type(m.fc).__name__, m.fc.weight.shape, m.fc.weight.device.type
    ('Net', 'Linear', torch.Size([4, 2]), 'meta')
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["skeleton"]

_classes: dict[tuple[str, str], type] = {}


def _class(name: str, module: str, qualname: str) -> type:
    key = (module, qualname)
    got = _classes.get(key)
    if got is None:
        doc = (
            f"A stand-in of {module}.{qualname} from a training job's published tree (no forward)."
        )
        attrs = {"__module__": module, "__qualname__": qualname, "__doc__": doc, "stand_in": True}
        got = type(name, (nn.Module,), attrs)
        _classes[key] = got
    return got


def _dtype(name: str) -> torch.dtype:
    got = getattr(torch, name, None)
    return got if isinstance(got, torch.dtype) else torch.float32


def skeleton(tree: dict[str, Any]) -> nn.Module:
    modules = tree.get("modules") or []
    if not modules or modules[0][0] != "":
        raise ValueError("the job published no module tree (its root is missing)")
    made: dict[str, nn.Module] = {}
    for path, name, module, qualname, params, buffers in modules:
        m = _class(name, module, qualname)()
        for pname, shape, dtype, grad in params:
            t = torch.empty(shape, dtype=_dtype(dtype), device="meta")
            m.register_parameter(pname, nn.Parameter(t, requires_grad=bool(grad)))
        for bname, shape, dtype in buffers:
            m.register_buffer(bname, torch.empty(shape, dtype=_dtype(dtype), device="meta"))
        made[path] = m
        if path:
            parent, _, child = path.rpartition(".")
            made[parent].add_module(child, m)
    return made[""]
