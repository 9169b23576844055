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


# --- A grid size handed to a helper that makes a buffer of it, batch axis first ------------------


def flow_base_grid(size):
    axes = [torch.linspace(-1.0, 1.0, steps=n) for n in size]
    ys, xs = torch.meshgrid(*axes, indexing="ij")
    return torch.stack([xs, ys], dim=-1).unsqueeze(0)


class FlowWarp(nn.Module):
    """Warps a frame by a predicted flow added to a fixed sampling grid made for one size."""

    def __init__(self, channels, frame_size):
        super().__init__()
        self.flow = nn.Conv2d(channels, 2, 3, padding=1)
        self.register_buffer("base", flow_base_grid(frame_size))

    def forward(self, x):
        grid = self.base + self.flow(x).permute(0, 2, 3, 1)
        return torch.nn.functional.grid_sample(x, grid, align_corners=False)


case(
    "grid_buffer_from_helper",
    lambda: FlowWarp(3, (12, 20)),
    args(lambda: randn(2, 3, 12, 20)),
    edit=("flow", {"bias": False}),
    styles="a size list handed to a module helper that makes a sampling grid buffer of it",
)


def voxel_centers(dims):
    ticks = [(torch.arange(d) + 0.5) / d for d in dims]
    return torch.stack(torch.meshgrid(*ticks, indexing="ij"), -1)[None]


class VoxelQueryDecoder(nn.Module):
    """Decodes a latent at every voxel center of a fixed volume (an occupancy decoder)."""

    def __init__(self, latent, volume, width=32):
        super().__init__()
        self.register_buffer("centers", voxel_centers(volume))
        self.mlp = nn.Sequential(nn.Linear(latent + 3, width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, z):
        pts = self.centers.flatten(1, -2).expand(z.shape[0], -1, -1)
        zz = z[:, None, :].expand(-1, pts.shape[1], -1)
        return self.mlp(torch.cat([zz, pts], -1))


case(
    "volume_buffer_from_helper",
    lambda: VoxelQueryDecoder(6, (4, 5, 3), width=16),
    args(lambda: randn(2, 6)),
    edit=("", {"width": 8}),
    styles="a 3-d size handed to a module helper that makes a buffer of cell centers",
)


# --- A flag whose name is reused for the function it chose ---------------------------------------


class GraphConvLayer(nn.Module):
    """A dense graph convolution whose self-loop term is switched by a flag of the same name."""

    def __init__(self, dim, self_loop=True, bias=True):
        super().__init__()
        self.lin = nn.Linear(dim, dim, bias=bias)
        self.self_loop = (lambda h: h) if self_loop else (lambda h: torch.zeros_like(h))

    def forward(self, h, adj):
        return torch.relu(adj @ self.lin(h) + self.self_loop(h))


class GraphStack(nn.Module):
    def __init__(self, dim, depth, **layer_kw):
        super().__init__()
        first = {k: v for k, v in layer_kw.items() if k != "bias"}
        self.layers = nn.ModuleList(
            [GraphConvLayer(dim, self_loop=False, **first)]
            + [GraphConvLayer(dim, **layer_kw) for _ in range(depth - 1)]
        )

    def forward(self, h, adj):
        for layer in self.layers:
            h = layer(h, adj)
        return h


case(
    "flag_name_reused_for_chosen_function",
    lambda: GraphStack(8, 3, bias=False),
    args(lambda: randn(5, 8), lambda: torch.eye(5)),
    edit=("layers.1", {"self_loop": False}),
    styles="a flag whose attribute holds the lambda it chose, a dict of keywords less one spread",
)


class GatedConv1d(nn.Module):
    """A 1-d conv whose output gate is a sigmoid or a constant one, kept under the flag's name."""

    def __init__(self, c_in, c_out, gated=False):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, 3, padding=1)
        self.gate_conv = nn.Conv1d(c_in, c_out, 1)
        if gated:
            self.gated = lambda g: torch.sigmoid(g)
        else:
            self.gated = lambda g: 1.0

    def forward(self, x):
        return self.conv(x) * self.gated(self.gate_conv(x))


case(
    "flag_name_reused_for_gate",
    lambda: GatedConv1d(4, 6, gated=True),
    args(lambda: randn(2, 4, 10)),
    edit=("", {"gated": False}),
    styles="a flag whose attribute holds one of two lambdas defined in its branches",
)


# --- An argument kept under its name made private ------------------------------------------------


class SkipDenoiser(nn.Module):
    """A denoising MLP whose optional skip path is chosen by a flag kept as a private field."""

    def __init__(self, features, hidden, use_skip=False, skip_sizes=None):
        super().__init__()
        self._use_skip = use_skip
        out = hidden
        if use_skip:
            self._skip = nn.Linear(features, skip_sizes[-1])
            out += skip_sizes[-1]
        self._body = nn.Linear(features, hidden)
        self._head = nn.Linear(out, features)

    def forward(self, x):
        h = torch.relu(self._body(x))
        if self._use_skip:
            h = torch.cat([h, self._skip(x)], -1)
        return self._head(h)


case(
    "flag_kept_private",
    lambda: SkipDenoiser(6, 10, use_skip=True, skip_sizes=[12, 8]),
    args(lambda: randn(4, 6)),
    edit=("_head", {"bias": False}),
    styles="a flag kept under its name made private, choosing an optional layer",
)


class TopKRouter(nn.Module):
    """A mixture-of-experts router whose k and temperature are kept as private fields."""

    def __init__(self, dim, experts, k=1, temperature=1.0):
        super().__init__()
        self._k = k
        self._temperature = temperature
        self.gate = nn.Linear(dim, experts, bias=False)

    def forward(self, x):
        logits = self.gate(x) / self._temperature
        top, idx = logits.topk(self._k, dim=-1)
        return torch.softmax(top, -1), idx


case(
    "numbers_kept_private",
    lambda: TopKRouter(16, 6, k=2, temperature=0.5),
    args(lambda: randn(3, 16)),
    edit=("gate", {"bias": True}),
    styles="numbers kept under their names made private, used only in forward",
)


# --- A name looked up in a table of lambdas the class defines ------------------------------------


class SetReadout(nn.Module):
    """A set encoder whose readout is named by a string looked up in a class table of lambdas."""

    READOUTS = {"sum": lambda x: x.sum(1), "max": lambda x: x.amax(1), "first": lambda x: x[:, 0]}

    def __init__(self, d_in, d_out, readout="sum"):
        super().__init__()
        self.readout = self.READOUTS[readout]
        self.embed = nn.Linear(d_in, d_out)

    def forward(self, x):
        return self.readout(self.embed(x))


case(
    "class_table_of_lambdas",
    lambda: SetReadout(3, 8, readout="max"),
    args(lambda: randn(2, 5, 3)),
    edit=("embed", {"bias": False}),
    styles="a string looked up in a class attribute table of lambdas, kept under its name",
)
