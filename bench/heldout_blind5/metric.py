"""Metric and few-shot learning: an ArcFace margin head picked from a registry, prototypical
networks, and a knowledge-distillation teacher/student pair."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

MARGIN_HEADS: dict[str, type[nn.Module]] = {}


def register_head(name):
    def deco(cls):
        MARGIN_HEADS[name] = cls
        return cls

    return deco


@register_head("arcface")
class ArcMarginProduct(nn.Module):
    r"""Large margin arc distance: cos(theta + m)."""

    def __init__(self, in_features, out_features, s=30.0, m=0.50, easy_margin=False):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.s, self.m = s, m
        self.weight = nn.Parameter(torch.FloatTensor(out_features, in_features))
        nn.init.xavier_uniform_(self.weight)
        self.easy_margin = easy_margin
        self.cos_m, self.sin_m = math.cos(m), math.sin(m)
        self.th = math.cos(math.pi - m)
        self.mm = math.sin(math.pi - m) * m

    def forward(self, input, label):
        cosine = F.linear(F.normalize(input), F.normalize(self.weight))
        sine = torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1))
        phi = cosine * self.cos_m - sine * self.sin_m
        if self.easy_margin:
            phi = torch.where(cosine > 0, phi, cosine)
        else:
            phi = torch.where(cosine > self.th, phi, cosine - self.mm)
        one_hot = torch.zeros(cosine.size(), device=input.device)
        one_hot.scatter_(1, label.view(-1, 1).long(), 1)
        return ((one_hot * phi) + ((1.0 - one_hot) * cosine)) * self.s


class EmbeddingNet(nn.Module):
    def __init__(self, channels=(1, 16, 32), embedding_size=32, prelu=True):
        super().__init__()
        convs = []
        for cin, cout in zip(channels[:-1], channels[1:]):
            convs += [
                nn.Conv2d(cin, cout, 5),
                nn.PReLU() if prelu else nn.ReLU(),
                nn.MaxPool2d(2, 2),
            ]
        self.convnet = nn.Sequential(*convs)
        self.fc = nn.Sequential(
            nn.LazyLinear(64), nn.PReLU() if prelu else nn.ReLU(), nn.Linear(64, embedding_size)
        )

    def forward(self, x):
        return self.fc(self.convnet(x).flatten(1))


class FaceRecognizer(nn.Module):
    def __init__(self, num_identities, head="arcface", embedding_size=32, **head_kwargs):
        super().__init__()
        self.backbone = EmbeddingNet(embedding_size=embedding_size)
        self.backbone(torch.zeros(1, 1, 28, 28))  # materialise the lazy layer
        self.bn = nn.BatchNorm1d(embedding_size)
        self.head = MARGIN_HEADS[head](embedding_size, num_identities, **head_kwargs)

    def forward(self, images, labels=None):
        emb = self.bn(self.backbone(images))
        if labels is None:
            return F.normalize(emb)
        return self.head(emb, labels), emb


def _labels(n, k, seed=0):
    return torch.randint(0, k, (n,), generator=torch.Generator().manual_seed(seed))


@heldout(
    "arcface_recognizer",
    lambda: ((rand(4, 1, 28, 28), _labels(4, 10)), {}),
)
def arcface_recognizer():
    return FaceRecognizer(10, head="arcface", s=16.0)


# --------------------------------------------------------------------------- prototypical networks


def conv_block(in_channels, out_channels):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(),
        nn.MaxPool2d(2),
    )


class ProtoNet(nn.Module):
    def __init__(self, x_dim=1, hid_dim=32, z_dim=32, n_blocks=4):
        super().__init__()
        dims = [x_dim] + [hid_dim] * (n_blocks - 1) + [z_dim]
        self.encoder = nn.Sequential(*[conv_block(a, b) for a, b in zip(dims[:-1], dims[1:])])

    def forward(self, support, support_labels, query):
        z_support = self.encoder(support).flatten(1)
        z_query = self.encoder(query).flatten(1)
        classes = torch.unique(support_labels)
        prototypes = torch.stack([z_support[support_labels == c].mean(0) for c in classes])
        dists = torch.cdist(z_query, prototypes) ** 2
        return F.log_softmax(-dists, dim=1)


def _episode():
    support_labels = torch.arange(3).repeat_interleave(2)  # 3-way 2-shot
    return (rand(6, 1, 28, 28), support_labels, rand(5, 1, 28, 28, seed=1)), {}


@heldout("protonet_episode", _episode)
def protonet_episode():
    return ProtoNet(hid_dim=16, z_dim=16)


# --------------------------------------------------------------------------- knowledge distillation


@dataclass
class KDConfig:
    num_classes: int = 10
    teacher_widths: tuple[int, ...] = (32, 64, 96)
    student_widths: tuple[int, ...] = (8, 16, 24)
    temperature: float = 4.0
    hint_layer: int = 1


class ConvNet(nn.Module):
    def __init__(self, widths, num_classes, in_ch=3):
        super().__init__()
        self.stages = nn.ModuleList()
        for w in widths:
            self.stages.append(conv_block(in_ch, w))
            in_ch = w
        self.classifier = nn.Linear(in_ch, num_classes)

    def forward(self, x, return_features=False):
        feats = []
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        logits = self.classifier(x.mean(dim=(2, 3)))
        return (logits, feats) if return_features else logits


class Distiller(nn.Module):
    """FitNets-style hint regressor plus Hinton soft targets; the teacher stays frozen."""

    def __init__(self, cfg: KDConfig):
        super().__init__()
        self.cfg = cfg
        self.teacher = ConvNet(cfg.teacher_widths, cfg.num_classes)
        self.student = ConvNet(cfg.student_widths, cfg.num_classes)
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        i = cfg.hint_layer
        self.regressor = nn.Conv2d(cfg.student_widths[i], cfg.teacher_widths[i], 1)

    def train(self, mode: bool = True):
        super().train(mode)
        self.teacher.eval()
        return self

    def forward(self, x):
        s_logits, s_feats = self.student(x, return_features=True)
        with torch.no_grad():
            t_logits, t_feats = self.teacher(x, return_features=True)
        i, T = self.cfg.hint_layer, self.cfg.temperature
        hint = F.mse_loss(self.regressor(s_feats[i]), t_feats[i])
        kd = F.kl_div(
            F.log_softmax(s_logits / T, -1), F.softmax(t_logits / T, -1), reduction="batchmean"
        )
        return {"logits": s_logits, "kd_loss": kd * T * T, "hint_loss": hint}


@heldout("kd_fitnets", lambda: ((rand(4, 3, 32, 32),), {}), train=True)
def kd_fitnets():
    return Distiller(KDConfig())
