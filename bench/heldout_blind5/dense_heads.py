"""Dense and set prediction heads: DeepLabv3 (ASPP), PSPNet (pyramid pooling), DETR-lite."""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- DeepLabv3


class ASPPConv(nn.Sequential):
    def __init__(self, in_channels, out_channels, dilation):
        modules = [
            nn.Conv2d(
                in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False
            ),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        ]
        super().__init__(*modules)


class ASPPPooling(nn.Sequential):
    def __init__(self, in_channels, out_channels):
        super().__init__(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x):
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    def __init__(self, in_channels, atrous_rates, out_channels=256):
        super().__init__()
        modules = [
            nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(),
            )
        ]
        for rate in tuple(atrous_rates):
            modules.append(ASPPConv(in_channels, out_channels, rate))
        modules.append(ASPPPooling(in_channels, out_channels))
        self.convs = nn.ModuleList(modules)
        self.project = nn.Sequential(
            nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Dropout(0.5),
        )

    def forward(self, x):
        return self.project(torch.cat([conv(x) for conv in self.convs], dim=1))


class DeepLabHead(nn.Sequential):
    def __init__(self, in_channels, num_classes, atrous_rates=(12, 24, 36), mid=256):
        super().__init__(
            ASPP(in_channels, atrous_rates, mid),
            nn.Conv2d(mid, mid, 3, padding=1, bias=False),
            nn.BatchNorm2d(mid),
            nn.ReLU(),
            nn.Conv2d(mid, num_classes, 1),
        )


class DilatedBackbone(nn.Module):
    """Output stride 8: the last two stages trade stride for dilation."""

    def __init__(self, widths=(16, 32, 48, 64), replace_stride_with_dilation=(False, True, True)):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )  # fmt: skip
        dilation = 1
        for i, (cin, cout) in enumerate(zip(widths[:-1], widths[1:])):
            stride = 2
            if replace_stride_with_dilation[i]:
                dilation *= stride
                stride = 1
            layer = nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, dilation, dilation, bias=False), nn.BatchNorm2d(cout),
                nn.ReLU(inplace=True),
            )  # fmt: skip
            self.add_module(f"layer{i + 2}", layer)
        self.num_layers = len(widths) - 1

    def forward(self, x):
        out = OrderedDict()
        x = self.stem(x)
        for i in range(self.num_layers):
            x = getattr(self, f"layer{i + 2}")(x)
            if i == self.num_layers - 2:
                out["aux"] = x
        out["out"] = x
        return out


class FCNHead(nn.Sequential):
    def __init__(self, in_channels, channels):
        inter_channels = in_channels // 4
        super().__init__(
            nn.Conv2d(in_channels, inter_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(inter_channels),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Conv2d(inter_channels, channels, 1),
        )


class DeepLabV3(nn.Module):
    def __init__(self, backbone, classifier, aux_classifier=None):
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        input_shape = x.shape[-2:]
        features = self.backbone(x)
        result = OrderedDict()
        x = self.classifier(features["out"])
        result["out"] = F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)
        if self.aux_classifier is not None:
            x = self.aux_classifier(features["aux"])
            result["aux"] = F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)
        return result


@heldout(
    "deeplabv3_aux",
    lambda: ((rand(2, 3, 64, 64),), {}),
    edit=("classifier.0", {"atrous_rates": (2, 4, 6, 8)}),
    train=True,
)
def deeplabv3_aux():
    return DeepLabV3(
        DilatedBackbone(),
        DeepLabHead(64, 6, atrous_rates=(3, 6, 9), mid=32),
        aux_classifier=FCNHead(48, 6),
    )


# --------------------------------------------------------------------------- PSPNet


class PSPModule(nn.Module):
    def __init__(self, features, out_features=1024, sizes=(1, 2, 3, 6)):
        super().__init__()
        self.stages = nn.ModuleList([self._make_stage(features, size) for size in sizes])
        self.bottleneck = nn.Conv2d(features * (len(sizes) + 1), out_features, kernel_size=1)
        self.relu = nn.ReLU()

    def _make_stage(self, features, size):
        prior = nn.AdaptiveAvgPool2d(output_size=(size, size))
        conv = nn.Conv2d(features, features, kernel_size=1, bias=False)
        return nn.Sequential(prior, conv)

    def forward(self, feats):
        h, w = feats.size(2), feats.size(3)
        priors = [
            F.interpolate(stage(feats), size=(h, w), mode="bilinear", align_corners=False)
            for stage in self.stages
        ] + [feats]
        return self.relu(self.bottleneck(torch.cat(priors, 1)))


class PSPUpsample(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.PReLU(),
        )

    def forward(self, x):
        h, w = 2 * x.size(2), 2 * x.size(3)
        return self.conv(F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False))


class PSPNet(nn.Module):
    def __init__(self, n_classes=18, sizes=(1, 2, 3, 6), psp_size=64, deep_features_size=48):
        super().__init__()
        self.feats = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 48, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(48, psp_size, 3, 2, 1), nn.ReLU(),
        )  # fmt: skip
        self.psp = PSPModule(psp_size, 64, sizes)
        self.drop_1 = nn.Dropout2d(p=0.3)
        self.up_1 = PSPUpsample(64, 32)
        self.up_2 = PSPUpsample(32, 16)
        self.up_3 = PSPUpsample(16, 16)
        self.drop_2 = nn.Dropout2d(p=0.15)
        self.final = nn.Sequential(nn.Conv2d(16, n_classes, kernel_size=1), nn.LogSoftmax(dim=1))
        self.classifier = nn.Sequential(
            nn.Linear(deep_features_size, 32), nn.ReLU(), nn.Linear(32, n_classes)
        )
        self._aux_tap = 2  # index of the layer whose output feeds the classifier

    def forward(self, x):
        class_f = None
        f = x
        for i, layer in enumerate(self.feats):
            f = layer(f)
            if i == self._aux_tap:
                class_f = f
        p = self.drop_1(self.psp(f))
        p = self.drop_2(self.up_1(p))
        p = self.drop_2(self.up_2(p))
        p = self.up_3(p)
        auxiliary = F.adaptive_max_pool2d(input=class_f, output_size=(1, 1)).view(
            -1, class_f.size(1)
        )
        return self.final(p), self.classifier(auxiliary)


@heldout("pspnet", lambda: ((rand(2, 3, 48, 48),), {}))
def pspnet():
    return PSPNet(n_classes=5)


# --------------------------------------------------------------------------- DETR-lite


class PositionEmbeddingSine(nn.Module):
    def __init__(self, num_pos_feats=64, temperature=10000, normalize=False, scale=None):
        super().__init__()
        self.num_pos_feats, self.temperature, self.normalize = num_pos_feats, temperature, normalize
        if scale is not None and normalize is False:
            raise ValueError("normalize should be True if scale is passed")
        self.scale = 2 * math.pi if scale is None else scale

    def forward(self, x: Tensor, mask: Tensor):
        not_mask = ~mask
        y_embed = not_mask.cumsum(1, dtype=torch.float32)
        x_embed = not_mask.cumsum(2, dtype=torch.float32)
        if self.normalize:
            eps = 1e-6
            y_embed = y_embed / (y_embed[:, -1:, :] + eps) * self.scale
            x_embed = x_embed / (x_embed[:, :, -1:] + eps) * self.scale
        dim_t = torch.arange(self.num_pos_feats, dtype=torch.float32, device=x.device)
        dim_t = self.temperature ** (2 * (dim_t // 2) / self.num_pos_feats)
        pos_x = x_embed[:, :, :, None] / dim_t
        pos_y = y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack((pos_x[..., 0::2].sin(), pos_x[..., 1::2].cos()), dim=4).flatten(3)
        pos_y = torch.stack((pos_y[..., 0::2].sin(), pos_y[..., 1::2].cos()), dim=4).flatten(3)
        return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)


class TransformerDecoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu"):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout)
        self.multihead_attn = nn.MultiheadAttention(d_model, nhead, dropout=dropout)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.activation = {"relu": F.relu, "gelu": F.gelu, "glu": F.glu}[activation]

    @staticmethod
    def with_pos_embed(tensor, pos: Tensor | None):
        return tensor if pos is None else tensor + pos

    def forward(self, tgt, memory, memory_key_padding_mask=None, pos=None, query_pos=None):
        q = k = self.with_pos_embed(tgt, query_pos)
        tgt = self.norm1(tgt + self.dropout(self.self_attn(q, k, value=tgt)[0]))
        tgt2 = self.multihead_attn(
            query=self.with_pos_embed(tgt, query_pos),
            key=self.with_pos_embed(memory, pos),
            value=memory,
            key_padding_mask=memory_key_padding_mask,
        )[0]
        tgt = self.norm2(tgt + self.dropout(tgt2))
        tgt2 = self.linear2(self.dropout(self.activation(self.linear1(tgt))))
        return self.norm3(tgt + self.dropout(tgt2))


class MLP(nn.Module):
    """Very simple multi-layer perceptron (also called FFN)."""

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


class DETR(nn.Module):
    def __init__(self, num_classes, num_queries=10, hidden_dim=32, nheads=4, num_encoder_layers=1,
                 num_decoder_layers=2, aux_loss=True):  # fmt: skip
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
            nn.Conv2d(64, 64, 3, 2, 1), nn.ReLU(),
        )  # fmt: skip
        self.input_proj = nn.Conv2d(64, hidden_dim, kernel_size=1)
        self.position_embedding = PositionEmbeddingSine(hidden_dim // 2, normalize=True)
        enc = nn.TransformerEncoderLayer(hidden_dim, nheads, 4 * hidden_dim, dropout=0.1)
        self.encoder = nn.TransformerEncoder(enc, num_encoder_layers, enable_nested_tensor=False)
        self.decoder_layers = nn.ModuleList(
            TransformerDecoderLayer(hidden_dim, nheads, 4 * hidden_dim)
            for _ in range(num_decoder_layers)
        )
        self.decoder_norm = nn.LayerNorm(hidden_dim)
        self.query_embed = nn.Embedding(num_queries, hidden_dim)
        self.class_embed = nn.Linear(hidden_dim, num_classes + 1)
        self.bbox_embed = MLP(hidden_dim, hidden_dim, 4, 3)
        self.aux_loss = aux_loss

    def forward(self, samples: Tensor, mask: Tensor):
        src = self.backbone(samples)
        mask = F.interpolate(mask[None].float(), size=src.shape[-2:])[0].to(torch.bool)
        pos = self.position_embedding(src, mask).flatten(2).permute(2, 0, 1)
        src = self.input_proj(src)
        bs = src.shape[0]
        src = src.flatten(2).permute(2, 0, 1)
        key_padding = mask.flatten(1)
        memory = self.encoder(src + pos, src_key_padding_mask=key_padding)
        query_pos = self.query_embed.weight.unsqueeze(1).repeat(1, bs, 1)
        tgt, hs = torch.zeros_like(query_pos), []
        for layer in self.decoder_layers:
            tgt = layer(
                tgt, memory, memory_key_padding_mask=key_padding, pos=pos, query_pos=query_pos
            )
            hs.append(self.decoder_norm(tgt))
        hs = torch.stack(hs).transpose(1, 2)
        outputs_class = self.class_embed(hs)
        outputs_coord = self.bbox_embed(hs).sigmoid()
        out = {"pred_logits": outputs_class[-1], "pred_boxes": outputs_coord[-1]}
        if self.aux_loss:
            out["aux_outputs"] = [
                {"pred_logits": a, "pred_boxes": b}
                for a, b in zip(outputs_class[:-1], outputs_coord[:-1])
            ]
        return out


def _detr_mask():
    mask = torch.zeros(2, 64, 64, dtype=torch.bool)
    mask[1, :, 48:] = True  # the second image was padded on the right
    return mask


@heldout(
    "detr_lite",
    lambda: ((rand(2, 3, 64, 64), _detr_mask()), {}),
    edit=("decoder_layers.1", {"nhead": 2, "dim_feedforward": 48}),
)
def detr_lite():
    return DETR(num_classes=7)
