"""An edit changes only what it names: the check ``PatchLog.edit`` runs on the rebuilt module,
placed and with the old weights carried, before the model is touched.

The parts of the module (``_forms/rebuild/parts.py``) that the changes reach are those where the
unchanged rebuild (the form's gate build, on meta) and the new module differ. Every other part
of the new module must equal the live one, including what the logical view hides (a quantized
weight must still be quantized, a weight-normed one still weight-normed). When one does not,
``Inexact`` names it and nothing is patched, unless the caller passed ``_inexact_ok=True``.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from .._forms.exact.gate import check as full_check
from .._forms.field import FormError
from .._forms.rebuild.compare import Difference, change, differences, sentence, telling
from .._forms.rebuild.parts import parts
from .._text import short

__all__ = ["Inexact", "check"]

FIX = (
    "nothing was changed. Record the model's construction (`%load_ext torchxray` before building "
    "it, or build it inside `with tx.record_init_args():`), set the field that differs, or apply "
    "anyway with PatchLog.edit(..., _inexact_ok=True) ('Apply anyway' in the widget)"
)


class Inexact(FormError):
    """An edit that would change parts of the module it does not name; nothing was built into the
    model. A ``FormError`` under the key "__inexact__" (the widget offers "Apply anyway")."""

    def __init__(self, message: str, diffs: list[Difference]) -> None:
        super().__init__({"__inexact__": message})
        self.diffs = diffs


def _reached(base: Any, new_parts: Any) -> tuple[set[tuple[str, str]], set[str]]:
    keys, roots = set(), set()
    for d in differences(base, new_parts):
        if d.aspect == "module":
            roots.add(d.path)
        else:
            keys.add((d.path, d.aspect))
    return keys, roots


def _inside(path: str, roots: set[str]) -> bool:
    return any(path == r or path.startswith(r + ".") for r in roots)


def check(form: Any, old: nn.Module, new: nn.Module, path: str, ok: bool) -> tuple[str, ...]:
    """One line per submodule in which ``new`` differs from ``old`` (what the edit changes); raise
    ``Inexact`` when a difference is not reached by the changes (see the module doc), unless
    ``ok``."""
    live, got = parts(old, kinds=True), parts(new, kinds=True)
    final = differences(live, got)
    gate = form.check
    if gate.cut:
        gate = full_check(form, form.module, None)  # the form's check was stopped at its ceiling
    base = gate.base
    if base is None:
        unreached = final  # the unchanged rebuild could not be built: nothing is proven
        why = gate.reason
    else:
        keys, roots = _reached(base, parts(new))
        unreached = [
            d for d in final if (d.path, d.aspect) not in keys and not _inside(d.path, roots)
        ]
        why = f"inexact: {sentence(unreached, live, got)}" if unreached else ""
    if unreached and not ok:
        raise Inexact(f"{type(old).__name__} at {path!r}: {why}; {FIX}", unreached)
    out: dict[str, str] = {}
    for d in telling(final):
        out.setdefault(d.path, short(change(d, live, got), 300))
    return tuple(out.values())
