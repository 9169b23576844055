"""Counts and widths a constructor keeps or joins in its own way: a count kept under a private
name whose default makes a model many times larger (a dilated audio stack's blocks and taps, a
graph search cell's nodes), and a width started at one argument that an optional one is added to
only where it was given (a text classifier's side features, a goal-conditioned policy's goal)."""

from __future__ import annotations

import torch
import torch.nn as nn

from .case import args, case, randn, tokens

# --- A dilated audio stack whose counts are kept under private names, large by default ----------


class DilatedTap(nn.Module):
    def __init__(self, channels, dilation):
        super().__init__()
        self.filt = nn.Conv1d(channels, channels, 3, padding=dilation, dilation=dilation)
        self.gate = nn.Conv1d(channels, channels, 3, padding=dilation, dilation=dilation)
        self.mix = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        return x + self.mix(torch.tanh(self.filt(x)) * torch.sigmoid(self.gate(x)))


class DilatedAudioStack(nn.Module):
    def __init__(self, channels, n_classes, blocks=32, taps=12, pool_every=2):
        super().__init__()
        self._blocks = blocks
        self._taps = taps
        self._pool_every = pool_every
        self.inp = nn.Conv1d(1, channels, 1)
        self.stack = nn.ModuleList(
            [DilatedTap(channels, 2**t) for _ in range(blocks) for t in range(taps)]
        )
        self.head = nn.Linear(channels, n_classes)

    def forward(self, wav):
        h = self.inp(wav)
        for i, tap in enumerate(self.stack):
            h = tap(h)
            if (i + 1) % (self._taps * self._pool_every) == 0:
                h = nn.functional.avg_pool1d(h, 2)
        return self.head(h.mean(-1))


case(
    "dilated_stack_private_counts",
    lambda: DilatedAudioStack(8, 4, blocks=2, taps=2, pool_every=1),
    args(lambda: randn(2, 1, 32)),
    edit=("head", {"bias": False}),
    styles="counts kept under private names, a default many times larger than the model",
)

# --- A graph search cell stack whose node count is kept under a private name -------------------


class EdgeMix(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ops = nn.ModuleList(
            [nn.Linear(d, d), nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d)), nn.Identity()]
        )

    def forward(self, x, w):
        return sum(wi * op(x) for wi, op in zip(w, self.ops))


class GraphSearchCell(nn.Module):
    def __init__(self, d, nodes):
        super().__init__()
        self._nodes = nodes
        self.edges = nn.ModuleList([EdgeMix(d) for i in range(nodes) for _ in range(i + 1)])

    def forward(self, x, w):
        states = [x]
        k = 0
        for i in range(self._nodes):
            states.append(sum(self.edges[k + j](h, w[k + j]) for j, h in enumerate(states)))
            k += i + 1
        return states[-1]


class GraphSearchNet(nn.Module):
    def __init__(self, d_in, d, n_out, cells, nodes=14, width_mult=2):
        super().__init__()
        self._nodes = nodes
        self._mult = width_mult
        self.embed = nn.Linear(d_in, d * width_mult)
        self.cells = nn.ModuleList([GraphSearchCell(d * width_mult, nodes) for _ in range(cells)])
        self.out = nn.Linear(d * width_mult, n_out)
        n_edges = nodes * (nodes + 1) // 2
        self.register_buffer("alphas", torch.zeros(n_edges, 3))

    def forward(self, x):
        w = torch.softmax(self.alphas, -1)
        h = self.embed(x)
        for c in self.cells:
            h = c(h, w)
        return self.out(h.mean(1))


case(
    "graph_search_private_nodes",
    lambda: GraphSearchNet(5, 4, 3, cells=2, nodes=2, width_mult=1),
    args(lambda: randn(2, 7, 5)),
    edit=("out", {"bias": False}),
    styles="a node count kept under a private name, the default a cell of many more edges",
)

# --- A text classifier whose side features widen its recurrent input only where given ----------


class SideFeatureClassifier(nn.Module):
    def __init__(self, vocab, emb_dim=64, n_side=None, hidden=32, n_cls=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb_dim)
        rnn_in = emb_dim
        if n_side is not None:
            rnn_in += n_side
        self.has_side = n_side is not None
        self.scorers = nn.ModuleList([nn.Linear(rnn_in, 1) for _ in range(n_cls)])
        self.rnn = nn.GRU(rnn_in, hidden, batch_first=True)
        self.cls = nn.Linear(hidden, n_cls)

    def forward(self, ids, side):
        h = self.embed(ids)
        h = torch.cat([h, side.unsqueeze(1).expand(-1, h.shape[1], -1)], -1)
        w = torch.softmax(torch.cat([s(h) for s in self.scorers], -1).mean(-1), 1)
        return self.cls(self.rnn(h * w.unsqueeze(-1))[0][:, -1])


case(
    "side_features_optional_width",
    lambda: SideFeatureClassifier(30, emb_dim=12, n_side=5, hidden=10, n_cls=4),
    args(lambda: tokens(2, 6, vocab=30), lambda: randn(2, 5)),
    edit=("cls", {"bias": False}),
    styles="a width started at one argument, an optional one added where it was given",
)

# --- A goal-conditioned policy whose goal widens the trunk only where given -------------------


class FiLMBlock(nn.Module):
    def __init__(self, cond, hidden):
        super().__init__()
        self.film = nn.Linear(cond, 2 * hidden)
        self.fc = nn.Linear(hidden, hidden)

    def forward(self, h, c):
        scale, shift = self.film(c).chunk(2, -1)
        return h + torch.relu(self.fc(h) * (1 + scale) + shift)


class GoalPolicy(nn.Module):
    def __init__(self, obs_dim, act_dim, feat=48, goal_dim=None, hidden=64, n_blocks=4):
        super().__init__()
        f = feat
        self.encoder = nn.Sequential(nn.Linear(obs_dim, f), nn.ELU())
        trunk_in = f
        if goal_dim:
            trunk_in = trunk_in + goal_dim
        self.inp = nn.Linear(obs_dim, hidden)
        self.blocks = nn.ModuleList([FiLMBlock(trunk_in, hidden) for _ in range(n_blocks)])
        self.mu = nn.Linear(hidden, act_dim)

    def forward(self, obs, goal):
        c = torch.cat([self.encoder(obs), goal], -1)
        h = self.inp(obs)
        for b in self.blocks:
            h = b(h, c)
        return self.mu(h)


case(
    "goal_policy_optional_width",
    lambda: GoalPolicy(11, 3, feat=16, goal_dim=4, hidden=24, n_blocks=3),
    args(lambda: randn(2, 11), lambda: randn(2, 4, seed=1)),
    edit=("mu", {"bias": False}),
    styles="a width started at a local name for one argument, an optional one added if given",
)

# --- A keyword spotter whose widths are a table scaled by a float, rounded to a multiple --------

KWS_STAGES = [(16, 1), (24, 2), (32, 2), (48, 1)]  # (width, stride)


def _round_to(v, divisor):
    return max(divisor, int(v + divisor / 2) // divisor * divisor)


class KeywordSpotter(nn.Module):
    def __init__(self, n_keywords, alpha=1.0, divisor=4):
        super().__init__()
        layers = []
        c_in = 1
        for width, stride in KWS_STAGES:
            c_out = _round_to(width * alpha, divisor)
            layers += [nn.Conv2d(c_in, c_out, 3, stride, 1), nn.BatchNorm2d(c_out), nn.ReLU()]
            c_in = c_out
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(c_in, n_keywords)

    def forward(self, spec):
        return self.fc(self.body(spec).mean((2, 3)))


case(
    "keyword_spotter_scaled_table",
    lambda: KeywordSpotter(6, alpha=0.5),
    args(lambda: randn(2, 1, 20, 16)),
    edit=("fc", {"bias": False}),
    styles="a module table of widths scaled by a float and rounded to a multiple",
)

# --- A tabular MLP whose hidden sizes are written in the constructor and scaled ----------------


class ScaledTabularMLP(nn.Module):
    def __init__(self, d_in, d_out, scale=1.0):
        super().__init__()
        sizes = [256, 128, 64]
        dims = [d_in] + [max(8, round(h * scale)) for h in sizes]
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.out = nn.Linear(dims[-1], d_out)

    def forward(self, x):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.out(x)


case(
    "tabular_mlp_scaled_sizes",
    lambda: ScaledTabularMLP(9, 2, scale=0.125),
    args(lambda: randn(3, 9)),
    edit=("out", {"bias": False}),
    styles="widths written in the constructor scaled by a float",
)

# --- Presets in a dict beside the class, chosen by a key -----------------------------------------

ENCODER_PRESETS = {
    "tiny": {"dim": 16, "depth": 2, "heads": 2},
    "small": {"dim": 32, "depth": 4, "heads": 4},
    "base": {"dim": 64, "depth": 8, "heads": 8},
}


class PresetEncoder(nn.Module):
    def __init__(self, vocab, preset):
        super().__init__()
        cfg = ENCODER_PRESETS[preset]
        self.embed = nn.Embedding(vocab, cfg["dim"])
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(cfg["dim"], cfg["heads"], 2 * cfg["dim"], batch_first=True)
            for _ in range(cfg["depth"])
        )

    def forward(self, ids):
        h = self.embed(ids)
        for layer in self.layers:
            h = layer(h)
        return h


case(
    "preset_encoder_table_key",
    lambda: PresetEncoder(40, "tiny"),
    args(lambda: tokens(2, 5, vocab=40)),
    edit=("embed", {"max_norm": 1.0}),
    styles="a string key of a module-level table of presets",
)

RESNET_DEPTHS = {10: (1, 1, 1), 14: (2, 2, 1), 18: (3, 3, 1)}


class BasicStage(nn.Module):
    def __init__(self, c_in, c_out, n):
        super().__init__()
        self.convs = nn.Sequential(
            *[nn.Conv1d(c_in if i == 0 else c_out, c_out, 3, padding=1) for i in range(n)]
        )

    def forward(self, x):
        return torch.relu(self.convs(x))


class DepthKeyedResNet1d(nn.Module):
    def __init__(self, depth, n_classes, width=8):
        super().__init__()
        blocks = RESNET_DEPTHS[depth]
        self.stages = nn.Sequential(
            BasicStage(1, width, blocks[0]),
            BasicStage(width, 2 * width, blocks[1]),
            BasicStage(2 * width, 4 * width, blocks[2]),
        )
        self.fc = nn.Linear(4 * width, n_classes)

    def forward(self, x):
        return self.fc(self.stages(x).mean(-1))


case(
    "depth_keyed_resnet1d",
    lambda: DepthKeyedResNet1d(14, 3),
    args(lambda: randn(2, 1, 24)),
    edit=("fc", {"bias": False}),
    styles="a whole-number key of a module-level table of block counts",
)

FRONTENDS = {8000: (20, 2), 16000: (40, 3), 22050: (64, 3)}  # sample rate -> (n_mels, n_convs)


class RateKeyedFrontend(nn.Module):
    def __init__(self, sample_rate, d_model, n_tokens):
        super().__init__()
        n_mels, n_convs = FRONTENDS[sample_rate]
        self.convs = nn.Sequential(
            *[
                nn.Conv1d(n_mels if i == 0 else d_model, d_model, 3, padding=1)
                for i in range(n_convs)
            ]
        )
        self.proj = nn.Linear(d_model, n_tokens)

    def forward(self, mels):
        return self.proj(self.convs(mels).transpose(1, 2))


case(
    "rate_keyed_frontend",
    lambda: RateKeyedFrontend(8000, 12, 7),
    args(lambda: randn(2, 20, 15)),
    edit=("proj", {"bias": False}),
    styles="a sample rate keying a module-level table of front-end sizes",
)

# --- Keys popped out of a **kwargs with a default, handed to a layer; the rest handed on -------


class SpecEncoder(nn.Module):
    def __init__(self, n_bins, enc_dim, n_layers=2):
        super().__init__()
        self.layers = nn.Sequential(
            *[
                nn.Conv1d(n_bins if i == 0 else enc_dim, enc_dim, 3, padding=1)
                for i in range(n_layers)
            ]
        )

    def forward(self, x):
        return self.layers(x)


class MaskHead(nn.Module):
    def __init__(self, enc_dim, n_bins, squash=True):
        super().__init__()
        self.proj = nn.Conv1d(enc_dim, n_bins, 1)
        self.squash = nn.Sigmoid() if squash else nn.Identity()

    def forward(self, h):
        return self.squash(self.proj(h))


class PoppedDenoiser(nn.Module):
    def __init__(self, n_fft=64, **opts):
        super().__init__()
        bins = n_fft // 2 + 1
        enc_dim = opts.pop("enc_dim", 32)
        self.encoder = SpecEncoder(bins, enc_dim, opts.pop("enc_layers", 2))
        self.head = MaskHead(enc_dim, bins, **opts)

    def forward(self, spec):
        return spec * self.head(self.encoder(spec))


case(
    "denoiser_popped_kwargs",
    lambda: PoppedDenoiser(16, enc_dim=12, enc_layers=3, squash=False),
    args(lambda: randn(2, 9, 10)),
    edit=("head.proj", {"bias": False}),
    styles="keys popped out of a **kwargs with defaults and handed to a layer, the rest handed on",
)


class ItemTower(nn.Module):
    def __init__(self, n_items, hidden, out_dim=8, dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(n_items, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(dropout))
        self.out = nn.Linear(hidden, out_dim)

    def forward(self, ids):
        return self.out(self.mlp(self.embed(ids)))


class PoppedTwoTower(nn.Module):
    def __init__(self, n_users, n_items, **cfg):
        super().__init__()
        self.item = ItemTower(n_items, cfg.pop("item_hidden", 64), **cfg)
        self.user = nn.Sequential(nn.Embedding(n_users, self.item.out.out_features))

    def forward(self, users, items):
        return (self.user(users) * self.item(items)).sum(-1)


case(
    "two_tower_popped_kwargs",
    lambda: PoppedTwoTower(15, 25, item_hidden=20, out_dim=6, dropout=0.1),
    args(lambda: tokens(4, vocab=15), lambda: tokens(4, vocab=25, seed=1)),
    edit=("item.out", {"bias": False}),
    styles="a key popped out of a **kwargs as a layer's argument, the rest spread into the same call",
)

# --- A **kwargs handed on whole, as one dict, to a block that spreads it -----------------------


class EdgeMLP(nn.Module):
    def __init__(self, d_in, d_out, k=8, aggr_hidden=32):
        super().__init__()
        self.k = k
        self.mlp = nn.Sequential(
            nn.Linear(2 * d_in, aggr_hidden), nn.ReLU(), nn.Linear(aggr_hidden, d_out)
        )

    def forward(self, x):
        d = torch.cdist(x, x)
        idx = d.topk(min(self.k, x.shape[1]), largest=False).indices
        nb = torch.gather(
            x.unsqueeze(1).expand(-1, x.shape[1], -1, -1),
            2,
            idx.unsqueeze(-1).expand(-1, -1, -1, x.shape[-1]),
        )
        center = x.unsqueeze(2).expand_as(nb)
        return self.mlp(torch.cat([center, nb - center], -1)).amax(2)


class PointGraphLayer(nn.Module):
    def __init__(self, d_in, d_out, conv_opts: dict):
        super().__init__()
        self.conv = EdgeMLP(d_in, d_out, **conv_opts)
        self.norm = nn.LayerNorm(d_out)

    def forward(self, x):
        return self.norm(self.conv(x))


class PointGraphNet(nn.Module):
    def __init__(self, d_in, d, n_layers, n_classes, **conv_opts):
        super().__init__()
        self.layers = nn.ModuleList(
            [PointGraphLayer(d_in if i == 0 else d, d, conv_opts) for i in range(n_layers)]
        )
        self.head = nn.Linear(d, n_classes)

    def forward(self, pts):
        for layer in self.layers:
            pts = layer(pts)
        return self.head(pts.mean(1))


case(
    "point_graph_kwargs_dict_handed",
    lambda: PointGraphNet(3, 12, 2, 4, k=3, aggr_hidden=10),
    args(lambda: randn(2, 6, 3)),
    edit=("head", {"bias": False}),
    styles="a **kwargs handed whole as a dict to a block that spreads it into its layer",
)


class UpStage(nn.Module):
    def __init__(self, c_in, c_out, up_kwargs):
        super().__init__()
        self.up = nn.ConvTranspose2d(c_in, c_out, **up_kwargs)
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.up(x))


class StagedDecoder(nn.Module):
    def __init__(self, z_dim, widths=(32, 16), **up_kwargs):
        super().__init__()
        chans = [z_dim, *widths]
        self.stages = nn.Sequential(
            *[UpStage(a, b, up_kwargs) for a, b in zip(chans[:-1], chans[1:])]
        )
        self.to_rgb = nn.Conv2d(chans[-1], 3, 1)

    def forward(self, z):
        return self.to_rgb(self.stages(z))


case(
    "decoder_up_kwargs_dict_handed",
    lambda: StagedDecoder(8, (12, 6), kernel_size=4, stride=2, padding=1),
    args(lambda: randn(2, 8, 3, 3)),
    edit=("to_rgb", {"bias": False}),
    styles="a **kwargs of a torch layer's keywords handed whole to each stage as a dict",
)

# --- A stack count the pools offer wide numbers for, beside a floored width ---------------------


class MixerBlock1d(nn.Module):
    def __init__(self, d, expansion=2, kernel=5):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.dw = nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d)
        self.norm2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, expansion * d)
        self.act = nn.GELU()
        self.down = nn.Linear(expansion * d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = x + self.dw(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.drop(self.down(self.act(self.up(self.norm2(x)))))


class StridedSensorNet(nn.Module):
    def __init__(self, n_classes, n_channels=64, d=96, n_blocks=4, **block_kwargs):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv1d(1, d, 3, stride=2), nn.GELU(), nn.Conv1d(d, d, 3, stride=2)
        )
        reduced = d * (((n_channels - 1) // 2 - 1) // 2)
        self.proj = nn.Linear(reduced, d)
        self.blocks = nn.ModuleList(MixerBlock1d(d, **block_kwargs) for _ in range(n_blocks))
        self.head = nn.Linear(d, n_classes)

    def forward(self, x):  # (batch, time, channels)
        b, t, c = x.shape
        h = self.stem(x.reshape(b * t, 1, c)).reshape(b, t, -1)
        h = self.proj(h)
        for blk in self.blocks:
            h = blk(h)
        return self.head(h.mean(1))


case(
    "strided_sensor_count_cut",
    lambda: StridedSensorNet(5, n_channels=30, d=36, n_blocks=2, expansion=3, kernel=3),
    args(lambda: randn(2, 6, 30)),
    edit=("head", {"bias": False}),
    styles="a loop's count offered wide numbers whose builds are cut, beside a floored width",
)
