"""Graphs and fields: dense-adjacency GCN and GAT (add_module per head) and a NeRF MLP with skips
and an input width from an embedder built from a dict."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn

# --- GCN (Kipf & Welling): torch.FloatTensor parameters, reset_parameters, forward(x, adj) --------


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = nn.Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        output = torch.mm(adj, torch.mm(input, self.weight))
        return output + self.bias if self.bias is not None else output

    def __repr__(self):
        return (
            self.__class__.__name__
            + " ("
            + str(self.in_features)
            + " -> "
            + str(self.out_features)
            + ")"
        )


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(self.gc2(x, adj), dim=1)


def _graph(n=10, f=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = (torch.rand(n, n, generator=g) > 0.7).float()
    a = ((a + a.t() + torch.eye(n)) > 0).float()
    return randn(n, f), a / a.sum(1, keepdim=True)


case(
    "gcn_dense",
    lambda: GCN(6, 16, 3, 0.5),
    lambda: (_graph(), {}),
    edit=("gc2", {"bias": False}),
    styles="torch.FloatTensor(a, b) parameters, register_parameter('bias', None), a __repr__ of its own",
)

# --- GAT: heads added with add_module('attention_{}'.format(i)), masked by adjacency -------------


class GraphAttentionLayer(nn.Module):
    def __init__(self, in_features, out_features, dropout, alpha, concat=True):
        super(GraphAttentionLayer, self).__init__()
        self.dropout = dropout
        self.in_features = in_features
        self.out_features = out_features
        self.alpha = alpha
        self.concat = concat
        self.W = nn.Parameter(torch.empty(size=(in_features, out_features)))
        nn.init.xavier_uniform_(self.W.data, gain=1.414)
        self.a = nn.Parameter(torch.empty(size=(2 * out_features, 1)))
        nn.init.xavier_uniform_(self.a.data, gain=1.414)
        self.leakyrelu = nn.LeakyReLU(self.alpha)

    def forward(self, h, adj):
        Wh = torch.mm(h, self.W)
        e = self.leakyrelu(
            torch.matmul(Wh, self.a[: self.out_features, :])
            + torch.matmul(Wh, self.a[self.out_features :, :]).T
        )
        attention = torch.where(adj > 0, e, -9e15 * torch.ones_like(e))
        attention = F.dropout(F.softmax(attention, dim=1), self.dropout, training=self.training)
        h_prime = torch.matmul(attention, Wh)
        return F.elu(h_prime) if self.concat else h_prime


class GAT(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout, alpha, nheads):
        super(GAT, self).__init__()
        self.dropout = dropout
        self.attentions = [
            GraphAttentionLayer(nfeat, nhid, dropout=dropout, alpha=alpha, concat=True)
            for _ in range(nheads)
        ]
        for i, attention in enumerate(self.attentions):
            self.add_module("attention_{}".format(i), attention)
        self.out_att = GraphAttentionLayer(
            nhid * nheads, nclass, dropout=dropout, alpha=alpha, concat=False
        )

    def forward(self, x, adj):
        x = F.dropout(x, self.dropout, training=self.training)
        x = torch.cat([att(x, adj) for att in self.attentions], dim=1)
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(F.elu(self.out_att(x, adj)), dim=1)


case(
    "gat_add_module",
    lambda: GAT(6, 4, 3, dropout=0.6, alpha=0.2, nheads=3),
    lambda: (_graph(), {}),
    edit=("out_att.leakyrelu", {"negative_slope": 0.1}),
    styles="heads kept in a plain list and registered with add_module, nhid * nheads, dense adjacency mask",
)

# --- NeRF: an embedder from a dict of kwargs, skips by index, use_viewdirs switch ---------------


class Embedder:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
        embed_fns = []
        d = self.kwargs["input_dims"]
        out_dim = 0
        if self.kwargs["include_input"]:
            embed_fns.append(lambda x: x)
            out_dim += d
        max_freq = self.kwargs["max_freq_log2"]
        N_freqs = self.kwargs["num_freqs"]
        freq_bands = 2.0 ** torch.linspace(0.0, max_freq, steps=N_freqs)
        for freq in freq_bands:
            for p_fn in self.kwargs["periodic_fns"]:
                embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
                out_dim += d
        self.embed_fns = embed_fns
        self.out_dim = out_dim

    def embed(self, inputs):
        return torch.cat([fn(inputs) for fn in self.embed_fns], -1)


def get_embedder(multires):
    embed_kwargs = {
        "include_input": True,
        "input_dims": 3,
        "max_freq_log2": multires - 1,
        "num_freqs": multires,
        "log_sampling": True,
        "periodic_fns": [torch.sin, torch.cos],
    }
    embedder_obj = Embedder(**embed_kwargs)
    return embedder_obj.embed, embedder_obj.out_dim


class NeRF(nn.Module):
    def __init__(
        self, D=8, W=256, input_ch=3, input_ch_views=3, output_ch=4, skips=[4], use_viewdirs=False
    ):
        super(NeRF, self).__init__()
        self.D = D
        self.W = W
        self.input_ch = input_ch
        self.input_ch_views = input_ch_views
        self.skips = skips
        self.use_viewdirs = use_viewdirs
        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, W)]
            + [
                nn.Linear(W, W) if i not in self.skips else nn.Linear(W + input_ch, W)
                for i in range(D - 1)
            ]
        )
        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
        if use_viewdirs:
            self.feature_linear = nn.Linear(W, W)
            self.alpha_linear = nn.Linear(W, 1)
            self.rgb_linear = nn.Linear(W // 2, 3)
        else:
            self.output_linear = nn.Linear(W, output_ch)

    def forward(self, x):
        input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
        h = input_pts
        for i, l in enumerate(self.pts_linears):
            h = F.relu(self.pts_linears[i](h))
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        if self.use_viewdirs:
            alpha = self.alpha_linear(h)
            h = torch.cat([self.feature_linear(h), input_views], -1)
            for i, l in enumerate(self.views_linears):
                h = F.relu(self.views_linears[i](h))
            return torch.cat([self.rgb_linear(h), alpha], -1)
        return self.output_linear(h)


def _nerf():
    _, input_ch = get_embedder(4)
    _, input_ch_views = get_embedder(2)
    return NeRF(
        D=4, W=32, input_ch=input_ch, input_ch_views=input_ch_views, skips=[2], use_viewdirs=True
    )


case(
    "nerf_skips",
    _nerf,
    args(lambda: randn(64, 27 + 15)),
    edit=("rgb_linear", {"bias": False}),
    styles="input_ch from an embedder, skips list (mutable default), use_viewdirs switch, torch.split",
)
