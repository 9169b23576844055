"""Fake modes kept between runs: `borrowed()` enters an idle `FakeMode` (or a new one) for one run.

Making a FakeTensorMode records the caller's whole stack (``traceback.extract_stack``, source
lines included), a cost that grows with the depth of the caller's stack (a notebook cell's is
deep; bench/README.md, "The fake probe's fixed cost"). A mode holds nothing of a run once the run is over, except
its converter's memo of real tensors (weak references, but a memo that could answer for a tensor
changed in place since); a mode given back therefore gets a new converter, and each borrow a new
`Fakes` and no front. A mode is handed to one run at a time (two threads probing get two modes) and goes back to the
pool only if it was left as it was entered; the torch settings a mode reads when made are part
of its key, so a changed setting gets a new mode.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from .convert import Fakes
from .mode import FakeMode

__all__ = ["borrowed"]

_LOCK = threading.Lock()
_IDLE: dict[tuple[Any, ...], list[FakeMode]] = {}
_KEEP = 4  # idle modes kept per key


def _settings() -> tuple[Any, ...]:
    import torch._dynamo.config as dynamo_config
    import torch._functorch.config as functorch_config

    return (
        functorch_config.fake_tensor_propagate_real_tensors,
        functorch_config.fake_tensor_allow_unsafe_data_ptr_access,
        functorch_config.fake_tensor_allow_meta,
        dynamo_config.fake_tensor_cache_enabled,
        dynamo_config.fake_tensor_cache_crosscheck_enabled,
    )


@contextlib.contextmanager
def borrowed() -> Iterator[FakeMode]:
    """An entered fake mode (non-fake inputs allowed) with a fresh converter and `Fakes`
    (``mode.fakes``), given back when the run is over."""
    key = _settings()
    with _LOCK:
        idle = _IDLE.get(key)
        mode = idle.pop() if idle else None
    if mode is None:
        mode = FakeMode(allow_non_fake_inputs=True)
    else:  # its converter is a fresh one, made when it was given back
        mode.reset_nt_tensor_id_counter()
    mode.front = None
    fakes = mode.fakes = Fakes(mode)
    try:
        with mode:
            yield mode
    finally:
        fakes.release()
        mode.front = None
        # Nothing of the run kept while idle: its converter's memo (weak, but it holds the fakes
        # of tensors still alive) goes with it.
        mode.fakes = None
        mode.fake_tensor_converter = mode.new_converter()
        clean = not mode.enter_stack and not mode.in_kernel_invocation and not mode._inside
        if clean:
            with _LOCK:
                idle = _IDLE.setdefault(key, [])
                if len(idle) < _KEEP:
                    idle.append(mode)
