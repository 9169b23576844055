"""Biology and medical imaging: an Evoformer-style pair stack, a DNA CNN, Attention U-Net, V-Net.

Triangle multiplicative updates and triangle attention over a pair representation with gating,
a Basset/DeepSEA-like one-hot DNA convnet that also reads the reverse complement, 2D attention gates
on skip connections, and a small 3D V-Net with PReLU residual stages.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- Evoformer pair stack


class TriangleMultiplication(nn.Module):
    def __init__(self, c_z, c_hidden, outgoing=True):
        super().__init__()
        self.outgoing = outgoing
        self.layer_norm_in = nn.LayerNorm(c_z)
        self.linear_a_p = nn.Linear(c_z, c_hidden)
        self.linear_a_g = nn.Linear(c_z, c_hidden)
        self.linear_b_p = nn.Linear(c_z, c_hidden)
        self.linear_b_g = nn.Linear(c_z, c_hidden)
        self.layer_norm_out = nn.LayerNorm(c_hidden)
        self.linear_z = nn.Linear(c_hidden, c_z)
        self.linear_g = nn.Linear(c_z, c_z)
        nn.init.zeros_(self.linear_z.weight)  # "final" init
        nn.init.zeros_(self.linear_z.bias)

    def forward(self, z, mask):
        m = mask.unsqueeze(-1)
        z = self.layer_norm_in(z)
        a = m * torch.sigmoid(self.linear_a_g(z)) * self.linear_a_p(z)
        b = m * torch.sigmoid(self.linear_b_g(z)) * self.linear_b_p(z)
        eq = "bikc,bjkc->bijc" if self.outgoing else "bkic,bkjc->bijc"
        x = self.linear_z(self.layer_norm_out(torch.einsum(eq, a, b)))
        return x * torch.sigmoid(self.linear_g(z))


class TriangleAttention(nn.Module):
    def __init__(self, c_in, c_hidden, no_heads, starting=True, inf=1e9):
        super().__init__()
        self.c_hidden, self.no_heads, self.starting, self.inf = c_hidden, no_heads, starting, inf
        self.layer_norm = nn.LayerNorm(c_in)
        self.linear = nn.Linear(c_in, no_heads, bias=False)  # triangle bias
        self.linear_q = nn.Linear(c_in, c_hidden * no_heads, bias=False)
        self.linear_k = nn.Linear(c_in, c_hidden * no_heads, bias=False)
        self.linear_v = nn.Linear(c_in, c_hidden * no_heads, bias=False)
        self.linear_g = nn.Linear(c_in, c_hidden * no_heads)
        self.linear_o = nn.Linear(c_hidden * no_heads, c_in)

    def forward(self, x, mask):
        if not self.starting:
            x, mask = x.transpose(-2, -3), mask.transpose(-1, -2)
        x = self.layer_norm(x)
        B, n_i, n_j, _ = x.shape
        H, C = self.no_heads, self.c_hidden
        tri_bias = self.linear(x).permute(0, 3, 1, 2).unsqueeze(1)  # (B, 1, H, n_i, n_j)
        mask_bias = (self.inf * (mask - 1))[:, :, None, None, :]
        q = self.linear_q(x).view(B, n_i, n_j, H, C).transpose(-2, -3) / math.sqrt(C)
        k = self.linear_k(x).view(B, n_i, n_j, H, C).transpose(-2, -3)
        v = self.linear_v(x).view(B, n_i, n_j, H, C).transpose(-2, -3)
        a = torch.softmax(q @ k.transpose(-1, -2) + tri_bias + mask_bias, dim=-1)
        o = (a @ v).transpose(-2, -3) * torch.sigmoid(self.linear_g(x)).view(B, n_i, n_j, H, C)
        o = self.linear_o(o.reshape(B, n_i, n_j, H * C))
        return o.transpose(-2, -3) if not self.starting else o


class PairTransition(nn.Module):
    def __init__(self, c_z, n=4):
        super().__init__()
        self.layer_norm = nn.LayerNorm(c_z)
        self.linear_1 = nn.Linear(c_z, n * c_z)
        self.relu = nn.ReLU()
        self.linear_2 = nn.Linear(n * c_z, c_z)

    def forward(self, z, mask):
        return self.linear_2(self.relu(self.linear_1(self.layer_norm(z)))) * mask.unsqueeze(-1)


class DropoutRowwise(nn.Dropout):
    """Dropout shared along one pair axis (the same mask for every row)."""

    def __init__(self, p, batch_dim=-3):
        super().__init__(p)
        self.batch_dim = batch_dim

    def forward(self, x):
        shape = list(x.shape)
        shape[self.batch_dim] = 1
        return x * super().forward(x.new_ones(shape))


class PairStackBlock(nn.Module):
    def __init__(self, c_z, c_hidden_mul, c_hidden_att, no_heads, transition_n, dropout):
        super().__init__()
        self.tri_mul_out = TriangleMultiplication(c_z, c_hidden_mul, outgoing=True)
        self.tri_mul_in = TriangleMultiplication(c_z, c_hidden_mul, outgoing=False)
        self.tri_att_start = TriangleAttention(c_z, c_hidden_att, no_heads, starting=True)
        self.tri_att_end = TriangleAttention(c_z, c_hidden_att, no_heads, starting=False)
        self.pair_transition = PairTransition(c_z, transition_n)
        self.dropout_row = DropoutRowwise(dropout, batch_dim=-3)
        self.dropout_col = DropoutRowwise(dropout, batch_dim=-2)

    def forward(self, z, mask):
        z = z + self.dropout_row(self.tri_mul_out(z, mask))
        z = z + self.dropout_row(self.tri_mul_in(z, mask))
        z = z + self.dropout_row(self.tri_att_start(z, mask))
        z = z + self.dropout_col(self.tri_att_end(z, mask))
        return z + self.pair_transition(z, mask)


class PairStack(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.relpos = nn.Embedding(2 * config.max_relative_idx + 1, config.c_z)
        self.max_relative_idx = config.max_relative_idx
        self.seq_proj = nn.Linear(config.c_s, 2 * config.c_z)
        self.blocks = nn.ModuleList(
            PairStackBlock(
                config.c_z,
                config.c_hidden_mul,
                config.c_hidden_att,
                config.no_heads,
                config.transition_n,
                config.dropout,
            )  # fmt: skip
            for _ in range(config.no_blocks)
        )

    def forward(self, s, mask):
        n = s.shape[1]
        idx = torch.arange(n)
        rel = (idx[None] - idx[:, None]).clamp(
            -self.max_relative_idx, self.max_relative_idx
        ) + self.max_relative_idx
        left, right = self.seq_proj(s).chunk(2, -1)
        z = left[:, :, None] + right[:, None, :] + self.relpos(rel)
        pair_mask = mask[:, :, None] * mask[:, None, :]
        for blk in self.blocks:
            z = blk(z, pair_mask)
        return z


@heldout(
    "evoformer_pair_stack",
    lambda: ((rand(2, 10, 24), torch.tensor([[1.0] * 10, [1.0] * 7 + [0.0] * 3])), {}),
    edit=("blocks.0.tri_att_start", {"no_heads": 2}),
)
def evoformer_pair_stack():
    cfg = SimpleNamespace(c_s=24, c_z=16, c_hidden_mul=16, c_hidden_att=8, no_heads=4, transition_n=2, dropout=0.25,
                          no_blocks=2, max_relative_idx=8)  # fmt: skip
    return PairStack(cfg)


# --------------------------------------------------------------------------- DNA CNN


class ConvBNReLU1d(nn.Sequential):
    def __init__(self, c_in, c_out, k, pool=None, dropout=0.0):
        layers = [nn.Conv1d(c_in, c_out, k, padding=k // 2), nn.BatchNorm1d(c_out), nn.ReLU()]
        if pool:
            layers.append(nn.MaxPool1d(pool))
        if dropout:
            layers.append(nn.Dropout(dropout))
        super().__init__(*layers)


class RevCompDNAConvNet(nn.Module):
    """Basset-like CNN; the score is averaged over both strands of the one-hot sequence."""

    def __init__(self, seq_len=200, n_targets=8, filters=(64, 48, 48), kernels=(19, 11, 7), pools=(3, 4, 4),
                 fc=(128,), dropout=0.3):  # fmt: skip
        super().__init__()
        convs, c, length = [], 4, seq_len
        for f, k, p in zip(filters, kernels, pools):
            convs.append(ConvBNReLU1d(c, f, k, pool=p))
            c, length = f, length // p
        self.convs = nn.Sequential(*convs)
        dense, d = [], c * length
        for h in fc:
            dense += [nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(dropout)]
            d = h
        self.dense = nn.Sequential(nn.Flatten(), *dense, nn.Linear(d, n_targets))
        self.register_buffer("complement", torch.tensor([3, 2, 1, 0]))  # A C G T -> T G C A

    def forward(self, onehot):  # (B, 4, L)
        rc = onehot[:, self.complement].flip(-1)
        return 0.5 * (self.dense(self.convs(onehot)) + self.dense(self.convs(rc)))


def _dna_example():
    idx = torch.randint(0, 4, (3, 200), generator=torch.Generator().manual_seed(0))
    return (F.one_hot(idx, 4).transpose(1, 2).float(),), {}


@heldout("dna_basset", _dna_example)
def dna_basset():
    return RevCompDNAConvNet()


# --------------------------------------------------------------------------- Attention U-Net


class conv_block(nn.Module):
    def __init__(self, ch_in, ch_out):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(ch_in, ch_out, kernel_size=3, stride=1, padding=1, bias=True),
            nn.BatchNorm2d(ch_out),
            nn.ReLU(inplace=True),
            nn.Conv2d(ch_out, ch_out, kernel_size=3, stride=1, padding=1, bias=True),
            nn.BatchNorm2d(ch_out),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.conv(x)


class up_conv(nn.Module):
    def __init__(self, ch_in, ch_out):
        super().__init__()
        self.up = nn.Sequential(
            nn.Upsample(scale_factor=2),
            nn.Conv2d(ch_in, ch_out, kernel_size=3, stride=1, padding=1, bias=True),
            nn.BatchNorm2d(ch_out),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.up(x)


class Attention_block(nn.Module):
    def __init__(self, F_g, F_l, F_int):
        super().__init__()
        self.W_g = nn.Sequential(
            nn.Conv2d(F_g, F_int, kernel_size=1, stride=1, padding=0, bias=True),
            nn.BatchNorm2d(F_int),
        )
        self.W_x = nn.Sequential(
            nn.Conv2d(F_l, F_int, kernel_size=1, stride=1, padding=0, bias=True),
            nn.BatchNorm2d(F_int),
        )
        self.psi = nn.Sequential(
            nn.Conv2d(F_int, 1, kernel_size=1, stride=1, padding=0, bias=True),
            nn.BatchNorm2d(1),
            nn.Sigmoid(),
        )
        self.relu = nn.ReLU(inplace=True)

    def forward(self, g, x):
        psi = self.psi(self.relu(self.W_g(g) + self.W_x(x)))
        return x * psi


class AttU_Net(nn.Module):
    def __init__(self, img_ch=3, output_ch=1, base=64):
        super().__init__()
        n = [base * 2**i for i in range(4)]
        self.Maxpool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.Conv1 = conv_block(ch_in=img_ch, ch_out=n[0])
        self.Conv2 = conv_block(ch_in=n[0], ch_out=n[1])
        self.Conv3 = conv_block(ch_in=n[1], ch_out=n[2])
        self.Conv4 = conv_block(ch_in=n[2], ch_out=n[3])
        self.Up4 = up_conv(ch_in=n[3], ch_out=n[2])
        self.Att4 = Attention_block(F_g=n[2], F_l=n[2], F_int=n[1])
        self.Up_conv4 = conv_block(ch_in=n[3], ch_out=n[2])
        self.Up3 = up_conv(ch_in=n[2], ch_out=n[1])
        self.Att3 = Attention_block(F_g=n[1], F_l=n[1], F_int=n[0])
        self.Up_conv3 = conv_block(ch_in=n[2], ch_out=n[1])
        self.Up2 = up_conv(ch_in=n[1], ch_out=n[0])
        self.Att2 = Attention_block(F_g=n[0], F_l=n[0], F_int=n[0] // 2)
        self.Up_conv2 = conv_block(ch_in=n[1], ch_out=n[0])
        self.Conv_1x1 = nn.Conv2d(n[0], output_ch, kernel_size=1, stride=1, padding=0)

    def forward(self, x):
        x1 = self.Conv1(x)
        x2 = self.Conv2(self.Maxpool(x1))
        x3 = self.Conv3(self.Maxpool(x2))
        x4 = self.Conv4(self.Maxpool(x3))
        d4 = self.Up4(x4)
        d4 = self.Up_conv4(torch.cat((self.Att4(g=d4, x=x3), d4), dim=1))
        d3 = self.Up3(d4)
        d3 = self.Up_conv3(torch.cat((self.Att3(g=d3, x=x2), d3), dim=1))
        d2 = self.Up2(d3)
        d2 = self.Up_conv2(torch.cat((self.Att2(g=d2, x=x1), d2), dim=1))
        return self.Conv_1x1(d2)


@heldout("attention_unet", lambda: ((rand(1, 1, 32, 32),), {}), edit=("Att3", {"F_int": 4}))
def attention_unet():
    return AttU_Net(img_ch=1, output_ch=2, base=8)


# --------------------------------------------------------------------------- V-Net


def passthrough(x, **kwargs):
    return x


def ELUCons(elu, nchan):
    return nn.ELU(inplace=True) if elu else nn.PReLU(nchan)


class LUConv(nn.Module):
    def __init__(self, nchan, elu):
        super().__init__()
        self.relu1 = ELUCons(elu, nchan)
        self.conv1 = nn.Conv3d(nchan, nchan, kernel_size=5, padding=2)
        self.bn1 = nn.BatchNorm3d(nchan)

    def forward(self, x):
        return self.relu1(self.bn1(self.conv1(x)))


def _make_nConv(nchan, depth, elu):
    return nn.Sequential(*[LUConv(nchan, elu) for _ in range(depth)])


class InputTransition(nn.Module):
    def __init__(self, outChans, elu, inChans=1):
        super().__init__()
        self.repeat = outChans // inChans
        self.conv1 = nn.Conv3d(inChans, outChans, kernel_size=5, padding=2)
        self.bn1 = nn.BatchNorm3d(outChans)
        self.relu1 = ELUCons(elu, outChans)

    def forward(self, x):
        out = self.bn1(self.conv1(x))
        return self.relu1(out + x.repeat(1, self.repeat, 1, 1, 1))


class DownTransition(nn.Module):
    def __init__(self, inChans, nConvs, elu, dropout=False):
        super().__init__()
        outChans = 2 * inChans
        self.down_conv = nn.Conv3d(inChans, outChans, kernel_size=2, stride=2)
        self.bn1 = nn.BatchNorm3d(outChans)
        self.do1 = nn.Dropout3d() if dropout else passthrough
        self.relu1 = ELUCons(elu, outChans)
        self.relu2 = ELUCons(elu, outChans)
        self.ops = _make_nConv(outChans, nConvs, elu)

    def forward(self, x):
        down = self.relu1(self.bn1(self.down_conv(x)))
        out = self.ops(self.do1(down))
        return self.relu2(out + down)


class UpTransition(nn.Module):
    def __init__(self, inChans, outChans, nConvs, elu, dropout=False):
        super().__init__()
        self.up_conv = nn.ConvTranspose3d(inChans, outChans // 2, kernel_size=2, stride=2)
        self.bn1 = nn.BatchNorm3d(outChans // 2)
        self.do1 = passthrough
        self.do2 = nn.Dropout3d()
        self.relu1 = ELUCons(elu, outChans // 2)
        self.relu2 = ELUCons(elu, outChans)
        if dropout:
            self.do1 = nn.Dropout3d()
        self.ops = _make_nConv(outChans, nConvs, elu)

    def forward(self, x, skipx):
        out = self.do1(x)
        skipxdo = self.do2(skipx)
        out = self.relu1(self.bn1(self.up_conv(out)))
        xcat = torch.cat((out, skipxdo), 1)
        return self.relu2(self.ops(xcat) + xcat)


class OutputTransition(nn.Module):
    def __init__(self, inChans, elu, nll, n_classes=2):
        super().__init__()
        self.conv1 = nn.Conv3d(inChans, n_classes, kernel_size=5, padding=2)
        self.bn1 = nn.BatchNorm3d(n_classes)
        self.conv2 = nn.Conv3d(n_classes, n_classes, kernel_size=1)
        self.relu1 = ELUCons(elu, n_classes)
        self.softmax = F.log_softmax if nll else F.softmax

    def forward(self, x):
        out = self.conv2(self.relu1(self.bn1(self.conv1(x))))
        return self.softmax(out, dim=1)


class VNet(nn.Module):
    def __init__(self, elu=True, nll=False, base=16, n_classes=2):
        super().__init__()
        self.in_tr = InputTransition(base, elu)
        self.down_tr32 = DownTransition(base, 1, elu)
        self.down_tr64 = DownTransition(base * 2, 2, elu)
        self.down_tr128 = DownTransition(base * 4, 2, elu, dropout=True)
        self.up_tr128 = UpTransition(base * 8, base * 8, 2, elu, dropout=True)
        self.up_tr64 = UpTransition(base * 8, base * 4, 1, elu)
        self.up_tr32 = UpTransition(base * 4, base * 2, 1, elu)
        self.out_tr = OutputTransition(base * 2, elu, nll, n_classes)

    def forward(self, x):
        out16 = self.in_tr(x)
        out32 = self.down_tr32(out16)
        out64 = self.down_tr64(out32)
        out128 = self.down_tr128(out64)
        out = self.up_tr128(out128, out64)
        out = self.up_tr64(out, out32)
        out = self.up_tr32(out, out16)
        return self.out_tr(out)


@heldout("vnet3d", lambda: ((rand(1, 1, 16, 16, 16),), {}))
def vnet3d():
    return VNet(elu=False, nll=True, base=4)
