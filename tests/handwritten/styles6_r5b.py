"""Widths, counts and lists a constructor computes or hands on in ways the module shows only
indirectly: keywords spread into a class looked up in a table, a layer its parent replaces
after building it, one config dict read by several blocks, a count kept a constant away from a
list's length, a learned table sized by one argument beside a deep stack, and a list kept as a
tensor of another shape."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn, tokens

# --- Keywords spread into a class looked up in a table, kept under an attribute ----------------


class GeM(nn.Module):
    def __init__(self, dim, p=3.0, eps=1e-6):
        super().__init__()
        self.dim, self.p, self.eps = dim, p, eps

    def forward(self, x):
        return x.clamp(min=self.eps).pow(self.p).mean((-2, -1)).pow(1.0 / self.p)


class AvgPoolHead(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x.mean((-2, -1))


POOLS = {"gem": GeM, "avg": AvgPoolHead}


class RetrievalNet(nn.Module):
    def __init__(self, width, pool="avg", out=16, **pool_kw):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU())
        self.pool = POOLS[pool](width, **pool_kw)
        self.whiten = nn.Linear(width, out)

    def forward(self, x):
        return F.normalize(self.whiten(self.pool(self.body(x))), dim=-1)


case(
    "table_class_kwargs",
    lambda: RetrievalNet(12, pool="gem", p=4.0),
    args(lambda: randn(2, 3, 8, 8)),
    edit=("whiten", {"bias": False}),
    styles="a class looked up in a table by a key, called with **kwargs, kept under an attribute",
)


class GRUEncoder(nn.Module):
    def __init__(self, vocab, dim, layers=1, bidirectional=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, layers, batch_first=True, bidirectional=bidirectional)
        self.out_dim = dim * (2 if bidirectional else 1)

    def forward(self, ids):
        return self.rnn(self.embed(ids))[0][:, -1]


class BagEncoder(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim)
        self.out_dim = dim

    def forward(self, ids):
        return self.embed(ids)


ENCODERS = {"gru": GRUEncoder, "bag": BagEncoder}


class TextClassifier(nn.Module):
    def __init__(self, vocab, classes, arch="bag", dim=16, **encoder_options):
        super().__init__()
        self.encoder = ENCODERS.get(arch)(vocab, dim, **encoder_options)
        self.classify = nn.Linear(self.encoder.out_dim, classes)

    def forward(self, ids):
        return self.classify(self.encoder(ids))


case(
    "table_get_class_kwargs",
    lambda: TextClassifier(40, 5, arch="gru", dim=8, layers=2, bidirectional=True),
    args(lambda: tokens(2, 6, vocab=40)),
    edit=("classify", {"bias": False}),
    styles="a class fetched from a table with get, then called with **kwargs",
)

# --- A layer its parent replaces after building it: the child is handed as a factory ----------


class AudioNet(nn.Module):
    def __init__(self, n_classes=10, channels=(16, 32)):
        super().__init__()
        layers, c_in = [], 1
        for c in channels:
            layers += [nn.Conv1d(c_in, c, 5, padding=2), nn.BatchNorm1d(c), nn.ReLU()]
            c_in = c
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c_in, n_classes)

    def forward(self, x):
        return self.classifier(self.features(x).mean(-1))


class ContrastiveAudio(nn.Module):
    def __init__(self, backbone, proj_dim=8):
        super().__init__()
        self.backbone = backbone(n_classes=proj_dim)
        width = self.backbone.classifier.in_features
        self.backbone.classifier = nn.Identity()  # features only; the projection is ours
        self.project = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, proj_dim))

    def forward(self, x):
        return F.normalize(self.project(self.backbone(x)), dim=-1)


case(
    "replaced_head_factory",
    lambda: ContrastiveAudio(functools.partial(AudioNet, channels=(6, 12)), proj_dim=4),
    args(lambda: randn(2, 1, 32)),
    edit=("project.0", {"bias": False}),
    styles="a backbone class handed in and called, its classifier replaced by the parent",
)


class TinyUNetEncoder(nn.Module):
    def __init__(self, in_ch=3, widths=(8, 16)):
        super().__init__()
        self.stem = nn.Conv2d(in_ch, widths[0], 3, padding=1)
        self.down = nn.ModuleList(
            nn.Conv2d(a, b, 3, stride=2, padding=1) for a, b in zip(widths[:-1], widths[1:])
        )
        self.out_ch = widths[-1]

    def forward(self, x):
        x = F.relu(self.stem(x))
        for d in self.down:
            x = F.relu(d(x))
        return x


class GraySegmenter(nn.Module):
    def __init__(self, make_encoder, classes=2):
        super().__init__()
        self.encoder = make_encoder()
        # Gray-scale input: a 1x1 conv in front of the encoder's first conv.
        self.encoder.stem = nn.Sequential(nn.Conv2d(1, 3, 1), self.encoder.stem)
        self.head = nn.Conv2d(self.encoder.out_ch, classes, 1)

    def forward(self, x):
        return self.head(self.encoder(x))


case(
    "replaced_stem_factory",
    lambda: GraySegmenter(lambda: TinyUNetEncoder(widths=(4, 8, 12)), classes=3),
    args(lambda: randn(2, 1, 8, 8)),
    edit=("head", {"bias": False}),
    styles="an encoder factory called with nothing, its stem wrapped by the parent",
)

# --- One config dict handed whole to blocks of several classes, each reading its keys ---------


class UserTower(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg["n_users"], cfg["user_dim"])
        self.fc = nn.Linear(cfg["user_dim"], cfg["out"])

    def forward(self, u):
        return self.fc(self.embed(u))


class ItemTower(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg["n_items"], cfg["item_dim"])
        hidden = cfg["item_hidden"]
        self.mlp = nn.Sequential(
            *[nn.Linear(a, b) for a, b in zip([cfg["item_dim"], *hidden], [*hidden, cfg["out"]])]
        )

    def forward(self, i):
        return self.mlp(self.embed(i))


class TwoTower(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.users = UserTower(cfg)
        self.items = ItemTower(cfg)

    def forward(self, u, i):
        return (self.users(u) * self.items(i)).sum(-1)


case(
    "config_two_towers",
    lambda: TwoTower(
        {
            "n_users": 20,
            "user_dim": 6,
            "n_items": 30,
            "item_dim": 10,
            "item_hidden": [12, 8],
            "out": 5,
        }  # fmt: skip
    ),
    args(lambda: tokens(4, vocab=20), lambda: tokens(4, vocab=30, seed=1)),
    edit=("users.fc", {"bias": False}),
    styles="one config dict handed whole to two blocks, each reading keys of its own",
)


class SpeechEncoder(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.conv = nn.Conv1d(hp["mels"], hp["enc_dim"], hp["enc_kernel"], padding="same")

    def forward(self, x):
        return F.relu(self.conv(x)).transpose(1, 2)


class CharDecoder(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.rnn = nn.LSTM(hp["enc_dim"], hp["dec_dim"], batch_first=True)
        widths = [hp["dec_dim"], *hp["dec_widths"]]
        self.mlp = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.out = nn.Linear(widths[-1], hp["chars"])

    def forward(self, h):
        h = self.rnn(h)[0]
        for layer in self.mlp:
            h = torch.relu(layer(h))
        return self.out(h)


class TinyASR(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.encoder = SpeechEncoder(hp)
        self.decoder = CharDecoder(hp)
        self.dropout = nn.Dropout(hp.get("dropout", 0.1))

    def forward(self, x):
        return self.decoder(self.dropout(self.encoder(x)))


case(
    "config_encoder_decoder",
    lambda: TinyASR(
        {
            "mels": 8,
            "enc_dim": 12,
            "enc_kernel": 3,
            "dec_dim": 10,
            "chars": 7,
            "dec_widths": [16, 12, 8, 6],
            "dropout": 0.2,
        }
    ),  # fmt: skip
    args(lambda: randn(2, 8, 6)),
    edit=("decoder.out", {"bias": False}),
    styles="a hyperparameter dict handed to an encoder and a decoder, each reading its keys",
)

# --- A count kept a constant away from a list's length -----------------------------------------


class PyramidNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        widths = cfg["widths"]
        self.level0 = nn.Conv1d(cfg["in_ch"], widths[0], 3, padding=1)
        for i, (a, b) in enumerate(zip(widths[:-1], widths[1:]), start=1):
            self.add_module(f"level{i}", nn.Conv1d(a, b, 3, stride=2, padding=1))
        self.levels = len(widths)
        self.head = nn.Linear(widths[-1], cfg.get("classes", 10))

    def forward(self, x):
        for i in range(self.levels):
            x = F.gelu(getattr(self, f"level{i}")(x))
        return self.head(x.mean(-1))


case(
    "count_beside_length_dict",
    lambda: PyramidNet({"in_ch": 2, "widths": [4, 8, 12, 16], "classes": 3}),
    args(lambda: randn(2, 2, 16)),
    edit=("head", {"bias": False}),
    styles="stages named from a dict's list with enumerate(start=1) after a stem named stage 0",
)


class MultiScaleMixer(nn.Module):
    def __init__(self, opts):
        super().__init__()
        dim = opts.dim
        self.branch0 = nn.Linear(dim, dim)  # the identity scale, always there
        for i, s in enumerate(opts.scales, start=1):
            setattr(self, f"branch{i}", nn.AvgPool1d(2 * s + 1, 1, s, count_include_pad=False))
        self.n_branches = len(opts.scales) + 1
        self.mix = nn.Linear(dim * self.n_branches, dim)

    def forward(self, x):
        outs = [self.branch0(x)]
        for i in range(1, self.n_branches):
            outs.append(getattr(self, f"branch{i}")(x.transpose(1, 2)).transpose(1, 2))
        return self.mix(torch.cat(outs, -1))


case(
    "count_beside_length",
    lambda: MultiScaleMixer(SimpleNamespace(dim=8, scales=[1, 2, 3, 4])),
    args(lambda: randn(2, 5, 8)),
    edit=("mix", {"bias": False}),
    styles="a branch count kept as len(opts.scales) + 1, branches numbered after a fixed one",
)

# --- A learned table sized by one argument beside a deep stack of blocks -----------------------


class TinyBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = x + self.attn(x, x, x, need_weights=False)[0]
        return x + self.ff(x)


class EventTransformer(nn.Module):
    def __init__(self, n_types=500, dim=256, depth=24, heads=8, max_events=1024):
        super().__init__()
        self.embed = nn.Embedding(n_types, dim)
        self.pos = nn.Parameter(torch.zeros(1, max_events, dim))
        self.blocks = nn.ModuleList(TinyBlock(dim, heads) for _ in range(depth))
        self.out = nn.Linear(dim, n_types)

    def forward(self, ids):
        x = self.embed(ids) + self.pos[:, : ids.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.out(x)


case(
    "table_beside_depth",
    lambda: EventTransformer(n_types=20, dim=16, depth=2, heads=2, max_events=12),
    args(lambda: tokens(2, 6, vocab=20)),
    edit=("out", {"bias": False}),
    styles="a position table sized by one argument beside a stack its depth makes",
)


class SetDecoder(nn.Module):
    def __init__(self, dim=256, num_queries=100, layers=12, heads=8, classes=91):
        super().__init__()
        self.queries = nn.Parameter(torch.randn(num_queries, dim))
        self.layers = nn.ModuleList(
            nn.TransformerDecoderLayer(dim, heads, 2 * dim, batch_first=True) for _ in range(layers)
        )
        self.cls = nn.Linear(dim, classes + 1)

    def forward(self, memory):
        q = self.queries.expand(memory.shape[0], -1, -1)
        for layer in self.layers:
            q = layer(q, memory)
        return self.cls(q)


case(
    "queries_beside_depth",
    lambda: SetDecoder(dim=16, num_queries=7, layers=2, heads=2, classes=4),
    args(lambda: randn(2, 5, 16)),
    edit=("cls", {"bias": False}),
    styles="a query table sized by one argument beside a stack of decoder layers",
)

# --- A list kept as a tensor of another shape ---------------------------------------------------


class AnchorHead(nn.Module):
    def __init__(self, dims=(), scales=(), classes=3):
        super().__init__()
        self.na = len(scales[0])
        self.register_buffer("scales", torch.tensor(scales, dtype=torch.float32).view(-1))
        self.cls = nn.ModuleList(nn.Conv2d(d, self.na * classes, 3, padding=1) for d in dims)
        self.box = nn.ModuleList(nn.Conv2d(d, self.na * 4, 3, padding=1) for d in dims)

    def forward(self, feats):
        return [(c(f), b(f)) for c, b, f in zip(self.cls, self.box, feats)]


case(
    "list_as_flat_tensor",
    lambda: AnchorHead((8, 16), [[1.0, 1.5, 2.0, 2.5], [3.0, 4.0, 5.0, 6.0]], classes=2),
    args(lambda: [randn(2, 8, 8, 8), randn(2, 16, 4, 4, seed=1)]),
    edit=("cls.0", {"bias": False}),
    styles="a list of per-level rows kept flattened in a buffer, its row length a count",
)


class KeypointPrior(nn.Module):
    def __init__(self, dim, offsets=()):
        super().__init__()
        self.k = len(offsets) // 2
        self.register_buffer("offsets", torch.tensor(offsets).float().view(-1, 2))
        self.score = nn.Linear(dim, self.k)
        self.shift = nn.Linear(dim, 2 * self.k)

    def forward(self, x):
        return self.score(x), self.shift(x).view(*x.shape[:-1], self.k, 2) + self.offsets


case(
    "flat_list_as_pairs",
    lambda: KeypointPrior(8, [0, 1, 1, 0, -1, 0]),
    args(lambda: randn(2, 8)),
    edit=("score", {"bias": False}),
    styles="a flat list of coordinates kept as a tensor of pairs, its length halved a count",
)

# --- A table sized by one argument beside a deep stack, the whole at library defaults ----------


class SpecPatches(nn.Module):
    def __init__(self, size=128, patch=16, dim=768):
        super().__init__()
        self.proj = nn.Conv2d(1, dim, patch, patch)
        self.num_patches = (size // patch) ** 2

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class SpecBlock(nn.Module):
    def __init__(self, dim, heads, mlp_ratio=4.0, qkv_bias=False, norm_layer=nn.LayerNorm):
        super().__init__()
        self.clip_norm = norm_layer(dim)
        self.clip_attn = nn.MultiheadAttention(dim, heads, bias=qkv_bias, batch_first=True)
        self.clip_fc = nn.Linear(dim, dim)
        self.norm1 = norm_layer(dim)
        self.attn = nn.MultiheadAttention(dim, heads, bias=qkv_bias, batch_first=True)
        self.norm2 = norm_layer(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        h = self.clip_norm(x)
        x = x + self.clip_fc(self.clip_attn(h, h, h, need_weights=False)[0])
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class ClipTransformer(nn.Module):
    """Clips of spectrogram patches: a learned embedding per clip of the sequence."""

    def __init__(self, size=128, patch=16, dim=768, depth=12, heads=12,
                 num_clips=8, classes=527, norm_layer=None, **block_kw):  # fmt: skip
        super().__init__()
        norm_layer = norm_layer or functools.partial(nn.LayerNorm, eps=1e-6)
        self.patches = SpecPatches(size, patch, dim)
        self.pos = nn.Parameter(torch.zeros(1, self.patches.num_patches + 1, dim))
        self.clip_embed = nn.Parameter(torch.zeros(1, num_clips, dim))
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.blocks = nn.ModuleList(
            SpecBlock(dim, heads, norm_layer=norm_layer, **block_kw) for _ in range(depth)
        )
        self.norm = norm_layer(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):  # x: (batch, clips, 1, size, size): square crops of a spectrogram
        b, c = x.shape[:2]
        h = self.patches(x.flatten(0, 1))
        h = torch.cat([self.cls.expand(h.shape[0], -1, -1), h], 1) + self.pos
        h = h[:, :1].view(b, c, -1) + self.clip_embed[:, :c]
        for blk in self.blocks:
            h = blk(h)
        return self.head(self.norm(h).mean(1))


case(
    "clips_beside_depth",
    lambda: ClipTransformer(
        32, 8, dim=32, depth=2, heads=4, num_clips=3, classes=5, qkv_bias=True
    ),  # fmt: skip
    args(lambda: randn(2, 3, 1, 32, 32)),
    edit=("head", {"bias": False}),
    styles="a per-clip table sized by one argument beside a deep stack, library-sized defaults",
)

# --- A width through floor divisions: what strided layers leave of an axis ---------------------


class SignalClassifier(nn.Module):
    def __init__(self, length=1000, channels=16, kernel=9, stride=4, classes=5):
        super().__init__()
        self.conv = nn.Conv1d(1, channels, kernel, stride)
        steps = (length - kernel) // stride + 1
        self.fc = nn.Linear(channels * steps, classes)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).flatten(1))


case(
    "floored_signal_width",
    lambda: SignalClassifier(length=64, channels=4, kernel=5, stride=3, classes=3),
    args(lambda: randn(2, 1, 64)),
    edit=("fc", {"bias": False}),
    styles="a flattened width from a conv's output length formula, the length used only there",
)


class PatchGridHead(nn.Module):
    def __init__(self, image=224, width=8, out=10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 3, 2, 1), nn.ReLU(), nn.Conv2d(width, width, 3, 2, 1), nn.ReLU()
        )
        side = ((image + 1) // 2 + 1) // 2  # two convs of stride 2, padding 1
        self.head = nn.Linear(width * side * side, out)

    def forward(self, x):
        return self.head(self.stem(x).flatten(1))


case(
    "floored_grid_width",
    lambda: PatchGridHead(image=20, width=4, out=3),
    args(lambda: randn(2, 3, 20, 20)),
    edit=("head", {"bias": False}),
    styles="a flattened width from two strided convs' rounding, the image side used only there",
)
