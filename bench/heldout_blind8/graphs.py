"""Graph models: GraphSAGE over sampled neighbourhoods as dense tensors, a hand-written GAT,
a graph U-Net with top-k pooling and a temporal graph network with a node memory."""

from __future__ import annotations

from enum import Enum

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


class Aggregator(str, Enum):
    MEAN = "mean"
    POOL = "pool"
    LSTM = "lstm"


class MeanAggregator(nn.Module):
    def __init__(self, in_dim, out_dim, concat=True):
        super().__init__()
        self.concat = concat
        self.fc_self = nn.Linear(in_dim, out_dim, bias=False)
        self.fc_neigh = nn.Linear(in_dim, out_dim, bias=False)

    def aggregate(self, neigh):
        return neigh.mean(dim=-2)

    def forward(self, self_feats, neigh_feats):
        a, b = self.fc_self(self_feats), self.fc_neigh(self.aggregate(neigh_feats))
        return torch.cat([a, b], -1) if self.concat else a + b


class PoolAggregator(MeanAggregator):
    def __init__(self, in_dim, out_dim, concat=True, pool_dim=32):
        super().__init__(pool_dim, out_dim, concat)
        self.fc_self = nn.Linear(in_dim, out_dim, bias=False)
        self.mlp = nn.Sequential(nn.Linear(in_dim, pool_dim), nn.ReLU())

    def aggregate(self, neigh):
        return self.mlp(neigh).max(dim=-2).values


class LSTMAggregator(MeanAggregator):
    def __init__(self, in_dim, out_dim, concat=True):
        super().__init__(in_dim, out_dim, concat)
        self.lstm = nn.LSTM(in_dim, in_dim, batch_first=True)

    def aggregate(self, neigh):
        shape = neigh.shape
        out, _ = self.lstm(neigh.reshape(-1, shape[-2], shape[-1]))
        return out[:, -1].reshape(*shape[:-2], shape[-1])


AGGREGATORS = {
    Aggregator.MEAN: MeanAggregator,
    Aggregator.POOL: PoolAggregator,
    Aggregator.LSTM: LSTMAggregator,
}


class GraphSAGE(nn.Module):
    def __init__(self, in_dim, dims, num_classes, aggregator=Aggregator.MEAN, concat=True):
        super().__init__()
        agg_cls = AGGREGATORS[Aggregator(aggregator)]
        self.layers = nn.ModuleList()
        d = in_dim
        for out in dims:
            self.layers.append(agg_cls(d, out, concat=concat))
            d = out * 2 if concat else out
        self.classifier = nn.Linear(d, num_classes)

    def forward(self, hops):
        # hops[k]: features of k-hop samples, shape (B, S1, ..., Sk, F)
        for layer in self.layers:
            hops = [F.relu(layer(hops[k], hops[k + 1])) for k in range(len(hops) - 1)]
            hops = [F.normalize(h, dim=-1) for h in hops]
        return self.classifier(hops[0])


@heldout(
    "graphsage_sampled",
    lambda: (([rand(4, 12), rand(4, 5, 12, seed=1), rand(4, 5, 3, 12, seed=2)],), {}),
)
def build_graphsage():
    return GraphSAGE(12, [16, 16], 5, aggregator="pool")


@heldout(
    "graphsage_lstm_agg",
    lambda: (([rand(4, 12), rand(4, 5, 12, seed=1), rand(4, 5, 3, 12, seed=2)],), {}),
)
def build_graphsage_lstm():
    return GraphSAGE(12, [16, 8], 5, aggregator=Aggregator.LSTM, concat=False)


# ----------------------------------------------------------------------------- GAT


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
        zero_vec = -9e15 * torch.ones_like(e)
        attention = torch.where(adj > 0, e, zero_vec)
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
        self.out_att = GraphAttentionLayer(
            nhid * nheads, nclass, dropout=dropout, alpha=alpha, concat=False
        )

    def forward(self, x, adj):
        x = F.dropout(x, self.dropout, training=self.training)
        x = torch.cat([att(x, adj) for att in self.attentions], dim=1)
        x = F.dropout(x, self.dropout, training=self.training)
        x = F.elu(self.out_att(x, adj))
        return F.log_softmax(x, dim=1)


def _adj(n, p=0.3, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = (torch.rand(n, n, generator=g) < p).float()
    a = ((a + a.T + torch.eye(n)) > 0).float()
    return a


@heldout(
    "gat_by_hand",
    lambda: ((rand(10, 16), _adj(10)), {}),
)
def build_gat():
    return GAT(nfeat=16, nhid=8, nclass=4, dropout=0.6, alpha=0.2, nheads=3)


# ----------------------------------------------------------------------------- Graph U-Net


class GCN(nn.Module):
    def __init__(self, in_dim, out_dim, act, p):
        super().__init__()
        self.proj = nn.Linear(in_dim, out_dim)
        self.act = act
        self.drop = nn.Dropout(p=p) if p > 0.0 else nn.Identity()

    def forward(self, g, h):
        h = self.drop(h)
        h = torch.matmul(g, h)
        return self.act(self.proj(h))


def norm_g(g):
    degrees = torch.sum(g, 1)
    return g / degrees


def top_k_graph(scores, g, h, k):
    num_nodes = g.shape[0]
    values, idx = torch.topk(scores, max(2, int(k * num_nodes)))
    new_h = h[idx, :] * values.unsqueeze(-1)
    un_g = g.bool().float()
    un_g = torch.matmul(un_g, un_g).bool().float()
    un_g = un_g[idx, :][:, idx]
    return norm_g(un_g), new_h, idx


class Pool(nn.Module):
    def __init__(self, k, in_dim, p):
        super().__init__()
        self.k = k
        self.sigmoid = nn.Sigmoid()
        self.proj = nn.Linear(in_dim, 1)
        self.drop = nn.Dropout(p=p) if p > 0 else nn.Identity()

    def forward(self, g, h):
        weights = self.proj(self.drop(h)).squeeze()
        return top_k_graph(self.sigmoid(weights), g, h, self.k)


class Unpool(nn.Module):
    def forward(self, g, h, pre_h, idx):
        new_h = h.new_zeros([g.shape[0], h.shape[1]])
        new_h[idx] = h
        return g, new_h


class GraphUnet(nn.Module):
    def __init__(self, ks, in_dim, out_dim, dim, act, drop_p):
        super().__init__()
        self.ks = ks
        self.start_gcn = GCN(in_dim, dim, act, drop_p)
        self.bottom_gcn = GCN(dim, dim, act, drop_p)
        self.down_gcns = nn.ModuleList()
        self.up_gcns = nn.ModuleList()
        self.pools = nn.ModuleList()
        self.unpools = nn.ModuleList()
        self.l_n = len(ks)
        for i in range(self.l_n):
            self.down_gcns.append(GCN(dim, dim, act, drop_p))
            self.up_gcns.append(GCN(dim, dim, act, drop_p))
            self.pools.append(Pool(ks[i], dim, drop_p))
            self.unpools.append(Unpool())
        self.out = nn.Linear(2 * dim, out_dim)

    def forward(self, g, h):
        adj_ms, indices_list, down_outs = [], [], []
        h = self.start_gcn(g, h)
        org_h = h
        for i in range(self.l_n):
            h = self.down_gcns[i](g, h)
            adj_ms.append(g)
            down_outs.append(h)
            g, h, idx = self.pools[i](g, h)
            indices_list.append(idx)
        h = self.bottom_gcn(g, h)
        for i in range(self.l_n):
            up_idx = self.l_n - i - 1
            g, idx = adj_ms[up_idx], indices_list[up_idx]
            g, h = self.unpools[i](g, h, down_outs[up_idx], idx)
            h = self.up_gcns[i](g, h)
            h = h.add(down_outs[up_idx])
        h = torch.cat([h, org_h], 1)
        return self.out(h)


@heldout(
    "graph_unet_topk",
    lambda: ((norm_g(_adj(16, seed=3)), rand(16, 8)), {}),
    edit=("pools.0", {"k": 0.5, "p": 0.1}),
)
def build_graph_unet():
    return GraphUnet([0.8, 0.6], 8, 3, 16, F.elu, 0.0)


# ----------------------------------------------------------------------------- TGN


class TimeEncode(nn.Module):
    def __init__(self, dimension):
        super().__init__()
        self.dimension = dimension
        self.w = nn.Linear(1, dimension)
        self.w.weight = nn.Parameter(
            torch.from_numpy(1 / 10 ** np.linspace(0, 9, dimension)).float().reshape(dimension, -1)
        )
        self.w.bias = nn.Parameter(torch.zeros(dimension).float())

    def forward(self, t):
        return torch.cos(self.w(t.unsqueeze(-1)))


class MLPMessageFunction(nn.Module):
    def __init__(self, raw_message_dimension, message_dimension):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(raw_message_dimension, raw_message_dimension // 2),
            nn.ReLU(),
            nn.Linear(raw_message_dimension // 2, message_dimension),
        )

    def compute_message(self, raw_messages):
        return self.mlp(raw_messages)

    forward = compute_message


class GRUMemoryUpdater(nn.Module):
    def __init__(self, memory_dimension, message_dimension):
        super().__init__()
        self.memory_updater = nn.GRUCell(input_size=message_dimension, hidden_size=memory_dimension)

    def forward(self, messages, memory):
        return self.memory_updater(messages, memory)


class TemporalAttentionEmbedding(nn.Module):
    def __init__(self, memory_dim, edge_dim, time_dim, n_heads=2):
        super().__init__()
        q_dim = memory_dim + time_dim
        self.attn = nn.MultiheadAttention(
            q_dim,
            n_heads,
            kdim=memory_dim + edge_dim + time_dim,
            vdim=memory_dim + edge_dim + time_dim,
            batch_first=True,
        )
        self.merge = nn.Sequential(
            nn.Linear(q_dim + memory_dim, memory_dim), nn.ReLU(), nn.Linear(memory_dim, memory_dim)
        )

    def forward(self, node_mem, node_time_emb, neigh_mem, neigh_edge, neigh_time_emb):
        q = torch.cat([node_mem, node_time_emb], -1).unsqueeze(1)
        kv = torch.cat([neigh_mem, neigh_edge, neigh_time_emb], -1)
        out, _ = self.attn(q, kv, kv)
        return self.merge(torch.cat([out.squeeze(1), node_mem], -1))


class MergeLayer(nn.Module):
    def __init__(self, dim1, dim2, dim3, dim4):
        super().__init__()
        self.fc1 = nn.Linear(dim1 + dim2, dim3)
        self.fc2 = nn.Linear(dim3, dim4)
        self.act = nn.ReLU()
        nn.init.xavier_normal_(self.fc1.weight)
        nn.init.xavier_normal_(self.fc2.weight)

    def forward(self, x1, x2):
        return self.fc2(self.act(self.fc1(torch.cat([x1, x2], dim=1))))


class TGN(nn.Module):
    def __init__(self, n_nodes, edge_dim=6, memory_dim=16, time_dim=8, n_neighbors=4):
        super().__init__()
        self.n_nodes = n_nodes
        self.n_neighbors = n_neighbors
        self.register_buffer("memory", torch.zeros(n_nodes, memory_dim))
        self.register_buffer("last_update", torch.zeros(n_nodes))
        self.time_encoder = TimeEncode(time_dim)
        raw = 2 * memory_dim + edge_dim + time_dim
        self.message_function = MLPMessageFunction(raw, memory_dim)
        self.memory_updater = GRUMemoryUpdater(memory_dim, memory_dim)
        self.embedding_module = TemporalAttentionEmbedding(memory_dim, edge_dim, time_dim)
        self.affinity_score = MergeLayer(memory_dim, memory_dim, memory_dim, 1)

    def embed(self, nodes, t, neighbors, neighbor_edges, neighbor_times):
        mem = self.memory[nodes]
        t_emb = self.time_encoder(torch.zeros_like(t))
        n_emb = self.time_encoder(t.unsqueeze(1) - neighbor_times)
        return self.embedding_module(mem, t_emb, self.memory[neighbors], neighbor_edges, n_emb)

    def forward(self, src, dst, t, edge_feat, neighbors, neighbor_edges, neighbor_times):
        n = src.shape[0]
        nodes = torch.cat([src, dst])
        tt = torch.cat([t, t])
        emb = self.embed(nodes, tt, neighbors, neighbor_edges, neighbor_times)
        score = self.affinity_score(emb[:n], emb[n:]).squeeze(-1)
        if self.training:
            delta = self.time_encoder(t - self.last_update[src])
            raw = torch.cat([self.memory[src], self.memory[dst], edge_feat, delta], -1)
            msg = self.message_function(raw)
            new_mem = self.memory_updater(msg, self.memory[src])
            self.memory[src] = new_mem.detach()
            self.last_update[src] = t
        return score.sigmoid()


def _tgn_example():
    g = torch.Generator().manual_seed(5)
    b, k = 3, 4
    src = torch.tensor([0, 2, 5])
    dst = torch.tensor([1, 7, 3])
    t = torch.tensor([1.0, 2.0, 3.5])
    return (
        (
            src,
            dst,
            t,
            rand(b, 6, seed=6),
            torch.randint(0, 10, (2 * b, k), generator=g),
            rand(2 * b, k, 6, seed=7),
            torch.rand(2 * b, k, generator=g),
        ),
        {},
    )


@heldout("tgn_memory", _tgn_example)
def build_tgn():
    return TGN(n_nodes=10)
