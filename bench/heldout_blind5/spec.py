"""The fifth blind held-out set's record: hand-written models nobody tunes torchxray on.

Written blind, on 2026-12-06, by someone who read none of torchxray's code, tests, docs or results
(nor the hand-written zoo or the earlier held-out sets' models). Its domains differ from the first
four blind sets': time-series forecasting (N-BEATS, PatchTST, DeepAR, a TCN forecaster, an
Informer-style ProbSparse encoder), recommender systems (NeuMF, DeepFM, DIN, SASRec, MMoE, PLE),
speech recognition (Conformer, DeepSpeech2, QuartzNet, Listen-Attend-Spell), video (C3D, R(2+1)D,
TimeSformer, a SlowFast lite), dense prediction heads (FCOS with an FPN, a YOLO-style neck and
head, DETR-lite, DeepLabv3, PSPNet), OCR (CRNN, an STN in front of it), self-supervised learning
(SimCLR, BYOL, MoCo, DINO), metric and few-shot learning (Siamese, ArcFace and CosFace heads,
prototypical and relation nets, a distillation pair), GANs and style transfer (StyleGAN2, a
CycleGAN ResNet generator, pix2pix with a PatchGAN, AdaIN, SPADE), diffusion (a DDPM U-Net, DiT),
state-space and long-convolution sequence models (S4D, Hyena), odd layers (spline KAN, spiking
LIF nets, a mixture density net, a fixed-step neural ODE, capsules), super-resolution (ESRGAN,
SRCNN, RCAN) and point clouds (PointNet, PointNet++, DGCNN).
No rule may be developed on it, or it stops measuring anything.
Run: ``python -m bench.sweep --family blind5``.
"""

from __future__ import annotations

from bench.heldout.spec import Spec, rand, registrar

__all__ = ["REGISTRY", "Spec", "heldout", "rand"]

REGISTRY: list[Spec] = []
heldout = registrar(REGISTRY)
