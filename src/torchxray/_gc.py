"""The cyclic garbage collector paused while torchxray makes many objects (a walk, a probe, a
memory trace): `pause()` / `resume()` as a pair, `paused()` as a context manager.

With a big heap (torch alone is large) the collector's passes rescan everything already built,
over and over, while records pile up: they took half of a 10,000-module probe and made a large
walk many times slower (bench/README.md, "measured, by file"). Reference counting still frees
objects as usual meanwhile; only cycles wait until the pause ends (as timeit does). A caller's own
``gc.disable()`` is kept: resuming re-enables only a collector that was on.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["pause", "paused", "resume"]


def pause() -> bool:
    """Disable the cyclic GC; True if it was on. Plain calls rather than a context manager where
    the caller needs it: leaving a generator allocates, which would run the young-generation
    collection of everything built before the pause ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    return was_enabled


def resume(was_enabled: bool, *, as_old: bool = False) -> None:
    """Re-enable the cyclic GC after `pause` (if it was on then). ``as_old``: what was built
    meanwhile counts as old first.

    A walk's records (tens of thousands of containers, lists and tuples as long as the model) are
    long-lived, yet they were allocated as young objects: the first young collection after the
    walk would traverse all of them, on the path to the Explorer's first state. `gc.freeze()` +
    `gc.unfreeze()` moves every tracked object to the oldest generation in O(1), without a
    traversal; objects there are still collected, by the next full collection. Skipped when the
    process froze objects itself (unfreeze would thaw them)."""
    if not was_enabled:
        return
    if as_old and gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
    gc.enable()


@contextlib.contextmanager
def paused(*, as_old: bool = False) -> Iterator[None]:
    """`pause()` for the block, `resume()` after it (``as_old`` as there), whatever happened."""
    was_enabled = pause()
    try:
        yield
    finally:
        resume(was_enabled, as_old=as_old)
