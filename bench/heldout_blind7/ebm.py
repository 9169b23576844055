"""Energy-based models: a JEM-style classifier-as-EBM (wide ResNet, spectral-normalised) whose
forward draws samples by short-run SGLD."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrizations

from .spec import heldout, rand


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=True)


class Identity(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


def get_norm(n_filters, norm):
    if norm is None:
        return Identity()
    elif norm == "batch":
        return nn.BatchNorm2d(n_filters, momentum=0.9)
    elif norm == "instance":
        return nn.InstanceNorm2d(n_filters, affine=True)
    elif norm == "layer":
        return nn.GroupNorm(1, n_filters)
    raise ValueError(norm)


class wide_basic(nn.Module):
    def __init__(self, in_planes, planes, dropout_rate, stride=1, norm=None, leak=0.2):
        super().__init__()
        self.lrelu = nn.LeakyReLU(leak)
        self.bn1 = get_norm(in_planes, norm)
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, padding=1, bias=True)
        self.dropout = Identity() if dropout_rate == 0.0 else nn.Dropout(p=dropout_rate)
        self.bn2 = get_norm(planes, norm)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, bias=True)

        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=True)
            )

    def forward(self, x):
        out = self.dropout(self.conv1(self.lrelu(self.bn1(x))))
        out = self.conv2(self.lrelu(self.bn2(out)))
        out += self.shortcut(x)
        return out


class Wide_ResNet(nn.Module):
    def __init__(
        self,
        depth,
        widen_factor,
        num_classes=10,
        input_channels=3,
        sum_pool=False,
        norm=None,
        leak=0.2,
        dropout_rate=0.0,
        base=4,
    ):
        super().__init__()
        self.leak = leak
        self.in_planes = base
        self.sum_pool = sum_pool
        self.norm = norm
        self.lrelu = nn.LeakyReLU(leak)

        assert (depth - 4) % 6 == 0, "Wide-resnet depth should be 6n+4"
        n = (depth - 4) // 6
        k = widen_factor
        nStages = [base, base * k, 2 * base * k, 4 * base * k]

        self.conv1 = conv3x3(input_channels, nStages[0])
        self.layer1 = self._wide_layer(wide_basic, nStages[1], n, dropout_rate, stride=1)
        self.layer2 = self._wide_layer(wide_basic, nStages[2], n, dropout_rate, stride=2)
        self.layer3 = self._wide_layer(wide_basic, nStages[3], n, dropout_rate, stride=2)
        self.bn1 = get_norm(nStages[3], self.norm)
        self.last_dim = nStages[3]

    def _wide_layer(self, block, planes, num_blocks, dropout_rate, stride):
        strides = [stride] + [1] * (num_blocks - 1)
        layers = []
        for stride in strides:
            layers.append(block(self.in_planes, planes, dropout_rate, stride, norm=self.norm))
            self.in_planes = planes
        return nn.Sequential(*layers)

    def forward(self, x, vx=None):
        out = self.conv1(x)
        out = self.layer1(out)
        out = self.layer2(out)
        out = self.layer3(out)
        out = self.lrelu(self.bn1(out))
        if self.sum_pool:
            out = out.view(out.size(0), out.size(1), -1).sum(2)
        else:
            out = F.avg_pool2d(out, out.size(-1))
        return out.view(out.size(0), -1)


class F_(nn.Module):
    def __init__(
        self, depth=28, width=2, norm=None, dropout_rate=0.0, n_classes=10, spectral=False
    ):
        super().__init__()
        self.f = Wide_ResNet(depth, width, norm=norm, dropout_rate=dropout_rate)
        self.energy_output = nn.Linear(self.f.last_dim, 1)
        self.class_output = nn.Linear(self.f.last_dim, n_classes)
        if spectral:
            for m in list(self.f.modules()):
                if isinstance(m, nn.Conv2d):
                    parametrizations.spectral_norm(m)

    def forward(self, x, y=None):
        penult_z = self.f(x)
        return self.energy_output(penult_z).squeeze()

    def classify(self, x):
        penult_z = self.f(x)
        return self.class_output(penult_z).squeeze()


class CCF(F_):
    """Class-conditional energy: logsumexp of the logits (JEM, Grathwohl et al. 2020)."""

    def __init__(self, depth=28, width=2, norm=None, dropout_rate=0.0, n_classes=10, spectral=False, n_steps=5, step_size=1.0, noise=0.01):  # fmt: skip
        super().__init__(
            depth,
            width,
            norm=norm,
            dropout_rate=dropout_rate,
            n_classes=n_classes,
            spectral=spectral,
        )
        self.n_steps = n_steps
        self.step_size = step_size
        self.noise = noise

    def forward(self, x, y=None):
        logits = self.classify(x)
        if y is None:
            return logits.logsumexp(1)
        return torch.gather(logits, 1, y[:, None])

    def sample(self, x_k):
        """Short-run SGLD from x_k; differentiates the energy w.r.t. the input."""
        with torch.enable_grad():
            x_k = x_k.detach().requires_grad_(True)
            for _ in range(self.n_steps):
                f_prime = torch.autograd.grad(self(x_k).sum(), [x_k], retain_graph=True)[0]
                x_k = (
                    (x_k + self.step_size * f_prime + self.noise * torch.randn_like(x_k))
                    .detach()
                    .requires_grad_(True)
                )
        return x_k.detach()


class JEMWithSampler(nn.Module):
    def __init__(self, ccf: CCF, buffer_size=16, reinit_freq=0.05, img_shape=(3, 32, 32)):
        super().__init__()
        self.ccf = ccf
        self.reinit_freq = reinit_freq
        self.register_buffer(
            "replay_buffer", torch.FloatTensor(buffer_size, *img_shape).uniform_(-1, 1)
        )

    def forward(self, x_lab, y_lab):
        logits = self.ccf.classify(x_lab)
        idx = torch.arange(x_lab.size(0)) % self.replay_buffer.size(0)
        x_q = self.ccf.sample(self.replay_buffer[idx])
        fp = self.ccf(x_lab).mean()
        fq = self.ccf(x_q).mean()
        return F.cross_entropy(logits, y_lab), fp - fq


def _jem_example():
    g = torch.Generator().manual_seed(0)
    return (rand(4, 3, 32, 32), torch.randint(0, 10, (4,), generator=g)), {}


@heldout("jem_wrn_sgld", _jem_example)
def build_jem():
    return JEMWithSampler(CCF(depth=10, width=2, norm="layer", spectral=True, n_steps=3))
