"""Models whose path depends on the data: a top-k mixture of experts, an early-exit network,
capsules with dynamic routing."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn

# --- Top-k MoE: ModuleList of experts, topk gate, index_add; returns (y, aux_loss) ---------------


class Expert(nn.Module):
    def __init__(self, n_embd, mult=4, dropout=0.0):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_embd, mult * n_embd),
            nn.ReLU(),
            nn.Linear(mult * n_embd, n_embd),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        return self.net(x)


class NoisyTopkRouter(nn.Module):
    def __init__(self, n_embed, num_experts, top_k):
        super(NoisyTopkRouter, self).__init__()
        self.top_k = top_k
        self.topkroute_linear = nn.Linear(n_embed, num_experts)
        self.noise_linear = nn.Linear(n_embed, num_experts)

    def forward(self, mh_output):
        logits = self.topkroute_linear(mh_output)
        if self.training:
            logits = logits + torch.randn_like(logits) * F.softplus(self.noise_linear(mh_output))
        top_k_logits, indices = logits.topk(self.top_k, dim=-1)
        zeros = torch.full_like(logits, float("-inf"))
        sparse_logits = zeros.scatter(-1, indices, top_k_logits)
        return F.softmax(sparse_logits, dim=-1), indices


class SparseMoE(nn.Module):
    def __init__(self, n_embed, num_experts, top_k, capacity_factor=1.0):
        super(SparseMoE, self).__init__()
        self.router = NoisyTopkRouter(n_embed, num_experts, top_k)
        self.experts = nn.ModuleList([Expert(n_embed) for _ in range(num_experts)])
        self.top_k = top_k
        self.capacity_factor = capacity_factor
        self.num_experts = num_experts

    def forward(self, x):
        gating_output, indices = self.router(x)
        final_output = torch.zeros_like(x)
        flat_x = x.view(-1, x.size(-1))
        flat_gating_output = gating_output.view(-1, gating_output.size(-1))
        for i, expert in enumerate(self.experts):
            expert_mask = (indices == i).any(dim=-1)
            flat_mask = expert_mask.view(-1)
            selected_indices = torch.nonzero(flat_mask).squeeze(-1)
            if selected_indices.numel() > 0:
                expert_input = flat_x[selected_indices]
                expert_output = expert(expert_input)
                gating_scores = flat_gating_output[selected_indices, i].unsqueeze(1)
                final_output.view(-1, x.size(-1)).index_add_(
                    0, selected_indices, expert_output * gating_scores
                )
        importance = gating_output.sum(dim=(0, 1))
        aux_loss = self.num_experts * (importance / importance.sum()).pow(2).sum()
        return final_output, aux_loss


class MoEBlock(nn.Module):
    def __init__(self, n_embed, n_head, num_experts, top_k):
        super().__init__()
        self.sa = nn.MultiheadAttention(n_embed, n_head, batch_first=True)
        self.smoe = SparseMoE(n_embed, num_experts, top_k)
        self.ln1 = nn.LayerNorm(n_embed)
        self.ln2 = nn.LayerNorm(n_embed)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.sa(h, h, h, need_weights=False)[0]
        y, aux = self.smoe(self.ln2(x))
        return x + y, aux


case(
    "moe_topk",
    lambda: MoEBlock(16, 2, num_experts=4, top_k=2),
    args(lambda: randn(2, 6, 16)),
    edit=("ln2", {"eps": 1e-6}),
    styles="topk routing, nonzero + index_add_, experts the data skips, (y, aux_loss) out",
)

# --- Early exit (BranchyNet): exits checked on the entropy in eval, all logits in train ---------


class BranchyNet(nn.Module):
    def __init__(self, in_ch=3, widths=(16, 32, 64), num_classes=10, exit_threshold=0.5):
        super().__init__()
        self.exit_threshold = exit_threshold
        self.stages = nn.ModuleList()
        self.exits = nn.ModuleList()
        prev = in_ch
        for w in widths:
            self.stages.append(
                nn.Sequential(
                    nn.Conv2d(prev, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)
                )
            )
            self.exits.append(
                nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(w, num_classes))
            )
            prev = w

    @staticmethod
    def entropy(logits):
        p = F.softmax(logits, dim=1)
        return -(p * torch.log(p + 1e-12)).sum(dim=1)

    def forward(self, x):
        outs = []
        for i, (stage, head) in enumerate(zip(self.stages, self.exits)):
            x = stage(x)
            logits = head(x)
            if self.training:
                outs.append(logits)
            elif (
                i < len(self.stages) - 1 and self.entropy(logits).max().item() < self.exit_threshold
            ):
                return logits
        return outs if self.training else logits


case(
    "early_exit",
    lambda: BranchyNet(widths=(8, 16, 16), num_classes=5, exit_threshold=0.01),
    args(lambda: randn(2, 3, 16, 16)),
    edit=("stages.0.2", {"inplace": True}),
    styles="an .item() branch on the data (early exit), a list out in train mode",
)

# --- Capsule network: squash, dynamic routing by agreement, masking by the longest capsule -------


def squash(s, dim=-1):
    n = (s**2).sum(dim=dim, keepdim=True)
    return n / (1 + n) * s / torch.sqrt(n + 1e-8)


class PrimaryCaps(nn.Module):
    def __init__(self, in_channels, out_caps, caps_dim, kernel_size, stride):
        super(PrimaryCaps, self).__init__()
        self.caps_dim = caps_dim
        self.conv = nn.Conv2d(in_channels, out_caps * caps_dim, kernel_size, stride)

    def forward(self, x):
        out = self.conv(x)
        return squash(out.view(out.size(0), -1, self.caps_dim))


class DigitCaps(nn.Module):
    def __init__(self, in_caps, in_dim, num_caps, dim_caps, num_routing=3):
        super(DigitCaps, self).__init__()
        self.in_caps, self.num_caps, self.num_routing = in_caps, num_caps, num_routing
        self.W = nn.Parameter(0.01 * torch.randn(1, num_caps, in_caps, dim_caps, in_dim))

    def forward(self, x):
        batch_size = x.size(0)
        x = x.unsqueeze(1).unsqueeze(4)
        u_hat = torch.matmul(self.W, x).squeeze(-1)
        temp_u_hat = u_hat.detach()
        b = torch.zeros(batch_size, self.num_caps, self.in_caps, 1).to(x.device)
        for route_iter in range(self.num_routing - 1):
            c = b.softmax(dim=1)
            v = squash((c * temp_u_hat).sum(dim=2))
            b = b + torch.matmul(temp_u_hat, v.unsqueeze(-1))
        c = b.softmax(dim=1)
        return squash((c * u_hat).sum(dim=2))


class CapsNet(nn.Module):
    def __init__(
        self,
        img_shape=(1, 28, 28),
        channels=256,
        primary_dim=8,
        num_classes=10,
        out_dim=16,
        num_routing=3,
    ):
        super(CapsNet, self).__init__()
        self.img_shape = img_shape
        self.num_classes = num_classes
        self.conv1 = nn.Conv2d(img_shape[0], channels, kernel_size=9, stride=1)
        self.relu = nn.ReLU(inplace=True)
        self.primary = PrimaryCaps(channels, channels // primary_dim, primary_dim, 9, 2)
        side = ((img_shape[1] - 8) - 9) // 2 + 1
        self.digits = DigitCaps(
            side * side * (channels // primary_dim), primary_dim, num_classes, out_dim, num_routing
        )
        self.decoder = nn.Sequential(
            nn.Linear(out_dim * num_classes, 64),
            nn.ReLU(inplace=True),
            nn.Linear(64, img_shape[0] * img_shape[1] * img_shape[2]),
            nn.Sigmoid(),
        )

    def forward(self, x):
        out = self.digits(self.primary(self.relu(self.conv1(x))))
        logits = torch.norm(out, dim=-1)
        pred = torch.eye(self.num_classes, device=x.device).index_select(
            dim=0, index=torch.argmax(logits, dim=1)
        )
        reconstruction = self.decoder((out * pred.unsqueeze(2)).contiguous().view(x.size(0), -1))
        return logits, reconstruction.view(-1, *self.img_shape)


case(
    "capsnet_routing",
    lambda: CapsNet(img_shape=(1, 20, 20), channels=16, primary_dim=4, num_classes=5, out_dim=4),
    args(lambda: randn(2, 1, 20, 20)),
    edit=("decoder.1", {"inplace": False}),
    styles="routing iterations, channels // primary_dim, a side size computed from img_shape, argmax masking",
)
