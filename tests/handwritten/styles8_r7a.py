"""Rates a constructor hands on as their complement: a keep probability handed to a dropout as its
drop rate through a helper whose parameter is named otherwise (a speech frame classifier), and a
running-average decay handed to a batch norm as its momentum (``1.0 - decay``, a point-cloud
encoder)."""

from __future__ import annotations

import numpy as np
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

# --- Constant matrices handed in as numpy arrays and converted by the constructor --------------


def _mel_bank(n_fft_bins, n_mels):
    edges = np.linspace(0, n_fft_bins - 1, n_mels + 2)
    bank = np.zeros((n_mels, n_fft_bins))
    for i in range(n_mels):
        lo, mid, hi = edges[i], edges[i + 1], edges[i + 2]
        for k in range(n_fft_bins):
            if lo <= k <= mid:
                bank[i, k] = (k - lo) / max(mid - lo, 1e-6)
            elif mid < k <= hi:
                bank[i, k] = (hi - k) / max(hi - mid, 1e-6)
    return bank


class MelFrontEnd(nn.Module):
    def __init__(self, fbank, hidden, n_words):
        super().__init__()
        self.register_buffer("fbank", torch.from_numpy(fbank.astype(np.float32)))
        self.rnn = nn.LSTM(fbank.shape[0], hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_words)

    def forward(self, spec):
        mel = torch.log1p(spec @ self.fbank.t())
        return self.out(self.rnn(mel)[0][:, -1])


case(
    "mel_front_end_numpy_bank",
    lambda: MelFrontEnd(_mel_bank(17, 6), 10, 4),
    args(lambda: randn(2, 5, 17).abs()),
    edit=("out", {"bias": False}),
    styles="a filter bank handed as a numpy array, cast with astype and kept as a buffer",
)


class RoadGraphConv(nn.Module):
    def __init__(self, adjacency, in_feats, out_feats):
        super().__init__()
        self.adjacency = nn.Parameter(torch.from_numpy(adjacency), requires_grad=False)
        self.lin = nn.Linear(in_feats, out_feats)
        self.mix = nn.Linear(out_feats, out_feats)

    def forward(self, x):
        h = torch.einsum("ij,bjf->bif", self.adjacency, self.lin(x))
        return self.mix(torch.relu(h))


def _ring(n):
    a = np.eye(n, dtype=np.float32)
    for i in range(n):
        a[i, (i + 1) % n] = a[(i + 1) % n, i] = 0.5
    return a


case(
    "road_graph_numpy_adjacency",
    lambda: RoadGraphConv(_ring(7), 3, 8),
    args(lambda: randn(2, 7, 3)),
    edit=("mix", {"bias": False}),
    styles="an adjacency handed as a numpy array, converted with from_numpy into a frozen weight",
)

# --- A pair whose items each go to one named layer as a keyword -------------------------------


class TwoStepStem(nn.Module):
    def __init__(self, in_ch, width, strides, act=nn.SiLU):
        super().__init__()
        self.down1 = nn.Conv2d(in_ch, width, 3, stride=strides[0], padding=1)
        self.down2 = nn.Conv2d(width, width, 3, stride=strides[1], padding=1)
        self.act = act()

    def forward(self, x):
        return self.down2(self.act(self.down1(x)))


case(
    "two_step_stem_stride_pair",
    lambda: TwoStepStem(3, 8, (2, 1)),
    args(lambda: randn(2, 3, 16, 16)),
    edit=("down2", {"bias": False}),
    styles="a pair of strides, each item handed to one conv as a keyword",
)


class SpeakerMixer(nn.Module):
    def __init__(self, d, kernels, n_spk, p=0.1):
        super().__init__()
        self.emb = nn.Embedding(n_spk, d)
        self.local = nn.Conv1d(d, d, kernel_size=kernels[0], padding=kernels[0] // 2, groups=d)
        self.wide = nn.Conv1d(d, d, kernel_size=kernels[1], padding=kernels[1] // 2)
        self.drop = nn.Dropout(p)

    def forward(self, x, spk):
        h = (x + self.emb(spk)[:, None]).transpose(1, 2)
        return self.drop(self.wide(torch.relu(self.local(h)))).transpose(1, 2)


case(
    "speaker_mixer_kernel_pair",
    lambda: SpeakerMixer(8, (5, 3), 4),
    args(lambda: randn(2, 7, 8), lambda: torch.tensor([0, 3])),
    edit=("wide", {"bias": False}),
    styles="a pair of kernel sizes, each item handed to one conv as a keyword and in its padding",
)


class CoarseFineHead(nn.Module):
    def __init__(self, feat, class_counts, hidden=32):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(feat, hidden), nn.Tanh())
        self.coarse = nn.Linear(hidden, out_features=class_counts[0])
        self.fine = nn.Linear(hidden + class_counts[0], out_features=class_counts[1])

    def forward(self, x):
        h = self.trunk(x)
        c = self.coarse(h)
        return c, self.fine(torch.cat([h, c.softmax(-1)], -1))


case(
    "coarse_fine_head_count_pair",
    lambda: CoarseFineHead(12, [4, 11], hidden=16),
    args(lambda: randn(3, 12)),
    edit=("trunk.0", {"bias": False}),
    styles="a pair of class counts, each item handed to one head as its out_features",
)


class DilatedPairBlock(nn.Module):
    def __init__(self, channels, dilations, n_out):
        super().__init__()
        self.near = nn.Conv1d(channels, channels, 3, dilation=dilations[0], padding=dilations[0])
        self.far = nn.Conv1d(channels, channels, 3, dilation=dilations[1], padding=dilations[1])
        self.proj = nn.Linear(channels, n_out)

    def forward(self, x):
        h = torch.relu(self.near(x)) + torch.relu(self.far(x))
        return self.proj(h.mean(-1))


case(
    "dilated_pair_block",
    lambda: DilatedPairBlock(6, (2, 5), 3),
    args(lambda: randn(2, 6, 30)),
    edit=("proj", {"bias": False}),
    styles="a pair of dilations, each item handed to one conv as a keyword and as its padding",
)


class DenoiseBranches(nn.Module):
    def __init__(self, ch, sizes, mid=12):
        super().__init__()
        self.fine = nn.Conv2d(ch, mid, kernel_size=sizes[0], padding=(sizes[0] - 1) // 2)
        self.coarse = nn.Conv2d(mid, ch, kernel_size=sizes[1], padding=(sizes[1] - 1) // 2)

    def forward(self, img):
        return img - self.coarse(torch.relu(self.fine(img)))


case(
    "denoise_branches_kernel_pair",
    lambda: DenoiseBranches(3, [7, 3], mid=10),
    args(lambda: randn(2, 3, 12, 12)),
    edit=("coarse", {"bias": False}),
    styles="a pair of kernel sizes, each item handed to one conv and its padding worked out",
)
