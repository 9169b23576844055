"""Differentiable tree ensembles for tabular data: NODE's oblivious decision trees.

Feature-selection logits, thresholds and temperatures as raw parameters, a one-hot bin-code
buffer, a dense block that subclasses nn.Sequential and takes the tree class as an argument, and
a Lambda module wrapping a function, as in the paper's code.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand
from .tabular import sparsemax

# --------------------------------------------------------------------------- NODE


def sparsemoid(x):
    return (0.5 * x + 0.5).clamp_(0, 1)


class ODST(nn.Module):
    """Oblivious differentiable decision trees (Popov et al.), entmax swapped for sparsemax."""

    def __init__(self, in_features, num_trees, depth=4, tree_dim=1, flatten_output=True):
        super().__init__()
        self.depth, self.num_trees, self.tree_dim, self.flatten_output = (
            depth,
            num_trees,
            tree_dim,
            flatten_output,
        )
        self.response = nn.Parameter(torch.randn(num_trees, tree_dim, 2**depth))
        self.feature_selection_logits = nn.Parameter(torch.rand(in_features, num_trees, depth))
        self.feature_thresholds = nn.Parameter(torch.randn(num_trees, depth) * 0.1)
        self.log_temperatures = nn.Parameter(torch.zeros(num_trees, depth))
        with torch.no_grad():
            indices = torch.arange(2**depth)
            offsets = 2 ** torch.arange(depth)
            bin_codes = (indices.view(1, -1) // offsets.view(-1, 1) % 2).float()
            self.register_buffer(
                "bin_codes_1hot",
                torch.stack([bin_codes, 1.0 - bin_codes], dim=-1),
                persistent=False,
            )

    def forward(self, x):
        selectors = sparsemax(self.feature_selection_logits, dim=0)
        feature_values = torch.einsum("bi,ind->bnd", x, selectors)
        logits = (feature_values - self.feature_thresholds) * torch.exp(-self.log_temperatures)
        logits = torch.stack([-logits, logits], dim=-1)
        bins = sparsemoid(logits)
        matches = torch.einsum("btds,dcs->btdc", bins, self.bin_codes_1hot)
        weights = torch.prod(matches, dim=-2)
        out = torch.einsum("bnd,ncd->bnc", weights, self.response)
        return out.flatten(1, 2) if self.flatten_output else out


class DenseBlock(nn.Sequential):
    def __init__(self, input_dim, layer_dim, num_layers, tree_dim=1, max_features=None, input_dropout=0.0,
                 flatten_output=True, Module=ODST, **kwargs):  # fmt: skip
        layers = []
        for _ in range(num_layers):
            oddt = Module(input_dim, layer_dim, tree_dim=tree_dim, flatten_output=True, **kwargs)
            input_dim = min(input_dim + layer_dim * tree_dim, max_features or float("inf"))
            layers.append(oddt)
        super().__init__(*layers)
        self.num_layers, self.layer_dim, self.tree_dim = num_layers, layer_dim, tree_dim
        self.max_features, self.flatten_output, self.input_dropout = (
            max_features,
            flatten_output,
            input_dropout,
        )

    def forward(self, x):
        initial = x.shape[-1]
        for layer in self:
            inp = x
            if self.max_features is not None:
                tail = inp[..., initial:]
                inp = torch.cat(
                    [inp[..., :initial], tail[..., -(self.max_features - initial) :]], dim=-1
                )
            if self.training and self.input_dropout:
                inp = F.dropout(inp, self.input_dropout)
            x = torch.cat([x, layer(inp)], dim=-1)
        out = x[..., initial:]
        if not self.flatten_output:
            out = out.view(*out.shape[:-1], self.num_layers * self.layer_dim, self.tree_dim)
        return out


class Lambda(nn.Module):
    def __init__(self, func):
        super().__init__()
        self.func = func

    def forward(self, *args):
        return self.func(*args)


@heldout("node_trees", lambda: ((rand(8, 10),), {}))
def node_trees():
    return nn.Sequential(
        nn.BatchNorm1d(10),
        DenseBlock(
            10,
            layer_dim=16,
            num_layers=2,
            tree_dim=2,
            depth=4,
            flatten_output=False,
            input_dropout=0.1,
        ),
        Lambda(lambda x: x[..., 0].mean(dim=-1)),
    )
