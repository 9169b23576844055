"""The seventh blind set's record.

Written blind, on 2026-12-06, by someone who read none of torchxray's code, tests, docs or results
(nor the hand-written zoo or the earlier held-out sets' models). Its domains differ from the first
six blind sets': memory-augmented networks (NTM, DNC, end-to-end memory networks), sets and objects
(DeepSets, Set Transformer, Slot Attention), equivariant networks (EGNN, p4 group convolutions),
reservoir and continuous-time recurrent nets (echo state network, liquid time-constant and CfC
cells, Hopfield layers), neural cellular automata, few-shot learning (prototypical, relation and
matching networks), anomaly detection (Deep SVDD, MemAE), person re-identification and face
recognition heads (PCB, OSNet, ArcFace/CosFace, MobileFaceNet), crowd counting (MCNN, CSRNet),
stereo and monocular depth (PSMNet, Monodepth), image retrieval (NetVLAD, GeM), video prediction
(ConvLSTM, PredRNN), skeleton action recognition (ST-GCN, adaptive graph convolution), trajectory
prediction (Social LSTM, Social GAN), lidar pillars (PointPillars), remote sensing (HybridSN,
siamese change detection), text-to-speech (FastSpeech variance adaptor, Tacotron-lite), sketch
generation (Sketch-RNN), tree and graph generators (child-sum Tree-LSTM, GraphRNN), energy-based
models and neural processes (CNP, ANP).

No rule may be developed on it, or it stops measuring anything. Run:
``python -m bench.sweep --family blind7``.
"""

from __future__ import annotations

from bench.heldout.spec import Spec, rand, registrar

__all__ = ["REGISTRY", "Spec", "heldout", "rand"]

REGISTRY: list[Spec] = []
heldout = registrar(REGISTRY)
