# ruff: noqa: UP045  (the authors' habits are kept: this set measures code as people write it)
"""Graph and wrapper models: GraphSAGE on a dense adjacency, a knowledge-distillation
teacher/student wrapper, a sparse mixture-of-experts LM with top-k routing."""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Literal, Optional

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --- GraphSAGE, dense adjacency (no graph library) -------------------------------------------


class DenseSAGEConv(nn.Module):
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        aggr: Literal["mean", "max", "sum"] = "mean",
        normalize: bool = False,
        root_weight: bool = True,
        bias: bool = True,
    ):
        super().__init__()
        self.aggr = aggr
        self.normalize = normalize
        self.lin_rel = nn.Linear(in_channels, out_channels, bias=False)
        self.lin_root = nn.Linear(in_channels, out_channels, bias=False) if root_weight else None
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None

    def forward(
        self, x: torch.Tensor, adj: torch.Tensor, mask: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        # x: (B, N, F), adj: (B, N, N) with adj[b, i, j] = 1 for an edge j -> i
        if self.aggr == "max":
            neigh = x.unsqueeze(1).expand(-1, adj.size(1), -1, -1)
            neigh = neigh.masked_fill(adj.unsqueeze(-1) == 0, float("-inf")).max(dim=2).values
            neigh = torch.where(torch.isinf(neigh), torch.zeros_like(neigh), neigh)
        else:
            neigh = adj @ x
            if self.aggr == "mean":
                neigh = neigh / adj.sum(dim=-1, keepdim=True).clamp(min=1)
        out = self.lin_rel(neigh)
        if self.lin_root is not None:
            out = out + self.lin_root(x)
        if self.bias is not None:
            out = out + self.bias
        if self.normalize:
            out = F.normalize(out, p=2.0, dim=-1)
        if mask is not None:
            out = out * mask.unsqueeze(-1).to(out.dtype)
        return out


class GraphSAGE(nn.Module):
    def __init__(
        self,
        in_channels,
        hidden_channels,
        out_channels,
        num_layers=2,
        dropout=0.5,
        jk: Optional[str] = None,
        **conv_kwargs,
    ):
        super().__init__()
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for i in range(num_layers):
            cin = in_channels if i == 0 else hidden_channels
            self.convs.append(DenseSAGEConv(cin, hidden_channels, **conv_kwargs))
            self.norms.append(nn.LayerNorm(hidden_channels))
        self.jk = jk
        lin_in = hidden_channels * num_layers if jk == "cat" else hidden_channels
        self.lin = nn.Linear(lin_in, out_channels)
        self.dropout = dropout

    def forward(self, x, adj, mask=None):
        xs = []
        for conv, norm in zip(self.convs, self.norms):
            x = F.relu(norm(conv(x, adj, mask)))
            x = F.dropout(x, p=self.dropout, training=self.training)
            xs.append(x)
        if self.jk == "cat":
            x = torch.cat(xs, dim=-1)
        elif self.jk == "max":
            x = torch.stack(xs, dim=-1).max(dim=-1).values
        return self.lin(x)


def _graph_inputs():
    g = torch.Generator().manual_seed(80)
    adj = (torch.rand(2, 12, 12, generator=g) < 0.3).float()
    adj = ((adj + adj.transpose(1, 2)) > 0).float()
    mask = torch.ones(2, 12, dtype=torch.bool)
    mask[1, 9:] = False
    return (rand(2, 12, 10), adj), {"mask": mask}


@heldout(
    "graphsage_dense",
    example=_graph_inputs,
)
def graphsage_dense() -> nn.Module:
    torch.manual_seed(80)
    return GraphSAGE(10, 32, 4, num_layers=3, dropout=0.2, jk="cat", normalize=True)


# --- knowledge distillation (Hinton et al. 2015) + FitNets hint ------------------------------


def make_convnet(
    width_mult: float = 1.0, num_classes: int = 10, base=(32, 64, 128)
) -> nn.Sequential:
    chans = [int(c * width_mult) for c in base]
    layers = OrderedDict()
    prev = 3
    for i, c in enumerate(chans):
        layers[f"conv{i}"] = nn.Conv2d(prev, c, 3, padding=1, bias=False)
        layers[f"bn{i}"] = nn.BatchNorm2d(c)
        layers[f"relu{i}"] = nn.ReLU(inplace=True)
        layers[f"pool{i}"] = nn.MaxPool2d(2)
        prev = c
    layers["gap"] = nn.AdaptiveAvgPool2d(1)
    layers["flatten"] = nn.Flatten()
    layers["fc"] = nn.Linear(prev, num_classes)
    return nn.Sequential(layers)


class HintAdapter(nn.Module):
    """Maps the student's intermediate features to the teacher's width (FitNets regressor)."""

    def __init__(self, student_channels, teacher_channels, kernel_size=1):
        super().__init__()
        self.conv = nn.Conv2d(
            student_channels, teacher_channels, kernel_size, padding=kernel_size // 2, bias=False
        )
        self.bn = nn.BatchNorm2d(teacher_channels)

    def forward(self, x):
        return self.bn(self.conv(x))


class KDLoss(nn.Module):
    def __init__(self, T: float = 4.0, alpha: float = 0.9, reduction: str = "batchmean"):
        super().__init__()
        self.T, self.alpha, self.reduction = T, alpha, reduction

    def forward(self, student_logits, teacher_logits, labels=None):
        soft = (
            F.kl_div(
                F.log_softmax(student_logits / self.T, dim=1),
                F.softmax(teacher_logits / self.T, dim=1),
                reduction=self.reduction,
            )
            * self.T
            * self.T
        )
        if labels is None:
            return soft
        return self.alpha * soft + (1.0 - self.alpha) * F.cross_entropy(student_logits, labels)


class Distiller(nn.Module):
    def __init__(
        self,
        teacher: nn.Module,
        student: nn.Module,
        hint_layer: str = "relu1",
        criterion: Optional[nn.Module] = None,
        hint_weight: float = 0.0,
    ):
        super().__init__()
        self.teacher = teacher
        self.student = student
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        self.criterion = criterion if criterion is not None else KDLoss()
        self.hint_layer = hint_layer
        self.hint_weight = hint_weight
        if hint_weight > 0:
            s_ch = dict(student.named_modules())[hint_layer.replace("relu", "bn")].num_features
            t_ch = dict(teacher.named_modules())[hint_layer.replace("relu", "bn")].num_features
            self.adapter = HintAdapter(s_ch, t_ch)

    def train(self, mode: bool = True):
        super().train(mode)
        self.teacher.eval()  # the teacher's BatchNorm statistics stay frozen
        return self

    def _run(self, net, x):
        hint = None
        for name, layer in net.named_children():
            x = layer(x)
            if name == self.hint_layer:
                hint = x
        return x, hint

    def forward(self, x, labels=None):
        with torch.no_grad():
            t_logits, t_hint = self._run(self.teacher, x)
        s_logits, s_hint = self._run(self.student, x)
        loss = self.criterion(s_logits, t_logits, labels)
        if self.hint_weight > 0:
            loss = loss + self.hint_weight * F.mse_loss(self.adapter(s_hint), t_hint)
        return {"loss": loss, "logits": s_logits}


@heldout(
    "kd_distiller",
    example=lambda: ((rand(4, 3, 32, 32), torch.tensor([0, 3, 9, 1])), {}),
)
def kd_distiller() -> nn.Module:
    torch.manual_seed(81)
    teacher = make_convnet(1.0, base=(32, 64, 96))
    student = make_convnet(0.25, base=(32, 64, 96))
    return Distiller(teacher, student, criterion=KDLoss(T=4.0, alpha=0.7), hint_weight=0.5)


# --- sparse mixture of experts with top-k routing (Switch / Mixtral style) --------------------


class Expert(nn.Module):
    def __init__(self, dim, hidden_dim, act=F.silu):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)
        self.act = act

    def forward(self, x):
        return self.w2(self.act(self.w1(x)) * self.w3(x))


class TopKRouter(nn.Module):
    def __init__(self, dim, num_experts, top_k=2, noise_std=1.0):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.noise = nn.Linear(dim, num_experts, bias=False) if noise_std > 0 else None

    def forward(self, x):
        logits = self.gate(x)
        if self.training and self.noise is not None:
            logits = logits + torch.randn_like(logits) * F.softplus(self.noise(x))
        weights, idx = logits.topk(self.top_k, dim=-1)
        return F.softmax(weights, dim=-1, dtype=torch.float).to(x.dtype), idx, logits


class SparseMoE(nn.Module):
    def __init__(
        self,
        dim,
        num_experts=8,
        top_k=2,
        ffn_mult=4,
        capacity_factor: Optional[float] = None,
        **router_kwargs,
    ):
        super().__init__()
        self.router = TopKRouter(dim, num_experts, top_k=top_k, **router_kwargs)
        self.experts = nn.ModuleList([Expert(dim, ffn_mult * dim) for _ in range(num_experts)])
        self.capacity_factor = capacity_factor

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        weights, idx, logits = self.router(x)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token_idx, slot = torch.where(idx == e)
            if token_idx.numel() == 0:
                continue
            out.index_add_(0, token_idx, expert(x[token_idx]) * weights[token_idx, slot, None])
        # the Switch load-balancing loss, kept for the training loop to read
        probs = logits.softmax(-1)
        frac = F.one_hot(idx[:, 0], probs.size(-1)).float().mean(0)
        self.aux_loss = probs.size(-1) * (frac * probs.mean(0)).sum()
        return out.view(shape)


class MoEBlock(nn.Module):
    def __init__(self, dim, n_heads, moe_kwargs: dict):
        super().__init__()
        self.ln1 = nn.RMSNorm(dim)
        self.attn = nn.MultiheadAttention(dim, n_heads, batch_first=True, bias=False)
        self.ln2 = nn.RMSNorm(dim)
        self.moe = SparseMoE(dim, **moe_kwargs)

    def forward(self, x, causal_mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=causal_mask, need_weights=False)[0]
        return x + self.moe(self.ln2(x))


class MoELM(nn.Module):
    def __init__(self, vocab_size=256, dim=64, depth=2, n_heads=4, max_len=128, **moe_kwargs):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, dim)
        self.pos = nn.Embedding(max_len, dim)
        block = MoEBlock(dim, n_heads, moe_kwargs)
        self.blocks = nn.ModuleList([copy.deepcopy(block) for _ in range(depth)])
        for b in self.blocks:  # deepcopy gives every block the same weights; re-draw them
            for m in b.modules():
                if hasattr(m, "reset_parameters") and m is not b:
                    m.reset_parameters()
        self.norm = nn.RMSNorm(dim)
        self.head = nn.Linear(dim, vocab_size, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, ids):
        T = ids.size(1)
        mask = torch.full((T, T), float("-inf"), device=ids.device).triu(1)
        x = self.tok(ids) + self.pos(torch.arange(T, device=ids.device))
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(self.norm(x))


@heldout(
    "moe_lm",
    example=lambda: (
        (torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(82)),),
        {},
    ),
    edit=("blocks.0.moe", {"top_k": 1}),
)
def moe_lm() -> nn.Module:
    torch.manual_seed(82)
    return MoELM(vocab_size=256, dim=48, depth=2, n_heads=4, num_experts=4, top_k=2, ffn_mult=2)
