"""The one format a rank's figures travel in, written by the job (``_attach/ring.py``) and read by
the notebook (``_attach/history.py``): the figures of a sampled step as a float32 matrix (one row per
module, one column per ``FIGURES`` entry), sent as base64 of its bytes.

Why bytes, not JSON numbers: the job's handler runs on the worker server's thread and holds the
GIL while it answers; a 1,000-module step as JSON text took ~40x longer to write than its 24 kB
of float32 in base64, and JSON has no NaN or Inf, which are the figures a person looks for. A slot
with no value (a module without own weights has no gradient norm) holds a NaN of another bit
pattern (``MISSING``), so that a NaN figure stays one.

    >>> import math
    >>> m = empty(2)
    >>> m[0, FIGURES.index("grad_norm")] = float("nan")
    >>> back = decode(encode(m), 2)
    >>> math.isnan(back[0][0]), "grad_norm" in values(back, 1)
    (True, False)
"""

from __future__ import annotations

import base64

import numpy as np

__all__ = ["FIGURES", "KEY", "MISSING", "VERSION", "decode", "empty", "encode", "values"]

VERSION = 1
KEY = "torchxray"  # the store's prefix, and the handler's name on the worker server
# Every figure a rank publishes per module; param_norm makes the update ratio and the gradient
# norm of a sharded weight combinable across ranks (attach.py, `Job.series(None, ...)`).
FIGURES = ("grad_norm", "update_ratio", "act_mean", "act_std", "act_zeros", "param_norm")
MISSING = np.uint32(
    0x7FC0_0A11
)  # a quiet NaN with a payload: "no value" (a NaN figure is 0x7FC00000)


def empty(rows: int) -> np.ndarray:
    out = np.empty((rows, len(FIGURES)), dtype=np.float32)
    out.view(np.uint32)[:] = MISSING
    return out


def encode(matrix: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(matrix, dtype=np.float32).tobytes()).decode()


def decode(text: str, rows: int) -> np.ndarray:
    """The matrix of ``rows`` modules sent as ``text`` (a copy: writable)."""
    flat = np.frombuffer(base64.b64decode(text), dtype=np.float32)
    if flat.size != rows * len(FIGURES):
        raise ValueError(f"a sample of {flat.size} values does not fit {rows} modules")
    return flat.reshape(rows, len(FIGURES)).copy()


def values(matrix: np.ndarray, row: int) -> dict[str, float]:
    """The figures one module has in ``matrix`` (missing ones left out)."""
    if row >= matrix.shape[0]:
        return {}
    bits = matrix[row].view(np.uint32)
    return {f: float(matrix[row, i]) for i, f in enumerate(FIGURES) if bits[i] != MISSING}
