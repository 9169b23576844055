"""Self-supervised learning: BYOL (EMA target), MoCo v2 (key queue in buffers), DINO (multi-crop)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNetTrunk(nn.Module):
    """CIFAR-style ResNet without its fc; ``feature_dim`` tells the heads how wide it is."""

    def __init__(self, num_blocks=(1, 1, 1), widths=(16, 32, 64)):
        super().__init__()
        self.in_planes = widths[0]
        self.conv1 = nn.Conv2d(3, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        layers = []
        for i, (n, w) in enumerate(zip(num_blocks, widths)):
            layers.append(self._make_layer(w, n, stride=1 if i == 0 else 2))
        self.layers = nn.Sequential(*layers)
        self.feature_dim = widths[-1]

    def _make_layer(self, planes, num_blocks, stride):
        blocks = []
        for s in [stride] + [1] * (num_blocks - 1):
            blocks.append(BasicBlock(self.in_planes, planes, s))
            self.in_planes = planes
        return nn.Sequential(*blocks)

    def forward(self, x):
        out = self.layers(F.relu(self.bn1(self.conv1(x))))
        return F.adaptive_avg_pool2d(out, 1).flatten(1)


class MLPHead(nn.Module):
    def __init__(self, in_channels, mlp_hidden_size, projection_size):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_channels, mlp_hidden_size),
            nn.BatchNorm1d(mlp_hidden_size),
            nn.ReLU(inplace=True),
            nn.Linear(mlp_hidden_size, projection_size),
        )

    def forward(self, x):
        return self.net(x)


# --------------------------------------------------------------------------- BYOL


class BYOL(nn.Module):
    def __init__(self, encoder_kwargs, projection_hidden=64, projection_size=32, m=0.996):
        super().__init__()
        self.m = m
        self.online_encoder = ResNetTrunk(**encoder_kwargs)
        dim = self.online_encoder.feature_dim
        self.online_projector = MLPHead(dim, projection_hidden, projection_size)
        self.predictor = MLPHead(projection_size, projection_hidden, projection_size)
        self.target_encoder = ResNetTrunk(**encoder_kwargs)
        self.target_projector = MLPHead(dim, projection_hidden, projection_size)
        for online, target in self._pairs():
            target.data.copy_(online.data)
            target.requires_grad = False

    def _pairs(self):
        online = [*self.online_encoder.parameters(), *self.online_projector.parameters()]
        target = [*self.target_encoder.parameters(), *self.target_projector.parameters()]
        return zip(online, target)

    @torch.no_grad()
    def _update_target_network_parameters(self):
        for param_q, param_k in self._pairs():
            param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)

    @staticmethod
    def regression_loss(x, y):
        x, y = F.normalize(x, dim=1), F.normalize(y, dim=1)
        return 2 - 2 * (x * y).sum(dim=-1)

    def forward(self, batch_view_1, batch_view_2):
        p1 = self.predictor(self.online_projector(self.online_encoder(batch_view_1)))
        p2 = self.predictor(self.online_projector(self.online_encoder(batch_view_2)))
        with torch.no_grad():
            if self.training:
                self._update_target_network_parameters()
            t2 = self.target_projector(self.target_encoder(batch_view_1))
            t1 = self.target_projector(self.target_encoder(batch_view_2))
        loss = self.regression_loss(p1, t1) + self.regression_loss(p2, t2)
        return loss.mean()


@heldout(
    "byol",
    lambda: ((rand(4, 3, 32, 32), rand(4, 3, 32, 32, seed=1)), {}),
    train=True,
)
def byol():
    return BYOL({"num_blocks": (1, 1, 1), "widths": (16, 32, 48)})


# --------------------------------------------------------------------------- MoCo v2


class MoCo(nn.Module):
    def __init__(self, base_encoder, dim=32, K=64, m=0.999, T=0.07, mlp=True):
        super().__init__()
        self.K, self.m, self.T = K, m, T
        self.encoder_q = base_encoder(num_classes=dim)
        self.encoder_k = base_encoder(num_classes=dim)
        if mlp:
            dim_mlp = self.encoder_q.fc.weight.shape[1]
            self.encoder_q.fc = nn.Sequential(
                nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_q.fc
            )
            self.encoder_k.fc = nn.Sequential(
                nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_k.fc
            )
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)
            param_k.requires_grad = False
        self.register_buffer("queue", F.normalize(torch.randn(dim, K), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)
        assert self.K % batch_size == 0
        self.queue[:, ptr : ptr + batch_size] = keys.T
        self.queue_ptr[0] = (ptr + batch_size) % self.K

    def forward(self, im_q, im_k):
        q = F.normalize(self.encoder_q(im_q), dim=1)
        with torch.no_grad():
            if self.training:
                self._momentum_update_key_encoder()
            k = F.normalize(self.encoder_k(im_k), dim=1)
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1) / self.T
        labels = torch.zeros(logits.shape[0], dtype=torch.long)
        if self.training:
            self._dequeue_and_enqueue(k)
        return logits, labels


class SmallResNet(ResNetTrunk):
    """torchvision-like constructor: ``num_classes`` builds the ``fc`` MoCo replaces."""

    def __init__(self, num_classes=10, **kwargs):
        super().__init__(**kwargs)
        self.fc = nn.Linear(self.feature_dim, num_classes)

    def forward(self, x):
        return self.fc(super().forward(x))


@heldout(
    "moco_v2",
    lambda: ((rand(4, 3, 32, 32, seed=2), rand(4, 3, 32, 32, seed=3)), {}),
    train=True,
)
def moco_v2():
    return MoCo(lambda num_classes: SmallResNet(num_classes, widths=(16, 24, 32)), dim=16)


# --------------------------------------------------------------------------- DINO


class ViTBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0, drop_path=0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = nn.MultiheadAttention(dim, num_heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))
        self.drop_path = drop_path

    def _drop(self, x):
        if self.drop_path == 0.0 or not self.training:
            return x
        keep = 1 - self.drop_path
        mask = x.new_empty(x.shape[0], 1, 1).bernoulli_(keep)
        return x * mask / keep

    def forward(self, x):
        h = self.norm1(x)
        x = x + self._drop(self.attn(h, h, h, need_weights=False)[0])
        return x + self._drop(self.mlp(self.norm2(x)))


class VisionTransformer(nn.Module):
    def __init__(self, img_size=32, patch_size=8, embed_dim=48, depth=2, num_heads=4, **kw):
        super().__init__()
        self.patch_size = patch_size
        self.patch_embed = nn.Conv2d(3, embed_dim, patch_size, patch_size)
        num_patches = (img_size // patch_size) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * 0.02)
        self.blocks = nn.ModuleList(ViTBlock(embed_dim, num_heads, **kw) for _ in range(depth))
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.embed_dim = embed_dim

    def interpolate_pos_encoding(self, x, w, h):
        npatch, N = x.shape[1] - 1, self.pos_embed.shape[1] - 1
        if npatch == N and w == h:
            return self.pos_embed
        class_pos_embed, patch_pos_embed = self.pos_embed[:, :1], self.pos_embed[:, 1:]
        w0, h0 = w // self.patch_size, h // self.patch_size
        side = int(math.sqrt(N))
        patch_pos_embed = F.interpolate(
            patch_pos_embed.reshape(1, side, side, -1).permute(0, 3, 1, 2),
            size=(w0, h0),
            mode="bicubic",
            align_corners=False,
        )
        patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, self.embed_dim)
        return torch.cat((class_pos_embed, patch_pos_embed), dim=1)

    def forward(self, x):
        B, _, w, h = x.shape
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)
        x = x + self.interpolate_pos_encoding(x, w, h)
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)[:, 0]


class DINOHead(nn.Module):
    def __init__(self, in_dim, out_dim, use_bn=False, norm_last_layer=True, nlayers=3,
                 hidden_dim=2048, bottleneck_dim=256):  # fmt: skip
        super().__init__()
        nlayers = max(nlayers, 1)
        if nlayers == 1:
            self.mlp = nn.Linear(in_dim, bottleneck_dim)
        else:
            layers = [nn.Linear(in_dim, hidden_dim)]
            if use_bn:
                layers.append(nn.BatchNorm1d(hidden_dim))
            layers.append(nn.GELU())
            for _ in range(nlayers - 2):
                layers.append(nn.Linear(hidden_dim, hidden_dim))
                if use_bn:
                    layers.append(nn.BatchNorm1d(hidden_dim))
                layers.append(nn.GELU())
            layers.append(nn.Linear(hidden_dim, bottleneck_dim))
            self.mlp = nn.Sequential(*layers)
        self.apply(self._init_weights)
        self.last_layer = nn.utils.parametrizations.weight_norm(
            nn.Linear(bottleneck_dim, out_dim, bias=False)
        )
        self.last_layer.parametrizations.weight.original0.data.fill_(1)
        if norm_last_layer:
            self.last_layer.parametrizations.weight.original0.requires_grad = False

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = nn.functional.normalize(self.mlp(x), dim=-1, p=2)
        return self.last_layer(x)


class MultiCropWrapper(nn.Module):
    """Runs the backbone once per group of same-resolution crops, then the head on all."""

    def __init__(self, backbone, head):
        super().__init__()
        backbone.fc, backbone.head = nn.Identity(), nn.Identity()
        self.backbone = backbone
        self.head = head

    def forward(self, x):
        if not isinstance(x, list):
            x = [x]
        idx_crops = torch.cumsum(
            torch.unique_consecutive(
                torch.tensor([inp.shape[-1] for inp in x]), return_counts=True
            )[1],
            0,
        )
        start_idx, output = 0, []
        for end_idx in idx_crops.tolist():
            output.append(self.backbone(torch.cat(x[start_idx:end_idx])))
            start_idx = end_idx
        return self.head(torch.cat(output))


@heldout(
    "dino_multicrop",
    lambda: (
        (
            [
                rand(2, 3, 32, 32),
                rand(2, 3, 32, 32, seed=1),
                rand(2, 3, 16, 16, seed=2),
                rand(2, 3, 16, 16, seed=3),
            ],
        ),
        {},
    ),  # fmt: skip,
)
def dino_multicrop():
    student = VisionTransformer(drop_path=0.1)
    head = DINOHead(student.embed_dim, 128, use_bn=True, hidden_dim=96, bottleneck_dim=32)
    return MultiCropWrapper(student, head)
