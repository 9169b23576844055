"""Fused fast paths skip their checks on fake tensors: a failure they hide is blamed where it
surfaces, in a parent, instead of in the module that would raise for real.

torch's own fused paths (``nn.MultiheadAttention``'s and ``nn.TransformerEncoderLayer``'s
``_native_multi_head_attention``, chosen in eval mode without grad) check shapes in their CUDA and
CPU kernels, not in the meta kernel a fake run uses: an attention block whose ``embed_dim`` no
longer fits its input returns a wrongly shaped fake output, and the residual add after it fails.
After a failed fake run, `localised` runs the probe again with torch's switch for those paths off
(``torch.backends.mha.set_fastpath_enabled``), so the model's own Python checks run; when that run
fails deeper inside the first failure's module, its error is the one reported, with a note.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import torch

__all__ = ["enabled", "localised"]


def _switch() -> Any:
    return getattr(getattr(torch.backends, "mha", None), "get_fastpath_enabled", None)


def enabled() -> bool:
    """Whether torch's fused attention fast paths are on (they are by default)."""
    get = _switch()
    return bool(get()) if get is not None else False


@contextlib.contextmanager
def _off() -> Iterator[None]:
    mha = torch.backends.mha
    was = mha.get_fastpath_enabled()
    mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        mha.set_fastpath_enabled(was)


def localised(first: Any, again: Callable[[], Any]) -> Any:
    """`first`, a failed fake report, or the report of `again()` run without fast paths when it
    fails strictly inside the module `first` blamed."""
    with _off():
        second = again()
    before, after = first.error, second.error
    if after is None or before is None:
        return first
    inside = after.path.startswith(before.path + ".") if before.path else bool(after.path)
    if not inside:
        return first
    note = (
        f"the fake run first failed in {before.path or '(root)'} ({before.message[:120]}); "
        "fused fast paths skip their checks on fake tensors, so it ran again without them and "
        f"{after.path} fails"
    )
    return dataclasses.replace(second, notes=(*second.notes, note))
