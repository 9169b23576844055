"""transformers: every architecture of its auto mappings (causal LM, masked LM, seq2seq, image
classification, speech seq2seq, CTC, audio classification), each built from its own config class
made small by one generic rule (`small_config`: the widths, depths and head counts that configs
name alike), random init. Where the small config does not build or run, the architecture's default
config is tried on the meta device (no memory, fake probe only)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from .entry import Entry, Inputs

GROUPS = {
    "causal-lm": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "masked-lm": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "seq2seq": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "image-classification": "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
    "speech-seq2seq": "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
    "ctc": "MODEL_FOR_CTC_MAPPING_NAMES",
    "audio-classification": "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES",
}

# Config fields that mean the same thing across architectures, and a small value for each.
SMALL: dict[str, int] = {
    "hidden_size": 32,
    "d_model": 32,
    "n_embd": 32,
    "embed_dim": 32,
    "dim": 32,
    "num_hidden_layers": 2,
    "num_layers": 2,
    "n_layer": 2,
    "n_layers": 2,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "num_decoder_layers": 2,
    "num_attention_heads": 4,
    "n_head": 4,
    "n_heads": 4,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 64,
    "ffn_dim": 64,
    "d_ff": 64,
    "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64,
    "d_kv": 8,
    "head_dim": 8,
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
}
_SEQ = 8
_VOCAB_USED = 50  # token ids drawn below this: every vocabulary has them


def small_config(config_cls: type, depth: int = 0) -> Any:
    """The config class's defaults with every field of `SMALL` it takes set small, sub-configs
    (text, vision, audio, encoder, decoder) made small the same way."""
    default = config_cls()
    names = set(inspect.signature(config_cls.__init__).parameters)
    kwargs: dict[str, Any] = {}
    for key, value in SMALL.items():
        current = getattr(default, key, None)
        if key in names and isinstance(current, int) and not isinstance(current, bool):
            kwargs[key] = min(current, value) if key == "num_experts_per_tok" else value
    if depth < 2:
        for key, sub in vars(default).items():
            if key in names and hasattr(sub, "to_dict") and hasattr(type(sub), "model_type"):
                try:
                    kwargs[key] = small_config(type(sub), depth + 1).to_dict()
                except Exception:
                    pass
    return config_cls(**kwargs)


def _make(model_cls: str, config_cls: type, small: bool) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import transformers

        cfg = small_config(config_cls) if small else config_cls()
        return getattr(transformers, model_cls)(cfg)

    return make


def _sub(config: Any, *names: str) -> Any:
    for name in names:
        for holder in (config, getattr(config, "vision_config", None)):
            value = getattr(holder, name, None) if holder is not None else None
            if value is not None:
                return value
    return None


def _size(value: Any) -> tuple[int, int]:
    if isinstance(value, dict):
        value = value.get("height") or value.get("shortest_edge") or 224
    if isinstance(value, (list, tuple)):
        return int(value[0]), int(value[-1])
    return int(value or 224), int(value or 224)


def inputs(model: nn.Module, device: torch.device) -> Inputs:
    """Example inputs from the model's main input name and its config; ValueError when the
    model takes an input this does not know how to make."""
    cfg = model.config
    main = getattr(model, "main_input_name", "input_ids")
    g = torch.Generator().manual_seed(0)
    kwargs: dict[str, Any] = {}
    if main == "input_ids":
        kwargs["input_ids"] = torch.randint(0, _VOCAB_USED, (1, _SEQ), generator=g)
    elif main == "pixel_values":
        h, w = _size(_sub(cfg, "image_size"))
        channels = _sub(cfg, "num_channels") or 3
        kwargs["pixel_values"] = torch.randn(1, int(channels), h, w, generator=g)
    elif main == "input_values":
        kwargs["input_values"] = torch.randn(1, 4000, generator=g)
    elif main == "input_features":
        mels = getattr(cfg, "num_mel_bins", None)
        if mels is not None and getattr(cfg, "max_source_positions", None):
            frames = 2 * int(cfg.max_source_positions)
            kwargs["input_features"] = torch.randn(1, int(mels), frames, generator=g)
        else:
            feat = getattr(cfg, "input_feat_per_channel", None) or getattr(cfg, "feature_size", 80)
            per = getattr(cfg, "input_channels", 1) or 1
            kwargs["input_features"] = torch.randn(1, 64, int(feat) * int(per), generator=g)
    else:
        raise ValueError(f"no example input for {main!r}")
    if getattr(cfg, "is_encoder_decoder", False):
        kwargs["decoder_input_ids"] = torch.randint(0, _VOCAB_USED, (1, _SEQ), generator=g)
    return (), {k: v.to(device) for k, v in kwargs.items()}


def entries(every: bool = True) -> Iterator[Entry]:
    import transformers
    from transformers.models.auto import configuration_auto, modeling_auto

    for group, mapping_name in GROUPS.items():
        mapping = getattr(modeling_auto, mapping_name, {})
        for model_type, model_cls in sorted(mapping.items()):
            if isinstance(model_cls, (list, tuple)):
                model_cls = model_cls[0]
            config_cls = configuration_auto.CONFIG_MAPPING_NAMES.get(model_type)
            if config_cls is None or not hasattr(transformers, model_cls):
                continue
            cfg_cls = getattr(transformers, config_cls, None)
            if cfg_cls is None:
                continue
            meta = Entry(
                "transformers",
                group,
                f"{model_cls}[default config]",
                _make(model_cls, cfg_cls, small=False),
                inputs,
                cpu=False,
                note="its default config, on meta",
            )
            yield Entry(
                "transformers",
                group,
                model_cls,
                _make(model_cls, cfg_cls, small=True),
                inputs,
                fallback=meta,
            )
