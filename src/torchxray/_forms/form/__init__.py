"""Stage 5 of a form (``forms.py`` runs the stages): the ``Form`` a person sees (``form.py``).

``make(draft, verdict, gate)`` puts the fields in the form's order: each field as the stages
before left it, a recorded value's note, and a config argument followed by one sub-field per
config field (``configs.py``: those its class reads first). A searched form carries stage 4's
verdict (its hint and check); any other carries the gate (``_forms/exact/gate.py``), run when it
is first asked whether it is exact.
"""

from __future__ import annotations

import dataclasses

from ..configs import is_config
from ..field import Field
from ..kinds import KindInfo
from ..rebuild.compare import Check
from ..sources import Draft
from .configs import expand
from .form import Form, Gate

__all__ = ["Form", "Gate", "make"]


def make(
    d: Draft,
    fields: list[Field],
    infos: dict[str, KindInfo],
    hint: str = "",
    check: Check | None = None,
    gate: Gate | None = None,
) -> Form:
    """The ``Form`` of ``d``'s constructor with ``fields`` (the draft's, or stage 4's verdict's)."""
    ctor = d.constructor
    out: list[Field] = []
    out_infos: dict[str, KindInfo] = {}
    for f in fields:
        if f.name in d.notes:
            f = dataclasses.replace(f, note=d.notes[f.name])
        pairs = [(f, infos[f.name])]
        if f.kind not in ("varargs", "varkw") and is_config(f.value):
            pairs = expand(ctor.cls, f, infos[f.name])
        for g, info in pairs:
            out.append(g)
            out_infos[g.name] = info
    return Form(
        ctor.cls, ctor.signature, tuple(out), out_infos, hint, ctor.module, check=check, gate=gate
    )
