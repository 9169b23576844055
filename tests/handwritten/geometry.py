"""Windows and point clouds: Swin's shifted windows (index buffers and an attention mask built
with loops in the constructor), PointNet with its T-Nets, DGCNN's k nearest neighbours."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn

# --- Swin: window attention with a relative position index buffer, shifted windows' mask --------


def window_partition(x, window_size):
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


def window_reverse(windows, window_size, H, W):
    B = int(windows.shape[0] / (H * W / window_size / window_size))
    x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


class WindowAttention(nn.Module):
    def __init__(
        self,
        dim,
        window_size,
        num_heads,
        qkv_bias=True,
        qk_scale=None,
        attn_drop=0.0,
        proj_drop=0.0,
    ):
        super().__init__()
        self.dim = dim
        self.window_size = window_size
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = qk_scale or head_dim**-0.5
        self.relative_position_bias_table = nn.Parameter(
            torch.zeros((2 * window_size[0] - 1) * (2 * window_size[1] - 1), num_heads)
        )
        coords = torch.stack(
            torch.meshgrid(
                [torch.arange(window_size[0]), torch.arange(window_size[1])], indexing="ij"
            )
        )
        coords_flatten = torch.flatten(coords, 1)
        relative_coords = (
            (coords_flatten[:, :, None] - coords_flatten[:, None, :]).permute(1, 2, 0).contiguous()
        )
        relative_coords[:, :, 0] += window_size[0] - 1
        relative_coords[:, :, 1] += window_size[1] - 1
        relative_coords[:, :, 0] *= 2 * window_size[1] - 1
        self.register_buffer("relative_position_index", relative_coords.sum(-1))
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.softmax = nn.Softmax(dim=-1)

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
        attn = attn + bias.permute(2, 0, 1).contiguous().unsqueeze(0)
        if mask is not None:
            nW = mask.shape[0]
            attn = attn.view(B_ // nW, nW, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, N, N)
        attn = self.attn_drop(self.softmax(attn))
        return self.proj_drop(self.proj((attn @ v).transpose(1, 2).reshape(B_, N, C)))


class SwinTransformerBlock(nn.Module):
    def __init__(
        self,
        dim,
        input_resolution,
        num_heads,
        window_size=7,
        shift_size=0,
        mlp_ratio=4.0,
        act_layer=nn.GELU,
        norm_layer=nn.LayerNorm,
    ):
        super().__init__()
        self.dim = dim
        self.input_resolution = input_resolution
        self.window_size = window_size
        self.shift_size = shift_size
        if min(self.input_resolution) <= self.window_size:
            self.shift_size = 0
            self.window_size = min(self.input_resolution)
        assert 0 <= self.shift_size < self.window_size, "shift_size must in 0-window_size"
        self.norm1 = norm_layer(dim)
        self.attn = WindowAttention(
            dim, window_size=(self.window_size, self.window_size), num_heads=num_heads
        )
        self.norm2 = norm_layer(dim)
        mlp_hidden_dim = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(
            nn.Linear(dim, mlp_hidden_dim), act_layer(), nn.Linear(mlp_hidden_dim, dim)
        )
        if self.shift_size > 0:
            H, W = self.input_resolution
            img_mask = torch.zeros((1, H, W, 1))
            h_slices = (
                slice(0, -self.window_size),
                slice(-self.window_size, -self.shift_size),
                slice(-self.shift_size, None),
            )
            w_slices = (
                slice(0, -self.window_size),
                slice(-self.window_size, -self.shift_size),
                slice(-self.shift_size, None),
            )
            cnt = 0
            for h in h_slices:
                for w in w_slices:
                    img_mask[:, h, w, :] = cnt
                    cnt += 1
            mask_windows = window_partition(img_mask, self.window_size).view(
                -1, self.window_size * self.window_size
            )
            attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
            attn_mask = attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(
                attn_mask == 0, float(0.0)
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
        x_windows = window_partition(x, self.window_size).view(
            -1, self.window_size * self.window_size, C
        )
        attn_windows = self.attn(x_windows, mask=self.attn_mask).view(
            -1, self.window_size, self.window_size, C
        )
        x = window_reverse(attn_windows, self.window_size, H, W)
        if self.shift_size > 0:
            x = torch.roll(x, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
        x = shortcut + x.view(B, H * W, C)
        return x + self.mlp(self.norm2(x))


class SwinStage(nn.Module):
    def __init__(self, dim, input_resolution, depth, num_heads, window_size):
        super().__init__()
        self.blocks = nn.ModuleList(
            [
                SwinTransformerBlock(
                    dim=dim,
                    input_resolution=input_resolution,
                    num_heads=num_heads,
                    window_size=window_size,
                    shift_size=0 if (i % 2 == 0) else window_size // 2,
                )
                for i in range(depth)
            ]
        )

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


case(
    "swin_windows",
    lambda: SwinStage(16, (8, 8), depth=2, num_heads=2, window_size=4),
    args(lambda: randn(2, 64, 16)),
    edit=("blocks.1.norm2", {"eps": 1e-6}),
    styles="index and mask buffers computed with loops in the constructor, shift_size reset under a condition, None buffer",
)

# --- PointNet: T-Net with an identity added, feature transform under a flag ----------------------


class TNet(nn.Module):
    def __init__(self, k=3):
        super(TNet, self).__init__()
        self.k = k
        self.conv = nn.Sequential(
            nn.Conv1d(k, 16, 1),
            nn.BatchNorm1d(16),
            nn.ReLU(),
            nn.Conv1d(16, 64, 1),
            nn.BatchNorm1d(64),
            nn.ReLU(),
        )
        self.fc = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, k * k))

    def forward(self, x):
        batchsize = x.size()[0]
        x = torch.max(self.conv(x), 2, keepdim=True)[0].view(-1, 64)
        x = self.fc(x)
        iden = (
            torch.eye(self.k, dtype=x.dtype, device=x.device)
            .view(1, self.k * self.k)
            .repeat(batchsize, 1)
        )
        return (x + iden).view(-1, self.k, self.k)


class PointNetCls(nn.Module):
    def __init__(self, k=2, feature_transform=False):
        super(PointNetCls, self).__init__()
        self.feature_transform = feature_transform
        self.stn = TNet(k=3)
        self.conv1 = nn.Conv1d(3, 16, 1)
        self.bn1 = nn.BatchNorm1d(16)
        if self.feature_transform:
            self.fstn = TNet(k=16)
        self.conv2 = nn.Conv1d(16, 64, 1)
        self.bn2 = nn.BatchNorm1d(64)
        self.fc = nn.Sequential(nn.Linear(64, 32), nn.Dropout(p=0.3), nn.ReLU(), nn.Linear(32, k))

    def forward(self, x):
        trans = self.stn(x)
        x = torch.bmm(x.transpose(2, 1), trans).transpose(2, 1)
        x = F.relu(self.bn1(self.conv1(x)))
        trans_feat = None
        if self.feature_transform:
            trans_feat = self.fstn(x)
            x = torch.bmm(x.transpose(2, 1), trans_feat).transpose(2, 1)
        x = torch.max(self.bn2(self.conv2(x)), 2, keepdim=True)[0].view(-1, 64)
        return F.log_softmax(self.fc(x), dim=1), trans, trans_feat


case(
    "pointnet_tnet",
    lambda: PointNetCls(k=4, feature_transform=True),
    args(lambda: randn(3, 3, 32)),
    edit=("fc.1", {"p": 0.2}),
    styles="a submodule under a flag, (out, trans, None) tuples, torch.eye in forward",
)

# --- DGCNN: k nearest neighbours by topk, EdgeConv gathering ---------------------------------------


def knn(x, k):
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    xx = torch.sum(x**2, dim=1, keepdim=True)
    pairwise_distance = -xx - inner - xx.transpose(2, 1)
    return pairwise_distance.topk(k=k, dim=-1)[1]


def get_graph_feature(x, k=20):
    batch_size, num_dims, num_points = x.size()
    idx = knn(x, k=k)
    idx_base = torch.arange(0, batch_size, device=x.device).view(-1, 1, 1) * num_points
    idx = (idx + idx_base).view(-1)
    x = x.transpose(2, 1).contiguous()
    feature = x.view(batch_size * num_points, -1)[idx, :].view(batch_size, num_points, k, num_dims)
    x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)
    return torch.cat((feature - x, x), dim=3).permute(0, 3, 1, 2).contiguous()


class DGCNN(nn.Module):
    def __init__(self, args, output_channels=40):
        super(DGCNN, self).__init__()
        self.args = args
        self.k = args["k"]
        dims = [3] + list(args["edge_dims"])
        self.edge_convs = nn.ModuleList()
        for i in range(len(dims) - 1):
            self.edge_convs.append(
                nn.Sequential(
                    nn.Conv2d(dims[i] * 2, dims[i + 1], kernel_size=1, bias=False),
                    nn.BatchNorm2d(dims[i + 1]),
                    nn.LeakyReLU(negative_slope=0.2),
                )
            )
        self.conv5 = nn.Sequential(
            nn.Conv1d(sum(dims[1:]), args["emb_dims"], kernel_size=1, bias=False),
            nn.BatchNorm1d(args["emb_dims"]),
            nn.LeakyReLU(negative_slope=0.2),
        )
        self.linear = nn.Linear(args["emb_dims"] * 2, output_channels)
        self.dp = nn.Dropout(p=args["dropout"])

    def forward(self, x):
        feats = []
        for conv in self.edge_convs:
            x = conv(get_graph_feature(x, k=self.k)).max(dim=-1, keepdim=False)[0]
            feats.append(x)
        x = self.conv5(torch.cat(feats, dim=1))
        x = torch.cat(
            (
                F.adaptive_max_pool1d(x, 1).view(x.size(0), -1),
                F.adaptive_avg_pool1d(x, 1).view(x.size(0), -1),
            ),
            1,
        )
        return self.linear(self.dp(x))


case(
    "dgcnn_knn",
    lambda: DGCNN(
        {"k": 4, "edge_dims": (8, 8, 16), "emb_dims": 32, "dropout": 0.5}, output_channels=6
    ),
    args(lambda: randn(2, 3, 24)),
    edit=("dp", {"p": 0.3}),
    styles="an args dict read with args['k'], [3] + list(...) dims, topk neighbours, gathered features",
)
