"""The sixth blind held-out set's record.

Written blind, on 2026-12-06, by someone who read none of torchxray's code, tests, docs or results
(nor the hand-written zoo or the earlier held-out sets' models). Its domains differ from the first
five blind sets': course-notebook CNNs written from scratch (VGG from a cfg list, ResNet with
_make_layer, DenseNet, SqueezeNet, GoogLeNet, MobileNetV2/V3, ShuffleNetV2, EfficientNet,
GhostNet), audio source separation (Conv-TasNet, a Demucs-lite), EEG/ECG nets, physics-informed
and scientific ML (a Fourier-feature PINN, a Hamiltonian NN, an ODE-Net with a hand-written RK4,
SIREN), 3-D geometry (VoxelMorph, PointNet++, DGCNN, an occupancy network), classic NLP written by
hand (BiLSTM-CRF, HAN, BiDAF, a char-CNN highway LM, ConvS2S, pointer-generator), captioning and
VQA (show-attend-tell, MCB and MFB pooling), knowledge tracing (DKT, SAKT, DKVMN), learned image
compression (a GDN hyperprior and its autoregressive context model), inpainting (partial and gated
convolutions), NAS and meta-learning (a DARTS search network, MAML learners), world models and
robotics (an MDN, an MDN-RNN, a diffusion-policy 1-D U-Net with FiLM) and a GraphCast-like mesh
processor. No rule may be developed on it, or it stops measuring anything. Run:
``python -m bench.sweep --family blind6``.
"""

from __future__ import annotations

from bench.heldout.spec import Spec, rand, registrar

__all__ = ["REGISTRY", "Spec", "heldout", "rand"]

REGISTRY: list[Spec] = []
heldout = registrar(REGISTRY)
