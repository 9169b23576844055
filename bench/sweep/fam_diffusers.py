"""diffusers: the model classes people load, from small configs (the sizes diffusers' own tests
use): UNet2DModel, UNet2DConditionModel, AutoencoderKL, AutoencoderTiny, VQModel, the DiT, SD3 and
Flux transformers, ControlNet. Outputs are diffusers' own ``BaseOutput`` types, as users get them
(``return_dict`` left at its default)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from .entry import Entry, Inputs

_UNET = dict(block_out_channels=(32, 64), layers_per_block=1, norm_num_groups=8)
_CROSS = dict(
    _UNET,
    cross_attention_dim=32,
    attention_head_dim=8,
    down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
)
_VAE = dict(
    block_out_channels=(32, 64),
    in_channels=3,
    out_channels=3,
    norm_num_groups=8,
    down_block_types=("DownEncoderBlock2D",) * 2,
    up_block_types=("UpDecoderBlock2D",) * 2,
)


def _cls(name: str, **config: Any) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import diffusers

        return getattr(diffusers, name)(**config)

    return make


def _inputs(**spec: Any) -> Callable[[nn.Module, torch.device], Inputs]:
    """Keyword inputs: a tuple is a random tensor of that shape, a tensor is taken as it is."""

    def inputs(model: nn.Module, device: torch.device) -> Inputs:
        g = torch.Generator().manual_seed(0)
        kwargs = {
            k: (torch.randn(*v, generator=g) if isinstance(v, tuple) else v.clone()).to(device)
            for k, v in spec.items()
        }
        return (), kwargs

    return inputs


_T = torch.tensor([10])

CLASSES: dict[str, tuple[Callable[[], nn.Module], Callable[..., Inputs]]] = {
    "UNet2DModel": (
        _cls(
            "UNet2DModel",
            **_UNET,
            sample_size=32,
            in_channels=3,
            out_channels=3,
            down_block_types=("DownBlock2D", "AttnDownBlock2D"),
            up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        ),
        _inputs(sample=(1, 3, 32, 32), timestep=_T),
    ),
    "UNet2DConditionModel": (
        _cls(
            "UNet2DConditionModel",
            **_CROSS,
            sample_size=32,
            in_channels=4,
            out_channels=4,
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        ),
        _inputs(sample=(1, 4, 32, 32), timestep=_T, encoder_hidden_states=(1, 8, 32)),
    ),
    "AutoencoderKL": (
        _cls("AutoencoderKL", **_VAE, latent_channels=4),
        _inputs(sample=(1, 3, 32, 32)),
    ),
    "AutoencoderTiny": (
        _cls(
            "AutoencoderTiny",
            encoder_block_out_channels=(16, 16),
            decoder_block_out_channels=(16, 16),
            num_encoder_blocks=(1, 1),
            num_decoder_blocks=(1, 1),
        ),
        _inputs(sample=(1, 3, 32, 32)),
    ),
    "VQModel": (_cls("VQModel", **_VAE, latent_channels=3), _inputs(sample=(1, 3, 32, 32))),
    "DiTTransformer2DModel": (
        _cls(
            "DiTTransformer2DModel",
            num_attention_heads=2,
            attention_head_dim=8,
            in_channels=4,
            out_channels=8,
            num_layers=2,
            sample_size=8,
            patch_size=2,
            num_embeds_ada_norm=1000,
        ),
        _inputs(hidden_states=(1, 4, 8, 8), timestep=_T, class_labels=torch.tensor([1])),
    ),
    "SD3Transformer2DModel": (
        _cls(
            "SD3Transformer2DModel",
            sample_size=16,
            patch_size=2,
            in_channels=4,
            num_layers=2,
            attention_head_dim=8,
            num_attention_heads=4,
            caption_projection_dim=32,
            joint_attention_dim=32,
            pooled_projection_dim=64,
            out_channels=4,
        ),
        _inputs(
            hidden_states=(1, 4, 16, 16),
            encoder_hidden_states=(1, 8, 32),
            pooled_projections=(1, 64),
            timestep=_T,
        ),
    ),
    "FluxTransformer2DModel": (
        _cls(
            "FluxTransformer2DModel",
            patch_size=1,
            in_channels=4,
            num_layers=1,
            num_single_layers=1,
            attention_head_dim=16,
            num_attention_heads=2,
            joint_attention_dim=32,
            pooled_projection_dim=32,
            axes_dims_rope=[4, 4, 8],
        ),
        _inputs(
            hidden_states=(1, 16, 4),
            encoder_hidden_states=(1, 8, 32),
            pooled_projections=(1, 32),
            timestep=torch.tensor([1.0]),
            img_ids=torch.zeros(16, 3),
            txt_ids=torch.zeros(8, 3),
        ),
    ),
    "ControlNetModel": (
        _cls(
            "ControlNetModel",
            **_CROSS,
            in_channels=4,
            conditioning_embedding_out_channels=(16, 32),
        ),
        _inputs(
            sample=(1, 4, 32, 32),
            timestep=_T,
            encoder_hidden_states=(1, 8, 32),
            controlnet_cond=(1, 3, 64, 64),
        ),
    ),
}


def entries(every: bool = True) -> Iterator[Entry]:
    for name, (make, inputs) in CLASSES.items():
        group = "autoencoder" if "Autoencoder" in name or name == "VQModel" else "denoiser"
        yield Entry("diffusers", group, name, make, inputs)
