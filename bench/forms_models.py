"""The forms sweep's models: one or more per family of timm, torchvision, diffusers, transformers
and open_clip, built from configs with random weights (nothing downloaded), plus the project's
zoos (tests/zoo, tests/fixtures/real.py). Big ones are built on the meta device.

``MODELS`` lists ``Model(library, name, make)``; ``make()`` builds a fresh instance. The sweep
takes every distinct class that is not a torch.nn class once, from the first model that has it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

__all__ = ["LIBRARIES", "MODELS", "Model"]

LIBRARIES = ("timm", "torchvision", "diffusers", "transformers", "open_clip", "zoo")


@dataclass(frozen=True)
class Model:
    library: str
    name: str
    make: Callable[[], nn.Module]


def _meta(fn: Callable[[], nn.Module]) -> nn.Module:
    with torch.device("meta"):
        return fn()


# -- timm: one small model per family (create_model(pretrained=False): random init) ----------------

TIMM = (
    "resnet18 resnet50d resnext26ts seresnext26d_32x4d resnest14d skresnet18 res2net50_14w_8s "
    "convnext_atto convnextv2_atto vit_tiny_patch16_224 deit_tiny_distilled_patch16_224 "
    "efficientnet_b0 efficientnetv2_rw_t mobilenetv3_small_050 mobilenetv4_conv_small "
    "mnasnet_small lcnet_050 tinynet_e regnetx_002 regnety_002 regnetz_b16 mixer_s16_224 "
    "resmlp_12_224 gmlp_ti16_224 ghostnet_100 ghostnetv2_100 repghostnet_050 poolformer_s12 "
    "poolformerv2_s12 caformer_s18 edgenext_xx_small mobilevit_xxs mobilevitv2_050 repvgg_a0 "
    "densenet121 levit_128s maxvit_rmlp_pico_rw_256 coatnet_nano_rw_224 cspresnet50 "
    "cspdarknet53 darknet17 dla34 dpn48b hrnet_w18_small inception_v3 inception_v4 "
    "nf_resnet26 nfnet_l0 rexnet_100 selecsls42b swin_tiny_patch4_window7_224 "
    "swinv2_cr_tiny_ns_224 crossvit_tiny_240 efficientformer_l1 efficientformerv2_s0 fastvit_t8 "
    "convmixer_768_32 xcit_nano_12_p16_224 pvt_v2_b0 mobileone_s0 ese_vovnet19b_dw "
    "hgnetv2_b0 hgnet_tiny eva02_tiny_patch14_224 beit_base_patch16_224 gernet_s "
    "resnetv2_50x1_bit vgg11 xception41 gcvit_xxtiny davit_tiny efficientvit_b0 "
    "efficientvit_m0 mambaout_femto tiny_vit_5m_224 twins_svt_small cait_xxs24_224 volo_d1_224 "
    "sequencer2d_s visformer_tiny tresnet_m fbnetc_100 hardcorenas_a rdnet_tiny starnet_s1 "
    "inception_next_tiny focalnet_tiny_srf hiera_tiny_224 nest_tiny_jx pit_ti_224 "
    "coat_lite_tiny convit_tiny tnt_s_patch16_224 botnet26t_256 halonet26t lambda_resnet26t "
    "vovnet39a dm_nfnet_f0 fasternet_t0 shvit_s1 csatv2 "
).split()


def _timm(name: str) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import timm

        return timm.create_model(name, pretrained=False)

    return make


# -- torchvision (weights=None) ---------------------------------------------------------------------

TORCHVISION = (
    "resnet18 resnext50_32x4d wide_resnet50_2 mobilenet_v2 mobilenet_v3_small efficientnet_b0 "
    "efficientnet_v2_s convnext_tiny vit_b_16 swin_t swin_v2_t maxvit_t regnet_y_400mf "
    "densenet121 shufflenet_v2_x0_5 squeezenet1_0 mnasnet0_5 googlenet inception_v3 alexnet vgg11_bn"
).split()
TORCHVISION_TASKS = {
    "segmentation": ("deeplabv3_mobilenet_v3_large", "fcn_resnet50", "lraspp_mobilenet_v3_large"),
    "detection": (
        "fasterrcnn_mobilenet_v3_large_fpn",
        "retinanet_resnet50_fpn",
        "ssdlite320_mobilenet_v3_large",
        "fcos_resnet50_fpn",
        "maskrcnn_resnet50_fpn",
        "keypointrcnn_resnet50_fpn",
    ),
    "video": ("r3d_18", "r2plus1d_18", "s3d", "mvit_v2_s", "swin3d_t"),
    "optical_flow": ("raft_small",),
}


def _tv(name: str, task: str = "") -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import torchvision.models as tvm

        ns = getattr(tvm, task) if task else tvm
        kw: dict[str, Any] = {"weights": None}
        if task in ("segmentation", "detection"):
            kw["weights_backbone"] = None
        if name == "inception_v3" or name == "googlenet":
            kw["init_weights"] = False
        return getattr(ns, name)(**kw)

    return make


# -- diffusers (small configs) ----------------------------------------------------------------------

_BLOCKS_DOWN = ("DownEncoderBlock2D", "DownEncoderBlock2D")
_BLOCKS_UP = ("UpDecoderBlock2D", "UpDecoderBlock2D")


def _diffusers(cls: str, **config: Any) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import diffusers

        torch.manual_seed(0)
        return getattr(diffusers, cls)(**config)

    return make


DIFFUSERS: dict[str, Callable[[], nn.Module]] = {
    "AutoencoderKL": _diffusers(
        "AutoencoderKL",
        block_out_channels=(32, 64),
        down_block_types=_BLOCKS_DOWN,
        up_block_types=_BLOCKS_UP,
        latent_channels=4,
        norm_num_groups=8,
    ),
    "UNet2DModel": _diffusers(
        "UNet2DModel",
        sample_size=32,
        block_out_channels=(32, 64),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=8,
        layers_per_block=1,
    ),
    "UNet2DConditionModel": _diffusers(
        "UNet2DConditionModel",
        sample_size=16,
        block_out_channels=(32, 64),
        layers_per_block=1,
        cross_attention_dim=32,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        norm_num_groups=8,
        attention_head_dim=8,
    ),
    "VQModel": _diffusers(
        "VQModel",
        block_out_channels=(32, 64),
        down_block_types=_BLOCKS_DOWN,
        up_block_types=_BLOCKS_UP,
        latent_channels=3,
        norm_num_groups=8,
    ),
    "AutoencoderTiny": _diffusers(
        "AutoencoderTiny",
        encoder_block_out_channels=(16, 16),
        decoder_block_out_channels=(16, 16),
        num_encoder_blocks=(1, 1),
        num_decoder_blocks=(1, 1),
    ),
    "UNet1DModel": _diffusers(
        "UNet1DModel", block_out_channels=(32, 64, 64), sample_size=64, extra_in_channels=16
    ),
    "DiTTransformer2DModel": _diffusers(
        "DiTTransformer2DModel",
        num_attention_heads=2,
        attention_head_dim=16,
        in_channels=4,
        num_layers=2,
        sample_size=8,
        patch_size=2,
    ),
    "PixArtTransformer2DModel": _diffusers(
        "PixArtTransformer2DModel",
        num_attention_heads=2,
        attention_head_dim=16,
        in_channels=4,
        out_channels=8,
        num_layers=2,
        sample_size=8,
        cross_attention_dim=32,
        caption_channels=24,
    ),
    "SD3Transformer2DModel": _diffusers(
        "SD3Transformer2DModel",
        sample_size=16,
        patch_size=2,
        in_channels=4,
        num_layers=2,
        attention_head_dim=8,
        num_attention_heads=2,
        joint_attention_dim=32,
        caption_projection_dim=16,
        pooled_projection_dim=24,
        out_channels=4,
        pos_embed_max_size=32,
    ),
    "FluxTransformer2DModel": _diffusers(
        "FluxTransformer2DModel",
        patch_size=1,
        in_channels=16,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=32,
        pooled_projection_dim=32,
        axes_dims_rope=(4, 4, 8),
    ),
    "ControlNetModel": _diffusers(
        "ControlNetModel",
        block_out_channels=(32, 64),
        layers_per_block=1,
        cross_attention_dim=32,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        norm_num_groups=8,
        attention_head_dim=8,
        conditioning_embedding_out_channels=(16, 32),
    ),
    "PriorTransformer": _diffusers(
        "PriorTransformer",
        num_attention_heads=2,
        attention_head_dim=8,
        num_layers=2,
        embedding_dim=16,
        num_embeddings=4,
        additional_embeddings=2,
    ),
}

# -- transformers: default configs on meta (the architectures as published) ------------------------

TRANSFORMERS = (
    "llama mistral gemma gemma2 qwen2 qwen3 qwen3_moe phi phi3 falcon gpt_neox opt bloom gpt2 gptj "
    "codegen starcoder2 olmo olmo2 mixtral qwen2_moe deepseek_v3 bert roberta deberta-v2 distilbert "
    "albert electra xlm-roberta t5 bart mbart marian pegasus whisper clip siglip vit swin convnext "
    "resnet dinov2 segformer wav2vec2 encodec mamba mobilebert funnel longformer big_bird led "
    "blenderbot m2m_100 gpt_bigcode mpt persimmon stablelm cohere granite jamba dbrx "
    "xlnet ctrl fsmt prophetnet squeezebert layoutlm canine mpnet ernie megatron-bert "
    "deit beit data2vec-vision levit poolformer mobilevit efficientnet regnet bit dpt "
    "hubert wavlm unispeech sew speecht5 seamless_m4t musicgen vits univnet dac mimi "
    "pixtral mllama llava idefics3 blip blip-2 owlvit groupvit chinese_clip align altclip "
    "x_clip flava vilt layoutlmv3 lxmert visual_bert mgp-str trocr donut-swin pvt pvt_v2 yolos "
    "upernet mask2former maskformer oneformer detr conditional_detr deformable_detr "
    "table-transformer rt_detr dinat focalnet swinv2 swin2sr glpn depth_anything zoedepth "
    "hiera vitdet vitmatte vit_msn vit_mae ijepa timesformer videomae vivit "
    "patchtst informer autoformer time_series_transformer "
).split()
_TASK = {"gpt2": "AutoModelForCausalLM", "llama": "AutoModelForCausalLM"}


def _hf(model_type: str) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import transformers

        cfg = transformers.AutoConfig.for_model(model_type)
        for key in ("use_pretrained_backbone", "use_timm_backbone"):
            if hasattr(cfg, key):
                setattr(cfg, key, False)
        auto = getattr(transformers, _TASK.get(model_type, "AutoModel"))
        return _meta(lambda: auto.from_config(cfg))

    return make


# -- open_clip (pretrained=None: random init; on meta, they are big; the text towers that load a
# Hugging Face tokenizer or model, roberta and nllb, would download) --------------------------------

OPEN_CLIP = (
    "RN50 ViT-B-32 convnext_tiny coca_ViT-B-32 EVA02-B-16 ViT-B-16-SigLIP MobileCLIP-S1 "
    "PE-Core-T-16-384 ViT-B-32-256 ViTamin-S"
).split()


def _open_clip(name: str) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import open_clip

        return _meta(lambda: open_clip.create_model(name, pretrained=None, device="meta"))

    return make


# -- the project's own zoo ---------------------------------------------------------------------------


def _tests_on_path() -> None:
    tests = str(Path(__file__).resolve().parent.parent / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)


def _zoo_case(name: str) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        _tests_on_path()
        return importlib.import_module("zoo.models").CASES[name].build()

    return make


def _real(name: str) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        _tests_on_path()
        return importlib.import_module("fixtures.real").build(name)[0]

    return make


def _zoo() -> list[Model]:
    _tests_on_path()
    cases = importlib.import_module("zoo.models").CASES
    real = importlib.import_module("fixtures.real").ENTRIES
    return [Model("zoo", n, _zoo_case(n)) for n in cases] + [
        Model("zoo", n, _real(n)) for n in real
    ]


def _all() -> list[Model]:
    out = [Model("timm", n, _timm(n)) for n in TIMM if not n.endswith("?")]
    out += [Model("torchvision", n, _tv(n)) for n in TORCHVISION]
    out += [Model("torchvision", n, _tv(n, t)) for t, ns in TORCHVISION_TASKS.items() for n in ns]
    out += [Model("diffusers", n, make) for n, make in DIFFUSERS.items()]
    out += [Model("transformers", n, _hf(n)) for n in TRANSFORMERS]
    out += [Model("open_clip", n, _open_clip(n)) for n in OPEN_CLIP]
    return out + _zoo()


MODELS: list[Model] = _all()
