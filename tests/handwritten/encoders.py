"""Attention models written from scratch, part two: an MLP-Mixer built with functools.partial, a
Perceiver with weights shared across iterations, the Annotated Transformer (clones by deepcopy,
modules passed to constructors, lambdas as sublayers)."""

from __future__ import annotations

import copy
import math
from functools import partial

import torch
import torch.nn as nn

from .attention import pair
from .case import args, case, randn, tokens

# --- MLP-Mixer: chan_first / chan_last made with functools.partial --------------------------------


class PreNormResidual(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.fn(self.norm(x)) + x


class Transpose(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.a, self.b = a, b

    def forward(self, x):
        return x.transpose(self.a, self.b)


def MixerFF(dim, expansion_factor=4, dropout=0.0, dense=nn.Linear):
    inner_dim = int(dim * expansion_factor)
    return nn.Sequential(
        dense(dim, inner_dim),
        nn.GELU(),
        nn.Dropout(dropout),
        dense(inner_dim, dim),
        nn.Dropout(dropout),
    )


def MLPMixer(
    *,
    image_size,
    channels,
    patch_size,
    dim,
    depth,
    num_classes,
    expansion_factor=4,
    expansion_factor_token=0.5,
    dropout=0.0,
):
    image_h, image_w = pair(image_size)
    assert (image_h % patch_size) == 0 and (image_w % patch_size) == 0, (
        "image must be divisible by patch size"
    )
    num_patches = (image_h // patch_size) * (image_w // patch_size)
    chan_first, chan_last = partial(nn.Conv1d, kernel_size=1), nn.Linear
    return nn.Sequential(
        nn.Conv2d(channels, dim, patch_size, patch_size),
        nn.Flatten(2),
        Transpose(1, 2),
        *[
            nn.Sequential(
                PreNormResidual(dim, MixerFF(num_patches, expansion_factor, dropout, chan_first)),
                PreNormResidual(dim, MixerFF(dim, expansion_factor_token, dropout, chan_last)),
            )
            for _ in range(depth)
        ],
        nn.LayerNorm(dim),
        Transpose(1, 2),
        nn.AdaptiveAvgPool1d(1),
        nn.Flatten(1),
        nn.Linear(dim, num_classes),
    )


case(
    "mlp_mixer_partial",
    lambda: MLPMixer(
        image_size=16, channels=3, patch_size=4, dim=16, depth=2, num_classes=7, dropout=0.1
    ),
    args(lambda: randn(2, 3, 16, 16)),
    edit=("3.0.fn.2", {"p": 0.2}),
    styles="a function returning nn.Sequential, partial(nn.Conv1d, kernel_size=1), int(dim * 0.5)",
)

# --- Perceiver: latents, cross-attention then self-attention, weights tied across iterations -------


class PerceiverAttention(nn.Module):
    def __init__(self, query_dim, context_dim=None, heads=8, dim_head=64, dropout=0.0):
        super().__init__()
        inner_dim = dim_head * heads
        context_dim = query_dim if context_dim is None else context_dim
        self.scale = dim_head**-0.5
        self.heads = heads
        self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_kv = nn.Linear(context_dim, inner_dim * 2, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.to_out = nn.Linear(inner_dim, query_dim)

    def forward(self, x, context=None, mask=None):
        h = self.heads
        context = x if context is None else context
        q = self.to_q(x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        q, k, v = (t.reshape(t.shape[0], t.shape[1], h, -1).transpose(1, 2) for t in (q, k, v))
        sim = torch.einsum("bhid,bhjd->bhij", q, k) * self.scale
        if mask is not None:
            sim = sim.masked_fill(~mask[:, None, None, :], -torch.finfo(sim.dtype).max)
        attn = self.dropout(sim.softmax(dim=-1))
        out = torch.einsum("bhij,bhjd->bhid", attn, v).transpose(1, 2)
        return self.to_out(out.reshape(out.shape[0], out.shape[1], -1))


def fourier_encode(x, max_freq, num_bands=4):
    x = x.unsqueeze(-1)
    orig_x = x
    scales = torch.linspace(1.0, max_freq / 2, num_bands, device=x.device, dtype=x.dtype)
    x = x * scales * math.pi
    return torch.cat([x.sin(), x.cos(), orig_x], dim=-1)


class Perceiver(nn.Module):
    def __init__(
        self,
        *,
        num_freq_bands,
        depth,
        max_freq,
        input_channels=3,
        input_axis=2,
        num_latents=512,
        latent_dim=512,
        cross_heads=1,
        latent_heads=8,
        cross_dim_head=64,
        latent_dim_head=64,
        num_classes=1000,
        attn_dropout=0.0,
        weight_tie_layers=False,
    ):
        super().__init__()
        self.input_axis = input_axis
        self.max_freq = max_freq
        self.num_freq_bands = num_freq_bands
        fourier_channels = input_axis * ((num_freq_bands * 2) + 1)
        input_dim = fourier_channels + input_channels
        self.latents = nn.Parameter(torch.randn(num_latents, latent_dim))
        self.layers = nn.ModuleList([])
        for i in range(depth):
            if i > 0 and weight_tie_layers:
                self.layers.append(self.layers[0])
                continue
            self.layers.append(
                nn.ModuleList(
                    [
                        nn.LayerNorm(latent_dim),
                        PerceiverAttention(
                            latent_dim,
                            input_dim,
                            heads=cross_heads,
                            dim_head=cross_dim_head,
                            dropout=attn_dropout,
                        ),
                        nn.LayerNorm(latent_dim),
                        PerceiverAttention(
                            latent_dim,
                            heads=latent_heads,
                            dim_head=latent_dim_head,
                            dropout=attn_dropout,
                        ),
                    ]
                )
            )
        self.to_logits = nn.Sequential(nn.LayerNorm(latent_dim), nn.Linear(latent_dim, num_classes))

    def forward(self, data, mask=None):
        b, *axis, _ = data.shape
        axis_pos = [torch.linspace(-1.0, 1.0, steps=size, device=data.device) for size in axis]
        pos = torch.stack(torch.meshgrid(*axis_pos, indexing="ij"), dim=-1)
        enc_pos = fourier_encode(pos, self.max_freq, self.num_freq_bands).flatten(-2)
        enc_pos = enc_pos.unsqueeze(0).expand(b, *enc_pos.shape)
        data = torch.cat((data, enc_pos), dim=-1).reshape(b, -1, data.shape[-1] + enc_pos.shape[-1])
        x = self.latents.unsqueeze(0).expand(b, -1, -1)
        for norm1, cross, norm2, self_attn in self.layers:
            x = cross(norm1(x), context=data, mask=mask) + x
            x = self_attn(norm2(x)) + x
        return self.to_logits(x.mean(dim=-2))


case(
    "perceiver_tied",
    lambda: Perceiver(
        num_freq_bands=3,
        depth=3,
        max_freq=8.0,
        input_channels=3,
        num_latents=6,
        latent_dim=16,
        latent_heads=2,
        cross_dim_head=8,
        latent_dim_head=8,
        num_classes=4,
        weight_tie_layers=True,
    ),
    args(lambda: randn(2, 5, 5, 3)),
    edit=("to_logits.0", {"eps": 1e-6}),
    styles="the same ModuleList appended again (weights tied by alias), b, *axis, _ = data.shape, meshgrid",
)

# --- The Annotated Transformer: clones by deepcopy, modules passed in, forward(src, tgt, masks) ---


def clones(module, N):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


class LayerNormAT(nn.Module):
    def __init__(self, features, eps=1e-6):
        super(LayerNormAT, self).__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


class SublayerConnection(nn.Module):
    def __init__(self, size, dropout):
        super(SublayerConnection, self).__init__()
        self.norm = LayerNormAT(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return x + self.dropout(sublayer(self.norm(x)))


def attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    def __init__(self, h, d_model, dropout=0.1):
        super(MultiHeadedAttention, self).__init__()
        assert d_model % h == 0
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model), 4)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)
        nbatches = query.size(0)
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value))
        ]
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query, key, value
        return self.linears[-1](x)


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super(PositionwiseFeedForward, self).__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x).relu()))


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout, max_len=5000):
        super(PositionalEncoding, self).__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return self.dropout(x + self.pe[:, : x.size(1)].requires_grad_(False))


class EncoderLayer(nn.Module):
    def __init__(self, size, self_attn, feed_forward, dropout):
        super(EncoderLayer, self).__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 2)
        self.size = size

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class DecoderLayer(nn.Module):
    def __init__(self, size, self_attn, src_attn, feed_forward, dropout):
        super(DecoderLayer, self).__init__()
        self.size = size
        self.self_attn = self_attn
        self.src_attn = src_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 3)

    def forward(self, x, memory, src_mask, tgt_mask):
        m = memory
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, m, m, src_mask))
        return self.sublayer[2](x, self.feed_forward)


class Stack(nn.Module):
    def __init__(self, layer, N):
        super(Stack, self).__init__()
        self.layers = clones(layer, N)
        self.norm = LayerNormAT(layer.size)

    def forward(self, x, *masks):
        for layer in self.layers:
            x = layer(x, *masks)
        return self.norm(x)


class EncoderDecoder(nn.Module):
    def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
        super(EncoderDecoder, self).__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_embed = src_embed
        self.tgt_embed = tgt_embed
        self.generator = generator

    def forward(self, src, tgt, src_mask, tgt_mask):
        memory = self.encoder(self.src_embed(src), src_mask)
        out = self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)
        return self.generator(out).log_softmax(dim=-1)


class Embeddings(nn.Module):
    def __init__(self, d_model, vocab):
        super(Embeddings, self).__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


def make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1):
    c = copy.deepcopy
    attn = MultiHeadedAttention(h, d_model)
    ff = PositionwiseFeedForward(d_model, d_ff, dropout)
    position = PositionalEncoding(d_model, dropout, max_len=64)
    return EncoderDecoder(
        Stack(EncoderLayer(d_model, c(attn), c(ff), dropout), N),
        Stack(DecoderLayer(d_model, c(attn), c(attn), c(ff), dropout), N),
        nn.Sequential(Embeddings(d_model, src_vocab), c(position)),
        nn.Sequential(Embeddings(d_model, tgt_vocab), c(position)),
        nn.Linear(d_model, tgt_vocab),
    )


def _at_inputs():
    src, tgt = tokens(2, 7, vocab=20), tokens(2, 5, vocab=22, seed=1)
    src_mask = torch.ones(2, 1, 7, dtype=torch.bool)
    tgt_mask = torch.tril(torch.ones(1, 5, 5, dtype=torch.bool))
    return (src, tgt, src_mask, tgt_mask), {}


case(
    "annotated_transformer",
    lambda: make_model(20, 22, N=2, d_model=16, d_ff=32, h=4),
    _at_inputs,
    edit=("generator", {"bias": False}),
    styles="clones by deepcopy, modules passed to constructors, lambdas as sublayers, self.attn set in forward",
)
