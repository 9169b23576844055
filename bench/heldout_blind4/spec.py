"""The fourth blind held-out set's record: hand-written models nobody tunes torchxray on.

Written blind, on 2026-12-05, by someone who read none of torchxray's code, tests, docs or results
(nor the hand-written zoo or the earlier held-out sets' models). Its domains differ from the first
three blind sets': reinforcement learning (dueling/noisy DQN, PPO, SAC, a Dreamer-style RSSM,
Decision Transformer), tabular nets (TabNet, FT-Transformer, DCN-v2, NODE), neural operators
(FNO, DeepONet, AFNO), molecular and graph nets written by hand (EGNN, SchNet, MPNN, DiffPool),
biology and medical imaging (Evoformer pair stack, a DNA CNN, Attention U-Net, V-Net), audio
codecs and vocoders (SoundStream with residual VQ, HiFi-GAN), language models (RetNet, RWKV,
ALiBi GPT, a tied char LSTM, a text CNN), vision-language and retrieval (a tiny CLIP, a Q-Former,
a two-tower retriever), flows and implicit or energy models (RealNVP, MAF, DEQ, neural cellular
automata, Deep SVDD), and parameter-efficient or quantization-aware blocks (LoRA, prefix tuning,
bottleneck adapters, LSQ fake quantization).
No rule may be developed on it, or it stops measuring anything.
Run: ``python -m bench.sweep --family blind4``.
"""

from __future__ import annotations

from bench.heldout.spec import Spec, rand, registrar

__all__ = ["REGISTRY", "Spec", "heldout", "rand"]

REGISTRY: list[Spec] = []
heldout = registrar(REGISTRY)
