"""Sequential recommendation (SASRec, BERT4Rec, GRU4Rec, Caser), click-through-rate models
(xDeepFM's CIN, AutoInt, DCN-Mix) and multi-task progressive layered extraction (PLE)."""

from __future__ import annotations

import argparse
import math
from collections import OrderedDict
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout


def _ints(high, *shape, seed=0, low=0):
    return torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------- SASRec


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
        self.user_num = user_num
        self.item_num = item_num
        self.item_emb = nn.Embedding(item_num + 1, args.hidden_units, padding_idx=0)
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
        poss = torch.arange(1, log_seqs.shape[1] + 1, device=log_seqs.device).unsqueeze(0)
        poss = poss.repeat(log_seqs.shape[0], 1) * (log_seqs != 0)
        seqs = self.emb_dropout(seqs + self.pos_emb(poss))
        tl = seqs.shape[1]
        attention_mask = ~torch.tril(torch.ones((tl, tl), dtype=torch.bool, device=seqs.device))
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


def _sasrec_args():
    p = argparse.ArgumentParser()
    p.add_argument("--hidden_units", default=32, type=int)
    p.add_argument("--num_blocks", default=2, type=int)
    p.add_argument("--num_heads", default=2, type=int)
    p.add_argument("--dropout_rate", default=0.2, type=float)
    p.add_argument("--maxlen", default=16, type=int)
    return p.parse_args([])


@heldout(
    "sasrec",
    lambda: (
        (
            _ints(10, 2),
            _ints(50, 2, 16, seed=1),
            _ints(50, 2, 16, seed=2, low=1),
            _ints(50, 2, 16, seed=3, low=1),
        ),
        {},
    ),
)
def build_sasrec():
    return SASRec(10, 49, _sasrec_args())


# ----------------------------------------------------------------------------- BERT4Rec


class GELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


class Attention(nn.Module):
    def forward(self, query, key, value, mask=None, dropout=None):
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        p_attn = F.softmax(scores, dim=-1)
        if dropout is not None:
            p_attn = dropout(p_attn)
        return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linear_layers = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(3)])
        self.output_linear = nn.Linear(d_model, d_model)
        self.attention = Attention()
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        batch_size = query.size(0)
        query, key, value = [
            lin(x).view(batch_size, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linear_layers, (query, key, value))
        ]
        x, _ = self.attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(batch_size, -1, self.h * self.d_k)
        return self.output_linear(x)


class SublayerConnection(nn.Module):
    def __init__(self, size, dropout):
        super().__init__()
        self.norm = nn.LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return x + self.dropout(sublayer(self.norm(x)))


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = GELU()

    def forward(self, x):
        return self.w_2(self.dropout(self.activation(self.w_1(x))))


class TransformerBlock(nn.Module):
    def __init__(self, hidden, attn_heads, feed_forward_hidden, dropout):
        super().__init__()
        self.attention = MultiHeadedAttention(h=attn_heads, d_model=hidden, dropout=dropout)
        self.feed_forward = PositionwiseFeedForward(hidden, feed_forward_hidden, dropout)
        self.input_sublayer = SublayerConnection(size=hidden, dropout=dropout)
        self.output_sublayer = SublayerConnection(size=hidden, dropout=dropout)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x, mask):
        x = self.input_sublayer(x, lambda _x: self.attention.forward(_x, _x, _x, mask=mask))
        x = self.output_sublayer(x, self.feed_forward)
        return self.dropout(x)


class BERTEmbedding(nn.Module):
    def __init__(self, vocab_size, embed_size, max_len, dropout=0.1):
        super().__init__()
        self.token = nn.Embedding(vocab_size, embed_size, padding_idx=0)
        self.position = nn.Parameter(torch.zeros(1, max_len, embed_size))
        nn.init.trunc_normal_(self.position, std=0.02)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, sequence):
        return self.dropout(self.token(sequence) + self.position[:, : sequence.size(1)])


class BERT4Rec(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.num_items = args.num_items
        vocab_size = args.num_items + 2  # pad + mask
        self.embedding = BERTEmbedding(
            vocab_size, args.bert_hidden_units, args.bert_max_len, args.bert_dropout
        )
        self.transformer_blocks = nn.ModuleList(
            [
                TransformerBlock(
                    args.bert_hidden_units,
                    args.bert_num_heads,
                    args.bert_hidden_units * 4,
                    args.bert_dropout,
                )
                for _ in range(args.bert_num_blocks)
            ]
        )
        self.out = nn.Linear(args.bert_hidden_units, args.num_items + 1)

    def forward(self, x):
        mask = (x > 0).unsqueeze(1).repeat(1, x.size(1), 1).unsqueeze(1)
        x = self.embedding(x)
        for transformer in self.transformer_blocks:
            x = transformer.forward(x, mask)
        return self.out(x)


@heldout("bert4rec", lambda: ((_ints(42, 2, 12, seed=4),), {}))
def build_bert4rec():
    args = SimpleNamespace(
        num_items=40,
        bert_hidden_units=32,
        bert_max_len=20,
        bert_dropout=0.1,
        bert_num_heads=2,
        bert_num_blocks=2,
    )
    return BERT4Rec(args)


# ----------------------------------------------------------------------------- GRU4Rec


class GRU4Rec(nn.Module):
    def __init__(
        self,
        input_size,
        hidden_size,
        output_size,
        num_layers=1,
        final_act="tanh",
        dropout_hidden=0.5,
        dropout_input=0,
        batch_size=2,
        embedding_dim=-1,
    ):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.num_layers = num_layers
        self.dropout_hidden = dropout_hidden
        self.dropout_input = dropout_input
        self.embedding_dim = embedding_dim
        self.batch_size = batch_size
        self.h2o = nn.Linear(hidden_size, output_size)
        self.create_final_activation(final_act)
        if self.embedding_dim != -1:
            self.look_up = nn.Embedding(input_size, self.embedding_dim)
            self.gru = nn.GRU(
                self.embedding_dim, self.hidden_size, self.num_layers, dropout=self.dropout_hidden
            )
        else:
            self.register_buffer("onehot_buffer", torch.zeros(self.batch_size, self.input_size))
            self.gru = nn.GRU(
                self.input_size, self.hidden_size, self.num_layers, dropout=self.dropout_hidden
            )

    def create_final_activation(self, final_act):
        if final_act == "tanh":
            self.final_activation = nn.Tanh()
        elif final_act == "relu":
            self.final_activation = nn.ReLU()
        elif final_act == "softmax":
            self.final_activation = nn.Softmax(dim=-1)
        elif final_act.startswith("elu-"):
            self.final_activation = nn.ELU(alpha=float(final_act.split("-")[1]))
        elif final_act.startswith("leaky-"):
            self.final_activation = nn.LeakyReLU(negative_slope=float(final_act.split("-")[1]))

    def onehot_encode(self, input):
        self.onehot_buffer.zero_()
        index = input.view(-1, 1)
        return self.onehot_buffer.scatter(1, index, 1)

    def forward(self, input, hidden):
        if self.embedding_dim == -1:
            embedded = self.onehot_encode(input).unsqueeze(0)
        else:
            embedded = self.look_up(input.unsqueeze(0))
        output, hidden = self.gru(embedded, hidden)
        output = output.view(-1, output.size(-1))
        logit = self.final_activation(self.h2o(output))
        return logit, hidden


@heldout(
    "gru4rec_session",
    lambda: ((_ints(30, 2, seed=5), torch.zeros(2, 2, 24)), {}),
    train=True,
)
def build_gru4rec():
    return GRU4Rec(30, 24, 30, num_layers=2, final_act="elu-0.5", dropout_hidden=0.25, batch_size=2)


# ----------------------------------------------------------------------------- Caser


activation_getter = {"iden": lambda x: x, "relu": F.relu, "tanh": torch.tanh, "sigm": torch.sigmoid}


class Caser(nn.Module):
    def __init__(self, num_users, num_items, model_args):
        super().__init__()
        self.args = model_args
        L = self.args.L
        dims = self.args.d
        self.n_h = self.args.nh
        self.n_v = self.args.nv
        self.drop_ratio = self.args.drop
        self.ac_conv = activation_getter[self.args.ac_conv]
        self.ac_fc = activation_getter[self.args.ac_fc]
        self.user_embeddings = nn.Embedding(num_users, dims)
        self.item_embeddings = nn.Embedding(num_items, dims)
        self.conv_v = nn.Conv2d(1, self.n_v, (L, 1))
        lengths = [i + 1 for i in range(L)]
        self.conv_h = nn.ModuleList([nn.Conv2d(1, self.n_h, (i, dims)) for i in lengths])
        self.fc1_dim_v = self.n_v * dims
        self.fc1_dim_h = self.n_h * len(lengths)
        self.fc1 = nn.Linear(self.fc1_dim_v + self.fc1_dim_h, dims)
        self.W2 = nn.Embedding(num_items, dims + dims)
        self.b2 = nn.Embedding(num_items, 1)
        self.dropout = nn.Dropout(self.drop_ratio)
        self.user_embeddings.weight.data.normal_(0, 1.0 / self.user_embeddings.embedding_dim)
        self.item_embeddings.weight.data.normal_(0, 1.0 / self.item_embeddings.embedding_dim)
        self.W2.weight.data.normal_(0, 1.0 / self.W2.embedding_dim)
        self.b2.weight.data.zero_()

    def forward(self, seq_var, user_var, item_var, for_pred=False):
        item_embs = self.item_embeddings(seq_var).unsqueeze(1)
        user_emb = self.user_embeddings(user_var).squeeze(1)
        out_v = self.conv_v(item_embs).view(-1, self.fc1_dim_v)
        out_hs = []
        for conv in self.conv_h:
            conv_out = self.ac_conv(conv(item_embs).squeeze(3))
            out_hs.append(F.max_pool1d(conv_out, conv_out.size(2)).squeeze(2))
        out_h = torch.cat(out_hs, 1)
        out = self.dropout(torch.cat([out_v, out_h], 1))
        z = self.ac_fc(self.fc1(out))
        x = torch.cat([z, user_emb], 1)
        w2 = self.W2(item_var)
        b2 = self.b2(item_var)
        if for_pred:
            w2, b2 = w2.squeeze(), b2.squeeze()
            return (x * w2).sum(1) + b2
        return torch.baddbmm(b2, w2, x.unsqueeze(2)).squeeze()


@heldout(
    "caser_cnn",
    lambda: ((_ints(50, 2, 5, seed=6), _ints(8, 2, 1, seed=7), _ints(50, 2, 6, seed=8)), {}),
)
def build_caser():
    args = SimpleNamespace(L=5, d=16, nv=4, nh=8, drop=0.5, ac_conv="relu", ac_fc="relu")
    return Caser(8, 50, args)


# ----------------------------------------------------------------------------- xDeepFM


class FeaturesEmbedding(nn.Module):
    def __init__(self, field_dims, embed_dim):
        super().__init__()
        self.embedding = nn.Embedding(sum(field_dims), embed_dim)
        offsets = torch.tensor((0, *torch.tensor(field_dims).cumsum(0)[:-1].tolist()))
        self.register_buffer("offsets", offsets)
        nn.init.xavier_uniform_(self.embedding.weight.data)

    def forward(self, x):
        return self.embedding(x + self.offsets.unsqueeze(0))


class FeaturesLinear(nn.Module):
    def __init__(self, field_dims, output_dim=1):
        super().__init__()
        self.fc = nn.Embedding(sum(field_dims), output_dim)
        self.bias = nn.Parameter(torch.zeros((output_dim,)))
        self.register_buffer(
            "offsets", torch.tensor((0, *torch.tensor(field_dims).cumsum(0)[:-1].tolist()))
        )

    def forward(self, x):
        return torch.sum(self.fc(x + self.offsets.unsqueeze(0)), dim=1) + self.bias


class MultiLayerPerceptron(nn.Module):
    def __init__(self, input_dim, embed_dims, dropout, output_layer=True):
        super().__init__()
        layers = []
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


class CompressedInteractionNetwork(nn.Module):
    def __init__(self, input_dim, cross_layer_sizes, split_half=True):
        super().__init__()
        self.num_layers = len(cross_layer_sizes)
        self.split_half = split_half
        self.conv_layers = nn.ModuleList()
        prev_dim, fc_input_dim = input_dim, 0
        for i in range(self.num_layers):
            cross_layer_size = cross_layer_sizes[i]
            self.conv_layers.append(
                nn.Conv1d(
                    input_dim * prev_dim, cross_layer_size, 1, stride=1, dilation=1, bias=True
                )
            )
            if self.split_half and i != self.num_layers - 1:
                cross_layer_size //= 2
            prev_dim = cross_layer_size
            fc_input_dim += prev_dim
        self.fc = nn.Linear(fc_input_dim, 1)

    def forward(self, x):
        xs = []
        x0, h = x.unsqueeze(2), x
        for i in range(self.num_layers):
            x = x0 * h.unsqueeze(1)
            batch_size, f0_dim, fin_dim, embed_dim = x.shape
            x = x.view(batch_size, f0_dim * fin_dim, embed_dim)
            x = F.relu(self.conv_layers[i](x))
            if self.split_half and i != self.num_layers - 1:
                x, h = torch.split(x, x.shape[1] // 2, dim=1)
            else:
                h = x
            xs.append(x)
        return self.fc(torch.sum(torch.cat(xs, dim=1), 2))


class ExtremeDeepFactorizationMachineModel(nn.Module):
    def __init__(
        self, field_dims, embed_dim, mlp_dims, dropout, cross_layer_sizes, split_half=True
    ):
        super().__init__()
        self.embedding = FeaturesEmbedding(field_dims, embed_dim)
        self.embed_output_dim = len(field_dims) * embed_dim
        self.cin = CompressedInteractionNetwork(len(field_dims), cross_layer_sizes, split_half)
        self.mlp = MultiLayerPerceptron(self.embed_output_dim, mlp_dims, dropout)
        self.linear = FeaturesLinear(field_dims)

    def forward(self, x):
        embed_x = self.embedding(x)
        x = self.linear(x) + self.cin(embed_x) + self.mlp(embed_x.view(-1, self.embed_output_dim))
        return torch.sigmoid(x.squeeze(1))


FIELD_DIMS = [7, 5, 11, 3, 9, 4]


def _fields(b=4, seed=9):
    g = torch.Generator().manual_seed(seed)
    return torch.stack([torch.randint(0, d, (b,), generator=g) for d in FIELD_DIMS], 1)


@heldout(
    "xdeepfm_cin",
    lambda: ((_fields(),), {}),
    edit=("cin", {"cross_layer_sizes": (8, 8, 8)}),
)
def build_xdeepfm():
    return ExtremeDeepFactorizationMachineModel(FIELD_DIMS, 8, (32, 16), 0.2, (16, 16), True)


# ----------------------------------------------------------------------------- AutoInt


class InteractingLayer(nn.Module):
    def __init__(self, embedding_size, head_num=2, use_res=True, scaling=False, seed=1024):
        super().__init__()
        if head_num <= 0:
            raise ValueError("head_num must be a int > 0")
        if embedding_size % head_num != 0:
            raise ValueError("embedding_size is not an integer multiple of head_num!")
        self.att_embedding_size = embedding_size // head_num
        self.head_num = head_num
        self.use_res = use_res
        self.scaling = scaling
        self.seed = seed
        for name in ("W_Query", "W_key", "W_Value"):
            self.register_parameter(name, nn.Parameter(torch.empty(embedding_size, embedding_size)))
        if self.use_res:
            self.W_Res = nn.Parameter(torch.empty(embedding_size, embedding_size))
        for tensor in self.parameters():
            nn.init.normal_(tensor, mean=0.0, std=0.05)

    def forward(self, inputs):
        querys = torch.tensordot(inputs, self.W_Query, dims=([-1], [0]))
        keys = torch.tensordot(inputs, self.W_key, dims=([-1], [0]))
        values = torch.tensordot(inputs, self.W_Value, dims=([-1], [0]))
        querys = torch.stack(torch.split(querys, self.att_embedding_size, dim=2))
        keys = torch.stack(torch.split(keys, self.att_embedding_size, dim=2))
        values = torch.stack(torch.split(values, self.att_embedding_size, dim=2))
        inner_product = torch.einsum("bnik,bnjk->bnij", querys, keys)
        if self.scaling:
            inner_product /= self.att_embedding_size**0.5
        normalized = F.softmax(inner_product, dim=-1)
        result = torch.matmul(normalized, values)
        result = torch.cat(torch.split(result, 1), dim=-1)
        result = torch.squeeze(result, dim=0)
        if self.use_res:
            result += torch.tensordot(inputs, self.W_Res, dims=([-1], [0]))
        return F.relu(result)


class AutoInt(nn.Module):
    def __init__(
        self,
        field_dims,
        embedding_size=16,
        att_layer_num=3,
        att_head_num=2,
        att_res=True,
        dnn_hidden_units=(32, 32),
        dnn_dropout=0.0,
    ):
        super().__init__()
        self.embedding = FeaturesEmbedding(field_dims, embedding_size)
        self.int_layers = nn.ModuleList(
            [InteractingLayer(embedding_size, att_head_num, att_res) for _ in range(att_layer_num)]
        )
        self.dnn = MultiLayerPerceptron(
            len(field_dims) * embedding_size, dnn_hidden_units, dnn_dropout, output_layer=False
        )
        dnn_linear_in = len(field_dims) * embedding_size + dnn_hidden_units[-1]
        self.dnn_linear = nn.Linear(dnn_linear_in, 1, bias=False)

    def forward(self, x):
        att_input = self.embedding(x)
        dnn_input = att_input.flatten(1)
        for layer in self.int_layers:
            att_input = layer(att_input)
        att_output = torch.flatten(att_input, start_dim=1)
        deep_out = self.dnn(dnn_input)
        return torch.sigmoid(self.dnn_linear(torch.cat((att_output, deep_out), dim=-1)))


@heldout(
    "autoint",
    lambda: ((_fields(seed=10),), {}),
)
def build_autoint():
    return AutoInt(FIELD_DIMS, embedding_size=16, att_layer_num=2, att_head_num=2)


# ----------------------------------------------------------------------------- DCN-Mix


class CrossNetMix(nn.Module):
    def __init__(self, in_features, low_rank=32, num_experts=4, layer_num=2):
        super().__init__()
        self.layer_num = layer_num
        self.num_experts = num_experts
        self.U_list = nn.ParameterList(
            [
                nn.Parameter(
                    nn.init.xavier_normal_(torch.empty(num_experts, in_features, low_rank))
                )
                for _ in range(self.layer_num)
            ]
        )
        self.V_list = nn.ParameterList(
            [
                nn.Parameter(
                    nn.init.xavier_normal_(torch.empty(num_experts, in_features, low_rank))
                )
                for _ in range(self.layer_num)
            ]
        )
        self.C_list = nn.ParameterList(
            [
                nn.Parameter(nn.init.xavier_normal_(torch.empty(num_experts, low_rank, low_rank)))
                for _ in range(self.layer_num)
            ]
        )
        self.gating = nn.ModuleList(
            [nn.Linear(in_features, 1, bias=False) for _ in range(num_experts)]
        )
        self.bias = nn.ParameterList(
            [
                nn.Parameter(nn.init.zeros_(torch.empty(in_features, 1)))
                for _ in range(self.layer_num)
            ]
        )

    def forward(self, inputs):
        x_0 = inputs.unsqueeze(2)
        x_l = x_0
        for i in range(self.layer_num):
            output_of_experts = []
            gating_score_of_experts = []
            for expert_id in range(self.num_experts):
                gating_score_of_experts.append(self.gating[expert_id](x_l.squeeze(2)))
                v_x = torch.matmul(self.V_list[i][expert_id].t(), x_l)
                v_x = torch.tanh(v_x)
                v_x = torch.matmul(self.C_list[i][expert_id], v_x)
                v_x = torch.tanh(v_x)
                uv_x = torch.matmul(self.U_list[i][expert_id], v_x)
                dot_ = uv_x + self.bias[i]
                output_of_experts.append((x_0 * dot_).squeeze(2))
            output_of_experts = torch.stack(output_of_experts, 2)
            gating_score_of_experts = torch.stack(gating_score_of_experts, 1)
            moe_out = torch.matmul(output_of_experts, gating_score_of_experts.softmax(1))
            x_l = moe_out + x_l
        return x_l.squeeze()


class DCNMix(nn.Module):
    def __init__(
        self,
        field_dims,
        embed_dim=8,
        cross_num=2,
        low_rank=4,
        num_experts=4,
        dnn_hidden_units=(32, 16),
    ):
        super().__init__()
        self.embedding = FeaturesEmbedding(field_dims, embed_dim)
        in_features = len(field_dims) * embed_dim
        self.cross = CrossNetMix(
            in_features, low_rank=low_rank, num_experts=num_experts, layer_num=cross_num
        )
        self.dnn = MultiLayerPerceptron(in_features, dnn_hidden_units, 0.1, output_layer=False)
        self.final = nn.Linear(in_features + dnn_hidden_units[-1], 1)

    def forward(self, x):
        e = self.embedding(x).flatten(1)
        stack = torch.cat([self.cross(e), self.dnn(e)], dim=-1)
        return torch.sigmoid(self.final(stack))


@heldout(
    "dcn_mix",
    lambda: ((_fields(seed=11),), {}),
    edit=("cross", {"num_experts": 2, "low_rank": 8}),
)
def build_dcn_mix():
    return DCNMix(FIELD_DIMS)


# ----------------------------------------------------------------------------- PLE


def expert(in_dim, hidden):
    return nn.Sequential(OrderedDict([("fc", nn.Linear(in_dim, hidden)), ("act", nn.ReLU())]))


class CGCLayer(nn.Module):
    def __init__(self, in_dim, n_tasks, n_shared, n_specific, expert_dim, last=False):
        super().__init__()
        self.n_tasks = n_tasks
        self.last = last
        self.shared = nn.ModuleList(expert(in_dim, expert_dim) for _ in range(n_shared))
        self.specific = nn.ModuleList(
            nn.ModuleList(expert(in_dim, expert_dim) for _ in range(n_specific))
            for _ in range(n_tasks)
        )
        self.task_gates = nn.ModuleList(
            nn.Sequential(nn.Linear(in_dim, n_shared + n_specific), nn.Softmax(dim=-1))
            for _ in range(n_tasks)
        )
        if not last:
            self.shared_gate = nn.Sequential(
                nn.Linear(in_dim, n_shared + n_tasks * n_specific), nn.Softmax(dim=-1)
            )

    def forward(self, inputs):
        # inputs: list of n_tasks + 1 tensors (task-specific..., shared)
        shared_out = [e(inputs[-1]) for e in self.shared]
        outs = []
        all_specific = []
        for t in range(self.n_tasks):
            spec = [e(inputs[t]) for e in self.specific[t]]
            all_specific += spec
            experts = torch.stack(spec + shared_out, 1)
            g = self.task_gates[t](inputs[t]).unsqueeze(-1)
            outs.append((experts * g).sum(1))
        if not self.last:
            experts = torch.stack(all_specific + shared_out, 1)
            g = self.shared_gate(inputs[-1]).unsqueeze(-1)
            outs.append((experts * g).sum(1))
        return outs


class PLE(nn.Module):
    def __init__(
        self,
        input_dim,
        task_types=("binary", "regression"),
        num_levels=2,
        n_shared=2,
        n_specific=1,
        expert_dim=16,
        tower_dims=(8,),
    ):
        super().__init__()
        self.task_types = task_types
        n_tasks = len(task_types)
        self.levels = nn.ModuleList()
        dim = input_dim
        for level in range(num_levels):
            self.levels.append(
                CGCLayer(
                    dim, n_tasks, n_shared, n_specific, expert_dim, last=level == num_levels - 1
                )
            )
            dim = expert_dim
        self.towers = nn.ModuleList()
        for _ in task_types:
            layers, d = [], expert_dim
            for h in tower_dims:
                layers += [nn.Linear(d, h), nn.ReLU()]
                d = h
            layers.append(nn.Linear(d, 1))
            self.towers.append(nn.Sequential(*layers))

    def forward(self, x):
        feats = [x] * (len(self.task_types) + 1)
        for level in self.levels:
            feats = level(feats)
        outs = []
        for t, kind in enumerate(self.task_types):
            y = self.towers[t](feats[t])
            outs.append(torch.sigmoid(y) if kind == "binary" else y)
        return tuple(outs)


@heldout(
    "ple_multitask",
    lambda: ((torch.randn(4, 20, generator=torch.Generator().manual_seed(12)),), {}),
)
def build_ple():
    return PLE(20, task_types=("binary", "binary", "regression"), num_levels=2)
