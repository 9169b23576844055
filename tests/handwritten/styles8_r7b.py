"""Habits of constructors that say where an argument went only by how they write it: a layer
argument registered under a name written beside it (a dict entry handed to a container base, a
registration call), never kept under an attribute."""

from __future__ import annotations

import torch
import torch.nn as nn

from .case import args, case, randn

# --- A layer argument registered under a name written beside it ---------------------------------


class SpectrogramEncoder(nn.Module):
    def __init__(self, mels, width):
        super().__init__()
        self.conv = nn.Conv1d(mels, width, 5, padding=2)
        self.norm = nn.GroupNorm(4, width)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))


class EncoderDecoderDict(nn.ModuleDict):
    """A denoiser that is itself a dict of the two halves it was given."""

    def __init__(self, encoder: nn.Module, decoder: nn.Module, skip=True):
        super().__init__({"analysis": encoder, "synthesis": decoder})
        self.skip = skip

    def forward(self, x):
        h = self["synthesis"](self["analysis"](x))
        return h + x if self.skip else h


case(
    "layer_registered_in_dict_base",
    lambda: EncoderDecoderDict(
        SpectrogramEncoder(12, 16), nn.Conv1d(16, 12, 3, padding=1), skip=False
    ),
    args(lambda: randn(2, 12, 9)),
    edit=("analysis", {"width": 8}),
    styles="layer arguments handed to a ModuleDict base as named entries",
)


class ActorTrunk(nn.Module):
    def __init__(self, obs, hidden, depth=2):
        super().__init__()
        layers = [nn.Linear(obs, hidden), nn.Tanh()]
        for _ in range(depth - 1):
            layers += [nn.Linear(hidden, hidden), nn.Tanh()]
        self.mlp = nn.Sequential(*layers)

    def forward(self, x):
        return self.mlp(x)


class PolicyWithHeads(nn.Module):
    """An actor-critic whose actor and critic trunks are registered by name, one not-kept."""

    def __init__(self, actor_net, critic_net, actions=4, hidden=32):
        super().__init__()
        self.add_module("pi", actor_net)
        self.register_module("v", critic_net)
        self.logits = nn.Linear(hidden, actions)
        self.value = nn.Linear(hidden // 2, 1)

    def forward(self, x):
        return self.logits(self.pi(x)), self.value(self.v(x))


case(
    "layer_registered_by_add_module",
    lambda: PolicyWithHeads(ActorTrunk(6, 24, depth=3), ActorTrunk(6, 12), actions=5, hidden=24),
    args(lambda: randn(3, 6)),
    edit=("logits", {"bias": False}),
    styles="layer arguments registered with add_module and register_module under literal names",
)


# --- A device argument kept as the string it was written as -------------------------------------


class TrajectoryGRU(nn.Module):
    """A pedestrian-trajectory encoder that keeps its device string to make states later."""

    def __init__(self, coords, hidden, layers=1, device="cpu"):
        super().__init__()
        self.device = device
        self.hidden = hidden
        self.layers = layers
        self.embed = nn.Linear(coords, hidden)
        self.rnn = nn.GRU(hidden, hidden, layers, batch_first=True)
        self.to(device)

    def forward(self, x):
        h0 = torch.zeros(self.layers, x.shape[0], self.hidden, device=self.device)
        return self.rnn(self.embed(x), h0)[0]


case(
    "device_string_kept",
    lambda: TrajectoryGRU(2, 16, layers=2),
    args(lambda: randn(3, 7, 2)),
    edit=("", {"hidden": 8}),
    styles="a device argument kept as the string it was written as, the module moved to it",
)


class ReservoirCell(nn.Module):
    """An echo-state cell whose fixed recurrent matrix is made on the device it is given."""

    def __init__(self, inputs, units, leak=0.3, device="cpu:0"):
        super().__init__()
        self._device = device
        self.leak = leak
        self.inp = nn.Linear(inputs, units, bias=False)
        self.register_buffer("w", torch.zeros(units, units, device=device))

    def forward(self, x, h):
        pre = self.inp(x) + h @ self.w
        return (1 - self.leak) * h + self.leak * torch.tanh(pre)


case(
    "device_string_kept_other_name",
    lambda: ReservoirCell(4, 12, leak=0.5),
    args(lambda: randn(2, 4), lambda: randn(2, 12, seed=1)),
    edit=("", {"leak": 0.25}),
    styles="a device argument under another name kept as its string, a buffer made on it",
)
