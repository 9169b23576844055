"""Anomaly detection: Deep SVDD (with its pretraining autoencoder) and a memory-augmented AE."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------------------------
# Deep SVDD (Ruff et al. 2018): bias-free LeNet, hypersphere centre as a buffer
# ----------------------------------------------------------------------------------------------


class BaseNet(nn.Module):
    """Base class for all neural networks."""

    def __init__(self):
        super().__init__()
        self.rep_dim = None

    def forward(self, *input):
        raise NotImplementedError

    def summary(self):
        net_parameters = filter(lambda p: p.requires_grad, self.parameters())
        return sum(p.numel() for p in net_parameters)


class CIFAR10_LeNet(BaseNet):
    def __init__(self, rep_dim=128):
        super().__init__()
        self.rep_dim = rep_dim
        self.pool = nn.MaxPool2d(2, 2)

        self.conv1 = nn.Conv2d(3, 32, 5, bias=False, padding=2)
        self.bn2d1 = nn.BatchNorm2d(32, eps=1e-04, affine=False)
        self.conv2 = nn.Conv2d(32, 64, 5, bias=False, padding=2)
        self.bn2d2 = nn.BatchNorm2d(64, eps=1e-04, affine=False)
        self.conv3 = nn.Conv2d(64, 64, 5, bias=False, padding=2)
        self.bn2d3 = nn.BatchNorm2d(64, eps=1e-04, affine=False)
        self.fc1 = nn.Linear(64 * 4 * 4, self.rep_dim, bias=False)

    def forward(self, x):
        x = self.conv1(x)
        x = self.pool(F.leaky_relu(self.bn2d1(x)))
        x = self.conv2(x)
        x = self.pool(F.leaky_relu(self.bn2d2(x)))
        x = self.conv3(x)
        x = self.pool(F.leaky_relu(self.bn2d3(x)))
        x = x.view(x.size(0), -1)
        return self.fc1(x)


class CIFAR10_LeNet_Autoencoder(CIFAR10_LeNet):
    """The pretraining autoencoder: the encoder is inherited, a mirrored decoder is added."""

    def __init__(self, rep_dim=128):
        super().__init__(rep_dim=rep_dim)
        self.bn1d = nn.BatchNorm1d(self.rep_dim, eps=1e-04, affine=False)
        self.deconv1 = nn.ConvTranspose2d(int(self.rep_dim / (4 * 4)), 64, 5, bias=False, padding=2)
        self.bn2d4 = nn.BatchNorm2d(64, eps=1e-04, affine=False)
        self.deconv2 = nn.ConvTranspose2d(64, 32, 5, bias=False, padding=2)
        self.bn2d5 = nn.BatchNorm2d(32, eps=1e-04, affine=False)
        self.deconv3 = nn.ConvTranspose2d(32, 32, 5, bias=False, padding=2)
        self.bn2d6 = nn.BatchNorm2d(32, eps=1e-04, affine=False)
        self.deconv4 = nn.ConvTranspose2d(32, 3, 5, bias=False, padding=2)

    def forward(self, x):
        x = self.bn1d(super().forward(x))
        x = x.view(x.size(0), int(self.rep_dim / (4 * 4)), 4, 4)
        x = F.leaky_relu(x)
        x = self.deconv1(x)
        x = F.interpolate(F.leaky_relu(self.bn2d4(x)), scale_factor=2)
        x = self.deconv2(x)
        x = F.interpolate(F.leaky_relu(self.bn2d5(x)), scale_factor=2)
        x = self.deconv3(x)
        x = F.interpolate(F.leaky_relu(self.bn2d6(x)), scale_factor=2)
        x = self.deconv4(x)
        return torch.sigmoid(x)


class DeepSVDD(nn.Module):
    def __init__(self, net: BaseNet, objective="one-class", nu=0.1):
        super().__init__()
        assert objective in ("one-class", "soft-boundary"), (
            "Objective must be 'one-class' or 'soft-boundary'."
        )
        self.objective = objective
        self.nu = nu
        self.net = net
        self.register_buffer("c", torch.zeros(net.rep_dim))
        self.R = nn.Parameter(torch.tensor(0.0), requires_grad=False)

    @torch.no_grad()
    def init_center_c(self, x, eps=0.1):
        c = self.net(x).mean(0)
        c[(abs(c) < eps) & (c < 0)] = -eps
        c[(abs(c) < eps) & (c > 0)] = eps
        self.c.copy_(c)

    def forward(self, x):
        outputs = self.net(x)
        dist = torch.sum((outputs - self.c) ** 2, dim=1)
        if self.objective == "soft-boundary":
            return dist - self.R**2
        return dist


@heldout("deep_svdd_cifar", lambda: ((rand(4, 3, 32, 32),), {}))
def build_deep_svdd():
    model = DeepSVDD(CIFAR10_LeNet(rep_dim=32), objective="soft-boundary", nu=0.05)
    model.eval()
    model.init_center_c(rand(8, 3, 32, 32, seed=5))
    return model


@heldout("deep_svdd_pretrain_ae", lambda: ((rand(4, 3, 32, 32),), {}), train=True)
def build_deep_svdd_ae():
    return CIFAR10_LeNet_Autoencoder(rep_dim=64)


# ----------------------------------------------------------------------------------------------
# MemAE (Gong et al. 2019): memory module with hard shrinkage on the addressing weights
# ----------------------------------------------------------------------------------------------


def hard_shrink_relu(input, lambd=0.0, epsilon=1e-12):
    output = (F.relu(input - lambd) * input) / (torch.abs(input - lambd) + epsilon)
    return output


class MemoryUnit(nn.Module):
    def __init__(self, mem_dim, fea_dim, shrink_thres=0.0025):
        super().__init__()
        self.mem_dim = mem_dim
        self.fea_dim = fea_dim
        self.weight = nn.Parameter(torch.Tensor(self.mem_dim, self.fea_dim))  # M x C
        self.bias = None
        self.shrink_thres = shrink_thres
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / (self.weight.size(1) ** 0.5)
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input):
        att_weight = F.linear(input, self.weight)  # Fea x Mem^T, (TxC) x (CxM) = TxM
        att_weight = F.softmax(att_weight, dim=1)  # TxM
        if self.shrink_thres > 0:
            att_weight = hard_shrink_relu(att_weight, lambd=self.shrink_thres)
            att_weight = F.normalize(att_weight, p=1, dim=1)
        mem_trans = self.weight.permute(1, 0)  # Mem^T, MxC
        output = F.linear(
            att_weight, mem_trans
        )  # AttWeight x Mem^T^T = AW x Mem, (TxM) x (MxC) = TxC
        return {"output": output, "att": att_weight}

    def extra_repr(self):
        return f"mem_dim={self.mem_dim}, fea_dim={self.fea_dim}"


class MemModule(nn.Module):
    """Wraps MemoryUnit for N x C x H x W feature maps."""

    def __init__(self, mem_dim, fea_dim, shrink_thres=0.0025, device="cpu"):
        super().__init__()
        self.mem_dim = mem_dim
        self.fea_dim = fea_dim
        self.shrink_thres = shrink_thres
        self.memory = MemoryUnit(self.mem_dim, self.fea_dim, self.shrink_thres)

    def forward(self, input):
        s = input.data.shape
        x = input.permute(0, 2, 3, 1)
        x = x.contiguous().view(-1, s[1])
        y_and = self.memory(x)
        y = y_and["output"]
        att = y_and["att"]
        y = y.view(s[0], s[2], s[3], s[1]).permute(0, 3, 1, 2)
        att = att.view(s[0], s[2], s[3], self.mem_dim).permute(0, 3, 1, 2)
        return {"output": y, "att": att}


class AutoEncoderCov2DMem(nn.Module):
    def __init__(self, chnum_in, mem_dim, shrink_thres=0.0025):
        super().__init__()
        self.chnum_in = chnum_in
        feature_num = 32
        feature_num_2 = 24
        feature_num_x2 = 48
        self.encoder = nn.Sequential(
            nn.Conv2d(self.chnum_in, feature_num_2, (3, 3), stride=(2, 2), padding=(1, 1)),
            nn.BatchNorm2d(feature_num_2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(feature_num_2, feature_num, (3, 3), stride=(2, 2), padding=(1, 1)),
            nn.BatchNorm2d(feature_num),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(feature_num, feature_num_x2, (3, 3), stride=(2, 2), padding=(1, 1)),
            nn.BatchNorm2d(feature_num_x2),
            nn.LeakyReLU(0.2, inplace=True),
        )
        self.mem_rep = MemModule(mem_dim=mem_dim, fea_dim=feature_num_x2, shrink_thres=shrink_thres)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(
                feature_num_x2,
                feature_num,
                (3, 3),
                stride=(2, 2),
                padding=(1, 1),
                output_padding=(1, 1),
            ),
            nn.BatchNorm2d(feature_num),
            nn.LeakyReLU(0.2, inplace=True),
            nn.ConvTranspose2d(
                feature_num,
                feature_num_2,
                (3, 3),
                stride=(2, 2),
                padding=(1, 1),
                output_padding=(1, 1),
            ),
            nn.BatchNorm2d(feature_num_2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.ConvTranspose2d(
                feature_num_2,
                self.chnum_in,
                (3, 3),
                stride=(2, 2),
                padding=(1, 1),
                output_padding=(1, 1),
            ),
        )

    def forward(self, x):
        f = self.encoder(x)
        res_mem = self.mem_rep(f)
        f = res_mem["output"]
        att = res_mem["att"]
        output = self.decoder(f)
        return {"output": output, "att": att}


@heldout(
    "memae_video_frames",
    lambda: ((rand(2, 1, 32, 32),), {}),
    edit=("mem_rep", {"mem_dim": 50, "shrink_thres": 0.0}),
)
def build_memae():
    return AutoEncoderCov2DMem(chnum_in=1, mem_dim=100, shrink_thres=1.0 / 100)
