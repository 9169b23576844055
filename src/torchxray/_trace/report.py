"""Writes as a report says them: one sentence for what could not be put back."""

from __future__ import annotations

from collections.abc import Iterable

from .writes import Write

__all__ = ["unrestored"]


def unrestored(writes: Iterable[Write]) -> tuple[str, ...]:
    """One sentence naming the writes that could not be put back, or nothing."""
    left = [w for w in writes if not w.restored]
    if not left:
        return ()
    named = "; ".join(str(w) for w in left[:5])
    more = f" and {len(left) - 5} more" if len(left) > 5 else ""
    return (
        f"The forward wrote what torchxray cannot put back ({named}{more}): the probe left "
        "those as the forward made them.",
    )
