"""Neural operators and weather models: FNO, DeepONet and an AFNO (FourCastNet-style) network.

Complex-valued spectral weights made directly as parameters, FFTs in the forward pass, MLPs built
from width lists, block-diagonal Fourier mixing with soft shrinkage, patch embeddings with learned
position parameters. Configs come as plain keyword arguments and a small params object.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- FNO


class SpectralConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, modes1, modes2):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.modes1 = modes1  # number of Fourier modes to keep, at most floor(N/2) + 1
        self.modes2 = modes2
        self.scale = 1 / (in_channels * out_channels)
        self.weights1 = nn.Parameter(
            self.scale * torch.rand(in_channels, out_channels, modes1, modes2, dtype=torch.cfloat)
        )
        self.weights2 = nn.Parameter(
            self.scale * torch.rand(in_channels, out_channels, modes1, modes2, dtype=torch.cfloat)
        )

    def compl_mul2d(self, input, weights):
        return torch.einsum("bixy,ioxy->boxy", input, weights)

    def forward(self, x):
        batchsize = x.shape[0]
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(
            batchsize,
            self.out_channels,
            x.size(-2),
            x.size(-1) // 2 + 1,
            dtype=torch.cfloat,
            device=x.device,
        )
        out_ft[:, :, : self.modes1, : self.modes2] = self.compl_mul2d(
            x_ft[:, :, : self.modes1, : self.modes2], self.weights1
        )
        out_ft[:, :, -self.modes1 :, : self.modes2] = self.compl_mul2d(
            x_ft[:, :, -self.modes1 :, : self.modes2], self.weights2
        )
        return torch.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))


class FNOBlock(nn.Module):
    def __init__(self, width, modes1, modes2, activation="gelu", last=False):
        super().__init__()
        self.spectral = SpectralConv2d(width, width, modes1, modes2)
        self.w = nn.Conv2d(width, width, 1)
        self.act = (
            nn.Identity()
            if last
            else {"gelu": nn.GELU(), "relu": nn.ReLU(), "tanh": nn.Tanh()}[activation]
        )

    def forward(self, x):
        return self.act(self.spectral(x) + self.w(x))


class FNO2d(nn.Module):
    """Li et al.'s FNO for Darcy flow; the grid coordinates are appended to the input."""

    def __init__(self, modes1, modes2, width, n_layers=4, in_channels=1, out_channels=1, padding=2):
        super().__init__()
        self.padding = padding
        self.fc0 = nn.Linear(in_channels + 2, width)
        self.blocks = nn.ModuleList(
            [FNOBlock(width, modes1, modes2, last=(i == n_layers - 1)) for i in range(n_layers)]
        )
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, out_channels)

    def get_grid(self, shape, device):
        b, sx, sy = shape[0], shape[1], shape[2]
        gx = torch.linspace(0, 1, sx, device=device).reshape(1, sx, 1, 1).repeat(b, 1, sy, 1)
        gy = torch.linspace(0, 1, sy, device=device).reshape(1, 1, sy, 1).repeat(b, sx, 1, 1)
        return torch.cat((gx, gy), dim=-1)

    def forward(self, x):  # (B, X, Y, C)
        x = torch.cat((x, self.get_grid(x.shape, x.device)), dim=-1)
        x = self.fc0(x).permute(0, 3, 1, 2)
        x = F.pad(x, [0, self.padding, 0, self.padding])
        for blk in self.blocks:
            x = blk(x)
        x = x[..., : -self.padding, : -self.padding].permute(0, 2, 3, 1)
        return self.fc2(F.gelu(self.fc1(x)))


@heldout(
    "fno2d_darcy",
    lambda: ((rand(2, 24, 24, 1),), {}),
    edit=("blocks.2.spectral", {"modes2": 4}),
)
def fno2d_darcy():
    return FNO2d(modes1=6, modes2=6, width=16)


# --------------------------------------------------------------------------- DeepONet


class FNN(nn.Module):
    def __init__(self, layer_sizes, activation="tanh", kernel_initializer="Glorot normal"):
        super().__init__()
        self.activation = getattr(torch, activation)
        init = {"Glorot normal": nn.init.xavier_normal_, "He normal": nn.init.kaiming_normal_}[
            kernel_initializer
        ]
        self.linears = nn.ModuleList()
        for i in range(1, len(layer_sizes)):
            lin = nn.Linear(layer_sizes[i - 1], layer_sizes[i])
            init(lin.weight)
            nn.init.zeros_(lin.bias)
            self.linears.append(lin)

    def forward(self, x):
        for lin in self.linears[:-1]:
            x = self.activation(lin(x))
        return self.linears[-1](x)


class DeepONet(nn.Module):
    """Unstacked DeepONet: G(u)(y) = sum_k b_k(u) t_k(y) + b0."""

    def __init__(self, layer_sizes_branch, layer_sizes_trunk, activation="tanh", num_outputs=1):
        super().__init__()
        if isinstance(activation, dict):
            act_b, act_t = activation["branch"], activation["trunk"]
        else:
            act_b = act_t = activation
        self.num_outputs = num_outputs
        p = layer_sizes_trunk[-1]
        self.branch = FNN(layer_sizes_branch[:-1] + [p * num_outputs], act_b)
        self.trunk = FNN(layer_sizes_trunk, act_t)
        self.b = nn.ParameterList([nn.Parameter(torch.tensor(0.0)) for _ in range(num_outputs)])

    def forward(self, u, y):
        b = self.branch(u).view(u.shape[0], self.num_outputs, -1)
        t = torch.tanh(self.trunk(y))
        out = torch.einsum("bop,np->bno", b, t)
        return out + torch.stack(list(self.b))


@heldout("deeponet", lambda: ((rand(4, 50), rand(30, 2, seed=1)), {}))
def deeponet():
    return DeepONet(
        [50, 64, 64, 32],
        [2, 64, 64, 32],
        activation={"branch": "relu", "trunk": "tanh"},
        num_outputs=2,
    )


# --------------------------------------------------------------------------- AFNO


class Mlp(nn.Module):
    def __init__(
        self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0
    ):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class AFNO2D(nn.Module):
    def __init__(self, hidden_size, num_blocks=8, sparsity_threshold=0.01, hard_thresholding_fraction=1.0,
                 hidden_size_factor=1):  # fmt: skip
        super().__init__()
        assert hidden_size % num_blocks == 0, (
            f"hidden_size {hidden_size} should be divisible by num_blocks {num_blocks}"
        )
        self.hidden_size = hidden_size
        self.sparsity_threshold = sparsity_threshold
        self.num_blocks = num_blocks
        self.block_size = hidden_size // num_blocks
        self.hard_thresholding_fraction = hard_thresholding_fraction
        self.hidden_size_factor = hidden_size_factor
        self.scale = 0.02
        bs, f = self.block_size, hidden_size_factor
        self.w1 = nn.Parameter(self.scale * torch.randn(2, num_blocks, bs, bs * f))
        self.b1 = nn.Parameter(self.scale * torch.randn(2, num_blocks, bs * f))
        self.w2 = nn.Parameter(self.scale * torch.randn(2, num_blocks, bs * f, bs))
        self.b2 = nn.Parameter(self.scale * torch.randn(2, num_blocks, bs))

    @staticmethod
    def _cmul(x, w, b):
        real = (
            torch.einsum("...bi,bio->...bo", x.real, w[0])
            - torch.einsum("...bi,bio->...bo", x.imag, w[1])
            + b[0]
        )
        imag = (
            torch.einsum("...bi,bio->...bo", x.imag, w[0])
            + torch.einsum("...bi,bio->...bo", x.real, w[1])
            + b[1]
        )
        return real, imag

    def forward(self, x):
        bias = x
        B, H, W, C = x.shape
        x = torch.fft.rfft2(x.float(), dim=(1, 2), norm="ortho")
        x = x.reshape(B, H, W // 2 + 1, self.num_blocks, self.block_size)
        total_modes = H // 2 + 1
        kept = int(total_modes * self.hard_thresholding_fraction)
        o = torch.zeros_like(x)
        sl = (slice(None), slice(total_modes - kept, total_modes + kept), slice(None, kept))
        r, i = self._cmul(x[sl], self.w1, self.b1)
        h = torch.complex(F.relu(r), F.relu(i))
        r, i = self._cmul(h, self.w2, self.b2)
        z = torch.stack([r, i], dim=-1)
        z = F.softshrink(z, lambd=self.sparsity_threshold)
        o[sl] = torch.view_as_complex(z.contiguous())
        x = torch.fft.irfft2(o.reshape(B, H, W // 2 + 1, C), s=(H, W), dim=(1, 2), norm="ortho")
        return x.type(bias.dtype) + bias


class AFNOBlock(nn.Module):
    def __init__(self, dim, mlp_ratio=4.0, drop=0.0, act_layer=nn.GELU, norm_layer=nn.LayerNorm, double_skip=True,
                 num_blocks=8, sparsity_threshold=0.01, hard_thresholding_fraction=1.0):  # fmt: skip
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.filter = AFNO2D(dim, num_blocks, sparsity_threshold, hard_thresholding_fraction)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=drop)
        self.double_skip = double_skip

    def forward(self, x):
        residual = x
        x = self.filter(self.norm1(x))
        if self.double_skip:
            x = x + residual
            residual = x
        return self.mlp(self.norm2(x)) + residual


class PatchEmbed(nn.Module):
    def __init__(self, img_size=(32, 64), patch_size=(8, 8), in_chans=3, embed_dim=64):
        super().__init__()
        self.num_patches = (img_size[1] // patch_size[1]) * (img_size[0] // patch_size[0])
        self.img_size, self.patch_size = img_size, patch_size
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class AFNONet(nn.Module):
    def __init__(self, params, img_size=(32, 64), patch_size=(8, 8), embed_dim=64, depth=4, mlp_ratio=4.0,
                 drop_rate=0.0, num_blocks=4):  # fmt: skip
        super().__init__()
        self.params = params
        self.img_size, self.patch_size = img_size, patch_size
        self.in_chans, self.out_chans = params.N_in_channels, params.N_out_channels
        norm_layer = partial(nn.LayerNorm, eps=1e-6)
        self.patch_embed = PatchEmbed(img_size, patch_size, self.in_chans, embed_dim)
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches, embed_dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        self.pos_drop = nn.Dropout(p=drop_rate)
        self.h = img_size[0] // patch_size[0]
        self.w = img_size[1] // patch_size[1]
        self.blocks = nn.ModuleList(
            [
                AFNOBlock(
                    embed_dim, mlp_ratio, drop_rate, norm_layer=norm_layer, num_blocks=num_blocks
                )
                for _ in range(depth)
            ]
        )
        self.head = nn.Linear(embed_dim, self.out_chans * patch_size[0] * patch_size[1], bias=False)

    def forward(self, x):
        B = x.shape[0]
        x = self.pos_drop(self.patch_embed(x) + self.pos_embed).reshape(B, self.h, self.w, -1)
        for blk in self.blocks:
            x = blk(x)
        x = self.head(x)
        p0, p1 = self.patch_size
        x = x.reshape(B, self.h, self.w, p0, p1, self.out_chans).permute(0, 5, 1, 3, 2, 4)
        return x.reshape(B, self.out_chans, self.h * p0, self.w * p1)


class Params:
    """A YAML-loaded parameter bag, as training scripts pass around."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


@heldout("afno_fourcastnet", lambda: ((rand(2, 5, 32, 64),), {}))
def afno_fourcastnet():
    return AFNONet(Params(N_in_channels=5, N_out_channels=5), embed_dim=32, depth=2)
