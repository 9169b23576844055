"""Video recognition: R(2+1)D, TimeSformer with divided space-time attention, SlowFast lite."""

from __future__ import annotations

import math
from functools import partial

import torch
from torch import nn
from torch.nn.modules.utils import _triple

from .spec import heldout, rand

# --------------------------------------------------------------------------- R(2+1)D


class SpatioTemporalConv(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=False):
        super().__init__()
        kernel_size, stride, padding = _triple(kernel_size), _triple(stride), _triple(padding)
        spatial_kernel_size = [1, kernel_size[1], kernel_size[2]]
        spatial_stride = [1, stride[1], stride[2]]
        spatial_padding = [0, padding[1], padding[2]]
        temporal_kernel_size = [kernel_size[0], 1, 1]
        temporal_stride = [stride[0], 1, 1]
        temporal_padding = [padding[0], 0, 0]
        # number of intermediate channels so the (2+1)D block matches a full 3D conv's parameters
        intermed_channels = int(
            math.floor(
                (kernel_size[0] * kernel_size[1] * kernel_size[2] * in_channels * out_channels)
                / (kernel_size[1] * kernel_size[2] * in_channels + kernel_size[0] * out_channels)
            )
        )
        self.spatial_conv = nn.Conv3d(in_channels, intermed_channels, spatial_kernel_size,
                                      stride=spatial_stride, padding=spatial_padding, bias=bias)  # fmt: skip
        self.bn = nn.BatchNorm3d(intermed_channels)
        self.relu = nn.ReLU()
        self.temporal_conv = nn.Conv3d(intermed_channels, out_channels, temporal_kernel_size,
                                       stride=temporal_stride, padding=temporal_padding, bias=bias)  # fmt: skip

    def forward(self, x):
        x = self.relu(self.bn(self.spatial_conv(x)))
        return self.temporal_conv(x)


class SpatioTemporalResBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, downsample=False):
        super().__init__()
        self.downsample = downsample
        padding = kernel_size // 2
        if self.downsample:
            self.downsampleconv = SpatioTemporalConv(in_channels, out_channels, 1, stride=2)
            self.downsamplebn = nn.BatchNorm3d(out_channels)
            self.conv1 = SpatioTemporalConv(in_channels, out_channels, kernel_size,
                                            padding=padding, stride=2)  # fmt: skip
        else:
            self.conv1 = SpatioTemporalConv(in_channels, out_channels, kernel_size, padding=padding)
        self.bn1 = nn.BatchNorm3d(out_channels)
        self.relu1 = nn.ReLU()
        self.conv2 = SpatioTemporalConv(out_channels, out_channels, kernel_size, padding=padding)
        self.bn2 = nn.BatchNorm3d(out_channels)
        self.outrelu = nn.ReLU()

    def forward(self, x):
        res = self.relu1(self.bn1(self.conv1(x)))
        res = self.bn2(self.conv2(res))
        if self.downsample:
            x = self.downsamplebn(self.downsampleconv(x))
        return self.outrelu(x + res)


class SpatioTemporalResLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, layer_size,
                 block_type=SpatioTemporalResBlock, downsample=False):  # fmt: skip
        super().__init__()
        self.block1 = block_type(in_channels, out_channels, kernel_size, downsample)
        self.blocks = nn.ModuleList([])
        for _ in range(layer_size - 1):
            self.blocks += [block_type(out_channels, out_channels, kernel_size)]

    def forward(self, x):
        x = self.block1(x)
        for block in self.blocks:
            x = block(x)
        return x


class R2Plus1DNet(nn.Module):
    def __init__(self, layer_sizes, block_type=SpatioTemporalResBlock, base=8):
        super().__init__()
        self.conv1 = SpatioTemporalConv(3, base, (1, 7, 7), stride=(1, 2, 2), padding=(0, 3, 3))
        self.conv2 = SpatioTemporalResLayer(base, base, 3, layer_sizes[0], block_type=block_type)
        self.conv3 = SpatioTemporalResLayer(base, 2 * base, 3, layer_sizes[1], block_type, True)
        self.conv4 = SpatioTemporalResLayer(2 * base, 4 * base, 3, layer_sizes[2], block_type, True)
        self.pool = nn.AdaptiveAvgPool3d(1)

    def forward(self, x):
        x = self.conv4(self.conv3(self.conv2(self.conv1(x))))
        return self.pool(x).view(-1, self.conv4.block1.conv2.temporal_conv.out_channels)


class R2Plus1DClassifier(nn.Module):
    def __init__(self, num_classes, layer_sizes, block_type=SpatioTemporalResBlock):
        super().__init__()
        self.res2plus1d = R2Plus1DNet(layer_sizes, block_type)
        self.linear = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.linear(self.res2plus1d(x))


@heldout(
    "r2plus1d",
    lambda: ((rand(2, 3, 8, 32, 32),), {}),
)
def r2plus1d():
    return R2Plus1DClassifier(num_classes=6, layer_sizes=[1, 1, 1])


# --------------------------------------------------------------------------- TimeSformer


class PatchEmbed(nn.Module):
    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        B, C, T, H, W = x.shape
        x = x.transpose(1, 2).reshape(B * T, C, H, W)
        x = self.proj(x)
        W = x.size(-1)
        return x.flatten(2).transpose(1, 2), T, W


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class VideoAttention(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=False, qk_scale=None, attn_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.scale = qk_scale or (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.attn_drop = nn.Dropout(attn_drop)

    def forward(self, x):
        B, N, C = x.shape
        qkv = (
            self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        )
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = self.attn_drop((q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1))
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


class DividedBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, drop=0.0,
                 norm_layer=nn.LayerNorm, attention_type="divided_space_time"):  # fmt: skip
        super().__init__()
        assert attention_type in ("divided_space_time", "space_only")
        self.attention_type = attention_type
        self.norm1 = norm_layer(dim)
        self.attn = VideoAttention(dim, num_heads=num_heads, qkv_bias=qkv_bias)
        if self.attention_type == "divided_space_time":
            self.temporal_norm1 = norm_layer(dim)
            self.temporal_attn = VideoAttention(dim, num_heads=num_heads, qkv_bias=qkv_bias)
            self.temporal_fc = nn.Linear(dim, dim)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), drop=drop)

    def forward(self, x, B, T, W):
        num_spatial_tokens = (x.size(1) - 1) // T
        H = num_spatial_tokens // W
        if self.attention_type == "space_only":
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))
        # temporal: (b, h*w*t, m) -> (b*h*w, t, m)
        xt = x[:, 1:, :]
        m = xt.size(-1)
        xt = xt.reshape(B, H * W, T, m).reshape(B * H * W, T, m)
        res_temporal = self.temporal_attn(self.temporal_norm1(xt))
        res_temporal = self.temporal_fc(res_temporal.reshape(B, H * W * T, m))
        xt = x[:, 1:, :] + res_temporal
        # spatial: (b, h*w*t, m) -> (b*t, 1 + h*w, m)
        init_cls_token = x[:, 0, :].unsqueeze(1)
        cls_token = init_cls_token.repeat(1, T, 1).reshape(B * T, m).unsqueeze(1)
        xs = xt.reshape(B, H * W, T, m).permute(0, 2, 1, 3).reshape(B * T, H * W, m)
        xs = torch.cat((cls_token, xs), 1)
        res_spatial = self.attn(self.norm1(xs))
        cls_token = res_spatial[:, 0, :].reshape(B, T, m).mean(1, keepdim=True)
        res_spatial = res_spatial[:, 1:, :].reshape(B, T, H * W, m).permute(0, 2, 1, 3)
        res = torch.cat((cls_token, res_spatial.reshape(B, H * W * T, m)), 1)
        x = torch.cat((init_cls_token, xt), 1) + res
        return x + self.mlp(self.norm2(x))


class TimeSformer(nn.Module):
    def __init__(self, img_size=224, patch_size=16, num_classes=400, embed_dim=768, depth=12,
                 num_heads=12, mlp_ratio=4.0, num_frames=8, attention_type="divided_space_time",
                 norm_layer=None, **kwargs):  # fmt: skip
        super().__init__()
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        self.attention_type = attention_type
        self.patch_embed = PatchEmbed(img_size, patch_size, 3, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        if self.attention_type != "space_only":
            self.time_embed = nn.Parameter(torch.zeros(1, num_frames, embed_dim))
        self.blocks = nn.ModuleList(
            DividedBlock(embed_dim, num_heads, mlp_ratio, norm_layer=norm_layer,
                         attention_type=attention_type, **kwargs)
            for _ in range(depth)
        )  # fmt: skip
        self.norm = norm_layer(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        for i, m in enumerate(self.blocks.modules()):
            if isinstance(m, DividedBlock) and m.attention_type == "divided_space_time" and i > 0:
                nn.init.constant_(m.temporal_fc.weight, 0)
                nn.init.constant_(m.temporal_fc.bias, 0)

    def forward(self, x):
        B = x.shape[0]
        x, T, W = self.patch_embed(x)
        cls_tokens = self.cls_token.expand(x.size(0), -1, -1)
        x = torch.cat((cls_tokens, x), dim=1) + self.pos_embed
        if self.attention_type != "space_only":
            cls_tokens = x[:B, 0, :].unsqueeze(1)
            x = x[:, 1:]
            n, m = x.size(1), x.size(2)
            x = x.reshape(B, T, n, m).permute(0, 2, 1, 3).reshape(B * n, T, m)
            x = x + self.time_embed[:, :T]
            x = x.reshape(B, n, T, m).reshape(B, n * T, m)
            x = torch.cat((cls_tokens, x), dim=1)
        for blk in self.blocks:
            x = blk(x, B, T, W)
        if self.attention_type == "space_only":
            x = x.reshape(B, T, -1, x.size(-1)).mean(1)
        return self.head(self.norm(x)[:, 0])


@heldout(
    "timesformer_divided",
    lambda: ((rand(2, 3, 4, 32, 32),), {}),
    edit=("blocks.1", {"num_heads": 2, "mlp_ratio": 2.0}),
)
def timesformer_divided():
    return TimeSformer(32, 8, num_classes=5, embed_dim=48, depth=2, num_heads=4, num_frames=4,
                       qkv_bias=True)  # fmt: skip


# --------------------------------------------------------------------------- SlowFast lite


class ResStage3d(nn.Module):
    def __init__(self, dim_in, dim_out, temp_kernel, stride=1, norm_module=nn.BatchNorm3d):
        super().__init__()
        self.a = nn.Conv3d(dim_in, dim_out, (temp_kernel, 1, 1), padding=(temp_kernel // 2, 0, 0))
        self.a_bn = norm_module(dim_out)
        self.b = nn.Conv3d(dim_out, dim_out, (1, 3, 3), (1, stride, stride), (0, 1, 1))
        self.b_bn = norm_module(dim_out)
        self.branch1 = (
            nn.Conv3d(dim_in, dim_out, 1, (1, stride, stride))
            if dim_in != dim_out or stride > 1
            else None
        )
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.b_bn(self.b(self.relu(self.a_bn(self.a(x)))))
        return self.relu(y + (x if self.branch1 is None else self.branch1(x)))


class FuseFastToSlow(nn.Module):
    def __init__(self, dim_in, fusion_conv_channel_ratio, fusion_kernel, alpha, eps=1e-5):
        super().__init__()
        self.conv_f2s = nn.Conv3d(dim_in, dim_in * fusion_conv_channel_ratio, [fusion_kernel, 1, 1],
                                  stride=[alpha, 1, 1], padding=[fusion_kernel // 2, 0, 0], bias=False)  # fmt: skip
        self.bn = nn.BatchNorm3d(dim_in * fusion_conv_channel_ratio, eps=eps)
        self.relu = nn.ReLU(True)

    def forward(self, x):
        x_s, x_f = x
        fuse = self.relu(self.bn(self.conv_f2s(x_f)))
        return [torch.cat([x_s, fuse], 1), x_f]


class SlowFast(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        alpha, beta_inv, ratio = cfg["ALPHA"], cfg["BETA_INV"], cfg["FUSION_CONV_CHANNEL_RATIO"]
        w = cfg["WIDTH"]
        self.s1 = nn.ModuleList([
            nn.Sequential(nn.Conv3d(3, w, (1, 5, 5), (1, 2, 2), (0, 2, 2)), nn.BatchNorm3d(w), nn.ReLU()),
            nn.Sequential(nn.Conv3d(3, w // beta_inv, (5, 5, 5), (1, 2, 2), (2, 2, 2)),
                          nn.BatchNorm3d(w // beta_inv), nn.ReLU()),
        ])  # fmt: skip
        self.s1_fuse = FuseFastToSlow(w // beta_inv, ratio, cfg["FUSION_KERNEL_SZ"], alpha)
        dims = cfg["STAGE_DIMS"]
        in_s, in_f = w + w // beta_inv * ratio, w // beta_inv
        for i, d in enumerate(dims, start=2):
            slow = ResStage3d(in_s, d, temp_kernel=1 if i < 4 else 3, stride=2)
            fast = ResStage3d(in_f, d // beta_inv, temp_kernel=3, stride=2)
            self.add_module(f"s{i}", nn.ModuleList([slow, fast]))
            if i < len(dims) + 1:
                self.add_module(
                    f"s{i}_fuse",
                    FuseFastToSlow(d // beta_inv, ratio, cfg["FUSION_KERNEL_SZ"], alpha),
                )
                in_s = d + d // beta_inv * ratio
            else:
                in_s = d
            in_f = d // beta_inv
        self.num_stages = len(dims) + 1
        self.head = nn.Linear(in_s + in_f, cfg["NUM_CLASSES"])
        self.dropout = nn.Dropout(cfg.get("DROPOUT_RATE", 0.5))

    def forward(self, x: list[torch.Tensor]):
        x = [p(t) for p, t in zip(self.s1, x)]
        x = self.s1_fuse(x)
        for i in range(2, self.num_stages + 1):
            x = [p(t) for p, t in zip(getattr(self, f"s{i}"), x)]
            if hasattr(self, f"s{i}_fuse"):
                x = getattr(self, f"s{i}_fuse")(x)
        pooled = torch.cat([t.mean(dim=(2, 3, 4)) for t in x], dim=1)
        return self.head(self.dropout(pooled))


SLOWFAST_CFG = {
    "ALPHA": 4,
    "BETA_INV": 4,
    "FUSION_CONV_CHANNEL_RATIO": 2,
    "FUSION_KERNEL_SZ": 5,
    "WIDTH": 16,
    "STAGE_DIMS": [32, 48, 64],
    "NUM_CLASSES": 7,
    "DROPOUT_RATE": 0.3,
}


@heldout(
    "slowfast_lite",
    lambda: (([rand(2, 3, 2, 32, 32), rand(2, 3, 8, 32, 32, seed=1)],), {}),
)
def slowfast_lite():
    return SlowFast(SLOWFAST_CFG)
