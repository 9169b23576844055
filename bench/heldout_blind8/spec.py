"""The eighth blind held-out set's record.

Written blind, on 2026-12-06, by someone who read none of torchxray's code, tests, docs or results
(nor the hand-written zoo or the earlier held-out sets' models). Its domains differ from the first
seven blind sets': document AI (layout embeddings, table structure, coverage-attention formula
recognition), speech enhancement (complex U-Nets, GRU noise suppressors), speaker verification,
keyword spotting and voice activity detection, symbolic music generation (hierarchical VAE decoders,
SampleRNN tiers), sequential recommendation, click-through-rate and multi-task models, graph
models not covered before (GraphSAGE, hand-written GAT, graph U-Nets, temporal graph memory),
forecasting (DeepAR heads, TFT variable selection, PatchTST, DLinear, TimesNet), weather (AFNO),
protein and chemistry toys (Evoformer-lite, SchNet, DimeNet-lite), robot control and driving
(action chunking, CVAE policies, VectorNet, DeepVO), retrieval hashing, test-time adaptation,
continual learning, early-exit and dynamic networks, compression wrappers and audio-visual fusion.
No rule may be developed on it, or it stops measuring anything. Run:
``python -m bench.sweep --family blind8``.
"""

from __future__ import annotations

from bench.heldout.spec import Spec, rand, registrar

__all__ = ["REGISTRY", "Spec", "heldout", "rand"]

REGISTRY: list[Spec] = []
heldout = registrar(REGISTRY)
