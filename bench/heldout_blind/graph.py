"""Graph and point-set models on dense adjacencies: GCN, GAT, a message-passing network with an
edge network (MPNN), and PointNet with its input transform."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


def _adjacency(n, p=0.3, seed=0, batch=None):
    g = torch.Generator().manual_seed(seed)
    shape = (n, n) if batch is None else (batch, n, n)
    a = (torch.rand(*shape, generator=g) < p).float()
    a = ((a + a.transpose(-1, -2)) > 0).float()
    return a * (1 - torch.eye(n))


# --------------------------------------------------------------------------------------------
# GCN (Kipf & Welling 2017), raw weight parameters and the renormalisation trick in forward.


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
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
        output = adj @ (input @ self.weight)
        return output if self.bias is None else output + self.bias

    def __repr__(self):
        return f"{self.__class__.__name__} ({self.in_features} -> {self.out_features})"


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout, n_layers=2):
        super().__init__()
        dims = [nfeat] + [nhid] * (n_layers - 1) + [nclass]
        self.gcs = nn.ModuleList(GraphConvolution(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = dropout

    @staticmethod
    def normalize(adj):
        adj = adj + torch.eye(adj.size(-1), device=adj.device)
        d = adj.sum(-1).pow(-0.5)
        return d.unsqueeze(-1) * adj * d.unsqueeze(-2)

    def forward(self, x, adj):
        adj = self.normalize(adj)
        for gc in self.gcs[:-1]:
            x = F.dropout(F.relu(gc(x, adj)), self.dropout, training=self.training)
        return F.log_softmax(self.gcs[-1](x, adj), dim=-1)


@heldout(
    "gcn_dense",
    lambda: ((rand(12, 10, seed=30), _adjacency(12, seed=31)), {}),
    edit=("", {"nhid": 24}),
)
def gcn_dense():
    return GCN(nfeat=10, nhid=16, nclass=4, dropout=0.5, n_layers=3)


# --------------------------------------------------------------------------------------------
# GAT (Velickovic et al. 2018), multi-head, dense masking.


class GraphAttentionLayer(nn.Module):
    def __init__(self, in_features, out_features, dropout, alpha, concat=True):
        super().__init__()
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
        Wh1 = torch.matmul(Wh, self.a[: self.out_features, :])
        Wh2 = torch.matmul(Wh, self.a[self.out_features :, :])
        e = self.leakyrelu(Wh1 + Wh2.T)
        attention = torch.where(adj > 0, e, -9e15 * torch.ones_like(e))
        attention = F.softmax(attention, dim=1)
        attention = F.dropout(attention, self.dropout, training=self.training)
        h_prime = torch.matmul(attention, Wh)
        return F.elu(h_prime) if self.concat else h_prime


class GAT(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout, alpha, nheads):
        super().__init__()
        self.dropout = dropout
        self.attentions = [
            GraphAttentionLayer(nfeat, nhid, dropout=dropout, alpha=alpha, concat=True)
            for _ in range(nheads)
        ]
        for i, attention in enumerate(self.attentions):
            self.add_module(f"attention_{i}", attention)
        self.out_att = GraphAttentionLayer(nhid * nheads, nclass, dropout=dropout, alpha=alpha,
                                           concat=False)  # fmt: skip

    def forward(self, x, adj):
        adj = adj + torch.eye(adj.size(0))
        x = F.dropout(x, self.dropout, training=self.training)
        x = torch.cat([att(x, adj) for att in self.attentions], dim=1)
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(F.elu(self.out_att(x, adj)), dim=1)


@heldout("gat_dense", lambda: ((rand(9, 7, seed=32), _adjacency(9, seed=33)), {}))
def gat_dense():
    return GAT(nfeat=7, nhid=8, nclass=3, dropout=0.6, alpha=0.2, nheads=3)


# --------------------------------------------------------------------------------------------
# MPNN (Gilmer et al. 2017): edge-conditioned messages, GRU update, gated-sum readout; batched
# dense graphs with edge features.


class EdgeNetwork(nn.Module):
    def __init__(self, edge_dim, node_dim, hidden=32):
        super().__init__()
        self.node_dim = node_dim
        self.net = nn.Sequential(
            nn.Linear(edge_dim, hidden), nn.ReLU(), nn.Linear(hidden, node_dim * node_dim)
        )

    def forward(self, h, e, adj):
        B, N, _ = h.shape
        A = self.net(e).view(B, N, N, self.node_dim, self.node_dim)
        msg = torch.einsum("bijkl,bjl->bijk", A, h)
        return (msg * adj.unsqueeze(-1)).sum(2)


class GatedReadout(nn.Module):
    def __init__(self, node_dim, in_dim, out_dim):
        super().__init__()
        self.i = nn.Linear(node_dim + in_dim, out_dim)
        self.j = nn.Linear(node_dim, out_dim)

    def forward(self, h, h0):
        gate = torch.sigmoid(self.i(torch.cat([h, h0], -1)))
        return (gate * self.j(h)).sum(1)


class MPNN(nn.Module):
    def __init__(self, node_in, edge_in, hidden_dim=16, n_steps=3, n_targets=2, shared=True):
        super().__init__()
        self.n_steps = n_steps
        self.embed = nn.Linear(node_in, hidden_dim)
        if shared:
            self.message = EdgeNetwork(edge_in, hidden_dim)
        else:
            self.messages = nn.ModuleList(EdgeNetwork(edge_in, hidden_dim) for _ in range(n_steps))
        self.update = nn.GRUCell(hidden_dim, hidden_dim)
        self.readout = GatedReadout(hidden_dim, node_in, n_targets)

    def forward(self, x, edge_attr, adj):
        B, N, _ = x.shape
        h = self.embed(x)
        for t in range(self.n_steps):
            msg_fn = self.message if hasattr(self, "message") else self.messages[t]
            m = msg_fn(h, edge_attr, adj)
            h = self.update(m.reshape(B * N, -1), h.reshape(B * N, -1)).view(B, N, -1)
        return self.readout(h, x)


def _mpnn_inputs():
    return (rand(2, 6, 5, seed=34), rand(2, 6, 6, 3, seed=35), _adjacency(6, seed=36, batch=2)), {}


@heldout("mpnn_edge", _mpnn_inputs)
def mpnn_edge():
    return MPNN(5, 3, hidden_dim=12, n_steps=3)


# --------------------------------------------------------------------------------------------
# PointNet (Qi et al. 2017): T-Net input transform with an identity buffer, shared MLPs as 1x1
# convs, max pooling, and the feature-transform regulariser.


class TNet(nn.Module):
    def __init__(self, k=3, widths=(16, 32, 64), fc=(32, 16)):
        super().__init__()
        self.k = k
        convs, cin = [], k
        for w in widths:
            convs += [nn.Conv1d(cin, w, 1), nn.BatchNorm1d(w), nn.ReLU()]
            cin = w
        self.convs = nn.Sequential(*convs)
        fcs = []
        for w in fc:
            fcs += [nn.Linear(cin, w), nn.BatchNorm1d(w), nn.ReLU()]
            cin = w
        self.fcs = nn.Sequential(*fcs)
        self.out = nn.Linear(cin, k * k)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)
        self.register_buffer("iden", torch.eye(k).flatten())

    def forward(self, x):
        x = self.convs(x).max(dim=2)[0]
        x = self.out(self.fcs(x)) + self.iden
        return x.view(-1, self.k, self.k)


class PointNetEncoder(nn.Module):
    def __init__(self, global_feat=True, feature_transform=False, channel=3, emb=64):
        super().__init__()
        self.stn = TNet(channel)
        self.conv1 = nn.Conv1d(channel, 16, 1)
        self.conv2 = nn.Conv1d(16, 32, 1)
        self.conv3 = nn.Conv1d(32, emb, 1)
        self.bn1 = nn.BatchNorm1d(16)
        self.bn2 = nn.BatchNorm1d(32)
        self.bn3 = nn.BatchNorm1d(emb)
        self.global_feat = global_feat
        self.feature_transform = feature_transform
        if self.feature_transform:
            self.fstn = TNet(k=16)

    def forward(self, x):
        n_pts = x.size(2)
        trans = self.stn(x)
        x = torch.bmm(x.transpose(2, 1), trans).transpose(2, 1)
        x = F.relu(self.bn1(self.conv1(x)))
        trans_feat = None
        if self.feature_transform:
            trans_feat = self.fstn(x)
            x = torch.bmm(x.transpose(2, 1), trans_feat).transpose(2, 1)
        pointfeat = x
        x = F.relu(self.bn2(self.conv2(x)))
        x = self.bn3(self.conv3(x))
        x = torch.max(x, 2, keepdim=True)[0].flatten(1)
        if self.global_feat:
            return x, trans, trans_feat
        x = x.unsqueeze(-1).repeat(1, 1, n_pts)
        return torch.cat([x, pointfeat], 1), trans, trans_feat


class PointNetCls(nn.Module):
    def __init__(self, k=5, feature_transform=True, dropout=0.3, **enc_kwargs):
        super().__init__()
        self.feat = PointNetEncoder(global_feat=True, feature_transform=feature_transform,
                                    **enc_kwargs)  # fmt: skip
        emb = enc_kwargs.get("emb", 64)
        self.head = nn.Sequential(
            nn.Linear(emb, 32), nn.BatchNorm1d(32), nn.ReLU(),
            nn.Dropout(p=dropout),
            nn.Linear(32, k),
        )  # fmt: skip

    def forward(self, x):
        x, trans, trans_feat = self.feat(x)
        logits = F.log_softmax(self.head(x), dim=1)
        reg = x.new_zeros(())
        if trans_feat is not None:
            d = trans_feat.size(1)
            eye = torch.eye(d, device=x.device)[None]
            reg = torch.linalg.matrix_norm(trans_feat @ trans_feat.transpose(2, 1) - eye).mean()
        return logits, reg


@heldout("pointnet_cls", lambda: ((rand(3, 3, 40, seed=37),), {}), edit=("head.3", {"p": 0.1}))
def pointnet_cls():
    return PointNetCls(k=5, emb=48)
