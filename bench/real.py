"""The bench's real models, as people load them: timm and transformers classes built from configs,
random init, nothing downloaded (timm ``pretrained=False``; transformers from a config).

- timm: ResNet-50, ConvNeXt-T and ViT-B/16 on one 224x224 image.
- transformers on the CPU (128 tokens): a small Llama (87 M parameters), GPT-2 (124 M) and BERT-base
  (109 M) at their default configs, and a small Mixtral (8 experts, top 2).
- transformers on the meta device (128 tokens, bf16): ``LlamaForCausalLM`` with the Llama-3-70B
  architecture, and Mixtral-8x7B. Meta tensors hold no data: the fake probe, torchinfo and a bare
  meta forward can run them, a real probe cannot.

`tokens` gives the inputs. The hand-written lookalikes (`bench.models`) stay as extra rows.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

LLAMA_70B: dict[str, Any] = dict(
    vocab_size=128_256,
    hidden_size=8192,
    intermediate_size=28_672,
    num_hidden_layers=80,
    num_attention_heads=64,
    num_key_value_heads=8,
    max_position_embeddings=8192,
    rope_theta=500_000.0,
    rms_norm_eps=1e-5,
)
LLAMA_CPU: dict[str, Any] = dict(
    vocab_size=32_000,
    hidden_size=768,
    intermediate_size=2048,
    num_hidden_layers=6,
    num_attention_heads=12,
    num_key_value_heads=4,
)
MIXTRAL_CPU: dict[str, Any] = dict(
    vocab_size=32_000,
    hidden_size=512,
    intermediate_size=1024,
    num_hidden_layers=4,
    num_attention_heads=8,
    num_key_value_heads=4,
    num_local_experts=8,
    num_experts_per_tok=2,
)
SEQ = 128


def timm_model(name: str) -> nn.Module:
    import timm

    torch.manual_seed(0)
    return timm.create_model(name, pretrained=False).eval()


def resnet50() -> nn.Module:
    return timm_model("resnet50")


def convnext_tiny() -> nn.Module:
    return timm_model("convnext_tiny")


def vit_b16() -> nn.Module:
    return timm_model("vit_base_patch16_224")


def _hf(config: str, cls: str, meta: bool = False, **kw: Any) -> nn.Module:
    import transformers

    cfg = getattr(transformers, config)(**kw)
    torch.manual_seed(0)
    if meta:
        # Built on meta: no memory, no init cost; bf16 as the checkpoints ship (Mixtral's grouped
        # expert matmul takes bf16 only).
        with torch.device("meta"):
            return getattr(transformers, cls)(cfg).to(torch.bfloat16).eval()
    return getattr(transformers, cls)(cfg).eval()


def llama_70b() -> nn.Module:
    """transformers ``LlamaForCausalLM``, Llama-3-70B architecture (70.6 B parameters), on meta."""
    return _hf("LlamaConfig", "LlamaForCausalLM", meta=True, **LLAMA_70B)


def mixtral_8x7b() -> nn.Module:
    """transformers ``MixtralForCausalLM`` at its default (8x7B) config, on meta."""
    return _hf("MixtralConfig", "MixtralForCausalLM", meta=True)


def llama_cpu() -> nn.Module:
    return _hf("LlamaConfig", "LlamaForCausalLM", **LLAMA_CPU)


def gpt2() -> nn.Module:
    return _hf("GPT2Config", "GPT2LMHeadModel")


def bert() -> nn.Module:
    return _hf("BertConfig", "BertModel")


def mixtral_cpu() -> nn.Module:
    return _hf("MixtralConfig", "MixtralForCausalLM", **MIXTRAL_CPU)


def tokens(model: nn.Module, device: str = "cpu") -> tuple[torch.Tensor]:
    """``input_ids`` of 1 x `SEQ` tokens within the model's vocabulary (passed positionally: every
    model here takes ``input_ids`` first, and torchinfo takes a list of inputs)."""
    vocab = int(getattr(model, "config").vocab_size)  # noqa: B009 (an nn.Module attribute)
    if device == "meta":
        return (torch.zeros(1, SEQ, dtype=torch.long, device="meta"),)
    g = torch.Generator().manual_seed(0)
    return (torch.randint(0, vocab, (1, SEQ), generator=g),)
