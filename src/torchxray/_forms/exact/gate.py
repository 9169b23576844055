"""The exactness gate: does a form's unchanged rebuild equal the live module, and which parts of the
live module an edit would change.

``check(form)`` builds the form on the meta device with no change (no memory, milliseconds), casts
it the way an edit places a replacement (``_patch/placement.py``: the live module's floating
dtype), and compares its parts (``_forms/rebuild/parts.py``) with the live module's. ``Check.reason`` is
"" when they are equal, else one sentence: "inexact: norm1 would be GroupNorm(32, 32), the live
one is GroupNorm(8, 32)". ``differences`` and ``sentence`` serve the edit's own check
(``_patch/gate.py``): after ``build(**changes)``, every part the changes do not reach must still
equal the live one.
"""

from __future__ import annotations

import time
import typing
from typing import Any

import torch
from torch import nn

from ..._text import short
from ..budget import CEILING_SECONDS, TOO_SLOW
from ..rebuild.compare import Check, Difference, cast_like, differences, floating_dtype, sentence
from ..rebuild.meta import PastDeadline
from ..rebuild.parts import parts
from ..rebuild.real import Rebuild, small

__all__ = ["CHECK_SECONDS", "build_meta", "check", "typed"]
# A form's gate build is stopped only at the forms' safety ceiling (``_forms/candidates/tuning.py``): a cut
# that depended on the machine's load would make a second form differ. An edit checks in full
# (no limit), however long it takes.
CHECK_SECONDS = CEILING_SECONDS


def typed(found: Check, live: nn.Module) -> Check:
    """``found`` (an exact check) made inexact when the live module's tensors are of types the
    rebuild's are not: "inexact: fc1.weight is a torchao Int8Tensor; a rebuild makes a plain
    tensor ...". Any other check is returned as it is.

    The decision: refuse, not re-apply. ``Form.build()`` runs the constructor, which makes plain
    tensors: what it returns is a float block, not the live quantized one, and a form that said
    exact would promise it was. Re-applying the quantization is not possible in general (the
    recipe that made the tensor, torchao's config, is not kept on it). What an edit does is
    another matter: ``PatchLog.edit`` carries each quantized tensor itself into the rebuilt
    module where its logical shape still fits (``_patch/placement.py``) and its own gate compares
    tensor types (``_patch/gate.py``); the gate's build (``Check.base``) stays, so such an edit
    applies without "Apply anyway", and the sentence says so."""
    if found.reason or found.base is None:
        return found
    have, built = parts(live), found.base
    keys = [k for k in have.kinds if built.kinds.get(k) != have.kinds[k]]
    keys += [k for k in built.kinds if k not in have.kinds and k in have.items]
    if not keys:
        return found
    diffs = [
        Difference(p, aspect, have.items.get((p, aspect)), built.items.get((p, aspect)))
        for p, aspect in keys
    ]
    labels = [f"{p}.{a.partition(' ')[2]}" if p else a.partition(" ")[2] for p, a in keys]
    live_kind, built_kind = have.kinds.get(keys[0]), built.kinds.get(keys[0])
    what = f"a {live_kind}" if live_kind else "a plain tensor"
    makes = f"a {built_kind}" if built_kind else "a plain tensor"
    rest = ", ".join(labels[1:4]) + (", ..." if len(labels) > 4 else "")
    more = f" (and {len(keys) - 1} more: {rest})" if len(keys) > 1 else ""
    reason = f"inexact: {labels[0]} is {what}{more}; a rebuild makes {makes}"
    if live_kind:
        reason += ". An edit carries each such tensor over where its shape still fits"
    return Check(reason, diffs, found.base, found.seconds, found.cut, typed=True)


def build_meta(
    form: Any,
    changes: dict[str, Any] | None = None,
    deadline: float = float("inf"),
    real_ok: bool = False,
) -> nn.Module:
    """``form.build(**changes)`` on the meta device (an explicit ``device`` field too), stopped
    past ``deadline`` (``time.thread_time()``) with ``PastDeadline``; ``real_ok``: a constructor
    that reads tensor values is built on the CPU instead (``_forms/rebuild/real.py``)."""
    meta = dict(changes or {})
    by_name = getattr(form, "_by_name", {})
    device = "device" in by_name and by_name["device"].kind == "device" and "device" not in meta
    build = Rebuild(deadline=deadline, real_ok=real_ok)

    def make() -> nn.Module:
        where = {"device": torch.device("cpu" if build.real else "meta")} if device else {}
        return typing.cast(nn.Module, form.build(**meta, **where))

    return build.run(make)


def check(form: Any, live: nn.Module, limit: float | None = CHECK_SECONDS) -> Check:
    """Build ``form`` unchanged on meta and compare it with ``live`` (see the module doc); a
    build past ``limit`` CPU seconds is stopped (``Check.cut``; None: no limit)."""
    start = time.perf_counter()
    deadline = float("inf") if limit is None else time.thread_time() + limit
    try:
        built = build_meta(form, deadline=deadline, real_ok=small(live))
    except PastDeadline:
        return Check(TOO_SLOW, seconds=time.perf_counter() - start, cut=True)
    except Exception as e:  # noqa: BLE001 - any constructor failure: the gate cannot prove it
        text = str(e).splitlines()[0] if str(e) else ""
        why = f"inexact: it could not be rebuilt to check ({type(e).__name__}: {short(text, 200)})"
        return Check(why, seconds=time.perf_counter() - start)
    cast_like(built, floating_dtype(live))
    a, b = parts(live), parts(built)
    diffs = differences(a, b)
    reason = f"inexact: {sentence(diffs, a, b)}" if diffs else ""
    return typed(Check(reason, diffs, b, time.perf_counter() - start), live)
