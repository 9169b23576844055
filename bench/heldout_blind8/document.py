"""Document AI: a LayoutLM-style text + 2-D layout encoder, a table-structure splitter
(SPLERGE-like projection pooling) and a WAP-style formula recognizer with coverage attention."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------- LayoutLM-lite


@dataclass
class LayoutConfig:
    vocab_size: int = 120
    hidden_size: int = 32
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    intermediate_size: int = 64
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 64
    max_2d_position_embeddings: int = 1024
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    initializer_range: float = 0.02


ACT2FN = {"gelu": F.gelu, "relu": F.relu, "tanh": torch.tanh}


class LayoutEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=0)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.x_position_embeddings = nn.Embedding(
            config.max_2d_position_embeddings, config.hidden_size
        )
        self.y_position_embeddings = nn.Embedding(
            config.max_2d_position_embeddings, config.hidden_size
        )
        self.h_position_embeddings = nn.Embedding(
            config.max_2d_position_embeddings, config.hidden_size
        )
        self.w_position_embeddings = nn.Embedding(
            config.max_2d_position_embeddings, config.hidden_size
        )
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.register_buffer(
            "position_ids",
            torch.arange(config.max_position_embeddings).expand((1, -1)),
            persistent=False,
        )

    def forward(self, input_ids, bbox, token_type_ids=None):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        words = self.word_embeddings(input_ids)
        left = self.x_position_embeddings(bbox[:, :, 0])
        upper = self.y_position_embeddings(bbox[:, :, 1])
        right = self.x_position_embeddings(bbox[:, :, 2])
        lower = self.y_position_embeddings(bbox[:, :, 3])
        h = self.h_position_embeddings(bbox[:, :, 3] - bbox[:, :, 1])
        w = self.w_position_embeddings(bbox[:, :, 2] - bbox[:, :, 0])
        embeddings = (
            words
            + self.position_embeddings(position_ids)
            + left
            + upper
            + right
            + lower
            + h
            + w
            + self.token_type_embeddings(token_type_ids)
        )
        return self.dropout(self.LayerNorm(embeddings))


class LayoutSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_attention_heads, attention_probs_dropout_prob=0.1):
        super().__init__()
        if hidden_size % num_attention_heads != 0:
            raise ValueError("hidden size is not a multiple of the number of attention heads")
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = hidden_size
        self.query = nn.Linear(hidden_size, self.all_head_size)
        self.key = nn.Linear(hidden_size, self.all_head_size)
        self.value = nn.Linear(hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(attention_probs_dropout_prob)
        self.output = nn.Linear(hidden_size, hidden_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None):
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            scores = scores + attention_mask
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        context = context.view(context.size()[:-2] + (self.all_head_size,))
        return self.output(context)


class LayoutLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = LayoutSelfAttention(
            config.hidden_size, config.num_attention_heads, config.attention_probs_dropout_prob
        )
        self.attn_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = ACT2FN[config.hidden_act]
        self.out = nn.Linear(config.intermediate_size, config.hidden_size)
        self.out_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, attention_mask=None):
        a = self.attention(hidden_states, attention_mask)
        hidden_states = self.attn_norm(hidden_states + self.dropout(a))
        ff = self.out(self.intermediate_act_fn(self.intermediate(hidden_states)))
        return self.out_norm(hidden_states + self.dropout(ff))


class LayoutLMForTokenClassification(nn.Module):
    def __init__(self, config, num_labels=7):
        super().__init__()
        self.config = config
        self.embeddings = LayoutEmbeddings(config)
        self.encoder = nn.ModuleList([LayoutLayer(config) for _ in range(config.num_hidden_layers)])
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, num_labels)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
        if isinstance(module, nn.Linear) and module.bias is not None:
            module.bias.data.zero_()

    def forward(self, input_ids, bbox, attention_mask=None, token_type_ids=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        extended = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        h = self.embeddings(input_ids, bbox, token_type_ids)
        for layer in self.encoder:
            h = layer(h, extended)
        return self.classifier(self.dropout(h))


def _boxes(b, n, seed=1):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randint(0, 500, (b, n, 1), generator=g)
    y0 = torch.randint(0, 500, (b, n, 1), generator=g)
    w = torch.randint(1, 300, (b, n, 1), generator=g)
    h = torch.randint(1, 100, (b, n, 1), generator=g)
    return torch.cat([x0, y0, x0 + w, y0 + h], dim=-1)


@heldout(
    "layoutlm_token_cls",
    lambda: (
        (
            torch.randint(1, 120, (2, 12), generator=torch.Generator().manual_seed(0)),
            _boxes(2, 12),
        ),
        {"attention_mask": torch.ones(2, 12, dtype=torch.long)},
    ),
    edit=("encoder.1.attention", {"num_attention_heads": 2}),
)
def build_layoutlm():
    return LayoutLMForTokenClassification(LayoutConfig(), num_labels=7)


# ----------------------------------------------------------------------------- table structure


class ProjectionPooling(nn.Module):
    """Replace every pixel by the mean of its row (axis=3) or column (axis=2)."""

    def __init__(self, axis):
        super().__init__()
        self.axis = axis

    def forward(self, x):
        return x.mean(dim=self.axis, keepdim=True).expand_as(x)


class SFCNBlock(nn.Module):
    def __init__(self, in_ch, out_ch, dilations=(2, 3, 4)):
        super().__init__()
        self.branches = nn.ModuleList(
            nn.Conv2d(in_ch, out_ch // len(dilations), 3, padding=d, dilation=d) for d in dilations
        )

    def forward(self, x):
        return F.relu(torch.cat([b(x) for b in self.branches], dim=1))


class SplitBlock(nn.Module):
    def __init__(self, in_ch, direction, pool=True):
        super().__init__()
        self.direction = direction
        axis = 3 if direction == "row" else 2
        self.conv = SFCNBlock(in_ch, 18)
        self.pool = (
            nn.MaxPool2d((1, 2))
            if (pool and direction == "row")
            else nn.MaxPool2d((2, 1))
            if pool
            else nn.Identity()
        )
        self.top = ProjectionPooling(axis)
        self.bottom = nn.Sequential(nn.Conv2d(18, 1, 1), ProjectionPooling(axis), nn.Sigmoid())

    def forward(self, x):
        x = self.pool(self.conv(x))
        prob = self.bottom(x)
        return torch.cat([self.top(x), x, prob], dim=1), prob


class SplitModel(nn.Module):
    def __init__(self, in_channels=3, n_blocks=3):
        super().__init__()
        self.shared = nn.Sequential(
            nn.Conv2d(in_channels, 18, 7, padding=3),
            nn.ReLU(inplace=True),
            nn.Conv2d(18, 18, 7, padding=3),
            nn.ReLU(inplace=True),
        )
        self.row_blocks = nn.ModuleList()
        self.col_blocks = nn.ModuleList()
        ch = 18
        for i in range(n_blocks):
            self.row_blocks.append(SplitBlock(ch, "row", pool=i < 2))
            self.col_blocks.append(SplitBlock(ch, "col", pool=i < 2))
            ch = 18 * 2 + 1

    def forward(self, image):
        feats = self.shared(image)
        r = c = feats
        for rb, cb in zip(self.row_blocks, self.col_blocks):
            r, row_prob = rb(r)
            c, col_prob = cb(c)
        return row_prob[:, 0, :, 0], col_prob[:, 0, 0, :]


@heldout("table_split_projection", lambda: ((rand(2, 3, 32, 48),), {}))
def build_table_split():
    return SplitModel(in_channels=3, n_blocks=3)


# ----------------------------------------------------------------------------- WAP formula


class DenseLayer(nn.Module):
    def __init__(self, in_ch, growth, bottleneck=True):
        super().__init__()
        inter = 4 * growth if bottleneck else in_ch
        self.norm1 = nn.BatchNorm2d(in_ch)
        self.conv1 = nn.Conv2d(in_ch, inter, 1, bias=False) if bottleneck else None
        self.norm2 = nn.BatchNorm2d(inter)
        self.conv2 = nn.Conv2d(inter, growth, 3, padding=1, bias=False)

    def forward(self, x):
        out = F.relu(self.norm1(x))
        if self.conv1 is not None:
            out = F.relu(self.norm2(self.conv1(out)))
        return torch.cat([x, self.conv2(out)], 1)


class Transition(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.norm = nn.BatchNorm2d(in_ch)
        self.conv = nn.Conv2d(in_ch, out_ch, 1, bias=False)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.norm(x))), 2, ceil_mode=True)


def make_dense_encoder(in_ch, growth=8, depths=(2, 2, 2), reduction=0.5):
    layers = [
        nn.Conv2d(in_ch, 2 * growth, 7, stride=2, padding=3, bias=False),
        nn.ReLU(),
        nn.MaxPool2d(2, ceil_mode=True),
    ]
    ch = 2 * growth
    for i, d in enumerate(depths):
        for _ in range(d):
            layers.append(DenseLayer(ch, growth))
            ch += growth
        if i != len(depths) - 1:
            out = int(math.floor(ch * reduction))
            layers.append(Transition(ch, out))
            ch = out
    return nn.Sequential(*layers), ch


class CoverageAttention(nn.Module):
    def __init__(self, enc_dim, hid_dim, attn_dim, cov_kernel=5, cov_ch=16):
        super().__init__()
        self.W_a = nn.Conv2d(enc_dim, attn_dim, 1)
        self.U_a = nn.Linear(hid_dim, attn_dim, bias=False)
        self.conv_Q = nn.Conv2d(1, cov_ch, cov_kernel, padding=cov_kernel // 2)
        self.U_f = nn.Linear(cov_ch, attn_dim)
        self.nu = nn.Linear(attn_dim, 1)

    def forward(self, feats, proj_feats, hidden, coverage):
        B, C, H, W = feats.shape
        cov = self.U_f(self.conv_Q(coverage.unsqueeze(1)).permute(0, 2, 3, 1))
        e = self.nu(
            torch.tanh(proj_feats.permute(0, 2, 3, 1) + self.U_a(hidden)[:, None, None] + cov)
        )
        alpha = torch.softmax(e.view(B, -1), dim=1).view(B, H, W)
        context = (feats * alpha.unsqueeze(1)).sum(dim=(2, 3))
        return context, alpha


class WAP(nn.Module):
    def __init__(self, vocab_size, emb_dim=24, hid_dim=32, attn_dim=32, growth=8):
        super().__init__()
        self.encoder, enc_dim = make_dense_encoder(1, growth=growth)
        self.embedding = nn.Embedding(vocab_size, emb_dim)
        self.init_state = nn.Linear(enc_dim, hid_dim)
        self.gru1 = nn.GRUCell(emb_dim, hid_dim)
        self.attention = CoverageAttention(enc_dim, hid_dim, attn_dim)
        self.gru2 = nn.GRUCell(enc_dim, hid_dim)
        self.out_s = nn.Linear(hid_dim, emb_dim)
        self.out_c = nn.Linear(enc_dim, emb_dim)
        self.out = nn.Linear(emb_dim // 2, vocab_size)
        self.sos = 1

    def forward(self, images, targets):
        feats = self.encoder(images)
        proj = self.attention.W_a(feats)
        B, _, H, W = feats.shape
        h = torch.tanh(self.init_state(feats.mean(dim=(2, 3))))
        coverage = feats.new_zeros(B, H, W)
        prev = torch.full((B,), self.sos, dtype=torch.long, device=images.device)
        logits = []
        for t in range(targets.size(1)):
            y = self.embedding(prev)
            h_hat = self.gru1(y, h)
            ctx, alpha = self.attention(feats, proj, h_hat, coverage)
            coverage = coverage + alpha
            h = self.gru2(ctx, h_hat)
            o = y + self.out_s(h) + self.out_c(ctx)
            o = o.view(B, -1, 2).max(dim=2).values  # maxout
            logits.append(self.out(o))
            prev = targets[:, t]
        return torch.stack(logits, dim=1)


@heldout(
    "wap_coverage_formula",
    lambda: (
        (
            rand(2, 1, 32, 64),
            torch.randint(2, 40, (2, 6), generator=torch.Generator().manual_seed(3)),
        ),
        {},
    ),
    edit=("attention", {"cov_kernel": 3, "cov_ch": 8}),
)
def build_wap():
    return WAP(vocab_size=40)
