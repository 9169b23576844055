"""Rates a constructor hands on as their complement: a keep probability handed to a dropout as its
drop rate through a helper whose parameter is named otherwise (a speech frame classifier), and a
running-average decay handed to a batch norm as its momentum (``1.0 - decay``, a point-cloud
encoder)."""

from __future__ import annotations

import torch
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

# --- A tagger and a pyramid head whose size lists are read only at fixed places and by length ---


class GRUTagger(nn.Module):
    def __init__(self, vocab, emb, state_sizes, n_tags):
        super().__init__()
        self.state = state_sizes[0]
        self.n_stacked = len(state_sizes)
        self.embed = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(emb, self.state, num_layers=self.n_stacked, batch_first=True)
        self.tag = nn.Linear(self.state, n_tags)

    def forward(self, ids):
        return self.tag(self.rnn(self.embed(ids))[0])


case(
    "gru_tagger_first_and_length",
    lambda: GRUTagger(30, 12, [20], 5),
    args(lambda: torch.randint(0, 30, (2, 9))),
    edit=("tag", {"bias": False}),
    styles="a list of sizes kept only as its first item and its length",
)


class PyramidHead(nn.Module):
    def __init__(self, chans, kernel=3):
        super().__init__()
        self.c_top = chans[0]
        self.c_bottom = chans[-1]
        self.levels = len(chans)
        self.squeeze = nn.Conv2d(self.c_top, self.c_bottom, kernel, padding=kernel // 2)
        self.norm = nn.GroupNorm(self.levels, self.c_bottom)

    def forward(self, x):
        return torch.relu(self.norm(self.squeeze(x)))


case(
    "pyramid_head_ends_and_length",
    lambda: PyramidHead((16, 6), kernel=5),
    args(lambda: randn(2, 16, 9, 9)),
    edit=("squeeze", {"bias": False}),
    styles="a pair of widths kept only as its first and last item and its length",
)


class SensorRegressor(nn.Module):
    def __init__(self, channels, rnn_units, horizon=1, nonlinearity="tanh"):
        super().__init__()
        self.units = rnn_units[0]
        self.stacked = len(rnn_units)
        self.rnn = nn.RNN(channels, self.units, self.stacked, nonlinearity=nonlinearity)
        self.head = nn.Sequential(nn.LayerNorm(self.units), nn.Linear(self.units, horizon))

    def forward(self, x):
        return self.head(self.rnn(x)[0][-1])


case(
    "sensor_regressor_first_and_length",
    lambda: SensorRegressor(4, (14,), horizon=3, nonlinearity="relu"),
    args(lambda: randn(6, 2, 4)),
    edit=("head.1", {"bias": False}),
    styles="a tuple of recurrent sizes kept only as its first item and its length",
)
