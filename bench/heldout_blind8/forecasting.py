"""Forecasting: a DeepAR-style likelihood head, the Temporal Fusion Transformer's variable
selection, PatchTST, DLinear and TimesNet's 2-D variation blocks, plus a FourCastNet AFNO block."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

import torch
import torch.fft
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------- DeepAR


class GaussianHead(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.mu = nn.Linear(hidden, 1)
        self.presigma = nn.Linear(hidden, 1)
        self.softplus = nn.Softplus()

    def forward(self, h):
        return self.mu(h).squeeze(-1), self.softplus(self.presigma(h)).squeeze(-1)


class StudentTHead(GaussianHead):
    def __init__(self, hidden):
        super().__init__(hidden)
        self.df = nn.Linear(hidden, 1)

    def forward(self, h):
        mu, sigma = super().forward(h)
        return mu, sigma, 2.0 + F.softplus(self.df(h)).squeeze(-1)


LIKELIHOODS = {"gaussian": GaussianHead, "student_t": StudentTHead}


class DeepAR(nn.Module):
    def __init__(self, params):
        super().__init__()
        self.params = params
        self.embedding = nn.Embedding(params.num_class, params.embedding_dim)
        self.lstm = nn.LSTM(
            input_size=1 + params.cov_dim + params.embedding_dim,
            hidden_size=params.lstm_hidden_dim,
            num_layers=params.lstm_layers,
            bias=True,
            batch_first=False,
            dropout=params.lstm_dropout,
        )
        for names in self.lstm._all_weights:
            for name in filter(lambda n: "bias" in n, names):
                bias = getattr(self.lstm, name)
                n = bias.size(0)
                start, end = n // 4, n // 2
                bias.data[start:end].fill_(1.0)
        self.relu = nn.ReLU()
        self.head = LIKELIHOODS[params.likelihood](params.lstm_hidden_dim * params.lstm_layers)

    def forward(self, x, idx, hidden, cell):
        onehot_embed = self.embedding(idx)
        lstm_input = torch.cat((x, onehot_embed), dim=2)
        output, (hidden, cell) = self.lstm(lstm_input, (hidden, cell))
        hidden_permute = hidden.permute(1, 2, 0).contiguous().view(hidden.shape[1], -1)
        return (*self.head(hidden_permute), hidden, cell)


@dataclass
class DeepARParams:
    num_class: int = 5
    embedding_dim: int = 8
    cov_dim: int = 4
    lstm_hidden_dim: int = 16
    lstm_layers: int = 2
    lstm_dropout: float = 0.1
    likelihood: str = "student_t"


@heldout(
    "deepar_student_t",
    lambda: (
        (rand(1, 3, 5), torch.tensor([[0, 3, 1]]), torch.zeros(2, 3, 16), torch.zeros(2, 3, 16)),
        {},
    ),
)
def build_deepar():
    return DeepAR(DeepARParams())


# ----------------------------------------------------------------------------- TFT


class GatedLinearUnit(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_rate=None):
        super().__init__()
        self.dropout = nn.Dropout(dropout_rate) if dropout_rate is not None else None
        self.W4 = nn.Linear(input_size, hidden_size)
        self.W5 = nn.Linear(input_size, hidden_size)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        if self.dropout is not None:
            x = self.dropout(x)
        return self.sigmoid(self.W4(x)) * self.W5(x)


class GatedResidualNetwork(nn.Module):
    def __init__(
        self,
        input_size,
        hidden_size,
        output_size,
        dropout_rate,
        context_size=None,
        is_temporal=True,
    ):
        super().__init__()
        self.input_size = input_size
        self.output_size = output_size
        self.context_size = context_size
        self.is_temporal = is_temporal
        if self.input_size != self.output_size:
            self.skip_layer = nn.Linear(self.input_size, self.output_size)
        self.dense1 = nn.Linear(self.input_size, hidden_size)
        self.elu = nn.ELU()
        if self.context_size is not None:
            self.c = nn.Linear(self.context_size, hidden_size, bias=False)
        self.dense2 = nn.Linear(hidden_size, self.output_size)
        self.gate = GatedLinearUnit(self.output_size, self.output_size, dropout_rate)
        self.layer_norm = nn.LayerNorm(self.output_size)

    def forward(self, x, c=None):
        a = self.skip_layer(x) if self.input_size != self.output_size else x
        x = self.dense1(x)
        if c is not None:
            c = self.c(c.unsqueeze(1)) if self.is_temporal else self.c(c)
            x = x + c
        eta_1 = self.dense2(self.elu(x))
        return self.layer_norm(self.gate(eta_1) + a)


class VariableSelectionNetwork(nn.Module):
    def __init__(
        self,
        input_size,
        output_size,
        hidden_size,
        dropout_rate,
        context_size=None,
        is_temporal=True,
    ):
        super().__init__()
        self.hidden_size = hidden_size
        self.input_size = input_size
        self.output_size = output_size
        self.flattened_inputs = GatedResidualNetwork(
            self.output_size * self.input_size,
            hidden_size,
            self.output_size,
            dropout_rate,
            context_size,
            is_temporal,
        )
        self.transformed_inputs = nn.ModuleList(
            [
                GatedResidualNetwork(
                    self.input_size, hidden_size, hidden_size, dropout_rate, is_temporal=is_temporal
                )
                for _ in range(self.output_size)
            ]
        )
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, embedding, context=None):
        sparse_weights = self.softmax(self.flattened_inputs(embedding, context)).unsqueeze(-2)
        chunks = torch.split(embedding, self.input_size, dim=-1)
        transformed = torch.stack([f(c) for f, c in zip(self.transformed_inputs, chunks)], dim=-1)
        combined = (sparse_weights * transformed).sum(dim=-1)
        return combined, sparse_weights


class InterpretableMultiHeadAttention(nn.Module):
    def __init__(self, n_head, d_model, dropout):
        super().__init__()
        self.n_head = n_head
        self.d_k = d_model // n_head
        self.q_layers = nn.ModuleList([nn.Linear(d_model, self.d_k) for _ in range(n_head)])
        self.k_layers = nn.ModuleList([nn.Linear(d_model, self.d_k) for _ in range(n_head)])
        self.v_layer = nn.Linear(d_model, self.d_k)  # shared across heads
        self.w_h = nn.Linear(self.d_k, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        heads, attns = [], []
        vs = self.v_layer(v)
        for i in range(self.n_head):
            s = self.q_layers[i](q) @ self.k_layers[i](k).transpose(1, 2) / math.sqrt(self.d_k)
            if mask is not None:
                s = s.masked_fill(mask, -1e9)
            a = self.dropout(torch.softmax(s, dim=-1))
            heads.append(a @ vs)
            attns.append(a)
        return self.w_h(torch.stack(heads).mean(0)), torch.stack(attns, 1)


class TemporalFusionTransformer(nn.Module):
    def __init__(
        self,
        n_hist_vars,
        n_fut_vars,
        n_static,
        hidden=16,
        heads=2,
        dropout=0.1,
        quantiles=(0.1, 0.5, 0.9),
        horizon=4,
    ):
        super().__init__()
        self.horizon = horizon
        self.hist_proj = nn.ModuleList([nn.Linear(1, hidden) for _ in range(n_hist_vars)])
        self.fut_proj = nn.ModuleList([nn.Linear(1, hidden) for _ in range(n_fut_vars)])
        self.static_emb = nn.Embedding(n_static, hidden)
        self.static_context = GatedResidualNetwork(
            hidden, hidden, hidden, dropout, is_temporal=False
        )
        self.vsn_hist = VariableSelectionNetwork(hidden, n_hist_vars, hidden, dropout, hidden)
        self.vsn_fut = VariableSelectionNetwork(hidden, n_fut_vars, hidden, dropout, hidden)
        self.encoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.decoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.post_lstm_gate = GatedLinearUnit(hidden, hidden, dropout)
        self.post_lstm_norm = nn.LayerNorm(hidden)
        self.enrichment = GatedResidualNetwork(hidden, hidden, hidden, dropout, context_size=hidden)
        self.attention = InterpretableMultiHeadAttention(heads, hidden, dropout)
        self.post_attn_gate = GatedLinearUnit(hidden, hidden, dropout)
        self.post_attn_norm = nn.LayerNorm(hidden)
        self.position_wise = GatedResidualNetwork(hidden, hidden, hidden, dropout)
        self.output_layer = nn.Linear(hidden, len(quantiles))

    def forward(self, hist, fut, static_id):
        cs = self.static_context(self.static_emb(static_id))
        h_emb = torch.cat([p(hist[..., i : i + 1]) for i, p in enumerate(self.hist_proj)], -1)
        f_emb = torch.cat([p(fut[..., i : i + 1]) for i, p in enumerate(self.fut_proj)], -1)
        h_sel, _ = self.vsn_hist(h_emb, cs)
        f_sel, _ = self.vsn_fut(f_emb, cs)
        enc, state = self.encoder(h_sel)
        dec, _ = self.decoder(f_sel, state)
        lstm_in = torch.cat([h_sel, f_sel], 1)
        lstm_out = torch.cat([enc, dec], 1)
        x = self.post_lstm_norm(self.post_lstm_gate(lstm_out) + lstm_in)
        enriched = self.enrichment(x, cs)
        T = enriched.shape[1]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1)
        attn, _ = self.attention(enriched, enriched, enriched, mask)
        x = self.post_attn_norm(self.post_attn_gate(attn) + enriched)
        x = self.position_wise(x)
        return self.output_layer(x[:, -self.horizon :])


@heldout(
    "tft_variable_selection",
    lambda: ((rand(2, 8, 3), rand(2, 4, 2, seed=1), torch.tensor([0, 2])), {}),
)
def build_tft():
    return TemporalFusionTransformer(n_hist_vars=3, n_fut_vars=2, n_static=3)


# ----------------------------------------------------------------------------- PatchTST


class RevIN(nn.Module):
    def __init__(self, num_features: int, eps=1e-5, affine=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.affine = affine
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


class FlattenHead(nn.Module):
    def __init__(self, n_vars, nf, target_window, head_dropout=0):
        super().__init__()
        self.n_vars = n_vars
        self.flatten = nn.Flatten(start_dim=-2)
        self.linear = nn.Linear(nf, target_window)
        self.dropout = nn.Dropout(head_dropout)

    def forward(self, x):
        return self.dropout(self.linear(self.flatten(x)))


class PatchTST(nn.Module):
    def __init__(self, configs, patch_len=8, stride=4):
        super().__init__()
        self.seq_len = configs.seq_len
        self.pred_len = configs.pred_len
        self.patch_len = patch_len
        self.stride = stride
        self.revin = RevIN(configs.enc_in) if configs.revin else None
        self.padding_patch_layer = nn.ReplicationPad1d((0, stride))
        self.value_embedding = nn.Linear(patch_len, configs.d_model, bias=False)
        patch_num = (configs.seq_len - patch_len) // stride + 2
        self.W_pos = nn.Parameter(torch.empty(patch_num, configs.d_model).uniform_(-0.02, 0.02))
        layer = nn.TransformerEncoderLayer(
            configs.d_model,
            configs.n_heads,
            configs.d_ff,
            configs.dropout,
            activation="gelu",
            batch_first=True,
            norm_first=False,
        )
        self.backbone = nn.TransformerEncoder(
            layer, configs.e_layers, norm=nn.LayerNorm(configs.d_model), enable_nested_tensor=False
        )
        self.head = FlattenHead(
            configs.enc_in,
            configs.d_model * patch_num,
            configs.pred_len,
            head_dropout=configs.dropout,
        )

    def forward(self, x_enc):
        if self.revin is not None:
            x_enc = self.revin(x_enc, "norm")
        x = x_enc.permute(0, 2, 1)  # B, C, L
        B, C, _ = x.shape
        x = self.padding_patch_layer(x)
        x = x.unfold(dimension=-1, size=self.patch_len, step=self.stride)
        x = x.reshape(B * C, x.shape[2], x.shape[3])
        x = self.value_embedding(x) + self.W_pos
        z = self.backbone(x)
        z = z.reshape(B, C, z.shape[-2], z.shape[-1])
        out = self.head(z).permute(0, 2, 1)
        if self.revin is not None:
            out = self.revin(out, "denorm")
        return out


@dataclass
class TSConfig:
    seq_len: int = 32
    pred_len: int = 8
    enc_in: int = 3
    d_model: int = 16
    n_heads: int = 2
    d_ff: int = 32
    dropout: float = 0.1
    e_layers: int = 2
    revin: bool = True
    top_k: int = 2
    num_kernels: int = 3
    moving_avg: int = 5
    individual: bool = False
    extra: dict = field(default_factory=dict)


@heldout("patchtst", lambda: ((rand(2, 32, 3),), {}))
def build_patchtst():
    return PatchTST(TSConfig(), patch_len=8, stride=4)


# ----------------------------------------------------------------------------- DLinear


class moving_avg(nn.Module):  # noqa: N801  (the reference repo's name)
    def __init__(self, kernel_size, stride):
        super().__init__()
        self.kernel_size = kernel_size
        self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=0)

    def forward(self, x):
        front = x[:, 0:1, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        end = x[:, -1:, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        x = torch.cat([front, x, end], dim=1)
        return self.avg(x.permute(0, 2, 1)).permute(0, 2, 1)


class series_decomp(nn.Module):  # noqa: N801
    def __init__(self, kernel_size):
        super().__init__()
        self.moving_avg = moving_avg(kernel_size, stride=1)

    def forward(self, x):
        moving_mean = self.moving_avg(x)
        return x - moving_mean, moving_mean


class DLinear(nn.Module):
    def __init__(self, configs):
        super().__init__()
        self.seq_len = configs.seq_len
        self.pred_len = configs.pred_len
        self.decompsition = series_decomp(configs.moving_avg)
        self.individual = configs.individual
        self.channels = configs.enc_in
        if self.individual:
            self.Linear_Seasonal = nn.ModuleList()
            self.Linear_Trend = nn.ModuleList()
            for _ in range(self.channels):
                self.Linear_Seasonal.append(nn.Linear(self.seq_len, self.pred_len))
                self.Linear_Trend.append(nn.Linear(self.seq_len, self.pred_len))
        else:
            self.Linear_Seasonal = nn.Linear(self.seq_len, self.pred_len)
            self.Linear_Trend = nn.Linear(self.seq_len, self.pred_len)
            self.Linear_Seasonal.weight = nn.Parameter(
                (1 / self.seq_len) * torch.ones([self.pred_len, self.seq_len])
            )
            self.Linear_Trend.weight = nn.Parameter(
                (1 / self.seq_len) * torch.ones([self.pred_len, self.seq_len])
            )

    def forward(self, x):
        seasonal_init, trend_init = self.decompsition(x)
        seasonal_init, trend_init = seasonal_init.permute(0, 2, 1), trend_init.permute(0, 2, 1)
        if self.individual:
            seasonal_output = torch.stack(
                [lin(seasonal_init[:, i, :]) for i, lin in enumerate(self.Linear_Seasonal)], 1
            )
            trend_output = torch.stack(
                [lin(trend_init[:, i, :]) for i, lin in enumerate(self.Linear_Trend)], 1
            )
        else:
            seasonal_output = self.Linear_Seasonal(seasonal_init)
            trend_output = self.Linear_Trend(trend_init)
        return (seasonal_output + trend_output).permute(0, 2, 1)


@heldout(
    "dlinear_individual",
    lambda: ((rand(2, 32, 3),), {}),
    edit=("decompsition.moving_avg", {"kernel_size": 9}),
)
def build_dlinear():
    return DLinear(TSConfig(individual=True, moving_avg=25))


# ----------------------------------------------------------------------------- TimesNet


def FFT_for_Period(x, k=2):
    xf = torch.fft.rfft(x, dim=1)
    frequency_list = abs(xf).mean(0).mean(-1)
    frequency_list[0] = 0
    _, top_list = torch.topk(frequency_list, k)
    top_list = top_list.detach().cpu().numpy()
    period = x.shape[1] // top_list
    return period, abs(xf).mean(-1)[:, top_list]


class Inception_Block_V1(nn.Module):
    def __init__(self, in_channels, out_channels, num_kernels=6, init_weight=True):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.num_kernels = num_kernels
        kernels = [
            nn.Conv2d(in_channels, out_channels, kernel_size=2 * i + 1, padding=i)
            for i in range(self.num_kernels)
        ]
        self.kernels = nn.ModuleList(kernels)
        if init_weight:
            self._initialize_weights()

    def _initialize_weights(self):
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return torch.stack([k(x) for k in self.kernels], dim=-1).mean(-1)


class TimesBlock(nn.Module):
    def __init__(self, configs):
        super().__init__()
        self.seq_len = configs.seq_len
        self.pred_len = configs.pred_len
        self.k = configs.top_k
        self.conv = nn.Sequential(
            Inception_Block_V1(configs.d_model, configs.d_ff, num_kernels=configs.num_kernels),
            nn.GELU(),
            Inception_Block_V1(configs.d_ff, configs.d_model, num_kernels=configs.num_kernels),
        )

    def forward(self, x):
        B, T, N = x.size()
        period_list, period_weight = FFT_for_Period(x, self.k)
        res = []
        for i in range(self.k):
            period = int(period_list[i])
            total = self.seq_len + self.pred_len
            if total % period != 0:
                length = ((total // period) + 1) * period
                padding = torch.zeros([x.shape[0], length - total, x.shape[2]], device=x.device)
                out = torch.cat([x, padding], dim=1)
            else:
                length = total
                out = x
            out = out.reshape(B, length // period, period, N).permute(0, 3, 1, 2).contiguous()
            out = self.conv(out)
            out = out.permute(0, 2, 3, 1).reshape(B, -1, N)
            res.append(out[:, :total, :])
        res = torch.stack(res, dim=-1)
        period_weight = F.softmax(period_weight, dim=1).unsqueeze(1).unsqueeze(1).repeat(1, T, N, 1)
        return torch.sum(res * period_weight, -1) + x


class TokenEmbedding(nn.Module):
    def __init__(self, c_in, d_model):
        super().__init__()
        self.tokenConv = nn.Conv1d(
            c_in, d_model, kernel_size=3, padding=1, padding_mode="circular", bias=False
        )
        nn.init.kaiming_normal_(self.tokenConv.weight, mode="fan_in", nonlinearity="leaky_relu")

    def forward(self, x):
        return self.tokenConv(x.permute(0, 2, 1)).transpose(1, 2)


class PositionalEmbedding(nn.Module):
    def __init__(self, d_model, max_len=512):
        super().__init__()
        pe = torch.zeros(max_len, d_model).float()
        position = torch.arange(0, max_len).float().unsqueeze(1)
        div_term = (torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model)).exp()
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.pe[:, : x.size(1)]


class TimesNet(nn.Module):
    def __init__(self, configs):
        super().__init__()
        self.configs = configs
        self.seq_len, self.pred_len = configs.seq_len, configs.pred_len
        self.model = nn.ModuleList([TimesBlock(configs) for _ in range(configs.e_layers)])
        self.token = TokenEmbedding(configs.enc_in, configs.d_model)
        self.position = PositionalEmbedding(configs.d_model)
        self.dropout = nn.Dropout(configs.dropout)
        self.layer_norm = nn.LayerNorm(configs.d_model)
        self.predict_linear = nn.Linear(self.seq_len, self.pred_len + self.seq_len)
        self.projection = nn.Linear(configs.d_model, configs.enc_in, bias=True)

    def forward(self, x_enc):
        means = x_enc.mean(1, keepdim=True).detach()
        x_enc = x_enc - means
        stdev = torch.sqrt(torch.var(x_enc, dim=1, keepdim=True, unbiased=False) + 1e-5)
        x_enc = x_enc / stdev
        enc_out = self.dropout(self.token(x_enc) + self.position(x_enc))
        enc_out = self.predict_linear(enc_out.permute(0, 2, 1)).permute(0, 2, 1)
        for block in self.model:
            enc_out = self.layer_norm(block(enc_out))
        dec_out = self.projection(enc_out)
        dec_out = dec_out * stdev[:, 0, :].unsqueeze(1) + means[:, 0, :].unsqueeze(1)
        return dec_out[:, -self.pred_len :, :]


@heldout(
    "timesnet",
    lambda: ((rand(2, 24, 3),), {}),
    edit=("model.0.conv.0", {"num_kernels": 2}),
)
def build_timesnet():
    return TimesNet(TSConfig(seq_len=24, pred_len=8, d_model=8, d_ff=16))


# ----------------------------------------------------------------------------- AFNO


class Mlp(nn.Module):
    def __init__(
        self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0
    ):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop) if drop > 0.0 else nn.Identity()

    def forward(self, x):
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class AFNO2D(nn.Module):
    def __init__(
        self,
        hidden_size,
        num_blocks=8,
        sparsity_threshold=0.01,
        hard_thresholding_fraction=1,
        hidden_size_factor=1,
    ):
        super().__init__()
        assert hidden_size % num_blocks == 0
        self.hidden_size = hidden_size
        self.sparsity_threshold = sparsity_threshold
        self.num_blocks = num_blocks
        self.block_size = self.hidden_size // self.num_blocks
        self.hard_thresholding_fraction = hard_thresholding_fraction
        self.hidden_size_factor = hidden_size_factor
        self.scale = 0.02
        bs, f = self.block_size, self.hidden_size_factor
        self.w1 = nn.Parameter(self.scale * torch.randn(2, self.num_blocks, bs, bs * f))
        self.b1 = nn.Parameter(self.scale * torch.randn(2, self.num_blocks, bs * f))
        self.w2 = nn.Parameter(self.scale * torch.randn(2, self.num_blocks, bs * f, bs))
        self.b2 = nn.Parameter(self.scale * torch.randn(2, self.num_blocks, bs))

    def forward(self, x):
        bias = x
        dtype = x.dtype
        x = x.float()
        B, H, W, C = x.shape
        x = torch.fft.rfft2(x, dim=(1, 2), norm="ortho")
        x = x.reshape(B, H, W // 2 + 1, self.num_blocks, self.block_size)
        o1_real = torch.zeros(
            [B, H, W // 2 + 1, self.num_blocks, self.block_size * self.hidden_size_factor],
            device=x.device,
        )
        o1_imag = torch.zeros_like(o1_real)
        o2_real = torch.zeros(x.shape, device=x.device)
        o2_imag = torch.zeros(x.shape, device=x.device)
        total_modes = H // 2 + 1
        kept_modes = int(total_modes * self.hard_thresholding_fraction)
        sl = (
            slice(None),
            slice(total_modes - kept_modes, total_modes + kept_modes),
            slice(None, kept_modes),
        )
        xr, xi = x[sl].real, x[sl].imag
        o1_real[sl] = F.relu(
            torch.einsum("...bi,bio->...bo", xr, self.w1[0])
            - torch.einsum("...bi,bio->...bo", xi, self.w1[1])
            + self.b1[0]
        )
        o1_imag[sl] = F.relu(
            torch.einsum("...bi,bio->...bo", xi, self.w1[0])
            + torch.einsum("...bi,bio->...bo", xr, self.w1[1])
            + self.b1[1]
        )
        o2_real[sl] = (
            torch.einsum("...bi,bio->...bo", o1_real[sl], self.w2[0])
            - torch.einsum("...bi,bio->...bo", o1_imag[sl], self.w2[1])
            + self.b2[0]
        )
        o2_imag[sl] = (
            torch.einsum("...bi,bio->...bo", o1_imag[sl], self.w2[0])
            + torch.einsum("...bi,bio->...bo", o1_real[sl], self.w2[1])
            + self.b2[1]
        )
        x = torch.stack([o2_real, o2_imag], dim=-1)
        x = F.softshrink(x, lambd=self.sparsity_threshold)
        x = torch.view_as_complex(x)
        x = x.reshape(B, H, W // 2 + 1, C)
        x = torch.fft.irfft2(x, s=(H, W), dim=(1, 2), norm="ortho")
        return x.type(dtype) + bias


class Block(nn.Module):
    def __init__(
        self,
        dim,
        mlp_ratio=4.0,
        drop=0.0,
        act_layer=nn.GELU,
        norm_layer=nn.LayerNorm,
        double_skip=True,
        num_blocks=8,
        sparsity_threshold=0.01,
        hard_thresholding_fraction=1.0,
    ):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.filter = AFNO2D(dim, num_blocks, sparsity_threshold, hard_thresholding_fraction)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=drop)
        self.double_skip = double_skip

    def forward(self, x):
        residual = x
        x = self.filter(self.norm1(x))
        if self.double_skip:
            x = x + residual
            residual = x
        return self.mlp(self.norm2(x)) + residual


class PatchEmbed(nn.Module):
    def __init__(self, img_size=(32, 64), patch_size=(8, 8), in_chans=3, embed_dim=768):
        super().__init__()
        self.num_patches = (img_size[1] // patch_size[1]) * (img_size[0] // patch_size[0])
        self.img_size = img_size
        self.patch_size = patch_size
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class AFNONet(nn.Module):
    def __init__(
        self,
        img_size=(32, 64),
        patch_size=(8, 8),
        in_chans=4,
        out_chans=4,
        embed_dim=32,
        depth=2,
        mlp_ratio=2.0,
        num_blocks=4,
        sparsity_threshold=0.01,
        hard_thresholding_fraction=1.0,
    ):
        super().__init__()
        self.img_size = img_size
        self.patch_size = patch_size
        self.out_chans = out_chans
        norm_layer = partial(nn.LayerNorm, eps=1e-6)
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches, embed_dim))
        self.h = img_size[0] // patch_size[0]
        self.w = img_size[1] // patch_size[1]
        self.blocks = nn.ModuleList(
            [
                Block(
                    embed_dim,
                    mlp_ratio,
                    norm_layer=norm_layer,
                    num_blocks=num_blocks,
                    sparsity_threshold=sparsity_threshold,
                    hard_thresholding_fraction=hard_thresholding_fraction,
                )
                for _ in range(depth)
            ]
        )
        self.norm = norm_layer(embed_dim)
        self.head = nn.Linear(embed_dim, out_chans * patch_size[0] * patch_size[1], bias=False)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)

    def forward(self, x):
        B = x.shape[0]
        x = self.patch_embed(x) + self.pos_embed
        x = x.reshape(B, self.h, self.w, -1)
        for blk in self.blocks:
            x = blk(x)
        x = self.head(self.norm(x))
        p1, p2 = self.patch_size
        x = x.reshape(B, self.h, self.w, p1, p2, self.out_chans)
        x = x.permute(0, 5, 1, 3, 2, 4).reshape(B, self.out_chans, self.h * p1, self.w * p2)
        return x


@heldout(
    "fourcastnet_afno",
    lambda: ((rand(2, 4, 32, 64),), {}),
    edit=("blocks.0.filter", {"num_blocks": 2, "hidden_size_factor": 2}),
)
def build_afno():
    return AFNONet()
