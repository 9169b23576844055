"""Vision models: residual nets with squeeze-excite, depthwise-separable nets, a U-Net, a Siamese
embedding net, a DETR-style set-prediction head and a FiLM-conditioned net."""

from __future__ import annotations

import math
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------------------------
# SE-ResNet (Hu et al. 2018), small: per-stage widths and depths, a norm chosen by partial and an
# activation chosen by its name.


class SqueezeExcite(nn.Module):
    def __init__(self, channels, reduction=4, min_hidden=4):
        super().__init__()
        hidden = max(channels // reduction, min_hidden)
        self.fc1 = nn.Conv2d(channels, hidden, 1)
        self.fc2 = nn.Conv2d(hidden, channels, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(s))))
        return x * s


class SEBasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, norm_layer=None, act="ReLU", use_se=True):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = norm_layer(planes)
        self.act = getattr(nn, act)()
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = norm_layer(planes)
        self.se = SqueezeExcite(planes) if use_se else nn.Identity()
        self.downsample = None
        if stride != 1 or inplanes != planes * self.expansion:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes * self.expansion, 1, stride, bias=False),
                norm_layer(planes * self.expansion),
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.act(self.bn1(self.conv1(x)))
        out = self.se(self.bn2(self.conv2(out)))
        return self.act(out + identity)


class SEResNet(nn.Module):
    def __init__(
        self,
        widths=(16, 32, 64),
        depths=(1, 1, 1),
        num_classes=10,
        in_chans=3,
        act="ReLU",
        norm="bn",
        use_se=True,
    ):
        super().__init__()
        norm_layer = {
            "bn": partial(nn.BatchNorm2d, eps=1e-5, momentum=0.1),
            "gn": partial(nn.GroupNorm, 4),
        }[norm]
        self.stem = nn.Sequential(
            nn.Conv2d(in_chans, widths[0], 3, 1, 1, bias=False),
            norm_layer(widths[0]),
            getattr(nn, act)(),
        )
        inplanes = widths[0]
        for i, (w, d) in enumerate(zip(widths, depths)):
            blocks = []
            for j in range(d):
                stride = 2 if (j == 0 and i > 0) else 1
                blocks.append(SEBasicBlock(inplanes, w, stride, norm_layer, act, use_se))
                inplanes = w
            self.add_module(f"layer{i + 1}", nn.Sequential(*blocks))
        self.num_stages = len(widths)
        self.fc = nn.Linear(inplanes, num_classes)

    def forward(self, x):
        x = self.stem(x)
        for i in range(self.num_stages):
            x = getattr(self, f"layer{i + 1}")(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


@heldout(
    "se_resnet",
    lambda: ((rand(2, 3, 32, 32),), {}),
    edit=("layer2.0.se", {"reduction": 2}),
)
def se_resnet():
    return SEResNet(widths=[16, 24, 32], depths=[1, 2, 1], act="SiLU")


# --------------------------------------------------------------------------------------------
# MobileNetV2-style inverted residuals with dilation, configured by a list of dicts.


def _make_divisible(v, divisor=8):
    return max(divisor, int(v + divisor / 2) // divisor * divisor)


class ConvBNAct(nn.Sequential):
    def __init__(self, cin, cout, k=3, stride=1, groups=1, dilation=1, act=True):
        padding = (k - 1) // 2 * dilation
        layers = [
            nn.Conv2d(cin, cout, k, stride, padding, dilation=dilation, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
        ]
        if act:
            layers.append(nn.ReLU6(inplace=True))
        super().__init__(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio, dilation=1):
        super().__init__()
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNAct(inp, hidden_dim, k=1))
        layers += [
            ConvBNAct(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim, dilation=dilation),
            ConvBNAct(hidden_dim, oup, k=1, act=False),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class TinyMobileNet(nn.Module):
    def __init__(self, cfg, width_mult=1.0, num_classes=5, dropout=0.2):
        super().__init__()
        c0 = _make_divisible(16 * width_mult)
        features = [ConvBNAct(3, c0, stride=2)]
        cin = c0
        for stage in cfg:
            cout = _make_divisible(stage["c"] * width_mult)
            for i in range(stage["n"]):
                features.append(
                    InvertedResidual(
                        cin,
                        cout,
                        stage["s"] if i == 0 else 1,
                        expand_ratio=stage["t"],
                        dilation=stage.get("d", 1),
                    )
                )
                cin = cout
        self.features = nn.Sequential(*features)
        self.last_channel = cin
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(cin, num_classes))

    def forward(self, x):
        x = self.features(x).mean((2, 3))
        return self.classifier(x)


@heldout("tiny_mobilenet", lambda: ((rand(2, 3, 32, 32, seed=1),), {}))
def tiny_mobilenet():
    cfg = [
        dict(t=1, c=16, n=1, s=1),
        dict(t=4, c=24, n=2, s=2),
        dict(t=4, c=32, n=2, s=1, d=2),
    ]
    return TinyMobileNet(cfg, width_mult=1.0)


# --------------------------------------------------------------------------------------------
# U-Net (Ronneberger et al. 2015), shallow, with transposed-conv or bilinear upsampling.


class DoubleConv(nn.Module):
    """(conv => BN => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        dy = x2.size(2) - x1.size(2)
        dx = x2.size(3) - x1.size(3)
        x1 = F.pad(x1, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, base=8, bilinear=False):
        super().__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.bilinear = bilinear
        factor = 2 if bilinear else 1
        self.inc = DoubleConv(n_channels, base)
        self.down1 = Down(base, base * 2)
        self.down2 = Down(base * 2, base * 4 // factor)
        self.up1 = Up(base * 4, base * 2 // factor, bilinear)
        self.up2 = Up(base * 2, base, bilinear)
        self.outc = nn.Conv2d(base, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


@heldout("unet_small", lambda: ((rand(1, 1, 32, 32, seed=2),), {}))
def unet_small():
    return UNet(1, 3, base=8, bilinear=False)


# --------------------------------------------------------------------------------------------
# Siamese / triplet network: one embedding net shared by the three branches.


class EmbeddingNet(nn.Module):
    def __init__(self, in_ch=1, emb_dim=16, hidden=(8, 16)):
        super().__init__()
        self.convnet = nn.Sequential(
            nn.Conv2d(in_ch, hidden[0], 5),
            nn.PReLU(),
            nn.MaxPool2d(2, stride=2),
            nn.Conv2d(hidden[0], hidden[1], 5),
            nn.PReLU(),
            nn.MaxPool2d(2, stride=2),
        )
        self.fc = nn.Sequential(
            nn.LazyLinear(32),
            nn.PReLU(),
            nn.Linear(32, emb_dim),
        )

    def forward(self, x):
        out = self.convnet(x)
        out = out.view(out.size(0), -1)
        return F.normalize(self.fc(out), dim=-1)


class TripletNet(nn.Module):
    def __init__(self, embedding_net, margin=0.2):
        super().__init__()
        self.embedding_net = embedding_net
        self.margin = margin

    def forward(self, anchor, positive, negative):
        a = self.embedding_net(anchor)
        p = self.embedding_net(positive)
        n = self.embedding_net(negative)
        d_ap = (a - p).pow(2).sum(1)
        d_an = (a - n).pow(2).sum(1)
        loss = F.relu(d_ap - d_an + self.margin).mean()
        return a, p, n, loss


def _triplet_inputs():
    return tuple(rand(2, 1, 28, 28, seed=s) for s in (3, 4, 5)), {}


@heldout("triplet_net", _triplet_inputs, edit=("", {"margin": 0.5}))
def triplet_net():
    net = TripletNet(EmbeddingNet(emb_dim=16))
    with torch.no_grad():
        net.embedding_net(torch.zeros(1, 1, 28, 28))  # materialise the lazy layer
    return net


# --------------------------------------------------------------------------------------------
# DETR-style head (Carion et al. 2020): a small CNN backbone, a 2-D sine position embedding, a
# transformer, learned object queries and class/box heads.


class MLP(nn.Module):
    """Very simple multi-layer perceptron (also called FFN)"""

    def __init__(self, input_dim, hidden_dim, output_dim, num_layers):
        super().__init__()
        self.num_layers = num_layers
        h = [hidden_dim] * (num_layers - 1)
        self.layers = nn.ModuleList(
            nn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim])
        )

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x)) if i < self.num_layers - 1 else layer(x)
        return x


class PositionEmbeddingSine(nn.Module):
    def __init__(self, num_pos_feats=16, temperature=10000, normalize=True, scale=None):
        super().__init__()
        self.num_pos_feats = num_pos_feats
        self.temperature = temperature
        self.normalize = normalize
        self.scale = 2 * math.pi if scale is None else scale

    def forward(self, x):
        b, _, h, w = x.shape
        ones = torch.ones(b, h, w, device=x.device)
        y_embed = ones.cumsum(1)
        x_embed = ones.cumsum(2)
        if self.normalize:
            y_embed = y_embed / (y_embed[:, -1:, :] + 1e-6) * self.scale
            x_embed = x_embed / (x_embed[:, :, -1:] + 1e-6) * self.scale
        dim_t = torch.arange(self.num_pos_feats, dtype=torch.float32, device=x.device)
        dim_t = self.temperature ** (2 * (dim_t // 2) / self.num_pos_feats)
        pos_x = x_embed[..., None] / dim_t
        pos_y = y_embed[..., None] / dim_t
        pos_x = torch.stack((pos_x[..., 0::2].sin(), pos_x[..., 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[..., 0::2].sin(), pos_y[..., 1::2].cos()), dim=4).flatten(3)
        return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)


class DETRLite(nn.Module):
    def __init__(self, num_classes, num_queries=8, hidden_dim=32, nheads=4, num_layers=1):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU()
        )
        self.input_proj = nn.Conv2d(32, hidden_dim, kernel_size=1)
        self.position_embedding = PositionEmbeddingSine(hidden_dim // 2)
        self.transformer = nn.Transformer(
            hidden_dim,
            nheads,
            num_layers,
            num_layers,
            dim_feedforward=hidden_dim * 2,
            dropout=0.0,
            batch_first=True,
        )
        self.query_embed = nn.Embedding(num_queries, hidden_dim)
        self.class_embed = nn.Linear(hidden_dim, num_classes + 1)
        self.bbox_embed = MLP(hidden_dim, hidden_dim, 4, 3)

    def forward(self, samples):
        feat = self.input_proj(self.backbone(samples))
        pos = self.position_embedding(feat)
        src = (feat + pos).flatten(2).transpose(1, 2)
        tgt = self.query_embed.weight.unsqueeze(0).expand(samples.shape[0], -1, -1)
        hs = self.transformer(src, tgt)
        return {"pred_logits": self.class_embed(hs), "pred_boxes": self.bbox_embed(hs).sigmoid()}


@heldout("detr_lite", lambda: ((rand(2, 3, 32, 32, seed=6),), {}))
def detr_lite():
    return DETRLite(num_classes=7)


# --------------------------------------------------------------------------------------------
# FiLM (Perez et al. 2018): a question encoder predicts per-channel gamma/beta for residual blocks.


class FiLM(nn.Module):
    def forward(self, x, gamma, beta):
        return gamma[..., None, None] * x + beta[..., None, None]


class FiLMedResBlock(nn.Module):
    def __init__(self, in_dim, out_dim=None, with_batchnorm=True, with_residual=True):
        super().__init__()
        out_dim = out_dim or in_dim
        self.conv1 = nn.Conv2d(in_dim, out_dim, 1)
        self.conv2 = nn.Conv2d(out_dim, out_dim, 3, padding=1)
        self.with_batchnorm = with_batchnorm
        if with_batchnorm:
            self.bn2 = nn.BatchNorm2d(out_dim, affine=False)
        self.film = FiLM()
        self.with_residual = with_residual

    def forward(self, x, gamma, beta):
        x = F.relu(self.conv1(x))
        out = self.conv2(x)
        if self.with_batchnorm:
            out = self.bn2(out)
        out = F.relu(self.film(out, gamma, beta))
        return out + x if self.with_residual else out


class FiLMGenerator(nn.Module):
    def __init__(self, vocab_size, wordvec_dim, hidden_dim, num_modules, module_dim):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, wordvec_dim, padding_idx=0)
        self.rnn = nn.GRU(wordvec_dim, hidden_dim, batch_first=True)
        self.num_modules = num_modules
        self.module_dim = module_dim
        self.decoder = nn.Linear(hidden_dim, num_modules * module_dim * 2)

    def forward(self, question):
        _, h = self.rnn(self.embed(question))
        film = self.decoder(h[-1]).view(-1, self.num_modules, 2, self.module_dim)
        return film[:, :, 0], film[:, :, 1]


class FiLMNet(nn.Module):
    def __init__(self, vocab_size=20, module_dim=16, num_modules=2, num_answers=6, **gen_kwargs):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, module_dim, 3, padding=1), nn.ReLU())
        self.film_generator = FiLMGenerator(
            vocab_size,
            gen_kwargs.pop("wordvec_dim", 16),
            gen_kwargs.pop("hidden_dim", 24),
            num_modules,
            module_dim,
        )
        self.res_blocks = nn.ModuleList(
            FiLMedResBlock(module_dim, **gen_kwargs) for _ in range(num_modules)
        )
        self.classifier = nn.Sequential(
            nn.Conv2d(module_dim, 32, 1),
            nn.ReLU(),
            nn.AdaptiveMaxPool2d(1),
            nn.Flatten(),
            nn.Linear(32, num_answers),
        )

    def forward(self, image, question):
        gammas, betas = self.film_generator(question)
        x = self.stem(image)
        for i, block in enumerate(self.res_blocks):
            x = block(x, gammas[:, i], betas[:, i])
        return self.classifier(x)


def _film_inputs():
    q = torch.randint(1, 20, (2, 7), generator=torch.Generator().manual_seed(7))
    q[:, -2:] = 0
    return (rand(2, 3, 16, 16, seed=8), q), {}


@heldout("film_clevr", _film_inputs)
def film_clevr():
    return FiLMNet(wordvec_dim=12, hidden_dim=20, with_residual=True)
