"""Tree and graph models: a child-sum Tree-LSTM for sentiment over dependency trees and GraphRNN
(node-level and edge-level GRUs)."""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .spec import heldout

# ----------------------------------------------------------------------------------------------
# Child-sum Tree-LSTM (Tai et al. 2015)
# ----------------------------------------------------------------------------------------------


class Tree:
    def __init__(self, idx):
        self.idx = idx
        self.children = []
        self.state = None

    def add_child(self, child):
        self.children.append(child)

    def depth(self):
        return 1 + max((c.depth() for c in self.children), default=0)


def tree_from_parents(parents):
    """Dependency parents, 1-based, 0 for the root (the SICK data format)."""
    nodes = [Tree(i) for i in range(len(parents))]
    root = None
    for i, p in enumerate(parents):
        if p == 0:
            root = nodes[i]
        else:
            nodes[p - 1].add_child(nodes[i])
    return root


class ChildSumTreeLSTM(nn.Module):
    def __init__(self, in_dim, mem_dim):
        super().__init__()
        self.in_dim = in_dim
        self.mem_dim = mem_dim
        self.ioux = nn.Linear(self.in_dim, 3 * self.mem_dim)
        self.iouh = nn.Linear(self.mem_dim, 3 * self.mem_dim)
        self.fx = nn.Linear(self.in_dim, self.mem_dim)
        self.fh = nn.Linear(self.mem_dim, self.mem_dim)

    def node_forward(self, inputs, child_c, child_h):
        child_h_sum = torch.sum(child_h, dim=0, keepdim=True)
        iou = self.ioux(inputs) + self.iouh(child_h_sum)
        i, o, u = torch.split(iou, iou.size(1) // 3, dim=1)
        i, o, u = torch.sigmoid(i), torch.sigmoid(o), torch.tanh(u)
        f = torch.sigmoid(self.fh(child_h) + self.fx(inputs).repeat(len(child_h), 1))
        fc = torch.mul(f, child_c)
        c = torch.mul(i, u) + torch.sum(fc, dim=0, keepdim=True)
        h = torch.mul(o, torch.tanh(c))
        return c, h

    def forward(self, tree, inputs):
        for idx in range(len(tree.children)):
            self.forward(tree.children[idx], inputs)

        if len(tree.children) == 0:
            child_c = inputs[0].detach().new(1, self.mem_dim).fill_(0.0).requires_grad_()
            child_h = inputs[0].detach().new(1, self.mem_dim).fill_(0.0).requires_grad_()
        else:
            child_c, child_h = zip(*map(lambda x: x.state, tree.children))
            child_c, child_h = torch.cat(child_c, dim=0), torch.cat(child_h, dim=0)

        tree.state = self.node_forward(inputs[tree.idx], child_c, child_h)
        return tree.state


class Similarity(nn.Module):
    """Module for finding similarity between two sentence representations (SICK relatedness)."""

    def __init__(self, mem_dim, hidden_dim, num_classes):
        super().__init__()
        self.mem_dim = mem_dim
        self.hidden_dim = hidden_dim
        self.num_classes = num_classes
        self.wh = nn.Linear(2 * self.mem_dim, self.hidden_dim)
        self.wp = nn.Linear(self.hidden_dim, self.num_classes)

    def forward(self, lvec, rvec):
        mult_dist = torch.mul(lvec, rvec)
        abs_dist = torch.abs(torch.add(lvec, -rvec))
        vec_dist = torch.cat((mult_dist, abs_dist), 1)
        out = torch.sigmoid(self.wh(vec_dist))
        return F.log_softmax(self.wp(out), dim=1)


class SimilarityTreeLSTM(nn.Module):
    def __init__(self, vocab_size, in_dim, mem_dim, hidden_dim, num_classes, sparsity, freeze):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, in_dim, padding_idx=0, sparse=sparsity)
        if freeze:
            self.emb.weight.requires_grad = False
        self.childsumtreelstm = ChildSumTreeLSTM(in_dim, mem_dim)
        self.similarity = Similarity(mem_dim, hidden_dim, num_classes)

    def forward(self, ltree, linputs, rtree, rinputs):
        linputs = self.emb(linputs)
        rinputs = self.emb(rinputs)
        lstate, lhidden = self.childsumtreelstm(tree_from_parents(ltree), linputs)
        rstate, rhidden = self.childsumtreelstm(tree_from_parents(rtree), rinputs)
        return self.similarity(lstate, rstate)


def _sick_pair():
    g = torch.Generator().manual_seed(0)
    lparents = [2, 0, 2, 5, 3, 5]
    rparents = [3, 3, 0, 3, 4]
    return (
        lparents,
        torch.randint(1, 50, (6,), generator=g),
        rparents,
        torch.randint(1, 50, (5,), generator=g),
    ), {}


@heldout("tree_lstm_sick", _sick_pair)
def build_tree_lstm():
    return SimilarityTreeLSTM(50, 24, 32, 16, 5, sparsity=False, freeze=False)


# ----------------------------------------------------------------------------------------------
# GraphRNN (You et al. 2018): a graph-level GRU whose hidden state seeds an edge-level GRU
# ----------------------------------------------------------------------------------------------


class GRU_plain(nn.Module):
    def __init__(
        self,
        input_size,
        embedding_size,
        hidden_size,
        num_layers,
        has_input=True,
        has_output=False,
        output_size=None,
    ):
        super().__init__()
        self.num_layers = num_layers
        self.hidden_size = hidden_size
        self.has_input = has_input
        self.has_output = has_output

        if has_input:
            self.input = nn.Linear(input_size, embedding_size)
            self.rnn = nn.GRU(
                input_size=embedding_size,
                hidden_size=hidden_size,
                num_layers=num_layers,
                batch_first=True,
            )
        else:
            self.rnn = nn.GRU(
                input_size=input_size,
                hidden_size=hidden_size,
                num_layers=num_layers,
                batch_first=True,
            )
        if has_output:
            self.output = nn.Sequential(
                nn.Linear(hidden_size, embedding_size),
                nn.ReLU(),
                nn.Linear(embedding_size, output_size),
            )

        self.relu = nn.ReLU()
        self.hidden = None

        for name, param in self.rnn.named_parameters():
            if "bias" in name:
                nn.init.constant_(param, 0.25)
            elif "weight" in name:
                nn.init.xavier_uniform_(param, gain=nn.init.calculate_gain("sigmoid"))
        for m in self.modules():
            if isinstance(m, nn.Linear):
                m.weight.data = nn.init.xavier_uniform_(
                    m.weight.data, gain=nn.init.calculate_gain("relu")
                )

    def init_hidden(self, batch_size):
        return torch.zeros(self.num_layers, batch_size, self.hidden_size)

    def forward(self, input_raw, pack=False, input_len=None):
        if self.has_input:
            input = self.input(input_raw)
            input = self.relu(input)
        else:
            input = input_raw
        if pack:
            input = pack_padded_sequence(input, input_len, batch_first=True)
        output_raw, self.hidden = self.rnn(input, self.hidden)
        if pack:
            output_raw = pad_packed_sequence(output_raw, batch_first=True)[0]
        if self.has_output:
            output_raw = self.output(output_raw)
        return output_raw


class GraphRNNArgs(NamedTuple):
    max_prev_node: int = 8
    embedding_size_rnn: int = 32
    hidden_size_rnn: int = 48
    embedding_size_rnn_output: int = 8
    hidden_size_rnn_output: int = 16
    num_layers: int = 2


class GraphRNN(nn.Module):
    """Teacher-forced training pass of GraphRNN-RNN over BFS-ordered adjacency sequences."""

    def __init__(self, args: GraphRNNArgs):
        super().__init__()
        self.args = args
        self.rnn = GRU_plain(
            input_size=args.max_prev_node,
            embedding_size=args.embedding_size_rnn,
            hidden_size=args.hidden_size_rnn,
            num_layers=args.num_layers,
            has_input=True,
            has_output=True,
            output_size=args.hidden_size_rnn_output,
        )
        self.output = GRU_plain(
            input_size=1,
            embedding_size=args.embedding_size_rnn_output,
            hidden_size=args.hidden_size_rnn_output,
            num_layers=args.num_layers,
            has_input=True,
            has_output=True,
            output_size=1,
        )

    def forward(self, x_unsorted, y_unsorted, y_len_unsorted):
        y_len_max = max(y_len_unsorted)
        x_unsorted = x_unsorted[:, 0:y_len_max, :]
        y_unsorted = y_unsorted[:, 0:y_len_max, :]
        self.rnn.hidden = self.rnn.init_hidden(batch_size=x_unsorted.size(0))

        y_len, sort_index = torch.sort(torch.as_tensor(y_len_unsorted), 0, descending=True)
        y_len = y_len.tolist()
        x = torch.index_select(x_unsorted, 0, sort_index)
        y = torch.index_select(y_unsorted, 0, sort_index)

        y_reshape = pack_padded_sequence(y, y_len, batch_first=True).data
        idx = [i for i in range(y_reshape.size(0) - 1, -1, -1)]
        idx = torch.LongTensor(idx)
        y_reshape = y_reshape.index_select(0, idx)
        y_reshape = y_reshape.view(y_reshape.size(0), y_reshape.size(1), 1)

        output_x = torch.cat((torch.ones(y_reshape.size(0), 1, 1), y_reshape[:, 0:-1, 0:1]), dim=1)
        output_y = y_reshape
        output_y_len = []
        output_y_len_bin = torch.bincount(torch.tensor(y_len))
        for i in range(len(output_y_len_bin) - 1, 0, -1):
            count_temp = int(torch.sum(output_y_len_bin[i:]).item())
            output_y_len.extend([min(i, y.size(2))] * count_temp)

        h = self.rnn(x, pack=True, input_len=y_len)
        h = pack_padded_sequence(h, y_len, batch_first=True).data
        h = h.index_select(0, idx)
        hidden_null = torch.zeros(self.args.num_layers - 1, h.size(0), h.size(1))
        self.output.hidden = torch.cat((h.view(1, h.size(0), h.size(1)), hidden_null), dim=0)
        y_pred = self.output(output_x, pack=True, input_len=output_y_len)
        y_pred = torch.sigmoid(y_pred)
        return y_pred, output_y


def _graph_batch():
    g = torch.Generator().manual_seed(0)
    B, N, M = 3, 10, 8
    y = (torch.rand(B, N, M, generator=g) > 0.6).float()
    lens = [10, 7, 9]
    for b, n in enumerate(lens):
        y[b, n:] = 0
    x = torch.cat([torch.ones(B, 1, M), y[:, :-1]], 1)
    return (x, y, lens), {}


@heldout("graphrnn", _graph_batch)
def build_graphrnn():
    return GraphRNN(GraphRNNArgs())
