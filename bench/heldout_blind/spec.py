"""The blind held-out set's record: hand-written models nobody tunes torchxray on.

Written blind, on 2026-12-05, by someone who read none of torchxray's forms code or results (nor
the hand-written zoo or the first held-out set's models). It measures how general the rules are;
no rule may be developed on it, or it stops measuring anything. Run:
``python -m bench.sweep --family blind``.
"""

from __future__ import annotations

from bench.heldout.spec import Spec, rand, registrar

__all__ = ["REGISTRY", "Spec", "heldout", "rand"]

REGISTRY: list[Spec] = []
heldout = registrar(REGISTRY)
