"""Metric and few-shot learning (ArcFace, triplet, prototypical, relation nets) and a
multi-head continual-learning net."""

from __future__ import annotations

import math
from enum import Enum

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


def conv_block(in_channels, out_channels, pool=True):
    layers = [
        nn.Conv2d(in_channels, out_channels, 3, padding=1),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(),
    ]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class ArcMarginProduct(nn.Module):
    """Additive angular margin: cos(theta + m) on the target class, scaled by s."""

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
        sine = torch.sqrt((1.0 - cosine.pow(2)).clamp(0, 1))
        phi = cosine * self.cos_m - sine * self.sin_m
        if self.easy_margin:
            phi = torch.where(cosine > 0, phi, cosine)
        else:
            phi = torch.where(cosine > self.th, phi, cosine - self.mm)
        one_hot = torch.zeros_like(cosine).scatter_(1, label.view(-1, 1).long(), 1)
        return ((one_hot * phi) + ((1.0 - one_hot) * cosine)) * self.s


class FaceNet(nn.Module):
    def __init__(self, emb_size=64, num_classes=100, head_kwargs=None):
        super().__init__()
        self.backbone = nn.Sequential(conv_block(3, 32), conv_block(32, 64), conv_block(64, 64))
        self.bn = nn.BatchNorm1d(64 * 4 * 4)
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(64 * 4 * 4, emb_size)
        self.features = nn.BatchNorm1d(emb_size)
        self.head = ArcMarginProduct(emb_size, num_classes, **(head_kwargs or {}))

    def forward(self, x, label=None):
        x = self.backbone(x).flatten(1)
        emb = self.features(self.fc(self.dropout(self.bn(x))))
        if label is None:
            return emb
        return self.head(emb, label)


@heldout("arcface_net",
         example=lambda: ((rand(4, 3, 32, 32),), {"label": torch.tensor([1, 5, 7, 99])}),
         edit=("head", {"easy_margin": True}))  # fmt: skip
def arcface_net():
    torch.manual_seed(40)
    return FaceNet(head_kwargs={"s": 64.0, "m": 0.3})


class EmbeddingNet(nn.Module):
    def __init__(self, in_ch=1, emb_dim=2):
        super().__init__()
        self.convnet = nn.Sequential(
            nn.Conv2d(in_ch, 32, 5), nn.PReLU(), nn.MaxPool2d(2, stride=2),
            nn.Conv2d(32, 64, 5), nn.PReLU(), nn.MaxPool2d(2, stride=2),
        )  # fmt: skip
        self.fc = nn.Sequential(nn.Linear(64 * 4 * 4, 256), nn.PReLU(), nn.Linear(256, 256), nn.PReLU(),
                                nn.Linear(256, emb_dim))  # fmt: skip

    def forward(self, x):
        return self.fc(self.convnet(x).view(x.size(0), -1))

    def get_embedding(self, x):
        return self.forward(x)


class L2Normalize(nn.Module):
    def __init__(self, dim=1, eps=1e-12):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x):
        return F.normalize(x, dim=self.dim, eps=self.eps)


class TripletNet(nn.Module):
    def __init__(self, embedding_net, normalize=True):
        super().__init__()
        self.embedding_net = embedding_net
        self.norm = L2Normalize() if normalize else nn.Identity()

    def forward(self, x1, x2, x3):
        return tuple(self.norm(self.embedding_net(x)) for x in (x1, x2, x3))


@heldout(
    "triplet_net",
    example=lambda: (
        (rand(3, 1, 28, 28), rand(3, 1, 28, 28, seed=1), rand(3, 1, 28, 28, seed=2)),
        {},
    ),
)
def triplet_net():
    torch.manual_seed(41)
    return TripletNet(EmbeddingNet(emb_dim=8))


# few-shot


class Distance(str, Enum):
    EUCLIDEAN = "euclidean"
    COSINE = "cosine"


class ProtoNet(nn.Module):
    def __init__(self, x_dim=3, hid_dim=32, z_dim=32, distance: Distance = Distance.EUCLIDEAN):
        super().__init__()
        self.encoder = nn.Sequential(conv_block(x_dim, hid_dim), conv_block(hid_dim, hid_dim),
                                     conv_block(hid_dim, hid_dim), conv_block(hid_dim, z_dim))  # fmt: skip
        self.distance = Distance(distance)

    def forward(self, support, query):
        # support: (n_way, k_shot, c, h, w); query: (q, c, h, w)
        n, k = support.shape[:2]
        protos = self.encoder(support.flatten(0, 1)).flatten(1).view(n, k, -1).mean(1)
        q = self.encoder(query).flatten(1)
        if self.distance is Distance.EUCLIDEAN:
            return -torch.cdist(q, protos).pow(2)
        return F.normalize(q, dim=-1) @ F.normalize(protos, dim=-1).t()


@heldout(
    "protonet",
    example=lambda: ((rand(5, 2, 3, 32, 32, seed=3), rand(6, 3, 32, 32, seed=4)), {}),
)
def protonet():
    torch.manual_seed(42)
    return ProtoNet(distance="cosine")


class RelationModule(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.layer1 = conv_block(input_size * 2, input_size)
        self.layer2 = conv_block(input_size, input_size)
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.fc2 = nn.Linear(hidden_size, 1)

    def forward(self, x):
        out = self.layer2(self.layer1(x))
        out = F.adaptive_avg_pool2d(out, 1).flatten(1)
        return torch.sigmoid(self.fc2(F.relu(self.fc1(out))))


class RelationNetwork(nn.Module):
    def __init__(self, feature_dim=32, relation_dim=8):
        super().__init__()
        self.feature_encoder = nn.Sequential(
            conv_block(3, feature_dim), conv_block(feature_dim, feature_dim),
            conv_block(feature_dim, feature_dim, pool=False), conv_block(feature_dim, feature_dim, pool=False),
        )  # fmt: skip
        self.relation_network = RelationModule(feature_dim, relation_dim)

    def forward(self, support, query):
        n, k = support.shape[:2]
        s = self.feature_encoder(support.flatten(0, 1))
        s = s.view(n, k, *s.shape[1:]).sum(1)
        q = self.feature_encoder(query)
        pairs = torch.cat([s.unsqueeze(0).expand(q.shape[0], -1, -1, -1, -1),
                           q.unsqueeze(1).expand(-1, n, -1, -1, -1)], 2)  # fmt: skip
        return self.relation_network(pairs.flatten(0, 1)).view(-1, n)


@heldout("relation_net", example=lambda: ((rand(5, 1, 3, 28, 28, seed=5), rand(4, 3, 28, 28, seed=6)), {}),
         edit=("relation_network", {"hidden_size": 16}))  # fmt: skip
def relation_net():
    torch.manual_seed(43)
    return RelationNetwork()


# continual learning: a shared trunk, one head per task in a ModuleDict keyed by task name


class MLPTrunk(nn.Sequential):
    def __init__(self, sizes, act=nn.ReLU, dropout=0.0):
        layers = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), act()]
            if dropout:
                layers.append(nn.Dropout(dropout))
        super().__init__(*layers)


class MultiHeadNet(nn.Module):
    def __init__(self, input_size=784, hidden=(256, 128), tasks=None):
        super().__init__()
        tasks = tasks or {"t0": 2}
        self.trunk = MLPTrunk([input_size, *hidden], dropout=0.1)
        self.heads = nn.ModuleDict()
        for name, n_out in tasks.items():
            self.add_task(name, n_out)
        self.register_buffer("seen", torch.zeros(len(tasks), dtype=torch.long))

    def add_task(self, name, n_out):
        self.heads[name] = nn.Linear(self.trunk[-3].out_features, n_out)

    def forward(self, x, task="t0"):
        return self.heads[task](self.trunk(x.flatten(1)))


@heldout("continual_multihead", example=lambda: ((rand(8, 1, 28, 28, seed=7),), {"task": "t2"}))
def continual_multihead():
    torch.manual_seed(44)
    return MultiHeadNet(tasks={f"t{i}": 2 for i in range(5)})
