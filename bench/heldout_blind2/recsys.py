# ruff: noqa: UP006, UP035, UP045  (the authors' habits are kept: this set measures code as people write it)
"""Recommenders: DLRM (dataclass config), a two-tower retrieval model, DeepFM (pytorch-fm style)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --- DLRM ----------------------------------------------------------------------------------------


@dataclass
class DLRMConfig:
    num_dense: int = 13
    embedding_dim: int = 16
    table_sizes: List[int] = field(default_factory=lambda: [100, 100, 100])
    bottom_mlp: List[int] = field(default_factory=lambda: [64, 16])
    top_mlp: List[int] = field(default_factory=lambda: [64, 32, 1])
    interaction: str = "dot"
    self_interaction: bool = False
    bag_mode: str = "sum"


def make_mlp(sizes, sigmoid_layer=-1, final_activation=nn.ReLU):
    """Stack of Linear+activation, the last one (index `sigmoid_layer`) a Sigmoid."""
    layers = OrderedDict()
    for i in range(len(sizes) - 1):
        lin = nn.Linear(int(sizes[i]), int(sizes[i + 1]), bias=True)
        # the reference init: normal with fan-based std
        std_dev = np.sqrt(2 / (sizes[i] + sizes[i + 1]))
        lin.weight.data.normal_(0.0, std_dev)
        lin.bias.data.normal_(0.0, np.sqrt(1 / sizes[i + 1]))
        layers[f"linear{i}"] = lin
        layers[f"act{i}"] = nn.Sigmoid() if i == sigmoid_layer else final_activation()
    return nn.Sequential(layers)


class SparseArch(nn.Module):
    def __init__(self, table_sizes, embedding_dim, mode="sum"):
        super().__init__()
        self.embedding_bags = nn.ModuleList(
            nn.EmbeddingBag(n, embedding_dim, mode=mode) for n in table_sizes
        )
        for bag in self.embedding_bags:
            bound = np.sqrt(1 / bag.num_embeddings)
            nn.init.uniform_(bag.weight, -bound, bound)

    def forward(self, indices, offsets):
        # indices: (num_tables, total_lookups), offsets: (num_tables, batch)
        return [bag(indices[k], offsets[k]) for k, bag in enumerate(self.embedding_bags)]


class InteractionArch(nn.Module):
    def __init__(self, num_features, self_interaction=False):
        super().__init__()
        offset = 1 if self_interaction else 0
        li, lj = torch.tril_indices(num_features, num_features, offset=offset - 1)
        self.register_buffer("li", li, persistent=False)
        self.register_buffer("lj", lj, persistent=False)

    def forward(self, dense, sparse):
        batch_size, d = dense.shape
        T = torch.cat([dense] + sparse, dim=1).view(batch_size, -1, d)
        Z = torch.bmm(T, T.transpose(1, 2))
        Zflat = Z[:, self.li, self.lj]
        return torch.cat([dense, Zflat], dim=1)


class DLRM(nn.Module):
    def __init__(self, cfg: Optional[DLRMConfig] = None):
        super().__init__()
        cfg = cfg or DLRMConfig()
        assert cfg.bottom_mlp[-1] == cfg.embedding_dim, "bottom MLP must end at the embedding dim"
        self.cfg = cfg
        self.bot_l = make_mlp([cfg.num_dense] + cfg.bottom_mlp)
        self.emb_l = SparseArch(cfg.table_sizes, cfg.embedding_dim, cfg.bag_mode)
        num_f = len(cfg.table_sizes) + 1
        if cfg.interaction == "dot":
            self.interact = InteractionArch(num_f, cfg.self_interaction)
            n_pairs = num_f * (num_f + 1) // 2 if cfg.self_interaction else num_f * (num_f - 1) // 2
            top_in = cfg.embedding_dim + n_pairs
        elif cfg.interaction == "cat":
            self.interact = None
            top_in = cfg.embedding_dim * num_f
        else:
            raise ValueError(f"unknown interaction {cfg.interaction}")
        self.top_l = make_mlp([top_in] + cfg.top_mlp, sigmoid_layer=len(cfg.top_mlp) - 1)

    def forward(self, dense_x, lS_i, lS_o):
        x = self.bot_l(dense_x)
        ly = self.emb_l(lS_i, lS_o)
        if self.interact is None:
            z = torch.cat([x] + ly, dim=1)
        else:
            z = self.interact(x, ly)
        return self.top_l(z)


def _dlrm_inputs():
    g = torch.Generator().manual_seed(3)
    batch, per = 4, 2
    idx = torch.randint(0, 50, (3, batch * per), generator=g)
    off = torch.arange(0, batch * per, per).repeat(3, 1)
    return (rand(batch, 8), idx, off), {}


@heldout("dlrm", example=_dlrm_inputs)
def dlrm() -> nn.Module:
    torch.manual_seed(3)
    return DLRM(
        DLRMConfig(num_dense=8, embedding_dim=16, table_sizes=[50, 60, 70], bottom_mlp=[32, 16])
    )


# --- Two-tower retrieval -----------------------------------------------------------------------


class FeatureEncoder(nn.Module):
    """Embeds a dict of categorical id features and concatenates them."""

    def __init__(self, vocab_sizes: dict, dim: int = 32, padding_idx: int = 0):
        super().__init__()
        self.embeddings = nn.ModuleDict(
            {
                name: nn.Embedding(size, dim, padding_idx=padding_idx)
                for name, size in vocab_sizes.items()
            }
        )
        self.out_dim = dim * len(vocab_sizes)

    def forward(self, features: dict) -> torch.Tensor:
        return torch.cat([self.embeddings[k](features[k]) for k in self.embeddings], dim=-1)


class Tower(nn.Module):
    def __init__(
        self, encoder: FeatureEncoder, hidden=(128, 64), out_dim=32, activation=F.relu, dropout=0.0
    ):
        super().__init__()
        self.encoder = encoder
        dims = [encoder.out_dim, *hidden]
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.proj = nn.Linear(dims[-1], out_dim)
        self.activation = activation
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    def forward(self, features):
        x = self.encoder(features)
        for layer in self.hidden:
            x = self.dropout(self.activation(layer(x)))
        return F.normalize(self.proj(x), dim=-1)


class TwoTower(nn.Module):
    def __init__(
        self,
        user_vocab,
        item_vocab,
        embed_dim=32,
        out_dim=32,
        temperature=0.05,
        share_item_ids=True,
        **tower_kwargs,
    ):
        super().__init__()
        self.user_tower = Tower(
            FeatureEncoder(user_vocab, embed_dim), out_dim=out_dim, **tower_kwargs
        )
        self.item_tower = Tower(
            FeatureEncoder(item_vocab, embed_dim), out_dim=out_dim, **tower_kwargs
        )
        if share_item_ids:
            # the user's history ids and candidate item ids share one table (tied weights)
            self.user_tower.encoder.embeddings[
                "last_item"
            ].weight = self.item_tower.encoder.embeddings["item_id"].weight
        self.temperature = temperature

    def forward(self, user_features, item_features):
        u = self.user_tower(user_features)
        v = self.item_tower(item_features)
        return u @ v.t() / self.temperature


def _two_tower_inputs():
    g = torch.Generator().manual_seed(4)
    user = {
        "user_id": torch.randint(1, 30, (5,), generator=g),
        "last_item": torch.randint(1, 40, (5,), generator=g),
        "country": torch.randint(1, 8, (5,), generator=g),
    }
    item = {
        "item_id": torch.randint(1, 40, (5,), generator=g),
        "category": torch.randint(1, 10, (5,), generator=g),
    }
    return (user, item), {}


@heldout(
    "two_tower",
    example=_two_tower_inputs,
    edit=("item_tower", {"dropout": 0.1}),
)
def two_tower() -> nn.Module:
    torch.manual_seed(4)
    return TwoTower(
        {"user_id": 30, "last_item": 40, "country": 8},
        {"item_id": 40, "category": 10},
        embed_dim=16,
        hidden=(64, 32),
    )


# --- DeepFM, in the layout of the pytorch-fm package -----------------------------------------


class FeaturesLinear(torch.nn.Module):
    def __init__(self, field_dims, output_dim=1):
        super().__init__()
        self.fc = torch.nn.Embedding(sum(field_dims), output_dim)
        self.bias = torch.nn.Parameter(torch.zeros((output_dim,)))
        self.offsets = np.array((0, *np.cumsum(field_dims)[:-1]), dtype=np.int64)

    def forward(self, x):
        """:param x: Long tensor of size ``(batch_size, num_fields)``"""
        x = x + x.new_tensor(self.offsets).unsqueeze(0)
        return torch.sum(self.fc(x), dim=1) + self.bias


class FeaturesEmbedding(torch.nn.Module):
    def __init__(self, field_dims, embed_dim):
        super().__init__()
        self.embedding = torch.nn.Embedding(sum(field_dims), embed_dim)
        self.offsets = np.array((0, *np.cumsum(field_dims)[:-1]), dtype=np.int64)
        torch.nn.init.xavier_uniform_(self.embedding.weight.data)

    def forward(self, x):
        x = x + x.new_tensor(self.offsets).unsqueeze(0)
        return self.embedding(x)


class FactorizationMachine(torch.nn.Module):
    def __init__(self, reduce_sum=True):
        super().__init__()
        self.reduce_sum = reduce_sum

    def forward(self, x):
        """:param x: Float tensor of size ``(batch_size, num_fields, embed_dim)``"""
        square_of_sum = torch.sum(x, dim=1) ** 2
        sum_of_square = torch.sum(x**2, dim=1)
        ix = square_of_sum - sum_of_square
        if self.reduce_sum:
            ix = torch.sum(ix, dim=1, keepdim=True)
        return 0.5 * ix


class MultiLayerPerceptron(torch.nn.Module):
    def __init__(self, input_dim, embed_dims, dropout, output_layer=True):
        super().__init__()
        layers = list()
        for embed_dim in embed_dims:
            layers.append(torch.nn.Linear(input_dim, embed_dim))
            layers.append(torch.nn.BatchNorm1d(embed_dim))
            layers.append(torch.nn.ReLU())
            layers.append(torch.nn.Dropout(p=dropout))
            input_dim = embed_dim
        if output_layer:
            layers.append(torch.nn.Linear(input_dim, 1))
        self.mlp = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.mlp(x)


class DeepFactorizationMachineModel(torch.nn.Module):
    """A pytorch implementation of DeepFM (Guo et al., 2017)."""

    def __init__(self, field_dims, embed_dim, mlp_dims, dropout):
        super().__init__()
        self.linear = FeaturesLinear(field_dims)
        self.fm = FactorizationMachine(reduce_sum=True)
        self.embedding = FeaturesEmbedding(field_dims, embed_dim)
        self.embed_output_dim = len(field_dims) * embed_dim
        self.mlp = MultiLayerPerceptron(self.embed_output_dim, mlp_dims, dropout)

    def forward(self, x):
        embed_x = self.embedding(x)
        x = self.linear(x) + self.fm(embed_x) + self.mlp(embed_x.view(-1, self.embed_output_dim))
        return torch.sigmoid(x.squeeze(1))


FIELD_DIMS = [10, 7, 24, 5, 12]


@heldout(
    "deepfm",
    example=lambda: (
        (
            torch.stack(
                [
                    torch.randint(0, n, (6,), generator=torch.Generator().manual_seed(i))
                    for i, n in enumerate(FIELD_DIMS)
                ],
                1,
            ),
        ),
        {},
    ),
)
def deepfm() -> nn.Module:
    torch.manual_seed(5)
    return DeepFactorizationMachineModel(FIELD_DIMS, embed_dim=16, mlp_dims=(64, 32), dropout=0.2)
