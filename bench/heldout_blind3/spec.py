"""The third blind held-out set's record: hand-written models nobody tunes torchxray on.

Written blind, on 2026-12-05, by someone who read none of torchxray's code, tests, docs or results
(nor the hand-written zoo or the earlier held-out sets' models). Its domains differ from the first
two blind sets': video, optical flow, super-resolution and restoration, style transfer, pose, OCR,
keyword spotting, music, neural rendering, metric and few-shot learning, capsules, spiking nets,
hypernetworks, Bayesian layers, state-space and Perceiver blocks, hand-written backbones and GANs.
No rule may be developed on it, or it stops measuring anything.
Run: ``python -m bench.sweep --family blind3``.
"""

from __future__ import annotations

from bench.heldout.spec import Spec, rand, registrar

__all__ = ["REGISTRY", "Spec", "heldout", "rand"]

REGISTRY: list[Spec] = []
heldout = registrar(REGISTRY)
