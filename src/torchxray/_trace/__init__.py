"""Leave no trace: what a run (a probe, a memory step, a form's check) writes to the model and to
torch's global state, found, put back and said as data (`Write`).

- `_trace/writes.py`: the `Write` record and its kinds.
- `_trace/held.py`: what a container (list, dict, set, deque, a plain object's attributes) holds,
  copied to a bounded depth, compared by identity and put back in place.
- `_trace/flags.py`: torch's global state (default dtype and device, grad mode, deterministic
  algorithms, autocast, backends' flags, global module hooks): read, compared, put back.
- `_trace/tensors.py`: model tensors written in place (copy-on-write backups in a real run; the
  fake run's record of in-place ops on real tensors).
- `_trace/outside.py`: writes that cannot be put back (files opened for writing).
- `_trace/trace.py`: `Trace`, one run's watch over all of these: modules snapshot lazily at their
  first call (only code that runs can write), hooks found by their handle ids, `finish()`.
"""

from .trace import Trace
from .writes import Write

__all__ = ["Trace", "Write"]
