"""Hyperparameters held in a dict, a dict-like object or a kept ``**kwargs`` (round 4 of the
forms rules): a dict of sizes made into a ``ModuleDict`` (in a comprehension, a loop, a helper
method), a config dict annotated ``dict`` handed whole to each block of a stack (every k-th block
made otherwise), an ``argparse.Namespace`` whose fields pick a class from a table and fill a
tensor, a dict whose fields are its items (``self.__dict__ = self``), solver options kept whole
as ``self.opts = opts``, and a config a block annotates handed on by one that does not."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch
import torch.nn as nn

from .case import args, case, randn, tokens

# --- A dict of vocabulary sizes, one embedding per key, in a comprehension --------------------


class FieldEmbedder(nn.Module):
    def __init__(self, spec: dict):
        super().__init__()
        self.tables = nn.ModuleDict(
            {field: nn.Embedding(size, spec["width"]) for field, size in spec["vocab"].items()}
        )
        self.mix = nn.Linear(spec["width"], spec["out"])

    def forward(self, ids):
        return self.mix(sum(t(ids[k]) for k, t in self.tables.items()))


case(
    "dict_vocab_moduledict",
    lambda: FieldEmbedder({"vocab": {"city": 12, "device": 5, "hour": 24}, "width": 6, "out": 3}),
    args(
        lambda: {
            "city": tokens(4, vocab=12),
            "device": tokens(4, vocab=5),
            "hour": tokens(4, vocab=24),
        }
    ),
    edit=("mix", {"bias": False}),
    styles="a dict of sizes iterated with .items() into a ModuleDict comprehension, cfg: dict",
)

# --- One head per task, added by a helper method in a loop -------------------------------------


class TaskHeads(nn.Module):
    def __init__(self, d_in=16, outputs=None):
        super().__init__()
        outputs = outputs or {"main": 1}
        self.body = nn.Linear(d_in, 20)
        self.heads = nn.ModuleDict()
        for task in outputs:
            self.attach(task, outputs[task])

    def attach(self, task, n):
        self.heads.add_module(task, nn.Linear(20, n))

    def forward(self, x):
        h = torch.relu(self.body(x))
        return {k: m(h) for k, m in self.heads.items()}


case(
    "dict_heads_helper",
    lambda: TaskHeads(8, {"age": 1, "mood": 4, "topic": 7}),
    args(lambda: randn(3, 8)),
    edit=("body", {"bias": False}),
    styles="for k in d: self.helper(k, d[k]) adds one head per key",
)

# --- A stack whose blocks take the whole config dict, every k-th one with a memory read ---------


class MemoryBlock(nn.Module):
    def __init__(self, opts: dict, index: int):
        super().__init__()
        d = opts["d"]
        self.mlp = nn.Sequential(
            nn.Linear(d, opts["hidden"]), nn.SiLU(), nn.Linear(opts["hidden"], d)
        )
        self.reads_memory = index % opts["memory_every"] == 0
        self.memory = nn.Linear(opts["memory_dim"], d) if self.reads_memory else None

    def forward(self, x, mem):
        x = x + self.mlp(x)
        return x + self.memory(mem) if self.memory is not None else x


class MemoryStack(nn.Module):
    def __init__(self, opts: dict):
        super().__init__()
        self.inp = nn.Linear(opts["in_dim"], opts["d"])
        self.blocks = nn.ModuleList([MemoryBlock(opts, j) for j in range(opts["depth"])])

    def forward(self, x, mem):
        x = self.inp(x)
        for b in self.blocks:
            x = b(x, mem)
        return x


case(
    "dict_whole_to_blocks",
    lambda: MemoryStack(dict(in_dim=5, d=12, hidden=20, memory_dim=7, memory_every=3, depth=5)),
    args(lambda: randn(2, 5), lambda: randn(2, 7)),
    edit=("inp", {"bias": False}),
    styles="a dict handed whole to each block, i % opts['memory_every'] == 0 adds a layer",
)

# --- argparse options: a class picked by name, sizes iterated, a tensor filled ------------------

NONLINEARITIES = {"silu": nn.SiLU, "tanh": nn.Tanh, "relu": nn.ReLU}


class GaussianPolicy(nn.Module):
    def __init__(self, opts: argparse.Namespace):
        super().__init__()
        act = NONLINEARITIES[opts.nonlinearity]
        layers, width = [], opts.state_dim
        for w in opts.widths:
            layers.append(nn.Linear(width, w))
            layers.append(act())
            width = w
        self.trunk = nn.Sequential(*layers)
        self.mu = nn.Linear(width, opts.action_dim)
        self.log_std = nn.Parameter(torch.full((opts.action_dim,), opts.log_std0))

    def forward(self, s):
        return self.mu(self.trunk(s)), self.log_std.exp()


case(
    "namespace_policy_argparse",
    lambda: GaussianPolicy(
        argparse.Namespace(
            state_dim=9, action_dim=2, widths=[24, 16], nonlinearity="silu", log_std0=-1.0
        )
    ),
    args(lambda: randn(3, 9)),
    edit=("mu", {"bias": False}),
    styles="opts: argparse.Namespace, a table key, sizes iterated into a local list, torch.full",
)

# --- A dict whose fields are its items (self.__dict__ = self) kept by the model -----------------


class FieldDict(dict):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.__dict__ = self


class Vocoderish(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.hp = hp
        self.pre = nn.Conv1d(hp.n_mels, hp.channels, 3, padding=1)
        self.ups = nn.ModuleList(
            [
                nn.ConvTranspose1d(hp.channels, hp.channels, 2 * r, r, padding=r // 2)
                for r in hp.rates
            ]
        )

    def forward(self, x):
        x = self.pre(x)
        for u in self.ups:
            x = u(x)
        return x


case(
    "attrdict_kept",
    lambda: Vocoderish(FieldDict(n_mels=6, channels=8, rates=[2, 2])),
    args(lambda: randn(1, 6, 5)),
    edit=("pre", {"bias": False}),
    styles="a dict subclass read by attribute (self.__dict__ = self), kept as self.hp",
)

# --- Solver options kept whole -----------------------------------------------------------------


class Relaxation(nn.Module):
    def __init__(self, cell, steps=4, **opts):
        super().__init__()
        self.cell = cell
        self.steps = steps
        self.opts = opts

    def forward(self, x):
        z = torch.zeros_like(x)
        for _ in range(self.steps):
            z = self.opts.get("damping", 0.5) * z + self.cell(z + x)
        return z


case(
    "kwargs_kept_whole",
    lambda: nn.Sequential(nn.Linear(4, 6), Relaxation(nn.Linear(6, 6), 3, damping=0.25, tol=1e-4)),
    args(lambda: randn(2, 4)),
    edit=("0", {"bias": False}),
    styles="**opts kept whole as self.opts",
)

# --- A config a block annotates, handed on by one that does not --------------------------------


@dataclass
class GateConfig:
    width: int = 8
    gated: bool = True


class Gate(nn.Module):
    def __init__(self, d, cfg: GateConfig):
        super().__init__()
        self.proj = nn.Linear(d, cfg.width)
        self.gate = nn.Linear(d, cfg.width) if cfg.gated else None

    def forward(self, x):
        y = self.proj(x)
        return y * torch.sigmoid(self.gate(x)) if self.gate is not None else y


class GatedLayer(nn.Module):
    def __init__(self, d, cfg):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.gate = Gate(d, cfg)

    def forward(self, x):
        return self.gate(self.norm(x))


case(
    "config_handed_annotated",
    lambda: nn.Sequential(GatedLayer(10, GateConfig(width=6, gated=False)), nn.Linear(6, 2)),
    args(lambda: randn(2, 10)),
    edit=("1", {"bias": False}),
    styles="an unannotated cfg handed to a block whose parameter is annotated a dataclass",
)
