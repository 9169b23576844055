"""The fifth blind held-out set's record: hand-written models nobody tunes torchxray on.

Written blind, on 2026-12-06, by someone who read none of torchxray's code, tests, docs or results
(nor the hand-written zoo or the earlier held-out sets' models). Its domains differ from the first
four blind sets': time-series forecasting (N-BEATS generic and interpretable, PatchTST with RevIN,
DeepAR, a TCN forecaster, an Informer-style ProbSparse encoder), recommender systems (NeuMF,
DeepFM, DIN with Dice, SASRec) and multi-task recommendation (MMoE, a two-level PLE), speech
recognition (Conformer-CTC, DeepSpeech2, QuartzNet, Listen-Attend-Spell), OCR (CRNN, an STN in
front of it), video (R(2+1)D, TimeSformer with divided attention, a SlowFast lite), detection
written by hand (FCOS on an FPN, a YOLOv5-style model parsed from a dict), dense and set
prediction heads (DeepLabv3 with ASPP, PSPNet, DETR-lite), self-supervised learning (BYOL, MoCo v2,
DINO with multi-crop), metric and few-shot learning (an ArcFace head, prototypical networks, a
FitNets/Hinton distillation pair), GANs (StyleGAN2, CycleGAN with PatchGAN discriminators, SPADE),
diffusion backbones (a DDPM U-Net, DiT with adaLN-Zero) and less common layers (S4D, Hyena, a
spline KAN, a spiking LIF convnet with a surrogate gradient).
No rule may be developed on it, or it stops measuring anything.
Run: ``python -m bench.sweep --family blind5``.
"""

from __future__ import annotations

from bench.heldout.spec import Spec, rand, registrar

__all__ = ["REGISTRY", "Spec", "heldout", "rand"]

REGISTRY: list[Spec] = []
heldout = registrar(REGISTRY)
