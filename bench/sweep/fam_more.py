"""The rest of the ecosystem, each a small family: open_clip (``pretrained=None``), torchao
quantization, PEFT LoRA adapters, parametrizations (weight_norm, spectral_norm), ``torch.compile``d
models and TorchScript submodules. The hosts are small timm / transformers models built from
configs, so what is measured is the wrapper, not the host."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from .entry import Entry, Inputs, image

_IDS = 8


def _timm(name: str, **kw: Any) -> nn.Module:
    import timm

    return timm.create_model(name, pretrained=False, **kw)


def _llama() -> nn.Module:
    import transformers

    cfg = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    return transformers.LlamaForCausalLM(cfg)


def _ids(model: nn.Module, device: torch.device) -> Inputs:
    g = torch.Generator().manual_seed(0)
    return (), {"input_ids": torch.randint(0, 100, (1, _IDS), generator=g).to(device)}


# -- open_clip ---------------------------------------------------------------------------------
def _clip(name: str) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import open_clip

        # create_model moves the model to `device` (default "cpu"): keep the meta build on meta.
        return open_clip.create_model(name, pretrained=None, device=torch.get_default_device())

    return make


def _clip_inputs(model: nn.Module, device: torch.device) -> Inputs:
    g = torch.Generator().manual_seed(0)
    visual = getattr(model, "visual", None)
    size = getattr(visual, "image_size", 224)
    h, w = size if isinstance(size, (tuple, list)) else (size, size)
    context = int(getattr(model, "context_length", 77) or 77)
    vocab = int(getattr(model, "vocab_size", 49408) or 49408)
    text = torch.randint(0, min(vocab, 1000), (1, context), generator=g)
    return (torch.randn(1, 3, h, w, generator=g).to(device), text.to(device)), {}


def clip_entries(every: bool) -> Iterator[Entry]:
    import open_clip

    names = sorted(open_clip.list_models())
    if not every:
        # One per tower kind: a ResNet, a ViT, a ConvNeXt, a text-only-variant CoCa.
        wanted = ("RN50", "ViT-B-32", "convnext_base", "coca_ViT-B-32")
        names = [n for n in wanted if n in names]
    for name in names:
        yield Entry("open_clip", name.split("-")[0], name, _clip(name), _clip_inputs)


# -- torchao -----------------------------------------------------------------------------------
def _quantized(host: Callable[[], nn.Module], config: str) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import torchao.quantization as q

        model = host()
        if next(model.parameters()).device.type == "meta":
            return model  # quantizing needs values; the meta build only counts parameters
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q.quantize_(model, getattr(q, config)())
        return model

    return make


def torchao_entries(every: bool) -> Iterator[Entry]:
    def cnn() -> nn.Module:
        return _timm("resnet18", num_classes=10)

    for config in ("Int8WeightOnlyConfig", "Int8DynamicActivationInt8WeightConfig"):
        yield Entry(
            "torchao", config, f"resnet18+{config}", _quantized(cnn, config), image(size=64)
        )
        yield Entry("torchao", config, f"llama+{config}", _quantized(_llama, config), _ids)


# -- PEFT --------------------------------------------------------------------------------------
def _lora(host: Callable[[], nn.Module], targets: list[str]) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import peft

        cfg = peft.LoraConfig(r=4, lora_alpha=8, target_modules=targets)
        return peft.get_peft_model(host(), cfg)

    return make


def peft_entries(every: bool) -> Iterator[Entry]:
    yield Entry("peft", "lora", "llama+lora", _lora(_llama, ["q_proj", "v_proj"]), _ids)
    vit = _lora(lambda: _timm("vit_tiny_patch16_224", img_size=64, num_classes=10), ["qkv"])
    yield Entry("peft", "lora", "vit_tiny+lora", vit, image(size=64))


# -- parametrizations ----------------------------------------------------------------------
def _parametrized(kind: str) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        from torch.nn.utils import parametrizations as P

        model = _timm("resnet18", num_classes=10)
        for m in list(model.modules()):
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                getattr(P, kind)(m)
        return model

    return make


def param_entries(every: bool) -> Iterator[Entry]:
    for kind in ("weight_norm", "spectral_norm"):
        yield Entry(
            "parametrizations", kind, f"resnet18+{kind}", _parametrized(kind), image(size=64)
        )


# -- torch.compile and TorchScript ---------------------------------------------------------
def _compiled(backend: str | None) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        model = _timm("resnet18", num_classes=10)
        kw = {"backend": backend} if backend else {}
        return torch.compile(model, **kw)  # type: ignore[return-value]

    return make


def _scripted() -> nn.Module:
    model = _timm("resnet18", num_classes=10)
    if next(model.parameters()).device.type != "meta":
        model.fc = torch.jit.script(model.fc)
        model.layer1[0].conv1 = torch.jit.script(model.layer1[0].conv1)
    return model


def compiled_entries(every: bool) -> Iterator[Entry]:
    yield Entry("compile", "inductor", "resnet18+compile", _compiled(None), image(size=64))
    # The eager backend compiles in no time: the wrapper is what a probe meets either way.
    yield Entry("compile", "eager", "resnet18+compile[eager]", _compiled("eager"), image(size=64))


def jit_entries(every: bool) -> Iterator[Entry]:
    yield Entry("jit", "script", "resnet18+scripted-fc", _scripted, image(size=64))
