"""Parameter-efficient fine-tuning, written by hand.

LoRA as nn.Linear/nn.Embedding subclasses with extra constructor arguments (rank, alpha, dropout,
merge flag), a frozen GPT with a reparameterised prefix encoder feeding past keys and values,
and Houlsby bottleneck adapters inserted into a BERT-like encoder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout


def tokens(b, t, vocab, seed=0):
    return torch.randint(0, vocab, (b, t), generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------- LoRA


class LoRALayer:
    def __init__(self, r: int, lora_alpha: int, lora_dropout: float, merge_weights: bool):
        self.r = r
        self.lora_alpha = lora_alpha
        self.lora_dropout = nn.Dropout(p=lora_dropout) if lora_dropout > 0.0 else (lambda x: x)
        self.merged = False
        self.merge_weights = merge_weights


class LoRALinear(nn.Linear, LoRALayer):
    def __init__(self, in_features: int, out_features: int, r: int = 0, lora_alpha: int = 1, lora_dropout: float = 0.0,
                 fan_in_fan_out: bool = False, merge_weights: bool = True, **kwargs):  # fmt: skip
        nn.Linear.__init__(self, in_features, out_features, **kwargs)
        LoRALayer.__init__(
            self, r=r, lora_alpha=lora_alpha, lora_dropout=lora_dropout, merge_weights=merge_weights
        )
        self.fan_in_fan_out = fan_in_fan_out
        if r > 0:
            self.lora_A = nn.Parameter(self.weight.new_zeros((r, in_features)))
            self.lora_B = nn.Parameter(self.weight.new_zeros((out_features, r)))
            self.scaling = self.lora_alpha / self.r
            self.weight.requires_grad = False
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if hasattr(self, "lora_A"):
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
            nn.init.normal_(self.lora_B, std=0.02)  # nonzero so the adapter path matters in a check
        if fan_in_fan_out:
            self.weight.data = self.weight.data.transpose(0, 1)

    def T(self, w):
        return w.transpose(0, 1) if self.fan_in_fan_out else w

    def forward(self, x):
        result = F.linear(x, self.T(self.weight), bias=self.bias)
        if self.r > 0 and not self.merged:
            result = (
                result
                + (self.lora_dropout(x) @ self.lora_A.transpose(0, 1) @ self.lora_B.transpose(0, 1))
                * self.scaling
            )
        return result


class LoRAEmbedding(nn.Embedding, LoRALayer):
    def __init__(
        self, num_embeddings, embedding_dim, r=0, lora_alpha=1, merge_weights=True, **kwargs
    ):
        nn.Embedding.__init__(self, num_embeddings, embedding_dim, **kwargs)
        LoRALayer.__init__(
            self, r=r, lora_alpha=lora_alpha, lora_dropout=0, merge_weights=merge_weights
        )
        if r > 0:
            self.lora_A = nn.Parameter(torch.randn(r, num_embeddings) * 0.02)
            self.lora_B = nn.Parameter(torch.randn(embedding_dim, r) * 0.02)
            self.scaling = self.lora_alpha / self.r
            self.weight.requires_grad = False

    def forward(self, x):
        result = nn.Embedding.forward(self, x)
        if self.r > 0 and not self.merged:
            after_A = F.embedding(x, self.lora_A.transpose(0, 1), self.padding_idx)
            result = result + (after_A @ self.lora_B.transpose(0, 1)) * self.scaling
        return result


@dataclass
class LoRAConfig:
    r: int = 4
    alpha: int = 8
    dropout: float = 0.05
    targets: tuple = ("q", "v")


class LoRAAttention(nn.Module):
    def __init__(self, dim, heads, lora: LoRAConfig):
        super().__init__()
        self.heads = heads
        for name in ("q", "k", "v", "o"):
            if name in lora.targets:
                lin = LoRALinear(
                    dim, dim, r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout
                )
            else:
                lin = nn.Linear(dim, dim)
            setattr(self, name, lin)

    def forward(self, x, pad_mask=None):
        B, T, C = x.shape
        q, k, v = (getattr(self, n)(x).view(B, T, self.heads, -1).transpose(1, 2) for n in "qkv")
        mask = None if pad_mask is None else pad_mask[:, None, None, :]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.o(y.transpose(1, 2).reshape(B, T, C))


class LoRAEncoderLayer(nn.Module):
    def __init__(self, dim, heads, ff_mult, lora):
        super().__init__()
        self.attn = LoRAAttention(dim, heads, lora)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ff = nn.Sequential(
            nn.Linear(dim, dim * ff_mult), nn.GELU(), nn.Linear(dim * ff_mult, dim)
        )

    def forward(self, x, pad_mask=None):
        x = self.ln1(x + self.attn(x, pad_mask))
        return self.ln2(x + self.ff(x))


class LoRAClassifier(nn.Module):
    def __init__(
        self,
        vocab,
        dim=64,
        depth=2,
        heads=4,
        ff_mult=2,
        n_classes=3,
        lora: LoRAConfig | None = None,
    ):
        super().__init__()
        lora = lora or LoRAConfig()
        self.tok = LoRAEmbedding(vocab, dim, r=lora.r, lora_alpha=lora.alpha, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(1, 64, dim) * 0.02)
        self.layers = nn.ModuleList(
            [LoRAEncoderLayer(dim, heads, ff_mult, lora) for _ in range(depth)]
        )
        self.classifier = nn.Linear(dim, n_classes)
        for n, p in self.named_parameters():
            if "lora_" not in n and not n.startswith("classifier"):
                p.requires_grad_(False)

    def forward(self, ids):
        pad = ids != 0
        x = self.tok(ids) + self.pos[:, : ids.shape[1]]
        for layer in self.layers:
            x = layer(x, pad)
        x = (x * pad.unsqueeze(-1)).sum(1) / pad.sum(1, keepdim=True)
        return self.classifier(x)


def _lora_example():
    ids = tokens(3, 14, 300)
    ids[ids == 0] = 1
    ids[1, 10:] = 0
    return (ids,), {}


@heldout("lora_encoder", _lora_example, edit=("layers.0.attn.q", {"r": 8}))
def lora_encoder():
    return LoRAClassifier(300, lora=LoRAConfig(targets=("q", "v", "o")))


# --------------------------------------------------------------------------- prefix tuning


class PrefixEncoder(nn.Module):
    """Prefix-tuning's reparameterisation: embedding -> MLP -> per-layer past keys and values."""

    def __init__(self, config):
        super().__init__()
        self.prefix_projection = config["prefix_projection"]
        kv_dim = config["num_layers"] * 2 * config["hidden_size"]
        self.embedding = nn.Embedding(
            config["pre_seq_len"], config["hidden_size"] if self.prefix_projection else kv_dim
        )
        if self.prefix_projection:
            self.trans = nn.Sequential(
                nn.Linear(config["hidden_size"], config["prefix_hidden_size"]),
                nn.Tanh(),
                nn.Linear(config["prefix_hidden_size"], kv_dim),
            )
        else:
            self.trans = nn.Identity()

    def forward(self, prefix):
        return self.trans(self.embedding(prefix))


class PrefixGPTBlock(nn.Module):
    def __init__(self, n_embd, n_head, layer_norm_epsilon=1e-5):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(n_embd, eps=layer_norm_epsilon)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd, eps=layer_norm_epsilon)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd),
            nn.GELU(approximate="tanh"),
            nn.Linear(4 * n_embd, n_embd),
        )

    def forward(self, x, past_kv):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2) for t in (q, k, v))
        pk, pv = past_kv  # (B, H, P, D)
        k, v = torch.cat([pk, k], 2), torch.cat([pv, v], 2)
        P = pk.shape[2]
        causal = torch.ones(T, P + T, dtype=torch.bool).tril(diagonal=P)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
        x = x + self.c_proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln_2(x))


class PrefixTunedGPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.pre_seq_len = config["pre_seq_len"]
        self.n_layer, self.n_head, self.n_embd = (
            config["num_layers"],
            config["num_heads"],
            config["hidden_size"],
        )
        self.wte = nn.Embedding(config["vocab_size"], self.n_embd)
        self.wpe = nn.Embedding(config["n_positions"], self.n_embd)
        self.h = nn.ModuleList(
            [PrefixGPTBlock(self.n_embd, self.n_head) for _ in range(self.n_layer)]
        )
        self.ln_f = nn.LayerNorm(self.n_embd)
        for p in self.parameters():
            p.requires_grad = False  # the LM stays frozen
        self.prefix_encoder = PrefixEncoder(config)
        self.dropout = nn.Dropout(config["prefix_dropout"])
        self.register_buffer("prefix_tokens", torch.arange(self.pre_seq_len).long())

    def get_prompt(self, batch_size):
        past = self.prefix_encoder(self.prefix_tokens.unsqueeze(0).expand(batch_size, -1))
        past = past.view(
            batch_size, self.pre_seq_len, self.n_layer * 2, self.n_head, self.n_embd // self.n_head
        )
        past = self.dropout(past).permute([2, 0, 3, 1, 4]).split(2)
        return past

    def forward(self, input_ids):
        B, T = input_ids.shape
        past = self.get_prompt(B)
        x = self.wte(input_ids) + self.wpe(torch.arange(T))
        for block, kv in zip(self.h, past):
            x = block(x, (kv[0], kv[1]))
        x = self.ln_f(x)
        return x @ self.wte.weight.t()


@heldout("prefix_tuning_gpt", lambda: ((tokens(2, 10, 120),), {}))
def prefix_tuning_gpt():
    cfg = {"vocab_size": 120, "n_positions": 32, "hidden_size": 48, "num_layers": 2, "num_heads": 4, "pre_seq_len": 5,
           "prefix_projection": True, "prefix_hidden_size": 64, "prefix_dropout": 0.1}  # fmt: skip
    return PrefixTunedGPT(cfg)


# --------------------------------------------------------------------------- Houlsby adapters


class Adapter(nn.Module):
    def __init__(
        self, hidden_size, bottleneck=64, non_linearity="relu", init_scale=1e-3, residual=True
    ):
        super().__init__()
        self.down = nn.Linear(hidden_size, bottleneck)
        self.act = getattr(nn, {"relu": "ReLU", "gelu": "GELU", "swish": "SiLU"}[non_linearity])()
        self.up = nn.Linear(bottleneck, hidden_size)
        self.residual = residual
        for lin in (self.down, self.up):
            nn.init.normal_(lin.weight, std=init_scale)
            nn.init.zeros_(lin.bias)

    def forward(self, x):
        h = self.up(self.act(self.down(x)))
        return x + h if self.residual else h


@dataclass
class BertConfig:
    vocab_size: int = 200
    hidden_size: int = 48
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    intermediate_size: int = 96
    hidden_dropout_prob: float = 0.1
    max_position_embeddings: int = 40
    adapter: dict = field(default_factory=lambda: {"bottleneck": 12, "non_linearity": "swish"})


class AdapterBertLayer(nn.Module):
    """A post-LN BERT layer with one adapter after attention and one after the FFN (Houlsby et al.)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        h = config.hidden_size
        self.attention = nn.MultiheadAttention(h, config.num_attention_heads, dropout=config.hidden_dropout_prob,
                                               batch_first=True)  # fmt: skip
        self.attn_out = nn.Linear(h, h)
        self.adapter_attn = Adapter(h, **config.adapter)
        self.ln_attn = nn.LayerNorm(h, eps=1e-12)
        self.intermediate = nn.Linear(h, config.intermediate_size)
        self.output = nn.Linear(config.intermediate_size, h)
        self.adapter_ffn = Adapter(h, **config.adapter)
        self.ln_out = nn.LayerNorm(h, eps=1e-12)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x, key_padding_mask=None):
        a = self.attention(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)[0]
        x = self.ln_attn(x + self.adapter_attn(self.dropout(self.attn_out(a))))
        f = self.output(F.gelu(self.intermediate(x)))
        return self.ln_out(x + self.adapter_ffn(self.dropout(f)))


class AdapterBert(nn.Module):
    def __init__(self, config: BertConfig, num_labels=2):
        super().__init__()
        self.embeddings = nn.ModuleDict(
            {
                "word": nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=0),
                "position": nn.Embedding(config.max_position_embeddings, config.hidden_size),
                "norm": nn.LayerNorm(config.hidden_size, eps=1e-12),
            }
        )
        self.encoder = nn.ModuleDict(
            {
                "layer": nn.ModuleList(
                    AdapterBertLayer(config) for _ in range(config.num_hidden_layers)
                )
            }
        )
        self.pooler = nn.Sequential(nn.Linear(config.hidden_size, config.hidden_size), nn.Tanh())
        self.classifier = nn.Linear(config.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.shape[1])
        x = self.embeddings["norm"](
            self.embeddings["word"](input_ids) + self.embeddings["position"](pos)
        )
        for layer in self.encoder["layer"]:
            x = layer(x, key_padding_mask=attention_mask == 0)
        return self.classifier(self.pooler(x[:, 0]))


def _bert_example():
    ids = tokens(3, 16, 200)
    mask = torch.ones(3, 16, dtype=torch.long)
    mask[2, 12:] = 0
    return (ids,), {"attention_mask": mask}


@heldout("houlsby_adapter_bert", _bert_example)
def houlsby_adapter_bert():
    return AdapterBert(BertConfig(), num_labels=3)
