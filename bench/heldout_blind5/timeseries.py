"""Time-series forecasting: N-BEATS (generic and interpretable), DeepAR, a TCN forecaster."""

from __future__ import annotations

import math
from collections import namedtuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from .spec import heldout, rand

# --------------------------------------------------------------------------- N-BEATS


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
        back = torch.arange(backcast_size, dtype=torch.float32) / backcast_size
        fore = torch.arange(forecast_size, dtype=torch.float32) / forecast_size
        powers = torch.arange(self.polynomial_size, dtype=torch.float32)[:, None]
        self.backcast_time = nn.Parameter(back[None, :] ** powers, requires_grad=False)
        self.forecast_time = nn.Parameter(fore[None, :] ** powers, requires_grad=False)

    def forward(self, theta):
        p = self.polynomial_size
        backcast = torch.einsum("bp,pt->bt", theta[:, p:], self.backcast_time)
        forecast = torch.einsum("bp,pt->bt", theta[:, :p], self.forecast_time)
        return backcast, forecast


class SeasonalityBasis(nn.Module):
    def __init__(self, harmonics: int, backcast_size: int, forecast_size: int):
        super().__init__()
        freq = torch.cat(
            [torch.zeros(1), torch.arange(harmonics, harmonics / 2 * forecast_size) / harmonics]
        )[None, :]
        bt = -2 * math.pi * (torch.arange(backcast_size)[:, None] / forecast_size) * freq
        ft = 2 * math.pi * (torch.arange(forecast_size)[:, None] / forecast_size) * freq
        self.register_buffer("backcast_cos", torch.cos(bt).T.contiguous())
        self.register_buffer("backcast_sin", torch.sin(bt).T.contiguous())
        self.register_buffer("forecast_cos", torch.cos(ft).T.contiguous())
        self.register_buffer("forecast_sin", torch.sin(ft).T.contiguous())

    def forward(self, theta):
        h = self.forecast_cos.shape[0]
        fc = theta[:, :h] @ self.forecast_cos + theta[:, h : 2 * h] @ self.forecast_sin
        bc = theta[:, 2 * h : 3 * h] @ self.backcast_cos + theta[:, 3 * h :] @ self.backcast_sin
        return bc, fc


class NBeatsBlock(nn.Module):
    def __init__(self, input_size, theta_size, basis_function: nn.Module, layers, layer_size):
        super().__init__()
        self.layers = nn.ModuleList(
            [nn.Linear(input_size, layer_size)]
            + [nn.Linear(layer_size, layer_size) for _ in range(layers - 1)]
        )
        self.basis_parameters = nn.Linear(layer_size, theta_size)
        self.basis_function = basis_function

    def forward(self, x):
        block_input = x
        for layer in self.layers:
            block_input = torch.relu(layer(block_input))
        return self.basis_function(self.basis_parameters(block_input))


class NBeats(nn.Module):
    def __init__(self, blocks: nn.ModuleList):
        super().__init__()
        self.blocks = blocks

    def forward(self, x, input_mask):
        residuals = x.flip(dims=(1,))
        input_mask = input_mask.flip(dims=(1,))
        forecast = x[:, -1:]
        for block in self.blocks:
            backcast, block_forecast = block(residuals)
            residuals = (residuals - backcast) * input_mask
            forecast = forecast + block_forecast
        return forecast

    @classmethod
    def interpretable(cls, input_size, output_size, trend_blocks=2, seasonality_blocks=2):
        trend = NBeatsBlock(
            input_size, 2 * 4, TrendBasis(3, input_size, output_size), layers=3, layer_size=64
        )
        seas_theta = 4 * int(math.ceil(2 / 2 * output_size) - (2 - 1))
        seasonality = NBeatsBlock(
            input_size, seas_theta, SeasonalityBasis(2, input_size, output_size), 3, 96
        )
        # interpretable N-BEATS shares weights inside each stack
        return cls(nn.ModuleList([trend] * trend_blocks + [seasonality] * seasonality_blocks))

    @classmethod
    def generic(cls, input_size, output_size, stacks=3, layers=2, layer_size=64):
        return cls(
            nn.ModuleList(
                NBeatsBlock(
                    input_size,
                    input_size + output_size,
                    GenericBasis(input_size, output_size),
                    layers,
                    layer_size,
                )
                for _ in range(stacks)
            )
        )


@heldout(
    "nbeats_generic",
    lambda: ((rand(4, 24), torch.ones(4, 24)), {}),
    edit=("blocks.1", {"layer_size": 40}),
)
def nbeats_generic():
    return NBeats.generic(24, 6)


@heldout("nbeats_interpretable", lambda: ((rand(4, 24, seed=1), torch.ones(4, 24)), {}))
def nbeats_interpretable():
    return NBeats.interpretable(24, 6)


# --------------------------------------------------------------------------- DeepAR

Distribution = namedtuple("Distribution", ["mu", "sigma"])


class GaussianLikelihood(nn.Module):
    def __init__(self, hidden_size, output_size=1):
        super().__init__()
        self.mu_layer = nn.Linear(hidden_size, output_size)
        self.sigma_layer = nn.Linear(hidden_size, output_size)

    def forward(self, h):
        return Distribution(self.mu_layer(h).squeeze(-1), F.softplus(self.sigma_layer(h)) + 1e-6)


class DeepAR(nn.Module):
    def __init__(self, num_series, cov_dim, embedding_dim=8, hidden=32, layers=2, dropout=0.1):
        super().__init__()
        self.embedding = nn.Embedding(num_series, embedding_dim)
        self.lstm = nn.LSTM(
            1 + cov_dim + embedding_dim, hidden, layers, batch_first=True, dropout=dropout
        )
        self.likelihood = GaussianLikelihood(hidden)

    def forward(self, target, covariates, series_id, *, horizon: int = 0):
        lagged = F.pad(target, (1, 0))[:, :-1].unsqueeze(-1)
        emb = self.embedding(series_id).unsqueeze(1).expand(-1, target.shape[1], -1)
        out, state = self.lstm(torch.cat([lagged, covariates[:, : target.shape[1]], emb], -1))
        dist = self.likelihood(out)
        mus = [dist.mu]
        last = target[:, -1:]
        for step in range(horizon):  # greedy decoding on the mean
            cov = covariates[:, target.shape[1] + step].unsqueeze(1)
            inp = torch.cat([last.unsqueeze(-1), cov, emb[:, :1]], -1)
            out, state = self.lstm(inp, state)
            last = self.likelihood(out).mu
            mus.append(last)
        return torch.cat(mus, dim=1), dist.sigma


@heldout(
    "deepar",
    lambda: (
        (rand(3, 20), rand(3, 24, 4, seed=2), torch.tensor([0, 2, 1])),
        {"horizon": 4},
    ),
)
def deepar():
    return DeepAR(num_series=5, cov_dim=4)


# --------------------------------------------------------------------------- TCN


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super().__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, : -self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2):
        super().__init__()
        self.conv1 = weight_norm(
            nn.Conv1d(n_inputs, n_outputs, kernel_size, stride=stride, padding=padding,
                      dilation=dilation)
        )  # fmt: skip
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)
        self.conv2 = weight_norm(
            nn.Conv1d(n_outputs, n_outputs, kernel_size, stride=stride, padding=padding,
                      dilation=dilation)
        )  # fmt: skip
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)
        self.net = nn.Sequential(
            self.conv1, self.chomp1, self.relu1, self.dropout1,
            self.conv2, self.chomp2, self.relu2, self.dropout2,
        )  # fmt: skip
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Module):
    def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2):
        super().__init__()
        layers = []
        for i in range(len(num_channels)):
            dilation_size = 2**i
            in_channels = num_inputs if i == 0 else num_channels[i - 1]
            layers += [
                TemporalBlock(in_channels, num_channels[i], kernel_size, stride=1,
                              dilation=dilation_size, padding=(kernel_size - 1) * dilation_size,
                              dropout=dropout)
            ]  # fmt: skip
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


class TCNForecaster(nn.Module):
    def __init__(self, input_size, output_size, num_channels, kernel_size, dropout):
        super().__init__()
        self.tcn = TemporalConvNet(input_size, num_channels, kernel_size, dropout=dropout)
        self.linear = nn.Linear(num_channels[-1], output_size)

    def forward(self, x):
        y = self.tcn(x.transpose(1, 2))
        return self.linear(y[:, :, -1])


@heldout(
    "tcn_forecaster",
    lambda: ((rand(2, 40, 5),), {}),
)
def tcn_forecaster():
    return TCNForecaster(5, 7, [16, 16, 24], kernel_size=3, dropout=0.1)
