"""Hand-written blocks of recent architectures: a Mamba-like selective SSM, an S4D layer,
Perceiver IO, Swin with window attention, ConvNeXt and RegNet."""

from __future__ import annotations

import math
from collections import OrderedDict
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- Mamba-lite / S4D


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MambaBlock(nn.Module):
    """Selective scan written as a plain loop over time (no fused kernel)."""

    def __init__(
        self, d_model, d_state=16, expand=2, d_conv=4, dt_rank="auto", conv_bias=True, bias=False
    ):
        super().__init__()
        self.d_inner = int(expand * d_model)
        self.dt_rank = math.ceil(d_model / 16) if dt_rank == "auto" else dt_rank
        self.d_state = d_state
        self.in_proj = nn.Linear(d_model, self.d_inner * 2, bias=bias)
        self.conv1d = nn.Conv1d(self.d_inner, self.d_inner, kernel_size=d_conv, bias=conv_bias,
                                groups=self.d_inner, padding=d_conv - 1)  # fmt: skip
        self.x_proj = nn.Linear(self.d_inner, self.dt_rank + d_state * 2, bias=False)
        self.dt_proj = nn.Linear(self.dt_rank, self.d_inner, bias=True)
        A = torch.arange(1, d_state + 1, dtype=torch.float32).repeat(self.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(self.d_inner))
        self.out_proj = nn.Linear(self.d_inner, d_model, bias=bias)

    def forward(self, x):
        b, seqlen, _ = x.shape
        xz = self.in_proj(x)
        x, z = xz.chunk(2, dim=-1)
        x = F.silu(self.conv1d(x.transpose(1, 2))[..., :seqlen].transpose(1, 2))
        dbc = self.x_proj(x)
        delta, B, C = dbc.split([self.dt_rank, self.d_state, self.d_state], dim=-1)
        delta = F.softplus(self.dt_proj(delta))
        A = -torch.exp(self.A_log)
        dA = torch.exp(delta.unsqueeze(-1) * A)  # (b, l, d, n)
        dBx = delta.unsqueeze(-1) * B.unsqueeze(2) * x.unsqueeze(-1)
        h = x.new_zeros(b, self.d_inner, self.d_state)
        ys = []
        for t in range(seqlen):
            h = dA[:, t] * h + dBx[:, t]
            ys.append((h @ C[:, t].unsqueeze(-1)).squeeze(-1))
        y = torch.stack(ys, 1) + x * self.D
        return self.out_proj(y * F.silu(z))


class ResidualBlock(nn.Module):
    def __init__(self, d_model, mixer_cls, norm_cls=RMSNorm):
        super().__init__()
        self.mixer = mixer_cls(d_model)
        self.norm = norm_cls(d_model)

    def forward(self, x):
        return x + self.mixer(self.norm(x))


class MambaLM(nn.Module):
    def __init__(self, vocab_size=256, d_model=64, n_layer=2, ssm_cfg=None, tie_embeddings=True):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        mixer = partial(MambaBlock, **(ssm_cfg or {}))
        self.layers = nn.ModuleList([ResidualBlock(d_model, mixer) for _ in range(n_layer)])
        self.norm_f = RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        if tie_embeddings:
            self.lm_head.weight = self.embedding.weight

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm_f(x))


@heldout(
    "mamba_lite",
    example=lambda: (
        (torch.randint(0, 256, (2, 24), generator=torch.Generator().manual_seed(0)),),
        {},
    ),
)
def mamba_lite():
    torch.manual_seed(60)
    return MambaLM(ssm_cfg={"d_state": 8, "expand": 2})


class S4DKernel(nn.Module):
    """Diagonal state-space kernel (S4D-Lin init), computed by Vandermonde product."""

    def __init__(self, d_model, N=32, dt_min=0.001, dt_max=0.1):
        super().__init__()
        H = d_model
        log_dt = torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        C = torch.randn(H, N // 2, dtype=torch.cfloat)
        self.C = nn.Parameter(torch.view_as_real(C))
        self.register_buffer("log_dt", log_dt)
        self.log_A_real = nn.Parameter(torch.log(0.5 * torch.ones(H, N // 2)))
        self.A_imag = nn.Parameter(math.pi * torch.arange(N // 2).float().repeat(H, 1))

    def forward(self, L):
        dt = torch.exp(self.log_dt)
        C = torch.view_as_complex(self.C)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag
        dtA = A * dt.unsqueeze(-1)
        K = dtA.unsqueeze(-1) * torch.arange(L, device=A.device)
        C = C * (torch.exp(dtA) - 1.0) / A
        return 2 * torch.einsum("hn, hnl -> hl", C, torch.exp(K)).real


class S4D(nn.Module):
    def __init__(self, d_model, d_state=32, dropout=0.0, transposed=True, **kernel_args):
        super().__init__()
        self.h, self.transposed = d_model, transposed
        self.D = nn.Parameter(torch.randn(self.h))
        self.kernel = S4DKernel(self.h, N=d_state, **kernel_args)
        self.activation = nn.GELU()
        self.dropout = nn.Dropout1d(dropout) if dropout > 0.0 else nn.Identity()
        self.output_linear = nn.Sequential(
            nn.Conv1d(self.h, 2 * self.h, kernel_size=1), nn.GLU(dim=-2)
        )

    def forward(self, u):
        if not self.transposed:
            u = u.transpose(-1, -2)
        L = u.size(-1)
        k = self.kernel(L=L)
        k_f = torch.fft.rfft(k, n=2 * L)
        u_f = torch.fft.rfft(u, n=2 * L)
        y = torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]
        y = y + u * self.D.unsqueeze(-1)
        y = self.output_linear(self.dropout(self.activation(y)))
        if not self.transposed:
            y = y.transpose(-1, -2)
        return y


class S4Classifier(nn.Module):
    def __init__(self, d_input, d_output=10, d_model=64, n_layers=2, dropout=0.1, prenorm=False):
        super().__init__()
        self.prenorm = prenorm
        self.encoder = nn.Linear(d_input, d_model)
        self.s4_layers, self.norms, self.dropouts = (
            nn.ModuleList(),
            nn.ModuleList(),
            nn.ModuleList(),
        )
        for _ in range(n_layers):
            self.s4_layers.append(
                S4D(d_model, dropout=dropout, transposed=True, dt_min=0.001, dt_max=0.1)
            )
            self.norms.append(nn.LayerNorm(d_model))
            self.dropouts.append(nn.Dropout1d(dropout))
        self.decoder = nn.Linear(d_model, d_output)

    def forward(self, x):
        x = self.encoder(x).transpose(-1, -2)
        for layer, norm, dropout in zip(self.s4_layers, self.norms, self.dropouts):
            z = x
            if self.prenorm:
                z = norm(z.transpose(-1, -2)).transpose(-1, -2)
            z = dropout(layer(z))
            x = z + x
            if not self.prenorm:
                x = norm(x.transpose(-1, -2)).transpose(-1, -2)
        return self.decoder(x.transpose(-1, -2).mean(dim=1))


@heldout("s4d_classifier", example=lambda: ((rand(2, 100, 3, seed=1),), {}),
         edit=("s4_layers.1", {"d_state": 16}))  # fmt: skip
def s4d_classifier():
    torch.manual_seed(61)
    return S4Classifier(3)


# --------------------------------------------------------------------------- Perceiver IO-lite


class CrossAttention(nn.Module):
    def __init__(self, q_dim, kv_dim, num_heads=1, widening_factor=1, use_query_residual=True):
        super().__init__()
        self.q_norm = nn.LayerNorm(q_dim)
        self.kv_norm = nn.LayerNorm(kv_dim)
        self.attn = nn.MultiheadAttention(
            q_dim, num_heads, kdim=kv_dim, vdim=kv_dim, batch_first=True
        )
        self.use_query_residual = use_query_residual
        self.mlp = nn.Sequential(nn.LayerNorm(q_dim), nn.Linear(q_dim, q_dim * widening_factor), nn.GELU(),
                                 nn.Linear(q_dim * widening_factor, q_dim))  # fmt: skip

    def forward(self, q, kv):
        kvn = self.kv_norm(kv)
        a = self.attn(self.q_norm(q), kvn, kvn, need_weights=False)[0]
        x = q + a if self.use_query_residual else a
        return x + self.mlp(x)


class SelfAttentionBlock(nn.Module):
    def __init__(self, dim, num_heads=4, widening_factor=2, dropout=0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, num_heads, dropout=dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, dim * widening_factor), nn.GELU(), nn.Linear(dim * widening_factor, dim)
        )

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class PerceiverIO(nn.Module):
    def __init__(self, input_dim, num_latents=32, latent_dim=64, num_outputs=16, output_dim=10,
                 depth=2, config=None):  # fmt: skip
        super().__init__()
        config = config or {}
        self.latents = nn.Parameter(torch.randn(num_latents, latent_dim) * 0.02)
        self.encoder = CrossAttention(latent_dim, input_dim, **config.get("encoder", {}))
        self.process = nn.Sequential(*[SelfAttentionBlock(latent_dim, **config.get("process", {}))
                                       for _ in range(depth)])  # fmt: skip
        self.output_queries = nn.Embedding(num_outputs, latent_dim)
        self.decoder = CrossAttention(latent_dim, latent_dim, use_query_residual=False)
        self.head = nn.Linear(latent_dim, output_dim)

    def forward(self, inputs, mask=None):
        b = inputs.shape[0]
        z = self.encoder(self.latents.expand(b, -1, -1), inputs)
        z = self.process(z)
        q = self.output_queries.weight.expand(b, -1, -1)
        return self.head(self.decoder(q, z))


@heldout("perceiver_io_lite", example=lambda: ((rand(2, 200, 12, seed=2),), {}),
         edit=("encoder", {"widening_factor": 2}))  # fmt: skip
def perceiver_io_lite():
    torch.manual_seed(62)
    cfg = {
        "encoder": {"num_heads": 1, "widening_factor": 1},
        "process": {"num_heads": 4, "widening_factor": 2},
    }
    return PerceiverIO(12, config=cfg)


# --------------------------------------------------------------------------- Swin-lite


def window_partition(x, ws):
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, c)


def window_reverse(windows, ws, h, w):
    b = int(windows.shape[0] / (h * w / ws / ws))
    x = windows.view(b, h // ws, w // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, -1)


class WindowAttention(nn.Module):
    def __init__(self, dim, window_size, num_heads, qkv_bias=True, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.dim, self.window_size, self.num_heads = dim, window_size, num_heads
        head_dim = dim // num_heads
        self.scale = head_dim**-0.5
        ws = window_size
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * ws - 1) ** 2, num_heads))
        coords = torch.stack(
            torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")
        ).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (ws - 1)
        self.register_buffer("relative_position_index", rel[..., 0] * (2 * ws - 1) + rel[..., 1])
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def forward(self, x, mask=None):
        B_, N, C = x.shape
        qkv = (
            self.qkv(x)
            .reshape(B_, N, 3, self.num_heads, C // self.num_heads)
            .permute(2, 0, 3, 1, 4)
        )
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(
            N, N, -1
        )
        attn = attn + bias.permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = attn.view(B_ // nw, nw, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, N, N)
        attn = self.attn_drop(attn.softmax(-1))
        x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
        return self.proj_drop(self.proj(x))


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


class SwinTransformerBlock(nn.Module):
    def __init__(self, dim, input_resolution, num_heads, window_size=4, shift_size=0, mlp_ratio=4.0,
                 norm_layer=nn.LayerNorm):  # fmt: skip
        super().__init__()
        self.dim, self.input_resolution = dim, input_resolution
        self.window_size, self.shift_size = window_size, shift_size
        if min(input_resolution) <= window_size:
            self.shift_size, self.window_size = 0, min(input_resolution)
        self.norm1 = norm_layer(dim)
        self.attn = WindowAttention(dim, window_size=self.window_size, num_heads=num_heads)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))
        if self.shift_size > 0:
            H, W = input_resolution
            img_mask = torch.zeros((1, H, W, 1))
            cnt = 0
            sl = (
                slice(0, -self.window_size),
                slice(-self.window_size, -self.shift_size),
                slice(-self.shift_size, None),
            )
            for h in sl:
                for w in sl:
                    img_mask[:, h, w, :] = cnt
                    cnt += 1
            mw = window_partition(img_mask, self.window_size).squeeze(-1)
            attn_mask = mw.unsqueeze(1) - mw.unsqueeze(2)
            attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(
                attn_mask == 0, 0.0
            )
        else:
            attn_mask = None
        self.register_buffer("attn_mask", attn_mask)

    def forward(self, x):
        H, W = self.input_resolution
        B, L, C = x.shape
        shortcut = x
        x = self.norm1(x).view(B, H, W, C)
        if self.shift_size > 0:
            x = torch.roll(x, shifts=(-self.shift_size, -self.shift_size), dims=(1, 2))
        attn = self.attn(window_partition(x, self.window_size), mask=self.attn_mask)
        x = window_reverse(attn, self.window_size, H, W)
        if self.shift_size > 0:
            x = torch.roll(x, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
        x = shortcut + x.reshape(B, H * W, C)
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    def __init__(self, input_resolution, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.input_resolution = input_resolution
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x):
        H, W = self.input_resolution
        B, _, C = x.shape
        x = x.view(B, H, W, C)
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
        return self.reduction(self.norm(x.view(B, -1, 4 * C)))


class SwinLite(nn.Module):
    def __init__(self, img_size=32, patch_size=2, in_chans=3, num_classes=10, embed_dim=32,
                 depths=(2, 2), num_heads=(2, 4), window_size=4):  # fmt: skip
        super().__init__()
        self.patch_embed = nn.Sequential(
            OrderedDict(proj=nn.Conv2d(in_chans, embed_dim, patch_size, patch_size)),
        )
        self.pos_drop = nn.Dropout(0.0)
        res = img_size // patch_size
        stages = []
        dim = embed_dim
        for i, (d, h) in enumerate(zip(depths, num_heads)):
            blocks = [SwinTransformerBlock(dim, (res, res), h, window_size, 0 if j % 2 == 0 else window_size // 2)
                      for j in range(d)]  # fmt: skip
            if i < len(depths) - 1:
                blocks.append(PatchMerging((res, res), dim))
                dim, res = dim * 2, res // 2
            stages.append(nn.Sequential(*blocks))
        self.layers = nn.ModuleList(stages)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = self.pos_drop(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x).mean(1))


@heldout("swin_lite", example=lambda: ((rand(2, 3, 32, 32, seed=3),), {}))
def swin_lite():
    torch.manual_seed(63)
    return SwinLite()


# --------------------------------------------------------------------------- ConvNeXt / RegNet


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep = 1 - self.drop_prob
        mask = x.new_empty(x.shape[0], *([1] * (x.ndim - 1))).bernoulli_(keep)
        return x * mask / keep


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim, drop_path=0.0, layer_scale_init_value=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = (nn.Parameter(layer_scale_init_value * torch.ones(dim))
                      if layer_scale_init_value > 0 else None)  # fmt: skip
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        inp = x
        x = self.dwconv(x).permute(0, 2, 3, 1)
        x = self.pwconv2(self.act(self.pwconv1(self.norm(x))))
        if self.gamma is not None:
            x = self.gamma * x
        return inp + self.drop_path(x.permute(0, 3, 1, 2))


class ConvNeXtLite(nn.Module):
    def __init__(self, in_chans=3, num_classes=10, depths=[1, 1, 2, 1], dims=[16, 32, 64, 96],  # noqa: B006
                 drop_path_rate=0.1, head_init_scale=1.0):  # fmt: skip
        super().__init__()
        self.downsample_layers = nn.ModuleList()
        self.downsample_layers.append(nn.Sequential(nn.Conv2d(in_chans, dims[0], kernel_size=4, stride=4),
                                                    LayerNorm2d(dims[0], eps=1e-6)))  # fmt: skip
        for i in range(3):
            self.downsample_layers.append(nn.Sequential(LayerNorm2d(dims[i], eps=1e-6),
                                                        nn.Conv2d(dims[i], dims[i + 1], kernel_size=2, stride=2)))  # fmt: skip
        self.stages = nn.ModuleList()
        dp_rates = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
        cur = 0
        for i in range(4):
            self.stages.append(nn.Sequential(*[ConvNeXtBlock(dims[i], drop_path=dp_rates[cur + j])
                                               for j in range(depths[i])]))  # fmt: skip
            cur += depths[i]
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], num_classes)
        self.head.weight.data.mul_(head_init_scale)

    def forward(self, x):
        for down, stage in zip(self.downsample_layers, self.stages):
            x = stage(down(x))
        return self.head(self.norm(x.mean([-2, -1])))


@heldout("convnext_lite", example=lambda: ((rand(2, 3, 64, 64, seed=4),), {}),
         edit=("stages.2.1", {"layer_scale_init_value": 0.0}))  # fmt: skip
def convnext_lite():
    torch.manual_seed(64)
    return ConvNeXtLite()


def quantize_widths(w_a, w_0, w_m, depth, q=8):
    """RegNet's rule: linear widths, snapped to powers of w_m, rounded to multiples of q."""
    ws_cont = torch.arange(depth) * w_a + w_0
    ks = torch.round(torch.log(ws_cont / w_0) / math.log(w_m))
    ws = (w_0 * torch.pow(w_m, ks) / q).round().int() * q
    widths, depths = torch.unique_consecutive(ws, return_counts=True)
    return widths.tolist(), depths.tolist()


class SqueezeExcitation(nn.Module):
    def __init__(self, w_in, w_se, activation=nn.ReLU, scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(w_in, w_se, 1)
        self.fc2 = nn.Conv2d(w_se, w_in, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, x):
        s = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return x * s


class ConvBNAct(nn.Sequential):
    def __init__(self, c_in, c_out, k=3, s=1, g=1, act=True):
        super().__init__(nn.Conv2d(c_in, c_out, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(c_out),
                         nn.ReLU(inplace=True) if act else nn.Identity())  # fmt: skip


class XBlock(nn.Module):
    def __init__(self, w_in, w_out, stride, group_width, bottleneck_ratio=1.0, se_ratio=None):
        super().__init__()
        w_b = int(round(w_out * bottleneck_ratio))
        g = w_b // group_width
        self.proj = (
            ConvBNAct(w_in, w_out, 1, stride, act=False) if (w_in != w_out or stride != 1) else None
        )
        layers = OrderedDict(a=ConvBNAct(w_in, w_b, 1), b=ConvBNAct(w_b, w_b, 3, stride, g))
        if se_ratio:
            layers["se"] = SqueezeExcitation(w_b, max(1, int(round(w_in * se_ratio))))
        layers["c"] = ConvBNAct(w_b, w_out, 1, act=False)
        self.f = nn.Sequential(layers)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        sc = x if self.proj is None else self.proj(x)
        return self.relu(sc + self.f(x))


BLOCKS = {"x": XBlock, "y": partial(XBlock, se_ratio=0.25)}


class RegNetLite(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.stem = ConvBNAct(3, cfg["stem_w"], 3, 2)
        widths, depths = quantize_widths(cfg["w_a"], cfg["w_0"], cfg["w_m"], cfg["depth"])
        block = BLOCKS[cfg.get("block", "x")]
        w_in = cfg["stem_w"]
        stages = OrderedDict()
        for i, (w, d) in enumerate(zip(widths, depths)):
            gw = min(cfg["group_w"], w)
            stages[f"s{i + 1}"] = nn.Sequential(*[block(w_in if j == 0 else w, w, 2 if j == 0 else 1, gw)
                                                  for j in range(d)])  # fmt: skip
            w_in = w
        self.trunk_output = nn.Sequential(stages)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(w_in, cfg["num_classes"])

    def forward(self, x):
        x = self.avgpool(self.trunk_output(self.stem(x)))
        return self.fc(x.flatten(1))


@heldout("regnet_lite", example=lambda: ((rand(2, 3, 64, 64, seed=5),), {}))
def regnet_lite():
    torch.manual_seed(65)
    return RegNetLite({"stem_w": 16, "w_a": 12.0, "w_0": 16, "w_m": 2.0, "depth": 6, "group_w": 8,
                       "block": "y", "num_classes": 10})  # fmt: skip
