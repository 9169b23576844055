"""The sweep's families, in the order they are printed: name -> entries(every) generator."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from . import fam_diffusers, fam_handwritten, fam_more, fam_timm, fam_torchvision, fam_transformers
from .entry import Entry

FAMILIES: dict[str, Callable[[bool], Iterator[Entry]]] = {
    "timm": fam_timm.entries,
    "torchvision": fam_torchvision.entries,
    "diffusers": fam_diffusers.entries,
    "transformers": fam_transformers.entries,
    "open_clip": fam_more.clip_entries,
    "torchao": fam_more.torchao_entries,
    "peft": fam_more.peft_entries,
    "parametrizations": fam_more.param_entries,
    "compile": fam_more.compiled_entries,
    "jit": fam_more.jit_entries,
    "handwritten": fam_handwritten.handwritten_entries,
    "heldout": fam_handwritten.heldout_entries,
    "blind": fam_handwritten.blind_entries,
    "blind2": fam_handwritten.blind2_entries,
    "blind3": fam_handwritten.blind3_entries,
    "blind4": fam_handwritten.blind4_entries,
    "blind5": fam_handwritten.blind5_entries,
    "blind6": fam_handwritten.blind6_entries,
    "blind7": fam_handwritten.blind7_entries,
    "blind8": fam_handwritten.blind8_entries,
}

# The fixed sample the test suite runs (tests/test_sweep_sample.py): at least one model per
# family, CPU-sized, chosen for what breaks first: output types, data-dependent ops, train mode,
# tensor subclasses, wrappers.
SAMPLE = (
    "timm/resnet18",
    "timm/vit_tiny_patch16_224",
    "torchvision/mobilenet_v3_small",
    "torchvision/maskrcnn_resnet50_fpn",
    "torchvision/maskrcnn_resnet50_fpn[train]",
    "diffusers/UNet2DConditionModel",
    "diffusers/AutoencoderKL",
    "transformers/LlamaForCausalLM",
    "transformers/T5ForConditionalGeneration",
    "open_clip/RN50",
    "torchao/resnet18+Int8WeightOnlyConfig",
    "peft/llama+lora",
    "parametrizations/resnet18+weight_norm",
    "compile/resnet18+compile[eager]",
    "jit/resnet18+scripted-fc",
)


def entries(families: list[str] | None = None, every: bool = False) -> Iterator[Entry]:
    for name, make in FAMILIES.items():
        if families and name not in families:
            continue
        try:
            yield from make(every)
        except ImportError as exc:  # a library that is not installed empties its family
            print(f"[sweep] {name}: not installed ({exc})")


def by_key(keys: tuple[str, ...]) -> list[Entry]:
    """Entries by family/name (any model of a family, not only the default pick)."""
    wanted = set(keys)
    found = {e.key: e for e in entries(sorted({k.split("/")[0] for k in keys}), every=True)
             if e.key in wanted}  # fmt: skip
    missing = wanted - set(found)
    if missing:
        raise KeyError(f"no sweep entries named {sorted(missing)}")
    return [found[k] for k in keys]
