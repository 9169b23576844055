"""Which edits change nothing: values compared parsed, not as text (a UI sends ``"(2,2)"`` for
``(2, 2)`` and ``"float16"`` for ``torch.float16``), so an edit that sets a field to its live value
records no patch-log entry."""

from __future__ import annotations

from typing import Any

import torch

from ..field import FormError
from ..values import same

__all__ = ["changed", "equal", "nothing_message"]


def equal(a: Any, b: Any) -> bool:
    """``same``, or equal dtypes, devices, containers and (real) tensors."""
    if same(a, b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, torch.Tensor):
        if a.is_meta or a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
            return False
        return bool(torch.equal(a, b))
    if isinstance(a, (torch.dtype, torch.device, list, dict, frozenset, set)):
        try:
            return bool(a == b)
        except Exception:  # noqa: BLE001 - elements that refuse comparison
            return False
    return False


def changed(form: Any, changes: dict[str, Any]) -> dict[str, Any]:
    """The subset of ``changes`` whose parsed value differs from ``form``'s live one. A value that
    does not parse, or an unknown name, is kept: ``validate`` / ``build`` name it."""
    out: dict[str, Any] = {}
    for name, raw in changes.items():
        for key, sub in form._spread({name: raw}).items():
            f = form._by_name.get(key)
            if f is None or f.kind in ("varargs", "varkw", "config"):
                out[name] = raw
                break
            try:
                text = isinstance(sub, str) and (f.kind != "str" or f.optional)
                value = form.parse(key, sub) if text else sub
            except FormError:
                out[name] = raw
                break
            if not equal(value, f.value):
                out[name] = raw
                break
    return out


def nothing_message(form: Any, path: str, asked: tuple[str, ...]) -> str:
    def text(name: str) -> str:
        try:
            return f"{name}={form[name].text}"
        except KeyError:
            return name

    verb = "is the live value" if len(asked) == 1 else "are the live values"
    return f"nothing changed at {path!r}: {', '.join(map(text, asked))} {verb}; no entry recorded"
