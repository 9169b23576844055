"""Where a dynamic dimension was made static: `specialised(exc, model)`.

``torch.export.export(..., dynamic_shapes=...)`` raises ``Constraints violated (batch)!`` once
tracing is over, from no frame of the model's. The shape environment it traced with is a local
of one of the exception's frames; each guard it recorded keeps the source line that made it
(``ShapeGuard.sloc.framework_loc``). The guards made by the user's code (not torch's) are the
places a dimension was compared with a constant; each is owned by the module whose forward holds
that line (`_compile.owner.owner_of`, by code).
"""

from __future__ import annotations

import os
import traceback
from typing import Any

import torch
from torch import nn

from .._compile.owner import owner_of

__all__ = ["is_constraint", "specialised"]

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_constraint(exc: BaseException) -> bool:
    return "Constraints violated" in str(exc)


def _shape_envs(exc: BaseException) -> list[Any]:
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    found: list[Any] = []
    seen: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in seen and len(seen) < 8:
        seen.append(link)
        for frame, _ in traceback.walk_tb(link.__traceback__):
            for value in list(frame.f_locals.values()):
                if isinstance(value, ShapeEnv) and all(value is not f for f in found):
                    found.append(value)
        link = link.__cause__ or link.__context__
    return found


def specialised(exc: BaseException, model: nn.Module) -> list[tuple[nn.Module, str, int, str]]:
    """(owner, file, line, the guard's expression) for each guard of the user's code in the
    shape environment of a constraint violation; [] when none is found."""
    out: list[tuple[nn.Module, str, int, str]] = []
    seen: set[tuple[str, int]] = set()
    for env in _shape_envs(exc):
        for guard in getattr(env, "guards", []):
            loc = getattr(getattr(guard, "sloc", None), "framework_loc", None)
            file = getattr(loc, "filename", "") or ""
            line = int(getattr(loc, "lineno", 0) or 0)
            if not file or file.startswith((_TORCH_DIR, _OWN_DIR, "<")) or (file, line) in seen:
                continue
            if not getattr(guard.expr, "free_symbols", None):
                continue
            seen.add((file, line))
            owner = owner_of(model, [loc]) or model
            out.append((owner, file, line, str(guard.expr)))
    return out
