"""Equivariant networks: an E(n)-equivariant GNN and a hand-written p4 group CNN."""

# ruff: noqa: B008, UP031  (kept as the paper's code writes it)

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------------------------
# EGNN (Satorras, Hoogeboom & Welling 2021), as in the authors' egnn_clean.py
# ----------------------------------------------------------------------------------------------


class E_GCL(nn.Module):
    """E(n) Equivariant Convolutional Layer."""

    def __init__(
        self,
        input_nf,
        output_nf,
        hidden_nf,
        edges_in_d=0,
        act_fn=nn.SiLU(),
        residual=True,
        attention=False,
        normalize=False,
        coords_agg="mean",
        tanh=False,
    ):
        super().__init__()
        input_edge = input_nf * 2
        self.residual = residual
        self.attention = attention
        self.normalize = normalize
        self.coords_agg = coords_agg
        self.tanh = tanh
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
        torch.nn.init.xavier_uniform_(layer.weight, gain=0.001)

        coord_mlp = []
        coord_mlp.append(nn.Linear(hidden_nf, hidden_nf))
        coord_mlp.append(act_fn)
        coord_mlp.append(layer)
        if self.tanh:
            coord_mlp.append(nn.Tanh())
        self.coord_mlp = nn.Sequential(*coord_mlp)

        if self.attention:
            self.att_mlp = nn.Sequential(nn.Linear(hidden_nf, 1), nn.Sigmoid())

    def edge_model(self, source, target, radial, edge_attr):
        if edge_attr is None:
            out = torch.cat([source, target, radial], dim=1)
        else:
            out = torch.cat([source, target, radial, edge_attr], dim=1)
        out = self.edge_mlp(out)
        if self.attention:
            att_val = self.att_mlp(out)
            out = out * att_val
        return out

    def node_model(self, x, edge_index, edge_attr, node_attr):
        row, col = edge_index
        agg = unsorted_segment_sum(edge_attr, row, num_segments=x.size(0))
        if node_attr is not None:
            agg = torch.cat([x, agg, node_attr], dim=1)
        else:
            agg = torch.cat([x, agg], dim=1)
        out = self.node_mlp(agg)
        if self.residual:
            out = x + out
        return out, agg

    def coord_model(self, coord, edge_index, coord_diff, edge_feat):
        row, col = edge_index
        trans = coord_diff * self.coord_mlp(edge_feat)
        if self.coords_agg == "sum":
            agg = unsorted_segment_sum(trans, row, num_segments=coord.size(0))
        elif self.coords_agg == "mean":
            agg = unsorted_segment_mean(trans, row, num_segments=coord.size(0))
        else:
            raise Exception(f"Wrong coords_agg parameter {self.coords_agg}")
        coord = coord + agg
        return coord

    def coord2radial(self, edge_index, coord):
        row, col = edge_index
        coord_diff = coord[row] - coord[col]
        radial = torch.sum(coord_diff**2, 1).unsqueeze(1)

        if self.normalize:
            norm = torch.sqrt(radial).detach() + self.epsilon
            coord_diff = coord_diff / norm

        return radial, coord_diff

    def forward(self, h, edge_index, coord, edge_attr=None, node_attr=None):
        row, col = edge_index
        radial, coord_diff = self.coord2radial(edge_index, coord)

        edge_feat = self.edge_model(h[row], h[col], radial, edge_attr)
        coord = self.coord_model(coord, edge_index, coord_diff, edge_feat)
        h, agg = self.node_model(h, edge_index, edge_feat, node_attr)

        return h, coord, edge_attr


class EGNN(nn.Module):
    def __init__(
        self,
        in_node_nf,
        hidden_nf,
        out_node_nf,
        in_edge_nf=0,
        device="cpu",
        act_fn=nn.SiLU(),
        n_layers=4,
        residual=True,
        attention=False,
        normalize=False,
        tanh=False,
    ):
        super().__init__()
        self.hidden_nf = hidden_nf
        self.device = device
        self.n_layers = n_layers
        self.embedding_in = nn.Linear(in_node_nf, self.hidden_nf)
        self.embedding_out = nn.Linear(self.hidden_nf, out_node_nf)
        for i in range(0, n_layers):
            self.add_module(
                "gcl_%d" % i,
                E_GCL(
                    self.hidden_nf,
                    self.hidden_nf,
                    self.hidden_nf,
                    edges_in_d=in_edge_nf,
                    act_fn=act_fn,
                    residual=residual,
                    attention=attention,
                    normalize=normalize,
                    tanh=tanh,
                ),
            )
        self.to(self.device)

    def forward(self, h, x, edges, edge_attr):
        h = self.embedding_in(h)
        for i in range(0, self.n_layers):
            h, x, _ = self._modules["gcl_%d" % i](h, edges, x, edge_attr=edge_attr)
        h = self.embedding_out(h)
        return h, x


def unsorted_segment_sum(data, segment_ids, num_segments):
    result_shape = (num_segments, data.size(1))
    result = data.new_full(result_shape, 0)
    segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
    result.scatter_add_(0, segment_ids, data)
    return result


def unsorted_segment_mean(data, segment_ids, num_segments):
    result_shape = (num_segments, data.size(1))
    segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
    result = data.new_full(result_shape, 0)
    count = data.new_full(result_shape, 0)
    result.scatter_add_(0, segment_ids, data)
    count.scatter_add_(0, segment_ids, torch.ones_like(data))
    return result / count.clamp(min=1)


def get_edges(n_nodes):
    rows, cols = [], []
    for i in range(n_nodes):
        for j in range(n_nodes):
            if i != j:
                rows.append(i)
                cols.append(j)
    return [rows, cols]


def get_edges_batch(n_nodes, batch_size):
    edges = get_edges(n_nodes)
    edge_attr = torch.ones(len(edges[0]) * batch_size, 1)
    edges = [torch.LongTensor(edges[0]), torch.LongTensor(edges[1])]
    if batch_size > 1:
        rows, cols = [], []
        for i in range(batch_size):
            rows.append(edges[0] + n_nodes * i)
            cols.append(edges[1] + n_nodes * i)
        edges = [torch.cat(rows), torch.cat(cols)]
    return edges, edge_attr


def _egnn_example():
    batch_size, n_nodes, n_feat = 4, 5, 1
    h = torch.ones(batch_size * n_nodes, n_feat)
    x = rand(batch_size * n_nodes, 3)
    edges, edge_attr = get_edges_batch(n_nodes, batch_size)
    return (h, x, edges, edge_attr), {}


@heldout("egnn_nbody", _egnn_example, edit=("gcl_2", {"attention": True, "coords_agg": "sum"}))
def build_egnn():
    return EGNN(in_node_nf=1, hidden_nf=32, out_node_nf=1, in_edge_nf=1, n_layers=4)


# ----------------------------------------------------------------------------------------------
# p4 group-equivariant CNN (Cohen & Welling 2016) written by hand, no GrouPy
# ----------------------------------------------------------------------------------------------


def rot_img(w, k):
    """Rotate the last two dims by k * 90 degrees."""
    return torch.rot90(w, k, dims=(-2, -1))


class GConvBase(nn.Module):
    """Shared parameter handling of the lifting and group convolutions."""

    in_transformations = 1
    out_transformations = 4

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.weight = nn.Parameter(
            torch.empty(
                out_channels, in_channels, self.in_transformations, kernel_size, kernel_size
            )
        )
        if bias:
            self.bias = nn.Parameter(torch.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        n = self.in_channels * self.in_transformations
        for k in (self.kernel_size,):
            n *= k
        stdv = 1.0 / math.sqrt(n)
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def transformed_filters(self):
        raise NotImplementedError

    def forward(self, x):
        # x: (B, C_in, T_in, H, W) -> (B, C_out, 4, H', W')
        B = x.size(0)
        w = self.transformed_filters()
        Co, T = self.out_channels, self.out_transformations
        w = w.reshape(
            Co * T, self.in_channels * self.in_transformations, self.kernel_size, self.kernel_size
        )
        x = x.reshape(B, self.in_channels * self.in_transformations, x.size(-2), x.size(-1))
        y = F.conv2d(x, w, stride=self.stride, padding=self.padding)
        y = y.view(B, Co, T, y.size(-2), y.size(-1))
        if self.bias is not None:
            y = y + self.bias.view(1, -1, 1, 1, 1)
        return y


class P4ConvZ2(GConvBase):
    """Lifting layer: planar image to functions on p4."""

    in_transformations = 1

    def transformed_filters(self):
        return torch.stack([rot_img(self.weight, r) for r in range(4)], dim=1)


class P4ConvP4(GConvBase):
    """p4 to p4: rotate the filter spatially and cyclically shift its rotation axis."""

    in_transformations = 4

    def transformed_filters(self):
        out = []
        for r in range(4):
            w = rot_img(self.weight, r)
            w = torch.roll(w, shifts=r, dims=2)
            out.append(w)
        return torch.stack(out, dim=1)


def plane_group_spatial_max_pooling(x, ksize, stride=None, pad=0):
    xs = x.size()
    x = x.view(xs[0], xs[1] * xs[2], xs[3], xs[4])
    x = F.max_pool2d(input=x, kernel_size=ksize, stride=stride, padding=pad)
    x = x.view(xs[0], xs[1], xs[2], x.size()[2], x.size()[3])
    return x


class GroupBatchNorm(nn.BatchNorm3d):
    """BatchNorm over (B, C, G, H, W) sharing statistics over the group axis, as BatchNorm3d does."""


class P4CNN(nn.Module):
    def __init__(self, channels=(10, 10, 10, 10), num_classes=10, no_bn=False):
        super().__init__()
        layers = []
        c_in = 1
        for i, c in enumerate(channels):
            conv = P4ConvZ2(c_in, c, 3) if i == 0 else P4ConvP4(c_in, c, 3)
            layers.append(conv)
            c_in = c
        self.convs = nn.ModuleList(layers)
        self.bns = nn.ModuleList([nn.Identity() if no_bn else GroupBatchNorm(c) for c in channels])
        self.top = P4ConvP4(c_in, num_classes, 3)

    def forward(self, x):
        x = x.unsqueeze(2)
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            x = F.relu(bn(conv(x)))
            if i == 1:
                x = plane_group_spatial_max_pooling(x, 2, 2)
        x = self.top(x)
        # invariant read-out: max over rotations, then over space
        x = x.max(dim=2)[0]
        return F.adaptive_avg_pool2d(x, 1).flatten(1)


@heldout(
    "p4cnn_rotmnist",
    lambda: ((rand(2, 1, 28, 28),), {}),
    edit=("convs.2", {"kernel_size": 5, "padding": 1}),
)
def build_p4cnn():
    return P4CNN(channels=(8, 8, 8, 8))
