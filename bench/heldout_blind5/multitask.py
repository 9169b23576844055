"""Multi-task recommendation: MMoE and a two-level PLE (progressive layered extraction)."""

from __future__ import annotations

import torch
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- MMoE / PLE


class Expert(nn.Module):
    def __init__(self, input_dim, output_dim, hidden=64, *, dropout=0.0):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(input_dim, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, output_dim),
        )

    def forward(self, x):
        return self.net(x)


class Tower(nn.Module):
    def __init__(self, input_dim, hidden=(32,), output_dim=1):
        super().__init__()
        dims = [input_dim, *hidden]
        layers = [m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.ReLU())]
        self.mlp = nn.Sequential(*layers, nn.Linear(dims[-1], output_dim))

    def forward(self, x):
        return self.mlp(x)


class MMoE(nn.Module):
    def __init__(self, input_dim, num_experts, expert_dim, tasks, **expert_kwargs):
        super().__init__()
        self.tasks = list(tasks)
        self.experts = nn.ModuleList(
            Expert(input_dim, expert_dim, **expert_kwargs) for _ in range(num_experts)
        )
        self.gates = nn.ParameterDict(
            {t: nn.Parameter(torch.randn(input_dim, num_experts) * 0.01) for t in self.tasks}
        )
        self.towers = nn.ModuleDict({t: Tower(expert_dim, **tasks[t]) for t in self.tasks})

    def forward(self, x):
        expert_out = torch.stack([e(x) for e in self.experts], dim=1)  # B, E, D
        outputs = {}
        for t in self.tasks:
            gate = torch.softmax(x @ self.gates[t], dim=-1)
            outputs[t] = self.towers[t]((gate.unsqueeze(-1) * expert_out).sum(1))
        return outputs


@heldout(
    "mmoe",
    lambda: ((rand(8, 20),), {}),
)
def mmoe():
    tasks = {"ctr": {"hidden": (16,)}, "cvr": {"hidden": (16, 8)}, "watch_time": {}}
    return MMoE(20, num_experts=4, expert_dim=24, tasks=tasks, hidden=32)


class CGCLayer(nn.Module):
    """One extraction layer of PLE: task-specific and shared experts, per-task gates."""

    def __init__(self, input_dim, n_tasks, n_specific, n_shared, expert_dim, is_last=False):
        super().__init__()
        self.n_tasks, self.is_last = n_tasks, is_last
        self.specific = nn.ModuleList(
            nn.ModuleList(Expert(input_dim, expert_dim, 32) for _ in range(n_specific))
            for _ in range(n_tasks)
        )
        self.shared = nn.ModuleList(Expert(input_dim, expert_dim, 32) for _ in range(n_shared))
        self.task_gates = nn.ModuleList(
            nn.Sequential(nn.Linear(input_dim, n_specific + n_shared), nn.Softmax(dim=-1))
            for _ in range(n_tasks)
        )
        if not is_last:
            n_all = n_tasks * n_specific + n_shared
            self.shared_gate = nn.Sequential(nn.Linear(input_dim, n_all), nn.Softmax(dim=-1))

    def forward(self, inputs: list[torch.Tensor]):
        shared_in = inputs[-1]
        shared_out = [e(shared_in) for e in self.shared]
        task_outs, all_specific = [], []
        for i in range(self.n_tasks):
            spec = [e(inputs[i]) for e in self.specific[i]]
            all_specific += spec
            experts = torch.stack(spec + shared_out, dim=1)
            gate = self.task_gates[i](inputs[i]).unsqueeze(-1)
            task_outs.append((gate * experts).sum(1))
        if not self.is_last:
            experts = torch.stack(all_specific + shared_out, dim=1)
            gate = self.shared_gate(shared_in).unsqueeze(-1)
            task_outs.append((gate * experts).sum(1))
        return task_outs


class PLE(nn.Module):
    def __init__(self, input_dim, task_names, levels=2, n_specific=2, n_shared=1, expert_dim=16):
        super().__init__()
        self.task_names = task_names
        n_tasks = len(task_names)
        self.cgc_layers = nn.ModuleList(
            CGCLayer(input_dim if i == 0 else expert_dim, n_tasks, n_specific, n_shared,
                     expert_dim, is_last=i == levels - 1)
            for i in range(levels)
        )  # fmt: skip
        self.towers = nn.ModuleList(Tower(expert_dim) for _ in task_names)

    def forward(self, x):
        inputs = [x] * (len(self.task_names) + 1)
        for layer in self.cgc_layers:
            inputs = layer(inputs)
        return tuple(torch.sigmoid(t(h)) for t, h in zip(self.towers, inputs))


@heldout(
    "ple_two_level",
    lambda: ((rand(8, 20, seed=5),), {}),
)
def ple_two_level():
    return PLE(20, ["click", "like", "share"])
