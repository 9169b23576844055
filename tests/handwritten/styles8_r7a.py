"""Rates a constructor hands on as their complement: a keep probability handed to a dropout as its
drop rate through a helper whose parameter is named otherwise (a speech frame classifier), and a
running-average decay handed to a batch norm as its momentum (``1.0 - decay``, a point-cloud
encoder)."""

from __future__ import annotations

import torch.nn as nn

from .case import args, case, randn

# --- A speech frame classifier whose dropout is given as a keep probability --------------------


class FrameClassifier(nn.Module):
    def __init__(self, n_mels, hidden, n_phones, keep=1.0, depth=2):
        super().__init__()
        dims = [n_mels] + [hidden] * depth
        self.body = nn.Sequential(*[self.stage(a, b, keep) for a, b in zip(dims[:-1], dims[1:])])
        self.out = nn.Linear(hidden, n_phones)

    def stage(self, d_in, d_out, survive):
        return nn.Sequential(nn.Linear(d_in, d_out), nn.GELU(), nn.Dropout(p=1 - survive))

    def forward(self, x):
        return self.out(self.body(x))


case(
    "frame_classifier_keep_prob",
    lambda: FrameClassifier(20, 16, 7, keep=0.75),
    args(lambda: randn(3, 20)),
    edit=("out", {"bias": False}),
    styles="a keep probability handed to a dropout as 1 - keep, through a helper",
)

# --- A point-cloud encoder whose batch norms take a running-average decay ----------------------


class PointEncoder(nn.Module):
    def __init__(self, in_dim=3, widths=(16, 32), ema_decay=0.9, emb=24):
        super().__init__()
        layers = []
        c = in_dim
        for w in widths:
            layers += [nn.Conv1d(c, w, 1), nn.BatchNorm1d(w, momentum=1.0 - ema_decay), nn.ReLU()]
            c = w
        self.mlp = nn.Sequential(*layers)
        self.proj = nn.Linear(c, emb)

    def forward(self, pts):
        return self.proj(self.mlp(pts).max(-1).values)


case(
    "point_encoder_ema_decay",
    lambda: PointEncoder(3, (8, 12), ema_decay=0.99, emb=10),
    args(lambda: randn(2, 3, 17)),
    edit=("proj", {"bias": False}),
    styles="a running-average decay handed to batch norms as momentum = 1.0 - decay",
)
