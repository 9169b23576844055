"""Recommender systems: NeuMF, DeepFM, DIN with Dice, SASRec."""

from __future__ import annotations

import argparse

import torch
from torch import nn

from .spec import heldout


def _ids(*shape, high, seed=0):
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------- NeuMF


class GMF(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_users = config["num_users"]
        self.num_items = config["num_items"]
        self.latent_dim = config["latent_dim_mf"]
        self.embedding_user = nn.Embedding(self.num_users, self.latent_dim)
        self.embedding_item = nn.Embedding(self.num_items, self.latent_dim)

    def forward(self, user_indices, item_indices):
        return self.embedding_user(user_indices) * self.embedding_item(item_indices)


class MLPTower(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embedding_user = nn.Embedding(config["num_users"], config["latent_dim_mlp"])
        self.embedding_item = nn.Embedding(config["num_items"], config["latent_dim_mlp"])
        self.fc_layers = nn.ModuleList()
        for in_size, out_size in zip(config["layers"][:-1], config["layers"][1:]):
            self.fc_layers.append(nn.Linear(in_size, out_size))

    def forward(self, user_indices, item_indices):
        vector = torch.cat(
            [self.embedding_user(user_indices), self.embedding_item(item_indices)], -1
        )
        for layer in self.fc_layers:
            vector = torch.relu(layer(vector))
        return vector


class NeuMF(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gmf = GMF(config)
        self.mlp = MLPTower(config)
        self.affine_output = nn.Linear(config["layers"][-1] + config["latent_dim_mf"], 1)
        self.logistic = nn.Sigmoid()
        if config.get("weight_init_gaussian", True):
            for m in self.modules():
                if isinstance(m, nn.Embedding):
                    nn.init.normal_(m.weight, 0, 0.01)

    def forward(self, user_indices, item_indices):
        vector = torch.cat(
            [self.mlp(user_indices, item_indices), self.gmf(user_indices, item_indices)], dim=-1
        )
        return self.logistic(self.affine_output(vector)).squeeze(-1)


neumf_config = {
    "num_users": 100,
    "num_items": 200,
    "latent_dim_mf": 8,
    "latent_dim_mlp": 8,
    "layers": [16, 64, 32, 16, 8],
    "weight_init_gaussian": True,
}


@heldout("neumf", lambda: ((_ids(16, high=100), _ids(16, high=200, seed=1)), {}))
def neumf():
    return NeuMF(neumf_config)


# --------------------------------------------------------------------------- DeepFM (pytorch-fm)


class FeaturesLinear(nn.Module):
    def __init__(self, field_dims, output_dim=1):
        super().__init__()
        self.fc = nn.Embedding(sum(field_dims), output_dim)
        self.bias = nn.Parameter(torch.zeros((output_dim,)))
        offsets = torch.cumsum(torch.tensor([0, *field_dims[:-1]]), 0)
        self.register_buffer("offsets", offsets, persistent=False)

    def forward(self, x):
        return torch.sum(self.fc(x + self.offsets), dim=1) + self.bias


class FeaturesEmbedding(nn.Module):
    def __init__(self, field_dims, embed_dim):
        super().__init__()
        self.embedding = nn.Embedding(sum(field_dims), embed_dim)
        self.register_buffer(
            "offsets", torch.cumsum(torch.tensor([0, *field_dims[:-1]]), 0), persistent=False
        )
        nn.init.xavier_uniform_(self.embedding.weight.data)

    def forward(self, x):
        return self.embedding(x + self.offsets)


class FactorizationMachine(nn.Module):
    def __init__(self, reduce_sum=True):
        super().__init__()
        self.reduce_sum = reduce_sum

    def forward(self, x):
        square_of_sum = torch.sum(x, dim=1) ** 2
        sum_of_square = torch.sum(x**2, dim=1)
        ix = square_of_sum - sum_of_square
        if self.reduce_sum:
            ix = torch.sum(ix, dim=1, keepdim=True)
        return 0.5 * ix


class MultiLayerPerceptron(nn.Module):
    def __init__(self, input_dim, embed_dims, dropout, output_layer=True):
        super().__init__()
        layers = list()
        for embed_dim in embed_dims:
            layers.append(nn.Linear(input_dim, embed_dim))
            layers.append(nn.BatchNorm1d(embed_dim))
            layers.append(nn.ReLU())
            layers.append(nn.Dropout(p=dropout))
            input_dim = embed_dim
        if output_layer:
            layers.append(nn.Linear(input_dim, 1))
        self.mlp = nn.Sequential(*layers)

    def forward(self, x):
        return self.mlp(x)


class DeepFactorizationMachineModel(nn.Module):
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


FIELD_DIMS = (10, 20, 5, 7, 30)


def _fields():
    g = torch.Generator().manual_seed(4)
    return torch.stack([torch.randint(0, d, (8,), generator=g) for d in FIELD_DIMS], dim=1)


@heldout(
    "deepfm",
    lambda: ((_fields(),), {}),
    edit=("mlp", {"embed_dims": (48, 24, 12)}),
)
def deepfm():
    return DeepFactorizationMachineModel(FIELD_DIMS, embed_dim=8, mlp_dims=(32, 16), dropout=0.2)


# --------------------------------------------------------------------------- DIN


class Dice(nn.Module):
    def __init__(self, emb_size, dim=2, epsilon=1e-8):
        super().__init__()
        assert dim in (2, 3)
        self.bn = nn.BatchNorm1d(emb_size, eps=epsilon)
        self.sigmoid = nn.Sigmoid()
        self.dim = dim
        self.alpha = nn.Parameter(torch.zeros((emb_size,) if dim == 2 else (emb_size, 1)))

    def forward(self, x):
        if self.dim == 2:
            x_p = self.sigmoid(self.bn(x))
            return self.alpha * (1 - x_p) * x + x_p * x
        x = torch.transpose(x, 1, 2)
        x_p = self.sigmoid(self.bn(x))
        out = self.alpha * (1 - x_p) * x + x_p * x
        return torch.transpose(out, 1, 2)


class LocalActivationUnit(nn.Module):
    def __init__(self, hidden_units=(64, 32), embedding_dim=4, activation="dice"):
        super().__init__()
        layers, in_dim = [], 4 * embedding_dim
        for h in hidden_units:
            layers += [nn.Linear(in_dim, h), Dice(h, dim=3) if activation == "dice" else nn.PReLU()]
            in_dim = h
        self.dnn = nn.Sequential(*layers)
        self.dense = nn.Linear(in_dim, 1)

    def forward(self, query, user_behavior):
        queries = query.expand(-1, user_behavior.size(1), -1)
        attention_input = torch.cat(
            [queries, user_behavior, queries - user_behavior, queries * user_behavior], dim=-1
        )
        return self.dense(self.dnn(attention_input))


class AttentionSequencePoolingLayer(nn.Module):
    def __init__(self, att_hidden_units=(80, 40), embedding_dim=4, weight_normalization=False):
        super().__init__()
        self.weight_normalization = weight_normalization
        self.local_att = LocalActivationUnit(att_hidden_units, embedding_dim)

    def forward(self, query, keys, keys_length):
        max_len = keys.size(1)
        mask = torch.arange(max_len, device=keys.device)[None, :] < keys_length[:, None]
        score = self.local_att(query, keys).transpose(1, 2)
        if self.weight_normalization:
            score = torch.softmax(score.masked_fill(~mask[:, None], -1e9), dim=-1)
        else:
            score = score * mask[:, None]
        return torch.matmul(score, keys)


class DIN(nn.Module):
    def __init__(self, n_items, n_cates, emb_dim=8, att_hidden=(32, 16), dnn_hidden=(64, 32)):
        super().__init__()
        self.item_emb = nn.Embedding(n_items, emb_dim, padding_idx=0)
        self.cate_emb = nn.Embedding(n_cates, emb_dim, padding_idx=0)
        self.attention = AttentionSequencePoolingLayer(att_hidden, 2 * emb_dim, True)
        dims = [4 * emb_dim, *dnn_hidden]
        self.dnn = nn.Sequential()
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            self.dnn.add_module(f"linear_{i}", nn.Linear(a, b))
            self.dnn.add_module(f"dice_{i}", Dice(b))
        self.out = nn.Linear(dims[-1], 1)

    def embed(self, items, cates):
        return torch.cat([self.item_emb(items), self.cate_emb(cates)], -1)

    def forward(self, batch: dict):
        query = self.embed(batch["item"], batch["cate"]).unsqueeze(1)
        keys = self.embed(batch["hist_item"], batch["hist_cate"])
        pooled = self.attention(query, keys, batch["hist_len"])
        x = torch.cat([query.squeeze(1), pooled.squeeze(1)], -1)
        return {"logit": self.out(self.dnn(x)).squeeze(-1), "attn_pooled": pooled}


def _din_batch():
    return {
        "item": _ids(6, high=50),
        "cate": _ids(6, high=10, seed=1),
        "hist_item": _ids(6, 12, high=50, seed=2),
        "hist_cate": _ids(6, 12, high=10, seed=3),
        "hist_len": torch.tensor([12, 3, 7, 1, 9, 5]),
    }


@heldout(
    "din",
    lambda: ((_din_batch(),), {}),
)
def din():
    return DIN(50, 10)


# --------------------------------------------------------------------------- SASRec


class PointWiseFeedForward(nn.Module):
    def __init__(self, hidden_units, dropout_rate):
        super().__init__()
        self.conv1 = nn.Conv1d(hidden_units, hidden_units, kernel_size=1)
        self.dropout1 = nn.Dropout(p=dropout_rate)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv1d(hidden_units, hidden_units, kernel_size=1)
        self.dropout2 = nn.Dropout(p=dropout_rate)

    def forward(self, inputs):
        outputs = self.dropout2(
            self.conv2(self.relu(self.dropout1(self.conv1(inputs.transpose(-1, -2)))))
        )
        return outputs.transpose(-1, -2) + inputs


class SASRec(nn.Module):
    def __init__(self, user_num, item_num, args):
        super().__init__()
        self.user_num, self.item_num = user_num, item_num
        self.item_emb = nn.Embedding(self.item_num + 1, args.hidden_units, padding_idx=0)
        self.pos_emb = nn.Embedding(args.maxlen + 1, args.hidden_units, padding_idx=0)
        self.emb_dropout = nn.Dropout(p=args.dropout_rate)
        self.attention_layernorms = nn.ModuleList()
        self.attention_layers = nn.ModuleList()
        self.forward_layernorms = nn.ModuleList()
        self.forward_layers = nn.ModuleList()
        self.last_layernorm = nn.LayerNorm(args.hidden_units, eps=1e-8)
        for _ in range(args.num_blocks):
            self.attention_layernorms.append(nn.LayerNorm(args.hidden_units, eps=1e-8))
            self.attention_layers.append(
                nn.MultiheadAttention(args.hidden_units, args.num_heads, args.dropout_rate)
            )
            self.forward_layernorms.append(nn.LayerNorm(args.hidden_units, eps=1e-8))
            self.forward_layers.append(PointWiseFeedForward(args.hidden_units, args.dropout_rate))

    def log2feats(self, log_seqs):
        seqs = self.item_emb(log_seqs) * self.item_emb.embedding_dim**0.5
        poss = torch.arange(1, log_seqs.shape[1] + 1).unsqueeze(0).expand_as(log_seqs)
        poss = poss * (log_seqs != 0)
        seqs = self.emb_dropout(seqs + self.pos_emb(poss))
        tl = seqs.shape[1]
        attention_mask = ~torch.tril(torch.ones((tl, tl), dtype=torch.bool))
        for i in range(len(self.attention_layers)):
            seqs = torch.transpose(seqs, 0, 1)
            Q = self.attention_layernorms[i](seqs)
            mha_outputs, _ = self.attention_layers[i](Q, seqs, seqs, attn_mask=attention_mask)
            seqs = torch.transpose(Q + mha_outputs, 0, 1)
            seqs = self.forward_layers[i](self.forward_layernorms[i](seqs))
        return self.last_layernorm(seqs)

    def forward(self, user_ids, log_seqs, pos_seqs, neg_seqs):
        log_feats = self.log2feats(log_seqs)
        pos_logits = (log_feats * self.item_emb(pos_seqs)).sum(dim=-1)
        neg_logits = (log_feats * self.item_emb(neg_seqs)).sum(dim=-1)
        return pos_logits, neg_logits


@heldout(
    "sasrec",
    lambda: (
        (
            _ids(4, high=30),
            _ids(4, 10, high=60, seed=1),
            _ids(4, 10, high=60, seed=2),
            _ids(4, 10, high=60, seed=3),
        ),
        {},
    ),  # fmt: skip,
)
def sasrec():
    args = argparse.Namespace(
        hidden_units=32, maxlen=10, dropout_rate=0.2, num_blocks=2, num_heads=2
    )
    return SASRec(30, 60, args)
