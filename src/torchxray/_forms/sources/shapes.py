"""Source: a list of sizes a constructor makes a tensor of (``torch.arange(0, s) for s in
size``, then a ``meshgrid`` kept as a buffer; ``torch.ones(*shape)``), read back off the
shapes of the buffers the module keeps itself.

A sampling grid, a positional table or a mask is often the only trace of the shape it was made
for: no layer is handed the sizes, so the layers' widths say nothing of them. Each buffer the
module holds directly (not its layers') gives the ends of its shape (``(1, 3, 16, 16, 16)``
gives ``[16, 16, 16]``, ``[3, 16, 16, 16]``, ...; ``(8, 8, 2)`` gives ``[8, 8]`` too, a
channel axis last); each is a candidate that only a build proves (a list
one item longer or shorter makes a tensor of another shape).
"""

from __future__ import annotations

from torch import nn

__all__ = ["shapes"]

MAX_TENSORS = 4


def shapes(module: nn.Module) -> list[list[int]]:
    """The ends of the shapes of the tensors ``module`` keeps itself, as lists of sizes (see
    the module doc): past a batch and a channel axis first, then past one axis, then shorter
    ends, then the whole shape."""
    seen: list[tuple[int, ...]] = []
    # Buffers only: a parameter's shape is a layer's widths (``torch.zeros((out_dim,))``), which
    # the widths' own readers offer; a guide's move of it to a list whose other traces the gate
    # does not compare (a numpy array of offsets) would prove nothing.
    for t in list(module._buffers.values())[:MAX_TENSORS]:
        shape = tuple(int(s) for s in t.shape) if t is not None else ()
        if shape and shape not in seen:
            seen.append(shape)
    out: list[list[int]] = []
    for shape in seen:
        ends = [list(shape[start:]) for start in (2, 1, *range(3, len(shape)), 0)]
        # A channel axis last (``stack(grids, -1)``): the sizes before it, past a batch axis
        # too (``grid.unsqueeze(0)``: ``(1, 32, 32, 4)`` gives ``[32, 32]``).
        for end in [*ends[:-1], list(shape[:-1]), list(shape[1:-1]), ends[-1]]:
            if end and end not in out:
                out.append(end)
    return out
