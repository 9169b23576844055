"""Tabular deep learning: TabNet, FT-Transformer, DCN-v2 and a NODE-style tree ensemble.

Mixed numeric/categorical inputs, per-feature tokenizers with raw parameters, ghost batch norm,
sparsemax written by hand, cross layers kept in a ParameterList and oblivious soft trees built from
plain tensors, configured by dicts and keyword arguments as in the papers' reference code.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


def sparsemax(z, dim=-1):
    """Martins & Astudillo's sparsemax, sorted form."""
    z = z - z.max(dim=dim, keepdim=True).values
    zs, _ = torch.sort(z, dim=dim, descending=True)
    rng = torch.arange(1, z.size(dim) + 1, device=z.device, dtype=z.dtype)
    shape = [1] * z.dim()
    shape[dim] = -1
    rng = rng.view(shape)
    bound = 1 + rng * zs > zs.cumsum(dim)
    k = bound.sum(dim=dim, keepdim=True)
    tau = (zs.cumsum(dim).gather(dim, k - 1) - 1) / k.to(z.dtype)
    return torch.clamp(z - tau, min=0)


# --------------------------------------------------------------------------- TabNet


class GBN(nn.Module):
    """Ghost batch norm: normalise virtual batches separately while training."""

    def __init__(self, input_dim, virtual_batch_size=128, momentum=0.01):
        super().__init__()
        self.input_dim = input_dim
        self.virtual_batch_size = virtual_batch_size
        self.bn = nn.BatchNorm1d(self.input_dim, momentum=momentum)

    def forward(self, x):
        if not self.training:
            return self.bn(x)
        chunks = x.chunk(int(math.ceil(x.shape[0] / self.virtual_batch_size)), 0)
        return torch.cat([self.bn(c) for c in chunks], dim=0)


class GLULayer(nn.Module):
    def __init__(self, input_dim, output_dim, fc=None, virtual_batch_size=128, momentum=0.02):
        super().__init__()
        self.output_dim = output_dim
        self.fc = fc if fc is not None else nn.Linear(input_dim, 2 * output_dim, bias=False)
        self.bn = GBN(2 * output_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)

    def forward(self, x):
        x = self.bn(self.fc(x))
        return x[:, : self.output_dim] * torch.sigmoid(x[:, self.output_dim :])


class FeatTransformer(nn.Module):
    """Shared GLU layers (their Linear modules are passed in) followed by step-specific ones."""

    def __init__(
        self,
        input_dim,
        output_dim,
        shared_layers,
        n_glu_independent,
        virtual_batch_size=128,
        momentum=0.02,
    ):
        super().__init__()
        self.glus = nn.ModuleList()
        dim = input_dim
        for fc in shared_layers or []:
            self.glus.append(
                GLULayer(
                    dim, output_dim, fc=fc, virtual_batch_size=virtual_batch_size, momentum=momentum
                )
            )
            dim = output_dim
        for _ in range(n_glu_independent):
            self.glus.append(
                GLULayer(dim, output_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)
            )
            dim = output_dim
        self.register_buffer("scale", torch.sqrt(torch.tensor(0.5)))

    def forward(self, x):
        x = self.glus[0](x)
        for glu in self.glus[1:]:
            x = (x + glu(x)) * self.scale
        return x


class AttentiveTransformer(nn.Module):
    def __init__(self, input_dim, group_dim, virtual_batch_size=128, momentum=0.02):
        super().__init__()
        self.fc = nn.Linear(input_dim, group_dim, bias=False)
        self.bn = GBN(group_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)

    def forward(self, priors, processed_feat):
        return sparsemax(self.bn(self.fc(processed_feat)) * priors)


class TabNet(nn.Module):
    def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, gamma=1.3, n_independent=2, n_shared=2,
                 virtual_batch_size=128, momentum=0.02):  # fmt: skip
        super().__init__()
        self.n_d, self.n_a, self.n_steps, self.gamma = n_d, n_a, n_steps, gamma
        self.initial_bn = nn.BatchNorm1d(input_dim, momentum=0.01)
        shared = nn.ModuleList()
        for i in range(n_shared):
            shared.append(
                nn.Linear(input_dim if i == 0 else n_d + n_a, 2 * (n_d + n_a), bias=False)
            )
        kw = dict(virtual_batch_size=virtual_batch_size, momentum=momentum)
        self.initial_splitter = FeatTransformer(input_dim, n_d + n_a, shared, n_independent, **kw)
        self.feat_transformers = nn.ModuleList(
            [
                FeatTransformer(input_dim, n_d + n_a, shared, n_independent, **kw)
                for _ in range(n_steps)
            ]
        )
        self.att_transformers = nn.ModuleList(
            [AttentiveTransformer(n_a, input_dim, **kw) for _ in range(n_steps)]
        )
        self.final_mapping = nn.Linear(n_d, output_dim, bias=False)

    def forward(self, x):
        x = self.initial_bn(x)
        prior = torch.ones_like(x)
        att = self.initial_splitter(x)[:, self.n_d :]
        out = 0
        m_loss = x.new_zeros(())
        for step in range(self.n_steps):
            M = self.att_transformers[step](prior, att)
            m_loss = m_loss + torch.mean(torch.sum(M * torch.log(M + 1e-15), dim=1))
            prior = (self.gamma - M) * prior
            h = self.feat_transformers[step](M * x)
            out = out + F.relu(h[:, : self.n_d])
            att = h[:, self.n_d :]
        return self.final_mapping(out), m_loss / self.n_steps


@heldout("tabnet", lambda: ((rand(32, 14),), {}), train=True)
def tabnet():
    return TabNet(14, 3, n_d=16, n_a=16, n_steps=3, virtual_batch_size=8)


# --------------------------------------------------------------------------- FT-Transformer


class FeatureTokenizer(nn.Module):
    def __init__(self, n_num_features, cat_cardinalities, d_token, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_num_features + 1, d_token))  # +1 for [CLS]
        self.bias = nn.Parameter(torch.empty(n_num_features, d_token)) if bias else None
        if cat_cardinalities:
            offsets = torch.tensor([0] + list(cat_cardinalities[:-1])).cumsum(0)
            self.register_buffer("category_offsets", offsets)
            self.category_embeddings = nn.Embedding(sum(cat_cardinalities), d_token)
            nn.init.kaiming_uniform_(self.category_embeddings.weight, a=math.sqrt(5))
            if bias:
                self.cat_bias = nn.Parameter(torch.zeros(len(cat_cardinalities), d_token))
        else:
            self.category_embeddings = None
        for p in (self.weight, self.bias):
            if p is not None:
                nn.init.kaiming_uniform_(p, a=math.sqrt(5))

    def forward(self, x_num, x_cat=None):
        x_num = torch.cat([torch.ones(len(x_num), 1, device=x_num.device), x_num], dim=1)
        x = self.weight[None] * x_num[:, :, None]
        if self.bias is not None:
            x = (
                x
                + torch.cat([torch.zeros(1, self.bias.shape[1], device=x.device), self.bias])[None]
            )
        if self.category_embeddings is not None and x_cat is not None:
            c = self.category_embeddings(x_cat + self.category_offsets[None])
            if self.bias is not None:
                c = c + self.cat_bias[None]
            x = torch.cat([x, c], dim=1)
        return x


class ReGLU(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=-1)
        return a * F.relu(b)


class FTBlock(nn.Module):
    def __init__(self, d_token, n_heads, d_ffn_factor=4 / 3, attention_dropout=0.2, ffn_dropout=0.1,
                 residual_dropout=0.0, prenormalize_attention=True):  # fmt: skip
        super().__init__()
        d_hidden = int(d_token * d_ffn_factor)
        self.attention_norm = nn.LayerNorm(d_token) if prenormalize_attention else nn.Identity()
        self.attention = nn.MultiheadAttention(
            d_token, n_heads, dropout=attention_dropout, batch_first=True
        )
        self.ffn_norm = nn.LayerNorm(d_token)
        self.ffn = nn.Sequential(
            nn.Linear(d_token, d_hidden * 2),
            ReGLU(),
            nn.Dropout(ffn_dropout),
            nn.Linear(d_hidden, d_token),
        )
        self.residual_dropout = nn.Dropout(residual_dropout)

    def forward(self, x):
        h = self.attention_norm(x)
        x = x + self.residual_dropout(self.attention(h, h, h, need_weights=False)[0])
        return x + self.residual_dropout(self.ffn(self.ffn_norm(x)))


class FTTransformer(nn.Module):
    def __init__(
        self, *, n_num_features, cat_cardinalities, d_token, n_blocks, d_out, **block_kwargs
    ):
        super().__init__()
        self.tokenizer = FeatureTokenizer(n_num_features, cat_cardinalities, d_token)
        self.blocks = nn.ModuleList(
            [
                FTBlock(d_token, prenormalize_attention=i > 0, **block_kwargs)
                for i in range(n_blocks)
            ]
        )
        self.head = nn.Sequential(nn.LayerNorm(d_token), nn.ReLU(), nn.Linear(d_token, d_out))

    def forward(self, x_num, x_cat):
        x = self.tokenizer(x_num, x_cat)
        for block in self.blocks:
            x = block(x)
        return self.head(x[:, 0])


@heldout(
    "ft_transformer",
    lambda: (
        (
            rand(6, 5),
            torch.tensor([[0, 1, 2], [2, 0, 1], [1, 1, 0], [0, 0, 3], [2, 1, 1], [1, 0, 2]]),
        ),
        {},
    ),
    edit=("blocks.1", {"ffn_dropout": 0.25}),
)
def ft_transformer():
    return FTTransformer(
        n_num_features=5, cat_cardinalities=[3, 2, 4], d_token=32, n_blocks=2, d_out=1, n_heads=4
    )


# --------------------------------------------------------------------------- DCN-v2


class CrossNetV2(nn.Module):
    """x_{l+1} = x_0 * (W_l x_l + b_l) + x_l, with optional low-rank mixture of experts."""

    def __init__(self, input_dim, num_layers=3, low_rank=None, num_experts=1):
        super().__init__()
        self.num_layers, self.low_rank = num_layers, low_rank
        if low_rank is None:
            self.kernels = nn.ParameterList(
                [
                    nn.Parameter(nn.init.xavier_normal_(torch.empty(input_dim, input_dim)))
                    for _ in range(num_layers)
                ]
            )
        else:
            self.U = nn.ParameterList(
                [
                    nn.Parameter(torch.randn(num_experts, input_dim, low_rank) * 0.05)
                    for _ in range(num_layers)
                ]
            )
            self.V = nn.ParameterList(
                [
                    nn.Parameter(torch.randn(num_experts, input_dim, low_rank) * 0.05)
                    for _ in range(num_layers)
                ]
            )
            self.gates = nn.ModuleList(
                [nn.Linear(input_dim, 1, bias=False) for _ in range(num_experts)]
            )
        self.bias = nn.ParameterList(
            [nn.Parameter(torch.zeros(input_dim)) for _ in range(num_layers)]
        )

    def forward(self, x0):
        x = x0
        for i in range(self.num_layers):
            if self.low_rank is None:
                xw = x @ self.kernels[i]
            else:
                experts = torch.einsum("bd,edr,efr->bef", x, self.V[i], self.U[i])
                gate = torch.softmax(torch.stack([g(x) for g in self.gates], 1), 1)
                xw = (experts * gate).sum(1)
            x = x0 * (xw + self.bias[i]) + x
        return x


class DCN(nn.Module):
    def __init__(self, config: dict):
        super().__init__()
        self.embeddings = nn.ModuleDict(
            {
                name: nn.Embedding(card, config["embed_dim"])
                for name, card in config["sparse_features"].items()
            }
        )
        input_dim = config["embed_dim"] * len(config["sparse_features"]) + config["num_dense"]
        self.cross = CrossNetV2(
            input_dim, config["cross_layers"], config.get("low_rank"), config.get("num_experts", 1)
        )
        layers, d = [], input_dim
        for h in config["dnn_units"]:
            layers += [
                nn.Linear(d, h),
                nn.BatchNorm1d(h),
                nn.ReLU(),
                nn.Dropout(config.get("dropout", 0.0)),
            ]
            d = h
        self.dnn = nn.Sequential(*layers)
        self.structure = config.get("structure", "parallel")
        out_dim = input_dim + d if self.structure == "parallel" else d
        self.out = nn.Linear(out_dim, 1)

    def forward(self, dense, sparse: dict):
        x0 = torch.cat([self.embeddings[k](v) for k, v in sparse.items()] + [dense], dim=1)
        if self.structure == "parallel":
            h = torch.cat([self.cross(x0), self.dnn(x0)], dim=1)
        else:
            h = self.dnn(self.cross(x0))
        return torch.sigmoid(self.out(h))


@heldout(
    "dcn_v2",
    lambda: (
        (rand(4, 6),),
        {
            "sparse": {
                "user": torch.tensor([1, 5, 9, 2]),
                "item": torch.tensor([0, 3, 3, 7]),
                "ctx": torch.tensor([1, 0, 2, 1]),
            }
        },
    ),
)
def dcn_v2():
    cfg = {
        "sparse_features": {"user": 10, "item": 8, "ctx": 3},
        "embed_dim": 8,
        "num_dense": 6,
        "cross_layers": 2,
        "low_rank": 4,
        "num_experts": 2,
        "dnn_units": [64, 32],
        "dropout": 0.1,
    }
    return DCN(cfg)
