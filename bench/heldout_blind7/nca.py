"""Neural cellular automata: the growing NCA and a texture NCA with fixed perception filters."""

# ruff: noqa: B008  (kept as the paper's code writes it)

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

CHANNEL_N = 16
CELL_FIRE_RATE = 0.5


class CAModel(nn.Module):
    """Growing neural cellular automata (Mordvintsev et al. 2020)."""

    def __init__(self, channel_n, fire_rate, device=torch.device("cpu"), hidden_size=128):
        super().__init__()
        self.device = device
        self.channel_n = channel_n

        self.fc0 = nn.Linear(channel_n * 3, hidden_size)
        self.fc1 = nn.Linear(hidden_size, channel_n, bias=False)
        with torch.no_grad():
            self.fc1.weight.zero_()

        self.fire_rate = fire_rate
        self.to(self.device)

    def alive(self, x):
        return F.max_pool2d(x[:, 3:4, :, :], kernel_size=3, stride=1, padding=1) > 0.1

    def perceive(self, x, angle):
        def _perceive_with(x, weight):
            conv_weights = (
                torch.from_numpy(weight.astype("float32"))
                if not torch.is_tensor(weight)
                else weight
            )
            conv_weights = conv_weights.view(1, 1, 3, 3).repeat(self.channel_n, 1, 1, 1)
            return F.conv2d(x, conv_weights, padding=1, groups=self.channel_n)

        dx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8.0
        dy = dx.T
        c = torch.cos(torch.tensor(angle * torch.pi / 180))
        s = torch.sin(torch.tensor(angle * torch.pi / 180))
        w1 = c * dx - s * dy
        w2 = s * dx + c * dy

        y1 = _perceive_with(x, w1)
        y2 = _perceive_with(x, w2)
        y = torch.cat((x, y1, y2), 1)
        return y

    def update(self, x, fire_rate, angle):
        x = x.transpose(1, 3)
        pre_life_mask = self.alive(x)

        dx = self.perceive(x, angle)
        dx = dx.transpose(1, 3)
        dx = self.fc0(dx)
        dx = F.relu(dx)
        dx = self.fc1(dx)

        if fire_rate is None:
            fire_rate = self.fire_rate
        stochastic = torch.rand([dx.size(0), dx.size(1), dx.size(2), 1]) > fire_rate
        stochastic = stochastic.float().to(self.device)
        dx = dx * stochastic

        x = x + dx.transpose(1, 3)

        post_life_mask = self.alive(x)
        life_mask = (pre_life_mask & post_life_mask).float()
        x = x * life_mask
        return x.transpose(1, 3)

    def forward(self, x, steps=1, fire_rate=None, angle=0.0):
        for _step in range(steps):
            x = self.update(x, fire_rate, angle)
        return x


def _seed_grid():
    x = torch.zeros(2, 24, 24, CHANNEL_N)
    x[:, 12, 12, 3:] = 1.0
    x = x + 0.05 * rand(2, 24, 24, CHANNEL_N).abs()
    return (x,), {"steps": 8}


@heldout("growing_nca", _seed_grid)
def build_growing_nca():
    return CAModel(CHANNEL_N, CELL_FIRE_RATE, hidden_size=64)


# ----------------------------------------------------------------------------------------------
# Self-organising textures (Niklasson et al. 2021): 4 fixed filters, 1x1 conv update rule
# ----------------------------------------------------------------------------------------------

IDENT = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
SOBEL_X = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
LAP = torch.tensor([[1.0, 2.0, 1.0], [2.0, -12.0, 2.0], [1.0, 2.0, 1.0]])


class Perception(nn.Module):
    def __init__(self, chn, filters=("ident", "sobel_x", "sobel_y", "lap")):
        super().__init__()
        bank = {"ident": IDENT, "sobel_x": SOBEL_X, "sobel_y": SOBEL_X.T, "lap": LAP}
        kernel = torch.stack([bank[f] for f in filters])
        self.chn = chn
        self.n_filters = len(filters)
        self.register_buffer("kernel", kernel[:, None].repeat(chn, 1, 1, 1))

    def forward(self, x):
        b, ch, h, w = x.shape
        y = F.pad(x, [1, 1, 1, 1], "circular")
        return F.conv2d(y, self.kernel, groups=ch)


class TextureNCA(nn.Module):
    def __init__(
        self, chn=12, hidden_n=96, filters=("ident", "sobel_x", "sobel_y", "lap"), update_prob=0.5
    ):
        super().__init__()
        self.chn = chn
        self.update_prob = update_prob
        self.perception = Perception(chn, filters)
        self.w1 = nn.Conv2d(chn * len(filters), hidden_n, 1)
        self.w2 = nn.Conv2d(hidden_n, chn, 1, bias=False)
        self.w2.weight.data.zero_()

    def forward(self, x, steps=1):
        for _ in range(steps):
            y = self.perception(x)
            y = self.w2(torch.relu(self.w1(y)))
            b, c, h, w = y.shape
            udpate_mask = (torch.rand(b, 1, h, w, device=x.device) + self.update_prob).floor()
            x = x + y * udpate_mask
        return x

    def to_rgb(self, x):
        return x[..., :3, :, :] + 0.5


@heldout("texture_nca", lambda: ((rand(2, 12, 32, 32) * 0.1,), {"steps": 6}))
def build_texture_nca():
    return TextureNCA(chn=12, hidden_n=48)
