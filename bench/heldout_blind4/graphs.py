"""Molecules and graphs with message passing written by hand (no graph library).

An E(n)-equivariant GNN, SchNet's continuous-filter convolutions with an RBF buffer, a Gilmer MPNN
with an edge network, a GRU update and Set2Set readout, and dense DiffPool. Edges are index
tensors and aggregation is ``index_add_``/``scatter`` as in from-scratch reimplementations.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


def unsorted_segment_sum(data, segment_ids, num_segments):
    result = data.new_zeros((num_segments, data.size(1)))
    return result.index_add_(0, segment_ids, data)


def unsorted_segment_mean(data, segment_ids, num_segments):
    result = unsorted_segment_sum(data, segment_ids, num_segments)
    count = unsorted_segment_sum(torch.ones_like(data), segment_ids, num_segments)
    return result / count.clamp(min=1)


def ring_edges(n):
    rows = [i for i in range(n) for j in range(n) if i != j and abs(i - j) in (1, 2, n - 1)]
    cols = [j for i in range(n) for j in range(n) if i != j and abs(i - j) in (1, 2, n - 1)]
    return torch.tensor([rows, cols])


# --------------------------------------------------------------------------- EGNN


class E_GCL(nn.Module):
    """Equivariant graph convolution layer (Satorras et al. 2021)."""

    def __init__(self, input_nf, output_nf, hidden_nf, edges_in_d=0, act_fn=nn.SiLU(), residual=True, attention=False,  # noqa: B008
                 normalize=False, coords_agg="mean", tanh=False):  # fmt: skip
        super().__init__()
        input_edge = input_nf * 2
        self.residual, self.attention, self.normalize = residual, attention, normalize
        self.coords_agg, self.tanh = coords_agg, tanh
        self.epsilon = 1e-8
        edge_coords_nf = 1
        self.edge_mlp = nn.Sequential(
            nn.Linear(input_edge + edge_coords_nf + edges_in_d, hidden_nf),
            act_fn,
            nn.Linear(hidden_nf, hidden_nf),
            act_fn,
        )
        self.node_mlp = nn.Sequential(
            nn.Linear(hidden_nf + input_nf, hidden_nf), act_fn, nn.Linear(hidden_nf, output_nf)
        )
        layer = nn.Linear(hidden_nf, 1, bias=False)
        nn.init.xavier_uniform_(layer.weight, gain=0.001)
        coord_mlp = [nn.Linear(hidden_nf, hidden_nf), act_fn, layer]
        if self.tanh:
            coord_mlp.append(nn.Tanh())
        self.coord_mlp = nn.Sequential(*coord_mlp)
        if self.attention:
            self.att_mlp = nn.Sequential(nn.Linear(hidden_nf, 1), nn.Sigmoid())

    def coord2radial(self, edge_index, coord):
        row, col = edge_index
        coord_diff = coord[row] - coord[col]
        radial = torch.sum(coord_diff**2, 1).unsqueeze(1)
        if self.normalize:
            coord_diff = coord_diff / (torch.sqrt(radial).detach() + self.epsilon)
        return radial, coord_diff

    def forward(self, h, edge_index, coord, edge_attr=None):
        row, col = edge_index
        radial, coord_diff = self.coord2radial(edge_index, coord)
        parts = [h[row], h[col], radial] + ([edge_attr] if edge_attr is not None else [])
        edge_feat = self.edge_mlp(torch.cat(parts, dim=1))
        if self.attention:
            edge_feat = edge_feat * self.att_mlp(edge_feat)
        trans = coord_diff * self.coord_mlp(edge_feat)
        agg_fn = unsorted_segment_sum if self.coords_agg == "sum" else unsorted_segment_mean
        coord = coord + agg_fn(trans, row, coord.size(0))
        agg = unsorted_segment_sum(edge_feat, row, h.size(0))
        out = self.node_mlp(torch.cat([h, agg], dim=1))
        if self.residual:
            out = h + out
        return out, coord


class EGNN(nn.Module):
    def __init__(self, in_node_nf, hidden_nf, out_node_nf, in_edge_nf=0, act_fn=nn.SiLU(), n_layers=4, residual=True,  # noqa: B008
                 attention=False, normalize=False, tanh=False):  # fmt: skip
        super().__init__()
        self.hidden_nf, self.n_layers = hidden_nf, n_layers
        self.embedding_in = nn.Linear(in_node_nf, hidden_nf)
        self.embedding_out = nn.Linear(hidden_nf, out_node_nf)
        for i in range(n_layers):
            self.add_module(
                f"gcl_{i}",
                E_GCL(
                    hidden_nf,
                    hidden_nf,
                    hidden_nf,
                    edges_in_d=in_edge_nf,
                    act_fn=act_fn,
                    residual=residual,
                    attention=attention,
                    normalize=normalize,
                    tanh=tanh,
                ),  # fmt: skip
            )

    def forward(self, h, x, edges, edge_attr):
        h = self.embedding_in(h)
        for i in range(self.n_layers):
            h, x = self._modules[f"gcl_{i}"](h, edges, x, edge_attr=edge_attr)
        return self.embedding_out(h), x


@heldout(
    "egnn",
    lambda: (
        (rand(7, 5), rand(7, 3, seed=1), ring_edges(7), rand(ring_edges(7).shape[1], 2, seed=2)),
        {},
    ),
    edit=("gcl_1", {"attention": False}),
)
def egnn():
    return EGNN(5, 32, 4, in_edge_nf=2, n_layers=3, attention=True, normalize=True)


# --------------------------------------------------------------------------- SchNet


class GaussianSmearing(nn.Module):
    def __init__(self, start=0.0, stop=5.0, num_gaussians=50):
        super().__init__()
        offset = torch.linspace(start, stop, num_gaussians)
        self.coeff = -0.5 / (offset[1] - offset[0]).item() ** 2
        self.register_buffer("offset", offset)

    def forward(self, dist):
        return torch.exp(self.coeff * (dist.view(-1, 1) - self.offset.view(1, -1)) ** 2)


class ShiftedSoftplus(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = torch.log(torch.tensor(2.0)).item()

    def forward(self, x):
        return F.softplus(x) - self.shift


class CFConv(nn.Module):
    def __init__(self, in_channels, out_channels, num_filters, nn_filter, cutoff):
        super().__init__()
        self.lin1 = nn.Linear(in_channels, num_filters, bias=False)
        self.lin2 = nn.Linear(num_filters, out_channels)
        self.nn = nn_filter
        self.cutoff = cutoff

    def forward(self, x, edge_index, edge_weight, edge_attr):
        C = 0.5 * (torch.cos(edge_weight * math.pi / self.cutoff) + 1.0)
        W = self.nn(edge_attr) * C.view(-1, 1)
        x = self.lin1(x)
        msg = x[edge_index[0]] * W
        out = torch.zeros_like(x).index_add_(0, edge_index[1], msg)
        return self.lin2(out)


class InteractionBlock(nn.Module):
    def __init__(self, hidden_channels, num_gaussians, num_filters, cutoff):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(num_gaussians, num_filters),
            ShiftedSoftplus(),
            nn.Linear(num_filters, num_filters),
        )
        self.conv = CFConv(hidden_channels, hidden_channels, num_filters, self.mlp, cutoff)
        self.act = ShiftedSoftplus()
        self.lin = nn.Linear(hidden_channels, hidden_channels)

    def forward(self, x, edge_index, edge_weight, edge_attr):
        return self.lin(self.act(self.conv(x, edge_index, edge_weight, edge_attr)))


class SchNet(nn.Module):
    def __init__(self, hidden_channels=128, num_filters=128, num_interactions=6, num_gaussians=50, cutoff=10.0,
                 readout="add", max_z=100):  # fmt: skip
        super().__init__()
        self.cutoff, self.readout = cutoff, readout
        self.embedding = nn.Embedding(max_z, hidden_channels, padding_idx=0)
        self.distance_expansion = GaussianSmearing(0.0, cutoff, num_gaussians)
        self.interactions = nn.ModuleList(
            InteractionBlock(hidden_channels, num_gaussians, num_filters, cutoff)
            for _ in range(num_interactions)
        )
        self.lin1 = nn.Linear(hidden_channels, hidden_channels // 2)
        self.act = ShiftedSoftplus()
        self.lin2 = nn.Linear(hidden_channels // 2, 1)

    def forward(self, z, pos, batch):
        n = z.shape[0]
        same = batch[:, None] == batch[None, :]
        dist_all = torch.cdist(pos, pos)
        mask = same & (dist_all < self.cutoff) & ~torch.eye(n, dtype=torch.bool)
        edge_index = mask.nonzero().t()
        edge_weight = dist_all[edge_index[0], edge_index[1]]
        edge_attr = self.distance_expansion(edge_weight)
        h = self.embedding(z)
        for interaction in self.interactions:
            h = h + interaction(h, edge_index, edge_weight, edge_attr)
        h = self.lin2(self.act(self.lin1(h)))
        n_graphs = int(batch.max()) + 1
        out = h.new_zeros(n_graphs, 1).index_add_(0, batch, h)
        if self.readout == "mean":
            out = out / torch.bincount(batch, minlength=n_graphs).clamp(min=1).unsqueeze(1)
        return out


@heldout(
    "schnet",
    lambda: (
        (
            torch.tensor([6, 1, 1, 1, 1, 8, 1, 1]),
            rand(8, 3) * 1.5,
            torch.tensor([0, 0, 0, 0, 0, 1, 1, 1]),
        ),
        {},
    ),
)
def schnet():
    return SchNet(
        hidden_channels=32,
        num_filters=32,
        num_interactions=3,
        num_gaussians=20,
        cutoff=5.0,
        max_z=10,
    )


# --------------------------------------------------------------------------- MPNN (Gilmer et al.)


class EdgeNetwork(nn.Module):
    """Message function M(h_w, e_vw) = A(e_vw) h_w with A produced by an MLP."""

    def __init__(self, edge_dim, node_dim, hidden=64):
        super().__init__()
        self.node_dim = node_dim
        self.net = nn.Sequential(
            nn.Linear(edge_dim, hidden), nn.ReLU(), nn.Linear(hidden, node_dim * node_dim)
        )

    def forward(self, h, edge_index, edge_attr):
        A = self.net(edge_attr).view(-1, self.node_dim, self.node_dim)
        src, dst = edge_index
        msg = torch.bmm(A, h[src].unsqueeze(-1)).squeeze(-1)
        return torch.zeros_like(h).index_add_(0, dst, msg)


class Set2Set(nn.Module):
    def __init__(self, in_channels, processing_steps, num_layers=1):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, 2 * in_channels
        self.processing_steps = processing_steps
        self.lstm = nn.LSTM(self.out_channels, in_channels, num_layers)

    def forward(self, x, batch, num_graphs):
        h = (x.new_zeros((self.lstm.num_layers, num_graphs, self.in_channels)),) * 2
        q_star = x.new_zeros(num_graphs, self.out_channels)
        for _ in range(self.processing_steps):
            q, h = self.lstm(q_star.unsqueeze(0), h)
            q = q.view(num_graphs, self.in_channels)
            e = (x * q[batch]).sum(dim=-1)
            e_max = torch.full((num_graphs,), -1e9).scatter_reduce(0, batch, e, "amax")
            a = torch.exp(e - e_max[batch])
            a = a / torch.zeros(num_graphs).index_add_(0, batch, a)[batch]
            r = torch.zeros(num_graphs, self.in_channels).index_add_(0, batch, a.unsqueeze(-1) * x)
            q_star = torch.cat([q, r], dim=-1)
        return q_star


class MPNN(nn.Module):
    def __init__(self, node_in, edge_in, dim=32, steps=3, s2s_steps=3, out_dim=1):
        super().__init__()
        self.steps = steps
        self.lin0 = nn.Linear(node_in, dim)
        self.message = EdgeNetwork(edge_in, dim, hidden=2 * dim)
        self.gru = nn.GRU(dim, dim)
        self.set2set = Set2Set(dim, processing_steps=s2s_steps)
        self.lin1 = nn.Linear(2 * dim, dim)
        self.lin2 = nn.Linear(dim, out_dim)

    def forward(self, x, edge_index, edge_attr, batch):
        out = F.relu(self.lin0(x))
        h = out.unsqueeze(0)
        for _ in range(self.steps):
            m = F.relu(self.message(out, edge_index, edge_attr))
            out, h = self.gru(m.unsqueeze(0), h)
            out = out.squeeze(0)
        out = self.set2set(out, batch, int(batch.max()) + 1)
        return self.lin2(F.relu(self.lin1(out)))


def _mpnn_example():
    edges = torch.cat([ring_edges(5), ring_edges(4) + 5], 1)
    return (
        rand(9, 11),
        edges,
        rand(edges.shape[1], 4, seed=1),
        torch.tensor([0] * 5 + [1] * 4),
    ), {}


@heldout("mpnn_qm9", _mpnn_example)
def mpnn_qm9():
    return MPNN(11, 4, dim=24)


# --------------------------------------------------------------------------- DiffPool (dense)


class DenseGraphConv(nn.Module):
    def __init__(self, in_channels, out_channels, normalize=False, bias=True):
        super().__init__()
        self.normalize = normalize
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels))
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x, adj, mask=None):
        B, N, _ = adj.shape
        adj = adj.clone()
        idx = torch.arange(N)
        adj[:, idx, idx] = 1
        out = x @ self.weight
        deg = adj.sum(-1).clamp(min=1).pow(-0.5)
        adj = deg.unsqueeze(-1) * adj * deg.unsqueeze(-2)
        out = adj @ out
        if self.bias is not None:
            out = out + self.bias
        if self.normalize:
            out = F.normalize(out, p=2, dim=-1)
        if mask is not None:
            out = out * mask.view(B, N, 1).to(x.dtype)
        return out


class GNNStack(nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, normalize=False, lin=True):
        super().__init__()
        self.conv1 = DenseGraphConv(in_channels, hidden_channels, normalize)
        self.bn1 = nn.BatchNorm1d(hidden_channels)
        self.conv2 = DenseGraphConv(hidden_channels, hidden_channels, normalize)
        self.bn2 = nn.BatchNorm1d(hidden_channels)
        self.conv3 = DenseGraphConv(hidden_channels, out_channels, normalize)
        self.bn3 = nn.BatchNorm1d(out_channels)
        self.lin = nn.Linear(2 * hidden_channels + out_channels, out_channels) if lin else None

    def bn(self, i, x):
        b, n, c = x.size()
        return getattr(self, f"bn{i}")(x.view(-1, c)).view(b, n, c)

    def forward(self, x, adj, mask=None):
        x1 = self.bn(1, F.relu(self.conv1(x, adj, mask)))
        x2 = self.bn(2, F.relu(self.conv2(x1, adj, mask)))
        x3 = self.bn(3, F.relu(self.conv3(x2, adj, mask)))
        x = torch.cat([x1, x2, x3], dim=-1)
        return F.relu(self.lin(x)) if self.lin is not None else x


def dense_diff_pool(x, adj, s, mask=None):
    s = torch.softmax(s, dim=-1)
    if mask is not None:
        m = mask.unsqueeze(-1).to(x.dtype)
        x, s = x * m, s * m
    out = s.transpose(1, 2) @ x
    out_adj = s.transpose(1, 2) @ adj @ s
    link_loss = torch.norm(adj - s @ s.transpose(1, 2), p=2) / adj.numel()
    ent_loss = (-s * torch.log(s + 1e-15)).sum(dim=-1).mean()
    return out, out_adj, link_loss, ent_loss


class DiffPoolNet(nn.Module):
    def __init__(self, num_features, num_classes, max_nodes=20, hidden=16, ratio=0.25):
        super().__init__()
        num_nodes = math.ceil(ratio * max_nodes)
        self.gnn1_pool = GNNStack(num_features, hidden, num_nodes)
        self.gnn1_embed = GNNStack(num_features, hidden, hidden, lin=False)
        num_nodes = math.ceil(ratio * num_nodes)
        self.gnn2_pool = GNNStack(3 * hidden, hidden, num_nodes)
        self.gnn2_embed = GNNStack(3 * hidden, hidden, hidden, lin=False)
        self.gnn3_embed = GNNStack(3 * hidden, hidden, hidden, lin=False)
        self.lin1 = nn.Linear(3 * hidden, hidden)
        self.lin2 = nn.Linear(hidden, num_classes)

    def forward(self, x, adj, mask):
        s = self.gnn1_pool(x, adj, mask)
        x = self.gnn1_embed(x, adj, mask)
        x, adj, l1, e1 = dense_diff_pool(x, adj, s, mask)
        s = self.gnn2_pool(x, adj)
        x = self.gnn2_embed(x, adj)
        x, adj, l2, e2 = dense_diff_pool(x, adj, s)
        x = self.gnn3_embed(x, adj).mean(dim=1)
        x = self.lin2(F.relu(self.lin1(x)))
        return F.log_softmax(x, dim=-1), l1 + l2, e1 + e2


def _diffpool_example():
    adj = (rand(3, 20, 20, seed=1) > 0.8).float()
    adj = ((adj + adj.transpose(1, 2)) > 0).float()
    mask = torch.arange(20)[None] < torch.tensor([[20], [15], [12]])
    return (rand(3, 20, 7), adj, mask), {}


@heldout("diffpool_dense", _diffpool_example)
def diffpool_dense():
    return DiffPoolNet(7, 3, max_nodes=20, hidden=16)
