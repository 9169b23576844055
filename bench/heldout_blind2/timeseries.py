# ruff: noqa: UP006, UP035  (the authors' habits are kept: this set measures code as people write it)
"""Time series: N-BEATS (interpretable stacks) and PatchTST."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Tuple

import numpy as np
import torch
from torch import nn

from .spec import heldout, rand

# --- N-BEATS (Oreshkin et al. 2019), generic + interpretable stacks ---------------------------


class GenericBasis(nn.Module):
    def __init__(self, backcast_size: int, forecast_size: int):
        super().__init__()
        self.backcast_size, self.forecast_size = backcast_size, forecast_size

    def forward(self, theta: torch.Tensor):
        return theta[:, : self.backcast_size], theta[:, -self.forecast_size :]


class TrendBasis(nn.Module):
    def __init__(self, degree_of_polynomial: int, backcast_size: int, forecast_size: int):
        super().__init__()
        self.polynomial_size = degree_of_polynomial + 1
        back = np.concatenate(
            [
                np.power(np.arange(backcast_size) / backcast_size, i)[None, :]
                for i in range(self.polynomial_size)
            ]
        )
        fore = np.concatenate(
            [
                np.power(np.arange(forecast_size) / forecast_size, i)[None, :]
                for i in range(self.polynomial_size)
            ]
        )
        self.backcast_time = nn.Parameter(
            torch.tensor(back, dtype=torch.float32), requires_grad=False
        )
        self.forecast_time = nn.Parameter(
            torch.tensor(fore, dtype=torch.float32), requires_grad=False
        )

    def forward(self, theta: torch.Tensor):
        backcast = torch.einsum("bp,pt->bt", theta[:, self.polynomial_size :], self.backcast_time)
        forecast = torch.einsum("bp,pt->bt", theta[:, : self.polynomial_size], self.forecast_time)
        return backcast, forecast


class SeasonalityBasis(nn.Module):
    def __init__(self, harmonics: int, backcast_size: int, forecast_size: int):
        super().__init__()
        frequency = np.append(
            np.zeros(1, dtype=np.float32),
            np.arange(harmonics, harmonics / 2 * forecast_size, dtype=np.float32) / harmonics,
        )[None, :]
        backcast_grid = (
            -2
            * np.pi
            * (np.arange(backcast_size, dtype=np.float32)[:, None] / forecast_size)
            * frequency
        )
        forecast_grid = (
            2
            * np.pi
            * (np.arange(forecast_size, dtype=np.float32)[:, None] / forecast_size)
            * frequency
        )
        self.register_buffer(
            "backcast_cos", torch.tensor(np.transpose(np.cos(backcast_grid)), dtype=torch.float32)
        )
        self.register_buffer(
            "backcast_sin", torch.tensor(np.transpose(np.sin(backcast_grid)), dtype=torch.float32)
        )
        self.register_buffer(
            "forecast_cos", torch.tensor(np.transpose(np.cos(forecast_grid)), dtype=torch.float32)
        )
        self.register_buffer(
            "forecast_sin", torch.tensor(np.transpose(np.sin(forecast_grid)), dtype=torch.float32)
        )
        self.n = self.forecast_cos.shape[0]

    def forward(self, theta: torch.Tensor):
        n = self.n
        backcast = torch.einsum(
            "bp,pt->bt", theta[:, 2 * n : 3 * n], self.backcast_cos
        ) + torch.einsum("bp,pt->bt", theta[:, 3 * n :], self.backcast_sin)
        forecast = torch.einsum("bp,pt->bt", theta[:, :n], self.forecast_cos) + torch.einsum(
            "bp,pt->bt", theta[:, n : 2 * n], self.forecast_sin
        )
        return backcast, forecast


class NBeatsBlock(nn.Module):
    def __init__(
        self, input_size, theta_size: int, basis_function: nn.Module, layers: int, layer_size: int
    ):
        super().__init__()
        self.layers = nn.ModuleList(
            [nn.Linear(in_features=input_size, out_features=layer_size)]
            + [
                nn.Linear(in_features=layer_size, out_features=layer_size)
                for _ in range(layers - 1)
            ]
        )
        self.basis_parameters = nn.Linear(in_features=layer_size, out_features=theta_size)
        self.basis_function = basis_function

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        block_input = x
        for layer in self.layers:
            block_input = torch.relu(layer(block_input))
        basis_parameters = self.basis_parameters(block_input)
        return self.basis_function(basis_parameters)


class NBeats(nn.Module):
    def __init__(self, blocks: nn.ModuleList):
        super().__init__()
        self.blocks = blocks

    def forward(self, x: torch.Tensor, input_mask: torch.Tensor) -> torch.Tensor:
        residuals = x.flip(dims=(1,))
        input_mask = input_mask.flip(dims=(1,))
        forecast = x[:, -1:]
        for block in self.blocks:
            backcast, block_forecast = block(residuals)
            residuals = (residuals - backcast) * input_mask
            forecast = forecast + block_forecast
        return forecast


def interpretable(
    input_size,
    output_size,
    trend_blocks=3,
    trend_layers=4,
    trend_layer_size=256,
    degree_of_polynomial=3,
    seasonality_blocks=3,
    seasonality_layers=4,
    seasonality_layer_size=2048,
    num_of_harmonics=1,
):
    trend_block = NBeatsBlock(
        input_size=input_size,
        theta_size=2 * (degree_of_polynomial + 1),
        basis_function=TrendBasis(degree_of_polynomial, input_size, output_size),
        layers=trend_layers,
        layer_size=trend_layer_size,
    )
    seasonality_block = NBeatsBlock(
        input_size=input_size,
        theta_size=4 * int(np.ceil(num_of_harmonics / 2 * output_size) - (num_of_harmonics - 1)),
        basis_function=SeasonalityBasis(num_of_harmonics, input_size, output_size),
        layers=seasonality_layers,
        layer_size=seasonality_layer_size,
    )
    # blocks inside a stack share weights, as in the paper's interpretable configuration
    return NBeats(
        nn.ModuleList(
            [trend_block for _ in range(trend_blocks)]
            + [seasonality_block for _ in range(seasonality_blocks)]
        )
    )


@heldout("nbeats_interpretable", example=lambda: ((rand(3, 24), torch.ones(3, 24)), {}))
def nbeats_interpretable() -> nn.Module:
    torch.manual_seed(10)
    return interpretable(
        24,
        6,
        trend_blocks=2,
        trend_layer_size=64,
        seasonality_blocks=2,
        seasonality_layer_size=128,
        trend_layers=2,
        seasonality_layers=2,
    )


# --- PatchTST (Nie et al. 2023), channel-independent -------------------------------------------


class RevIN(nn.Module):
    def __init__(self, num_features: int, eps=1e-5, affine=True, subtract_last=False):
        super().__init__()
        self.num_features, self.eps, self.affine, self.subtract_last = (
            num_features,
            eps,
            affine,
            subtract_last,
        )
        if self.affine:
            self.affine_weight = nn.Parameter(torch.ones(self.num_features))
            self.affine_bias = nn.Parameter(torch.zeros(self.num_features))

    def forward(self, x, mode: str):
        if mode == "norm":
            dim2reduce = tuple(range(1, x.ndim - 1))
            self.mean = torch.mean(x, dim=dim2reduce, keepdim=True).detach()
            self.stdev = torch.sqrt(
                torch.var(x, dim=dim2reduce, keepdim=True, unbiased=False) + self.eps
            ).detach()
            x = (x - self.mean) / self.stdev
            if self.affine:
                x = x * self.affine_weight + self.affine_bias
        elif mode == "denorm":
            if self.affine:
                x = (x - self.affine_bias) / (self.affine_weight + self.eps * self.eps)
            x = x * self.stdev + self.mean
        else:
            raise NotImplementedError
        return x


class TSTEncoderLayer(nn.TransformerEncoderLayer):
    """The torch encoder layer with BatchNorm over the feature axis instead of LayerNorm."""

    def __init__(
        self, d_model, nhead, dim_feedforward=256, dropout=0.1, activation="gelu", **kwargs
    ):
        super().__init__(
            d_model,
            nhead,
            dim_feedforward,
            dropout,
            activation=activation,
            batch_first=True,
            **kwargs,
        )
        self.norm1 = Transpose_BN(d_model)
        self.norm2 = Transpose_BN(d_model)


class Transpose_BN(nn.BatchNorm1d):
    def forward(self, x):
        return super().forward(x.transpose(1, 2)).transpose(1, 2)


class FlattenHead(nn.Module):
    def __init__(self, n_vars, nf, target_window, head_dropout=0):
        super().__init__()
        self.n_vars = n_vars
        self.flatten = nn.Flatten(start_dim=-2)
        self.linear = nn.Linear(nf, target_window)
        self.dropout = nn.Dropout(head_dropout)

    def forward(self, x):  # x: [bs x nvars x d_model x patch_num]
        return self.dropout(self.linear(self.flatten(x)))


class PatchTST(nn.Module):
    def __init__(self, configs, patch_len=16, stride=8):
        super().__init__()
        self.seq_len = configs.seq_len
        self.pred_len = configs.pred_len
        self.patch_len, self.stride = patch_len, stride
        self.revin = RevIN(configs.enc_in) if configs.revin else None
        self.padding_patch_layer = nn.ReplicationPad1d((0, stride))
        patch_num = int((configs.seq_len - patch_len) / stride + 2)
        self.value_embedding = nn.Linear(patch_len, configs.d_model, bias=False)
        self.position_embedding = nn.Parameter(
            torch.empty(patch_num, configs.d_model).uniform_(-0.02, 0.02)
        )
        self.dropout = nn.Dropout(configs.dropout)
        self.backbone = nn.TransformerEncoder(
            TSTEncoderLayer(configs.d_model, configs.n_heads, configs.d_ff, configs.dropout),
            num_layers=configs.e_layers,
            enable_nested_tensor=False,
        )
        self.head = FlattenHead(
            configs.enc_in,
            configs.d_model * patch_num,
            configs.pred_len,
            head_dropout=configs.dropout,
        )

    def forward(self, x_enc):  # [bs, seq_len, nvars]
        if self.revin is not None:
            x_enc = self.revin(x_enc, "norm")
        x = x_enc.permute(0, 2, 1)
        n_vars = x.shape[1]
        x = self.padding_patch_layer(x)
        x = x.unfold(dimension=-1, size=self.patch_len, step=self.stride)
        x = torch.reshape(x, (x.shape[0] * x.shape[1], x.shape[2], x.shape[3]))
        x = self.dropout(self.value_embedding(x) + self.position_embedding)
        x = self.backbone(x)
        x = torch.reshape(x, (-1, n_vars, x.shape[-2], x.shape[-1])).permute(0, 1, 3, 2)
        out = self.head(x).permute(0, 2, 1)
        if self.revin is not None:
            out = self.revin(out, "denorm")
        return out


@heldout(
    "patchtst",
    example=lambda: ((rand(2, 64, 3),), {}),
    edit=("backbone.layers.1", {"nhead": 8}),
)
def patchtst() -> nn.Module:
    torch.manual_seed(11)
    configs = SimpleNamespace(
        seq_len=64,
        pred_len=12,
        enc_in=3,
        d_model=32,
        n_heads=4,
        d_ff=64,
        dropout=0.1,
        e_layers=2,
        revin=True,
    )
    return PatchTST(configs, patch_len=8, stride=4)
