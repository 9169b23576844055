"""Held-out models with state: a diagonal state-space layer convolving by FFT, adaptive computation
time with a halting while-loop, an NTM-like memory, a recursive net over a tree of tuples."""

from __future__ import annotations

import math
from typing import Optional, Union

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .spec import heldout, rand

# --- A diagonal state-space layer: a kernel from complex parameters, convolved by FFT ------------


class S4DKernel(nn.Module):
    def __init__(
        self, d_model: int, N: int = 64, dt_min: float = 0.001, dt_max: float = 0.1
    ) -> None:
        super().__init__()
        H = d_model
        log_dt = torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        C = torch.randn(H, N // 2, dtype=torch.cfloat)
        self.C = nn.Parameter(torch.view_as_real(C))
        self.register_buffer("log_dt", log_dt)
        self.log_A_real = nn.Parameter(torch.log(0.5 * torch.ones(H, N // 2)))
        self.A_imag = nn.Parameter(math.pi * torch.arange(N // 2).repeat(H, 1).float())

    def forward(self, L: int) -> Tensor:
        dt = torch.exp(self.log_dt)
        C = torch.view_as_complex(self.C)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag
        dtA = A * dt.unsqueeze(-1)
        K = dtA.unsqueeze(-1) * torch.arange(L, device=A.device)
        C = C * (torch.exp(dtA) - 1.0) / A
        return 2 * torch.einsum("hn, hnl -> hl", C, torch.exp(K)).real


class S4D(nn.Module):
    def __init__(
        self,
        d_model: int,
        d_state: int = 64,
        dropout: float = 0.0,
        transposed: bool = True,
        **kernel_args,
    ) -> None:
        super().__init__()
        self.h, self.n, self.transposed = d_model, d_state, transposed
        self.D = nn.Parameter(torch.randn(self.h))
        self.kernel = S4DKernel(self.h, N=self.n, **kernel_args)
        self.activation = nn.GELU()
        self.dropout = nn.Dropout(dropout) if dropout > 0.0 else nn.Identity()
        self.output_linear = nn.Sequential(
            nn.Conv1d(self.h, 2 * self.h, kernel_size=1), nn.GLU(dim=-2)
        )

    def forward(self, u: Tensor) -> Tensor:
        if not self.transposed:
            u = u.transpose(-1, -2)
        L = u.size(-1)
        k = self.kernel(L=L)
        y = torch.fft.irfft(torch.fft.rfft(k, n=2 * L) * torch.fft.rfft(u, n=2 * L), n=2 * L)[
            ..., :L
        ]
        y = self.dropout(self.activation(y + u * self.D.unsqueeze(-1)))
        y = self.output_linear(y)
        return y if self.transposed else y.transpose(-1, -2)


@heldout("s4d_fft", lambda: ((rand(2, 20, 8),), {}), edit=("activation", {"approximate": "tanh"}))
def s4d() -> nn.Module:
    return S4D(8, d_state=8, dropout=0.1, transposed=False, dt_max=0.2)


# --- Adaptive computation time: a halting while-loop on the data ---------------------------------


class ACTCell(nn.Module):
    def __init__(
        self, input_size: int, hidden_size: int, max_ponder: int = 10, epsilon: float = 0.01
    ) -> None:
        super().__init__()
        self.cell = nn.RNNCell(input_size + 1, hidden_size)
        self.halt = nn.Linear(hidden_size, 1)
        self.max_ponder, self.epsilon = max_ponder, epsilon

    def forward(self, x: Tensor, h: Tensor) -> tuple[Tensor, Tensor]:
        b = x.size(0)
        budget = torch.ones(b, device=x.device)
        acc = torch.zeros_like(h)
        steps = torch.zeros(b, device=x.device)
        n = 0
        running = budget > self.epsilon
        while running.any() and n < self.max_ponder:
            flag = torch.full((b, 1), float(n == 0), device=x.device)
            h = self.cell(torch.cat([x, flag], 1), h)
            p = torch.sigmoid(self.halt(h)).squeeze(1)
            p = torch.where(running, torch.minimum(p, budget), torch.zeros_like(p))
            acc = acc + p.unsqueeze(1) * h
            budget = budget - p
            steps = steps + running.float()
            running = budget > self.epsilon
            n += 1
        return acc, steps


class ACTRNN(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, output_size: int, **act_kwargs) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.act = ACTCell(input_size, hidden_size, **act_kwargs)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, xs: Tensor) -> dict[str, Tensor]:
        h = xs.new_zeros(xs.size(1), self.hidden_size)
        ponder = []
        for x in xs:
            h, steps = self.act(x, h)
            ponder.append(steps)
        return {"logits": self.out(h), "ponder": torch.stack(ponder)}


@heldout("act_halting", lambda: ((rand(4, 3, 5),), {}), edit=("out", {"bias": False}))
def act() -> nn.Module:
    return ACTRNN(5, 12, 2, max_ponder=4)


# --- An NTM-like memory reset per call, read and write heads with content addressing -------------


class NTMMemory(nn.Module):
    def __init__(self, N: int, M: int) -> None:
        super().__init__()
        self.N, self.M = N, M
        self.register_buffer("mem_bias", torch.full((N, M), 1e-6))
        self.memory: Optional[Tensor] = None

    def reset(self, batch_size: int) -> None:
        self.memory = self.mem_bias.clone().repeat(batch_size, 1, 1)

    def address(self, k: Tensor, beta: Tensor) -> Tensor:
        assert self.memory is not None
        return F.softmax(
            beta * F.cosine_similarity(self.memory + 1e-16, k.unsqueeze(1) + 1e-16, dim=-1), dim=1
        )

    def read(self, w: Tensor) -> Tensor:
        assert self.memory is not None
        return torch.matmul(w.unsqueeze(1), self.memory).squeeze(1)

    def write(self, w: Tensor, e: Tensor, a: Tensor) -> None:
        assert self.memory is not None
        erase = torch.matmul(w.unsqueeze(-1), e.unsqueeze(1))
        add = torch.matmul(w.unsqueeze(-1), a.unsqueeze(1))
        self.memory = self.memory * (1 - erase) + add


class NTM(nn.Module):
    def __init__(
        self, num_inputs: int, num_outputs: int, controller_size: int, N: int, M: int
    ) -> None:
        super().__init__()
        self.memory = NTMMemory(N, M)
        self.controller = nn.LSTMCell(num_inputs + M, controller_size)
        self.read_head = nn.Linear(controller_size, M + 1)
        self.write_head = nn.Linear(controller_size, 3 * M + 1)
        self.fc = nn.Linear(controller_size + M, num_outputs)
        self.controller_size, self.M = controller_size, M

    def forward(self, seq: Tensor) -> Tensor:
        T, B, _ = seq.shape
        self.memory.reset(B)
        h = c = seq.new_zeros(B, self.controller_size)
        r = seq.new_zeros(B, self.M)
        outs = []
        for t in range(T):
            h, c = self.controller(torch.cat([seq[t], r], 1), (h, c))
            k, beta = self.read_head(h).split([self.M, 1], 1)
            r = self.memory.read(self.memory.address(k, F.softplus(beta)))
            wk, wbeta, e, a = self.write_head(h).split([self.M, 1, self.M, self.M], 1)
            self.memory.write(self.memory.address(wk, F.softplus(wbeta)), torch.sigmoid(e), a)
            outs.append(torch.sigmoid(self.fc(torch.cat([h, r], 1))))
        return torch.stack(outs)


@heldout("ntm_memory", lambda: ((rand(5, 2, 4),), {}), edit=("fc", {"bias": False}))
def ntm() -> nn.Module:
    return NTM(4, 3, 16, N=8, M=6)


# --- A recursive net over a tree given as nested tuples of leaf tensors ---------------------------

Tree = Union[Tensor, tuple["Tree", "Tree"]]


class TreeRNN(nn.Module):
    def __init__(self, leaf_dim: int, hidden: int, n_classes: int) -> None:
        super().__init__()
        self.leaf = nn.Linear(leaf_dim, hidden)
        self.compose = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh())
        self.classify = nn.Linear(hidden, n_classes)

    def encode(self, tree: Tree) -> Tensor:
        if isinstance(tree, Tensor):
            return torch.tanh(self.leaf(tree))
        left, right = tree
        return self.compose(torch.cat([self.encode(left), self.encode(right)], -1))

    def forward(self, tree: Tree) -> Tensor:
        return self.classify(self.encode(tree))


@heldout(
    "tree_recursive",
    lambda: (
        (
            (
                (rand(1, 4), rand(1, 4, seed=1)),
                (rand(1, 4, seed=2), (rand(1, 4, seed=3), rand(1, 4, seed=4))),
            ),
        ),
        {},
    ),
    edit=("classify", {"bias": False}),
)
def tree_rnn() -> nn.Module:
    return TreeRNN(4, 8, 3)
