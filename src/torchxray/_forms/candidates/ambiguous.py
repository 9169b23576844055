"""Values the gate cannot tell apart (``settle``): a field whose other values rebuild the module
just as exactly holds no proven value.

The search (``candidates/loop.py``) stops at the first exact build, and on the way it may have moved
a field that no part depends on in this module (efficientnet's ``noskip``: a block of stride 2
has no skip either way; shown True where timm passed False). The rebuild is the same today, and
not after an edit to stride 1: a value the gate did not prove must not be shown as proven.

The rule, for every field the search moved from its draft value (the default, or what an
attribute held): build again with the draft value back; when that build is exact too, the field
is ambiguous, keeps its draft value (what the caller most likely passed: the default) and its
draft origin (a guess the view flags), and the form says so in its note
(``_forms/exact/``); a required field, with no
default to prefer, keeps the value found, as a guess (origin "default"). One field at a time, each on top
of those already settled: two fields that are only exact together are left as found.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..budget import Budget
from ..field import Field
from ..rebuild.compare import cast_like, differences
from ..rebuild.parts import Parts, parts
from ..rebuild.real import Rebuild
from ..values import same

__all__ = ["settle"]


def _exact(
    values: dict[str, Any],
    make: Callable[[dict[str, Any]], nn.Module],
    live: Parts,
    dtype: torch.dtype | None,
    cap: int,
    budget: Budget,
    real_ok: bool,
) -> bool:
    build = Rebuild(cap, budget.ceiling, real_ok=real_ok)
    try:
        built = build.run(lambda: make(values))
        cast_like(built, dtype)
    except Exception:  # noqa: BLE001 - a draft value the class rejects is no rival
        if budget.past_ceiling():
            budget.stop()
        return False
    finally:
        budget.charge(build.work)
    return not differences(live, parts(built))


def _reversed(v: Any) -> Any:
    """A str, tuple or list in the other order, where that is another value; else None."""
    if isinstance(v, (str, tuple, list)) and len(v) > 1 and v[::-1] != v:
        return v[::-1]
    return None


def settle(
    drafts: list[Field],
    values: dict[str, Any],
    make: Callable[[dict[str, Any]], nn.Module],
    live: Parts,
    dtype: torch.dtype | None,
    budget: Budget,
    real_ok: bool = False,
) -> dict[str, Any]:
    """Of ``values`` (an exact search's), each field of ``drafts`` whose draft value rebuilds
    ``live`` as exactly is put back to its draft value in ``values`` (a required one without a
    default keeps the value found); returns {name: the rival value, the one not kept}. One build
    per field moved (two for a sequence: in the other order, a rebuild as exact flags the value
    found, whose items are then not known), whatever the ``budget`` has left (charged to it):
    only its safety ceiling stops them, and a field not tried by then keeps the value found (the
    form says so).
    ``real_ok``: a build that reads tensor values is made for real (``rebuild/real.py``)."""
    cap = 4 * len(live.summary) + 64
    rivals: dict[str, Any] = {}
    for f in drafts:
        if f.name not in values or f.kind in ("varargs", "varkw", "config") or f.group:
            continue
        found = values[f.name]
        if same(found, f.value):
            continue
        if budget.stopped:
            break
        if not _exact({**values, f.name: f.value}, make, live, dtype, cap, budget, real_ok):
            # A sequence whose items rebuild as exactly in the other order tells only its
            # length (``num_classes = len(labels)``): the value found is a guess, flagged.
            other = _reversed(found)
            if other is not None and _exact(
                {**values, f.name: other}, make, live, dtype, cap, budget, real_ok
            ):
                rivals[f.name] = other
            continue
        if f.required and f.value is None:
            # No default: None is no likelier than the value found (drop_path=0.0 where None
            # builds the same), which stays, flagged.
            rivals[f.name] = f.value
        else:
            values[f.name] = f.value
            rivals[f.name] = found
    return rivals
