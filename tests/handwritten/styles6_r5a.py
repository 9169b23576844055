"""Arguments of one kind that a same-named attribute, a layer's class or another layer's use of
them hides: a name changed in case and looked up on ``torch`` or ``nn`` (a point-cloud encoder's
reduction, a sequence tagger's recurrent core, handed on by a wrapper), a string no default
gives compared in an ``if``/``elif`` chain (a pooling choice, a gate's squashing), and a list
or a width that only the block it is handed to iterates or divides (a spectrogram classifier's
widths, a stage whose block class is an argument with a default)."""

from __future__ import annotations

import torch
import torch.nn as nn

from .case import args, case, randn, tokens

# --- A point-cloud encoder whose reduction is a torch function named in any case ---------------


class PointEncoder(nn.Module):
    def __init__(self, in_dim, width, reduce="MEAN"):
        super().__init__()
        self.reduce = getattr(torch, reduce.lower())
        self.mlp = nn.Sequential(nn.Linear(in_dim, width), nn.ReLU(), nn.Linear(width, width))

    def forward(self, pts):
        return self.reduce(self.mlp(pts), dim=1)


case(
    "point_encoder_cased_reduce",
    lambda: PointEncoder(3, 16, reduce="Amax"),
    args(lambda: randn(2, 10, 3)),
    edit=("mlp.0", {"bias": False}),
    styles="a torch function looked up by a name lower-cased first",
)

# --- A tagger whose recurrent core is named in lower case, handed on by a wrapper --------------


class RecurrentCore(nn.Module):
    def __init__(self, d_in, hidden, kind):
        super().__init__()
        self.core = getattr(nn, kind.upper())(d_in, hidden, batch_first=True)

    def forward(self, x):
        return self.core(x)[0]


class CasedTagger(nn.Module):
    def __init__(self, vocab, d, hidden, n_tags, kind):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.rnn = RecurrentCore(d, hidden, kind)
        self.out = nn.Linear(hidden, n_tags)

    def forward(self, ids):
        return self.out(self.rnn(self.embed(ids)))


case(
    "cased_rnn_tagger",
    lambda: CasedTagger(40, 12, 16, 5, "gru"),
    args(lambda: tokens(2, 7, vocab=40)),
    edit=("out", {"bias": False}),
    styles="an nn class looked up by a name upper-cased first, the name handed to a block",
)

# --- Choices no default names, compared with strings -------------------------------------------


class DownBlock1d(nn.Module):
    def __init__(self, c_in, c_out, pooling):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, 3, padding=1)
        if pooling == "avg":
            self.pool = nn.AvgPool1d(2)
        elif pooling == "max":
            self.pool = nn.MaxPool1d(2)
        else:
            raise ValueError(f"unknown pooling {pooling}")

    def forward(self, x):
        return self.pool(torch.relu(self.conv(x)))


class GatedUnit(nn.Module):
    def __init__(self, d, squash):
        super().__init__()
        self.value = nn.Linear(d, d)
        self.gate = nn.Linear(d, d)
        self.squash = nn.Tanh() if squash == "tanh" else nn.Sigmoid()

    def forward(self, x):
        return self.value(x) * self.squash(self.gate(x))


class ChoiceSignalNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down1 = DownBlock1d(2, 8, "max")
        self.down2 = DownBlock1d(8, 8, "avg")
        self.unit = GatedUnit(8, "tanh")

    def forward(self, x):
        h = self.down2(self.down1(x)).mean(-1)
        return self.unit(h)


case(
    "string_choices_no_default",
    ChoiceSignalNet,
    args(lambda: randn(2, 2, 16)),
    edit=("unit", {"squash": "sigmoid"}),
    styles="a string no default gives, compared with literals in an if/elif chain",
)

# --- Widths only the block they are handed to iterates -----------------------------------------


class DilatedUnit(nn.Module):
    def __init__(self, c_in, c_out, kernel, dilation, dropout=0.1):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, kernel, padding=dilation * (kernel - 1) // 2,
                              dilation=dilation)  # fmt: skip
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(torch.relu(self.conv(x)))


class SpecConvStack(nn.Module):
    def __init__(self, c_in, widths, kernel=3, dropout=0.1):
        super().__init__()
        layers = []
        for i in range(len(widths)):
            prev = c_in if i == 0 else widths[i - 1]
            layers += [DilatedUnit(prev, widths[i], kernel, 2**i, dropout=dropout)]
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


class SpecClassifier(nn.Module):
    def __init__(self, n_mels, widths, n_classes, kernel, dropout):
        super().__init__()
        self.stack = SpecConvStack(n_mels, widths, kernel, dropout=dropout)
        self.head = nn.Linear(widths[-1], n_classes)

    def forward(self, spec):
        return self.head(self.stack(spec).mean(-1))


case(
    "spec_widths_handed_on",
    lambda: SpecClassifier(6, [8, 8, 12], 3, kernel=5, dropout=0.2),
    args(lambda: randn(2, 6, 10)),
    edit=("head", {"bias": False}),
    styles="a list indexed here and iterated by the block it is handed to",
)

# --- A stage whose block class is an argument with a default, called with a kernel -------------


class ResUnit2d(nn.Module):
    def __init__(self, c_in, c_out, kernel):
        super().__init__()
        pad = kernel // 2
        self.conv = nn.Conv2d(c_in, c_out, kernel, padding=pad)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x):
        return torch.relu(self.conv(x)) + self.skip(x)


class UnitStage(nn.Module):
    def __init__(self, c_in, c_out, kernel, depth, unit=ResUnit2d):
        super().__init__()
        self.first = unit(c_in, c_out, kernel)
        self.rest = nn.ModuleList(unit(c_out, c_out, kernel) for _ in range(depth - 1))

    def forward(self, x):
        x = self.first(x)
        for u in self.rest:
            x = u(x)
        return x


class UnitStageNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage1 = UnitStage(3, 6, 5, 2)
        self.stage2 = UnitStage(6, 10, 3, 1)

    def forward(self, x):
        return self.stage2(self.stage1(x))


case(
    "unit_stage_default_class",
    UnitStageNet,
    args(lambda: randn(2, 3, 8, 8)),
    edit=("stage1", {"depth": 3}),
    styles="a block class given as an argument's default, called with a kernel it halves",
)

# --- A count named like a layer factory, and keywords handed on through two blocks -------------


class EdgeMLP(nn.Module):
    def __init__(self, d, edge_hidden=32, act=nn.ReLU):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * d, edge_hidden), act(), nn.Linear(edge_hidden, d))

    def forward(self, h, adj):
        pairs = torch.cat([h.unsqueeze(2).expand(-1, -1, h.shape[1], -1),
                           h.unsqueeze(1).expand(-1, h.shape[1], -1, -1)], -1)  # fmt: skip
        return (adj.unsqueeze(-1) * self.net(pairs)).sum(2)


class MessageBlock(nn.Module):
    def __init__(self, d, **edge_kwargs):
        super().__init__()
        self.edge = EdgeMLP(d, **edge_kwargs)
        self.norm = nn.LayerNorm(d)

    def forward(self, h, adj):
        return self.norm(h + self.edge(h, adj))


class CountedGraphNet(nn.Module):
    def __init__(self, in_dim, d, n_mp_layer, **block_kwargs):
        super().__init__()
        self.embed = nn.Linear(in_dim, d)
        self.blocks = nn.ModuleList([MessageBlock(d, **block_kwargs) for _ in range(n_mp_layer)])
        self.readout = nn.Linear(d, 1)

    def forward(self, x, adj):
        h = self.embed(x)
        for b in self.blocks:
            h = b(h, adj)
        return self.readout(h.mean(1))


case(
    "graph_counted_layers_kwargs",
    lambda: CountedGraphNet(5, 12, n_mp_layer=3, edge_hidden=20),
    args(lambda: randn(2, 6, 5), lambda: (randn(2, 6, 6, seed=1) > 0).float()),
    edit=("readout", {"bias": False}),
    styles="a count named like a layer factory, keywords handed on through two blocks",
)


class ResidualConv1d(nn.Module):
    def __init__(self, c, dilation):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 3, padding=dilation, dilation=dilation)

    def forward(self, x):
        return x + torch.tanh(self.conv(x))


class DilatedCounter(nn.Module):
    def __init__(self, c_in, width, num_layer):
        super().__init__()
        self.inp = nn.Conv1d(c_in, width, 1)
        self.body = nn.Sequential(*[ResidualConv1d(width, 2**i) for i in range(num_layer - 1)])
        self.out = nn.Conv1d(width, c_in, 1)

    def forward(self, x):
        return self.out(self.body(self.inp(x)))


case(
    "dilated_counted_layers",
    lambda: DilatedCounter(2, 8, num_layer=4),
    args(lambda: randn(2, 2, 20)),
    edit=("out", {"bias": False}),
    styles="a count named like a layer factory, used as a number",
)

# --- Two arguments the constructor checks are equal ---------------------------------------------


class CaptionDecoder(nn.Module):
    def __init__(self, vocab, embed, hidden, feat_dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.gru = nn.GRU(embed + feat_dim, hidden, batch_first=True)
        self.attn = nn.Linear(hidden, 1)
        self.out = nn.Linear(hidden * 2, vocab)
        assert feat_dim == hidden, "the image features must be as wide as the decoder"

    def forward(self, feats, ids):
        ctx = feats.mean(1, keepdim=True).expand(-1, ids.shape[1], -1)
        h, _ = self.gru(torch.cat([self.embed(ids), ctx], -1))
        w = torch.softmax(self.attn(feats), 1)
        return self.out(torch.cat([h, (w * feats).sum(1, keepdim=True).expand_as(h)], -1))


case(
    "caption_decoder_equal_widths",
    lambda: CaptionDecoder(30, 10, 24, 24),
    args(lambda: randn(2, 5, 24), lambda: tokens(2, 6, vocab=30)),
    edit=("out", {"bias": False}),
    styles="two widths asserted equal, one of them shown only in a sum",
)


class FusionBlock(nn.Module):
    def __init__(self, audio_dim, video_dim, fused, n_heads=2):
        super().__init__()
        if audio_dim != video_dim:
            raise ValueError("audio and video features must have one width")
        self.cross = nn.MultiheadAttention(audio_dim, n_heads, batch_first=True)
        self.proj = nn.Linear(audio_dim + video_dim, fused)

    def forward(self, a, v):
        x, _ = self.cross(a, v, v)
        return self.proj(torch.cat([x, v], -1))


class AVNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.a_in = nn.Linear(5, 16)
        self.v_in = nn.Linear(7, 16)
        self.fuse = FusionBlock(16, 16, 12)

    def forward(self, a, v):
        return self.fuse(self.a_in(a), self.v_in(v))


case(
    "av_fusion_equal_check",
    AVNet,
    args(lambda: randn(2, 4, 5), lambda: randn(2, 4, 7, seed=1)),
    edit=("fuse", {"fused": 10}),
    styles="two widths checked equal by an if that raises",
)

# --- A loop's count ``range(x - 1)`` that nothing keeps -----------------------------------------


class ConvPair(nn.Module):
    def __init__(self, c, kernel):
        super().__init__()
        self.a = nn.Conv2d(c, c, kernel, padding=kernel // 2)
        self.bn_a = nn.BatchNorm2d(c)
        self.b = nn.Conv2d(c, c, kernel, padding=kernel // 2)
        self.bn_b = nn.BatchNorm2d(c)

    def forward(self, x):
        return x + self.bn_b(self.b(torch.relu(self.bn_a(self.a(x)))))


class RepeatStage(nn.Module):
    def __init__(self, c_in, c_out, reps, kernel):
        super().__init__()
        self.head = nn.Conv2d(c_in, c_out, kernel, stride=2, padding=kernel // 2)
        self.tail = nn.ModuleList()
        for _ in range(reps - 1):
            self.tail.append(ConvPair(c_out, kernel))

    def forward(self, x):
        x = self.head(x)
        for block in self.tail:
            x = block(x)
        return x


class RepeatNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.s1 = RepeatStage(3, 24, 1, 5)
        self.s2 = RepeatStage(24, 32, 2, 3)

    def forward(self, x):
        return self.s2(self.s1(x))


case(
    "repeat_stage_loop_count",
    RepeatNet,
    args(lambda: randn(2, 3, 16, 16)),
    edit=("s2", {"reps": 2}),
    styles="a loop's count range(x - 1) that nothing keeps, one stage of a single layer",
)


class TokenMixer(nn.Module):
    def __init__(self, tokens, width, hops):
        super().__init__()
        self.first = nn.Linear(tokens, width)
        self.hops = nn.Sequential(*[nn.Linear(width, width) for _ in range(hops - 2)])
        self.last = nn.Linear(width, tokens)

    def forward(self, x):
        return self.last(self.hops(torch.relu(self.first(x.transpose(1, 2))))).transpose(1, 2)


case(
    "token_mixer_loop_count",
    lambda: TokenMixer(6, 40, hops=4),
    args(lambda: randn(2, 6, 5)),
    edit=("last", {"bias": False}),
    styles="a loop's count range(x - 2) that nothing keeps",
)

# --- One value, or a dict of one per part ------------------------------------------------------


class ActTower(nn.Module):
    def __init__(self, sizes, act):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.act = getattr(nn, act)()

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = self.act(layer(x))
        return self.layers[-1](x)


class TwoTowerScorer(nn.Module):
    def __init__(self, user_sizes, item_sizes, act="ReLU"):
        super().__init__()
        if isinstance(act, dict):
            act_u, act_i = act["user"], act["item"]
        else:
            act_u = act_i = act
        d = item_sizes[-1]
        self.user = ActTower(user_sizes[:-1] + [d], act_u)  # its last size is the item tower's
        self.item = ActTower(item_sizes, act_i)

    def forward(self, u, i):
        return (self.user(u) * self.item(i)).sum(-1)


case(
    "two_tower_act_per_part",
    lambda: TwoTowerScorer([6, 16, 8], [9, 16, 8], act={"user": "Tanh", "item": "ReLU"}),
    args(lambda: randn(4, 6), lambda: randn(4, 9, seed=1)),
    edit=("item", {"act": "Tanh"}),
    styles="one value or a dict of one per part, read by keys under isinstance",
)


class NormedBlock1d(nn.Module):
    def __init__(self, c, norm):
        super().__init__()
        self.conv = nn.Conv1d(c, c, 3, padding=1)
        self.norm = {"batch": nn.BatchNorm1d, "instance": nn.InstanceNorm1d}[norm](c)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))


class NormPerPartAE(nn.Module):
    def __init__(self, c, norm="batch"):
        super().__init__()
        if isinstance(norm, dict):
            enc_norm = norm["encoder"]
            dec_norm = norm["decoder"]
        else:
            enc_norm = dec_norm = norm
        self.encoder = NormedBlock1d(c, enc_norm)
        self.decoder = NormedBlock1d(c, dec_norm)

    def forward(self, x):
        return self.decoder(self.encoder(x))


case(
    "norm_per_part_autoencoder",
    lambda: NormPerPartAE(4, norm={"encoder": "instance", "decoder": "batch"}),
    args(lambda: randn(2, 4, 12)),
    edit=("decoder", {"norm": "instance"}),
    styles="one value or a dict of one per part, each key bound to a name",
)
