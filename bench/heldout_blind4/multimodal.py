"""Vision-language and retrieval: a tiny two-tower CLIP, a Q-Former query bank, a two-tower retriever.

CLIP's own LayerNorm subclass and QuickGELU, attention masks stored on blocks, class and position
embeddings as raw parameters, a learnable logit scale, BLIP-2 style learned queries that cross-attend
to image features every other layer, and a retrieval model whose towers share one EmbeddingBag.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- CLIP


class LayerNorm(nn.LayerNorm):
    """Subclass torch's LayerNorm to handle fp16."""

    def forward(self, x):
        orig_type = x.dtype
        return super().forward(x.type(torch.float32)).type(orig_type)


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class ResidualAttentionBlock(nn.Module):
    def __init__(self, d_model, n_head, attn_mask=None):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_head)
        self.ln_1 = LayerNorm(d_model)
        self.mlp = nn.Sequential(
            OrderedDict(
                [
                    ("c_fc", nn.Linear(d_model, d_model * 4)),
                    ("gelu", QuickGELU()),
                    ("c_proj", nn.Linear(d_model * 4, d_model)),
                ]
            )
        )
        self.ln_2 = LayerNorm(d_model)
        self.attn_mask = attn_mask

    def attention(self, x):
        mask = (
            self.attn_mask.to(dtype=x.dtype, device=x.device)
            if self.attn_mask is not None
            else None
        )
        return self.attn(x, x, x, need_weights=False, attn_mask=mask)[0]

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self, width, layers, heads, attn_mask=None):
        super().__init__()
        self.width, self.layers = width, layers
        self.resblocks = nn.Sequential(
            *[ResidualAttentionBlock(width, heads, attn_mask) for _ in range(layers)]
        )

    def forward(self, x):
        return self.resblocks(x)


class VisionTransformer(nn.Module):
    def __init__(self, input_resolution, patch_size, width, layers, heads, output_dim):
        super().__init__()
        self.input_resolution, self.output_dim = input_resolution, output_dim
        self.conv1 = nn.Conv2d(3, width, kernel_size=patch_size, stride=patch_size, bias=False)
        scale = width**-0.5
        self.class_embedding = nn.Parameter(scale * torch.randn(width))
        self.positional_embedding = nn.Parameter(
            scale * torch.randn((input_resolution // patch_size) ** 2 + 1, width)
        )
        self.ln_pre = LayerNorm(width)
        self.transformer = Transformer(width, layers, heads)
        self.ln_post = LayerNorm(width)
        self.proj = nn.Parameter(scale * torch.randn(width, output_dim))

    def forward(self, x):
        x = self.conv1(x)
        x = x.reshape(x.shape[0], x.shape[1], -1).permute(0, 2, 1)
        cls = self.class_embedding.to(x.dtype) + torch.zeros(
            x.shape[0], 1, x.shape[-1], dtype=x.dtype
        )
        x = torch.cat([cls, x], dim=1) + self.positional_embedding.to(x.dtype)
        x = self.ln_pre(x).permute(1, 0, 2)  # NLD -> LND
        x = self.transformer(x).permute(1, 0, 2)
        return self.ln_post(x[:, 0, :]) @ self.proj


class CLIP(nn.Module):
    def __init__(self, embed_dim, image_resolution, vision_layers, vision_width, vision_patch_size, context_length,
                 vocab_size, transformer_width, transformer_heads, transformer_layers):  # fmt: skip
        super().__init__()
        self.context_length = context_length
        vision_heads = vision_width // 16
        self.visual = VisionTransformer(image_resolution, vision_patch_size, vision_width, vision_layers, vision_heads,
                                        embed_dim)  # fmt: skip
        self.transformer = Transformer(
            transformer_width, transformer_layers, transformer_heads, self.build_attention_mask()
        )
        self.vocab_size = vocab_size
        self.token_embedding = nn.Embedding(vocab_size, transformer_width)
        self.positional_embedding = nn.Parameter(
            torch.empty(self.context_length, transformer_width)
        )
        self.ln_final = LayerNorm(transformer_width)
        self.text_projection = nn.Parameter(torch.empty(transformer_width, embed_dim))
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.positional_embedding, std=0.01)
        nn.init.normal_(self.text_projection, std=transformer_width**-0.5)

    def build_attention_mask(self):
        mask = torch.empty(self.context_length, self.context_length)
        mask.fill_(float("-inf"))
        mask.triu_(1)
        return mask

    def encode_text(self, text):
        x = self.token_embedding(text) + self.positional_embedding
        x = self.transformer(x.permute(1, 0, 2)).permute(1, 0, 2)
        x = self.ln_final(x)
        return x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection

    def forward(self, image, text):
        image_features = F.normalize(self.visual(image), dim=1)
        text_features = F.normalize(self.encode_text(text), dim=1)
        logit_scale = self.logit_scale.exp()
        logits_per_image = logit_scale * image_features @ text_features.t()
        return logits_per_image, logits_per_image.t()


def _clip_example():
    text = torch.randint(1, 90, (3, 12), generator=torch.Generator().manual_seed(0))
    text[:, -3] = 99  # end-of-text token has the largest id
    return (rand(3, 3, 32, 32), text), {}


@heldout("tiny_clip", _clip_example, edit=("visual.transformer.resblocks.1", {"n_head": 1}))
def tiny_clip():
    return CLIP(embed_dim=32, image_resolution=32, vision_layers=2, vision_width=32, vision_patch_size=8,
                context_length=12, vocab_size=100, transformer_width=32, transformer_heads=4, transformer_layers=2)  # fmt: skip


# --------------------------------------------------------------------------- Q-Former


class QFormerAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, kv_dim=None, dropout=0.1):
        super().__init__()
        kv_dim = kv_dim or hidden_size
        self.num_heads, self.head_dim = num_heads, hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(kv_dim, hidden_size)
        self.value = nn.Linear(kv_dim, hidden_size)
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.norm = nn.LayerNorm(hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(dropout)

    def _split(self, x):
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden, context=None):
        context = hidden if context is None else context
        q, k, v = (
            self._split(self.query(hidden)),
            self._split(self.key(context)),
            self._split(self.value(context)),
        )
        probs = self.dropout(torch.softmax(q @ k.transpose(-1, -2) / self.head_dim**0.5, -1))
        out = (probs @ v).transpose(1, 2).flatten(2)
        return self.norm(hidden + self.dropout(self.dense(out)))


class QFormerLayer(nn.Module):
    def __init__(self, cfg: dict, layer_idx: int):
        super().__init__()
        h = cfg["hidden_size"]
        self.self_attn = QFormerAttention(h, cfg["num_heads"], dropout=cfg["dropout"])
        self.has_cross = layer_idx % cfg["cross_attention_freq"] == 0
        self.cross_attn = (
            QFormerAttention(
                h, cfg["num_heads"], kv_dim=cfg["encoder_width"], dropout=cfg["dropout"]
            )
            if self.has_cross
            else None
        )
        self.ffn = nn.Sequential(
            nn.Linear(h, cfg["intermediate_size"]),
            nn.GELU(),
            nn.Linear(cfg["intermediate_size"], h),
        )
        self.ffn_norm = nn.LayerNorm(h, eps=1e-12)

    def forward(self, q, image_embeds):
        q = self.self_attn(q)
        if self.cross_attn is not None:
            q = self.cross_attn(q, image_embeds)
        return self.ffn_norm(q + self.ffn(q))


class QFormer(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        self.query_tokens = nn.Parameter(
            torch.zeros(1, cfg["num_query_tokens"], cfg["hidden_size"])
        )
        nn.init.normal_(self.query_tokens, std=0.02)
        self.layernorm = nn.LayerNorm(cfg["hidden_size"], eps=1e-12)
        self.layer = nn.ModuleList([QFormerLayer(cfg, i) for i in range(cfg["num_layers"])])

    def forward(self, image_embeds):
        q = self.layernorm(self.query_tokens.expand(image_embeds.shape[0], -1, -1))
        for layer in self.layer:
            q = layer(q, image_embeds)
        return q


class PatchStem(nn.Module):
    """A stand-in frozen image encoder: patchify, project, norm."""

    def __init__(self, in_chans=3, width=48, patch=4):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, width, patch, patch)
        self.norm = nn.LayerNorm(width)
        for p in self.parameters():
            p.requires_grad = False

    def forward(self, x):
        return self.norm(self.proj(x).flatten(2).transpose(1, 2))


class Blip2Bridge(nn.Module):
    def __init__(self, vision: nn.Module, qformer: nn.Module, qformer_hidden: int, lm_hidden: int):
        super().__init__()
        self.vision = vision
        self.qformer = qformer
        self.language_projection = nn.Linear(qformer_hidden, lm_hidden)

    def forward(self, pixel_values):
        with torch.no_grad():
            feats = self.vision(pixel_values)
        return self.language_projection(self.qformer(feats))


@heldout("qformer_bridge", lambda: ((rand(2, 3, 16, 16),), {}))
def qformer_bridge():
    cfg = dict(hidden_size=32, num_heads=4, intermediate_size=64, encoder_width=48, num_query_tokens=8,
               cross_attention_freq=2, num_layers=4, dropout=0.1)  # fmt: skip
    return Blip2Bridge(PatchStem(width=48), QFormer(cfg), 32, 64)


# --------------------------------------------------------------------------- two-tower retrieval


class SharedBagEmbedder(nn.Module):
    """One EmbeddingBag table shared by several sparse fields (hashed ids with per-field offsets)."""

    def __init__(self, num_buckets, dim, fields, mode="mean"):
        super().__init__()
        self.fields = list(fields)
        self.num_buckets = num_buckets
        self.bag = nn.EmbeddingBag(num_buckets, dim, mode=mode)
        self.register_buffer("field_salt", torch.arange(len(self.fields)) * 7919)

    def forward(self, feats: dict):
        out = []
        for i, f in enumerate(self.fields):
            if f not in feats:
                continue
            ids, offsets = feats[f]
            out.append(self.bag((ids + self.field_salt[i]) % self.num_buckets, offsets))
        return torch.cat(out, dim=-1)


class Tower(nn.Module):
    def __init__(self, embedder, fields, dim, hidden=(64, 32), dense_dim=0, l2_normalize=True):
        super().__init__()
        self.embedder = embedder  # shared between towers
        self.fields = fields
        layers, d = [], dim * len(fields) + dense_dim
        for i, h in enumerate(hidden):
            layers.append(nn.Linear(d, h))
            if i < len(hidden) - 1:
                layers.append(nn.ReLU())
            d = h
        self.mlp = nn.Sequential(*layers)
        self.l2_normalize = l2_normalize

    def forward(self, feats, dense=None):
        x = self.embedder({f: feats[f] for f in self.fields})
        if dense is not None:
            x = torch.cat([x, dense], -1)
        x = self.mlp(x)
        return F.normalize(x, dim=-1) if self.l2_normalize else x


class TwoTower(nn.Module):
    def __init__(self, num_buckets=1000, dim=16, temperature=0.05, **tower_kwargs):
        super().__init__()
        fields = ["query_terms", "item_terms", "item_tags"]
        shared = SharedBagEmbedder(num_buckets, dim, fields)
        self.query_tower = Tower(shared, ["query_terms"], dim, dense_dim=3, **tower_kwargs)
        self.item_tower = Tower(shared, ["item_terms", "item_tags"], dim, **tower_kwargs)
        self.register_buffer("inv_temperature", torch.tensor(1.0 / temperature))

    def forward(self, query_feats, query_dense, item_feats):
        q = self.query_tower(query_feats, query_dense)
        i = self.item_tower(item_feats)
        return q @ i.t() * self.inv_temperature


def _bag(lengths, seed):
    n = sum(lengths)
    ids = torch.randint(0, 100000, (n,), generator=torch.Generator().manual_seed(seed))
    return ids, torch.tensor([0, *lengths[:-1]]).cumsum(0)


def _two_tower_example():
    q = {"query_terms": _bag([3, 1, 4], 0)}
    items = {"item_terms": _bag([5, 2, 2, 6], 1), "item_tags": _bag([1, 1, 3, 2], 2)}
    return (q, rand(3, 3), items), {}


@heldout("two_tower_retrieval", _two_tower_example)
def two_tower_retrieval():
    return TwoTower(hidden=(48, 24))
