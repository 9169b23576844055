"""ParamStats as a JSON-able row for the Overview's statistics (``compare_types.StatRow``)."""

from __future__ import annotations

import math

from ..stats import ParamStats
from .compare_types import StatRow


def _num(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None  # JSON has no NaN or Infinity


def stat_row(name: str, st: ParamStats) -> StatRow:
    return {
        "name": name,
        "shape": "×".join(map(str, st.shape)) or "scalar",
        "dtype": st.dtype,
        "numel": st.numel,
        "norm": _num(st.norm),
        "mean": _num(st.mean),
        "std": _num(st.std),
        "min": _num(st.min),
        "max": _num(st.max),
        "zeros": st.zeros,
        "nonfinite": st.nonfinite,
        "hist": list(st.hist),
        "skipped": st.skipped,
    }
