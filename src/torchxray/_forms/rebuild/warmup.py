"""torch's one-time warm-up of the meta device, paid once per process before a form's clock starts.

The first operation on a meta tensor in a process imports torch's meta kernels and
decompositions (``torch._meta_registrations``, ``torch._decomp``): 1.8 s of CPU on this machine,
more than a form's whole second. A form opened first in a process then ran out of its budget
where the same form opened later did not: a form was not a pure function of its module, and the
first one took over a second (the forms sweep's zoo TinyViT: refused at 1.6 s, then exact in 19
ms). The warm-up is the process's, not the form's: done once, before the first form's clock.
"""

from __future__ import annotations

import functools

import torch

__all__ = ["warm"]


@functools.cache
def warm() -> None:
    """Run one meta operation (once per process): the meta kernels are loaded from then on."""
    x = torch.empty(2, 2, device="meta")
    (x * 2 + x).sum()
