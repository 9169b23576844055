"""Held-out sequence and set models: a Conformer block with keyword-only settings, Transformer-XL's
segment memory passed in and returned, Slot Attention, the Set Transformer."""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .spec import heldout, rand

# --- Conformer block: macaron half-step FFNs, a GLU depthwise conv module ------------------------


class Scale(nn.Module):
    def __init__(self, scale: float, fn: nn.Module) -> None:
        super().__init__()
        self.fn, self.scale = fn, scale

    def forward(self, x: Tensor) -> Tensor:
        return self.fn(x) * self.scale


class ConformerConvModule(nn.Module):
    def __init__(
        self,
        dim: int,
        *,
        causal: bool = False,
        expansion_factor: int = 2,
        kernel_size: int = 31,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        inner_dim = dim * expansion_factor
        padding = (
            (kernel_size - 1, 0)
            if causal
            else (kernel_size // 2, kernel_size // 2 - (kernel_size + 1) % 2)
        )
        self.norm = nn.LayerNorm(dim)
        self.pw1 = nn.Conv1d(dim, inner_dim * 2, 1)
        self.glu = nn.GLU(dim=1)
        self.pad = nn.ConstantPad1d(padding, 0.0)
        self.dw = nn.Conv1d(inner_dim, inner_dim, kernel_size, groups=inner_dim)
        self.bn = nn.BatchNorm1d(inner_dim) if not causal else nn.Identity()
        self.act = nn.SiLU()
        self.pw2 = nn.Conv1d(inner_dim, dim, 1)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = self.glu(self.pw1(self.norm(x).transpose(1, 2)))
        x = self.act(self.bn(self.dw(self.pad(x))))
        return self.drop(self.pw2(x).transpose(1, 2))


class ConformerBlock(nn.Module):
    def __init__(
        self,
        *,
        dim: int,
        heads: int = 8,
        ff_mult: int = 4,
        conv_expansion_factor: int = 2,
        conv_kernel_size: int = 31,
        attn_dropout: float = 0.0,
        ff_dropout: float = 0.0,
        conv_causal: bool = False,
    ) -> None:
        super().__init__()

        def ff() -> nn.Module:
            return nn.Sequential(
                nn.LayerNorm(dim),
                nn.Linear(dim, dim * ff_mult),
                nn.SiLU(),
                nn.Dropout(ff_dropout),
                nn.Linear(dim * ff_mult, dim),
                nn.Dropout(ff_dropout),
            )

        self.ff1 = Scale(0.5, ff())
        self.attn_norm = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=attn_dropout, batch_first=True)
        self.conv = ConformerConvModule(
            dim,
            causal=conv_causal,
            expansion_factor=conv_expansion_factor,
            kernel_size=conv_kernel_size,
            dropout=ff_dropout,
        )
        self.ff2 = Scale(0.5, ff())
        self.post_norm = nn.LayerNorm(dim)

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        x = self.ff1(x) + x
        h = self.attn_norm(x)
        x = self.attn(h, h, h, key_padding_mask=mask, need_weights=False)[0] + x
        x = self.conv(x) + x
        return self.post_norm(self.ff2(x) + x)


@heldout(
    "conformer_block",
    lambda: ((rand(2, 12, 16),), {"mask": torch.zeros(2, 12, dtype=torch.bool)}),
    edit=("ff1.fn.3", {"p": 0.2}),
)
def conformer() -> nn.Module:
    return ConformerBlock(dim=16, heads=2, ff_mult=2, conv_kernel_size=7, ff_dropout=0.1)


# --- Transformer-XL-like: memories in, new memories out ------------------------------------------


class XLLayer(nn.Module):
    def __init__(self, d_model: int, n_head: int, d_inner: int, dropout: float) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_head, dropout=dropout)
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_inner),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(d_inner, d_model),
        )

    def forward(self, h: Tensor, mem: Optional[Tensor]) -> Tensor:
        cat = h if mem is None else torch.cat([mem, h], 0)
        qlen, klen = h.size(0), cat.size(0)
        mask = torch.triu(
            torch.ones(qlen, klen, dtype=torch.bool, device=h.device), diagonal=1 + klen - qlen
        )
        h = self.ln1(h + self.attn(h, cat, cat, attn_mask=mask, need_weights=False)[0])
        return self.ln2(h + self.ff(h))


class MemTransformerLM(nn.Module):
    def __init__(
        self,
        n_token: int,
        n_layer: int,
        n_head: int,
        d_model: int,
        d_inner: int,
        dropout: float = 0.1,
        mem_len: int = 8,
        tie_weight: bool = True,
    ) -> None:
        super().__init__()
        self.n_layer, self.mem_len = n_layer, mem_len
        self.word_emb = nn.Embedding(n_token, d_model)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            [XLLayer(d_model, n_head, d_inner, dropout) for _ in range(n_layer)]
        )
        self.out = nn.Linear(d_model, n_token)
        if tie_weight:
            self.out.weight = self.word_emb.weight

    def _update_mems(self, hids: list[Tensor], mems: Optional[list[Tensor]]) -> list[Tensor]:
        with torch.no_grad():
            if mems is None:
                return [h[-self.mem_len :].detach() for h in hids]
            return [torch.cat([m, h], 0)[-self.mem_len :].detach() for m, h in zip(mems, hids)]

    def forward(
        self, data: Tensor, mems: Optional[list[Tensor]] = None
    ) -> tuple[Tensor, list[Tensor]]:
        core = self.drop(self.word_emb(data))
        hids = [core]
        for i, layer in enumerate(self.layers):
            core = layer(core, None if mems is None else mems[i])
            hids.append(core)
        return self.out(self.drop(core)), self._update_mems(hids[:-1], mems)


@heldout(
    "transformer_xl_mems",
    lambda: (
        (torch.randint(0, 40, (6, 2), generator=torch.Generator().manual_seed(0)),),
        {"mems": [rand(4, 2, 16), rand(4, 2, 16, seed=1)]},
    ),
    edit=("drop", {"p": 0.2}),
)
def txl() -> nn.Module:
    return MemTransformerLM(40, 2, 2, 16, 32, mem_len=4)


# --- Slot Attention: GRUCell iterations, slots sampled from learned mu and sigma ------------------


class SlotAttention(nn.Module):
    def __init__(
        self, num_slots: int, dim: int, iters: int = 3, eps: float = 1e-8, hidden_dim: int = 128
    ) -> None:
        super().__init__()
        self.num_slots, self.iters, self.eps = num_slots, iters, eps
        self.scale = dim**-0.5
        self.slots_mu = nn.Parameter(torch.randn(1, 1, dim))
        self.slots_logsigma = nn.Parameter(torch.zeros(1, 1, dim))
        nn.init.xavier_uniform_(self.slots_logsigma)
        self.to_q, self.to_k, self.to_v = (
            nn.Linear(dim, dim),
            nn.Linear(dim, dim),
            nn.Linear(dim, dim),
        )
        self.gru = nn.GRUCell(dim, dim)
        hidden_dim = max(dim, hidden_dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, hidden_dim), nn.ReLU(inplace=True), nn.Linear(hidden_dim, dim)
        )
        self.norm_input, self.norm_slots, self.norm_pre_ff = (
            nn.LayerNorm(dim),
            nn.LayerNorm(dim),
            nn.LayerNorm(dim),
        )

    def forward(self, inputs: Tensor, num_slots: Optional[int] = None) -> Tensor:
        b, n, d = inputs.shape
        n_s = num_slots if num_slots is not None else self.num_slots
        mu = self.slots_mu.expand(b, n_s, -1)
        sigma = self.slots_logsigma.exp().expand(b, n_s, -1)
        slots = mu + sigma * torch.randn(mu.shape, device=inputs.device, dtype=inputs.dtype)
        inputs = self.norm_input(inputs)
        k, v = self.to_k(inputs), self.to_v(inputs)
        for _ in range(self.iters):
            slots_prev = slots
            q = self.to_q(self.norm_slots(slots))
            attn = torch.einsum("bid,bjd->bij", q, k).mul(self.scale).softmax(dim=1) + self.eps
            attn = attn / attn.sum(dim=-1, keepdim=True)
            updates = torch.einsum("bjd,bij->bid", v, attn)
            slots = self.gru(updates.reshape(-1, d), slots_prev.reshape(-1, d)).reshape(b, -1, d)
            slots = slots + self.mlp(self.norm_pre_ff(slots))
        return slots


@heldout(
    "slot_attention",
    lambda: ((rand(2, 10, 16),), {"num_slots": 3}),
    edit=("norm_input", {"eps": 1e-6}),
)
def slots() -> nn.Module:
    return SlotAttention(num_slots=4, dim=16, iters=2, hidden_dim=8)


# --- Set Transformer: MAB / SAB / ISAB / PMA, a layer-norm switch ---------------------------------


class MAB(nn.Module):
    def __init__(
        self, dim_Q: int, dim_K: int, dim_V: int, num_heads: int, ln: bool = False
    ) -> None:
        super().__init__()
        self.dim_V, self.num_heads = dim_V, num_heads
        self.fc_q, self.fc_k, self.fc_v = (
            nn.Linear(dim_Q, dim_V),
            nn.Linear(dim_K, dim_V),
            nn.Linear(dim_K, dim_V),
        )
        if ln:
            self.ln0 = nn.LayerNorm(dim_V)
            self.ln1 = nn.LayerNorm(dim_V)
        self.fc_o = nn.Linear(dim_V, dim_V)

    def forward(self, Q: Tensor, K: Tensor) -> Tensor:
        Q, K, V = self.fc_q(Q), self.fc_k(K), self.fc_v(K)
        dim_split = self.dim_V // self.num_heads
        Q_, K_, V_ = (torch.cat(t.split(dim_split, 2), 0) for t in (Q, K, V))
        A = torch.softmax(Q_.bmm(K_.transpose(1, 2)) / math.sqrt(self.dim_V), 2)
        O = torch.cat((Q_ + A.bmm(V_)).split(Q.size(0), 0), 2)
        O = O if getattr(self, "ln0", None) is None else self.ln0(O)
        O = O + F.relu(self.fc_o(O))
        return O if getattr(self, "ln1", None) is None else self.ln1(O)


class ISAB(nn.Module):
    def __init__(
        self, dim_in: int, dim_out: int, num_heads: int, num_inds: int, ln: bool = False
    ) -> None:
        super().__init__()
        self.I = nn.Parameter(torch.Tensor(1, num_inds, dim_out))
        nn.init.xavier_uniform_(self.I)
        self.mab0 = MAB(dim_out, dim_in, dim_out, num_heads, ln=ln)
        self.mab1 = MAB(dim_in, dim_out, dim_out, num_heads, ln=ln)

    def forward(self, X: Tensor) -> Tensor:
        return self.mab1(X, self.mab0(self.I.repeat(X.size(0), 1, 1), X))


class PMA(nn.Module):
    def __init__(self, dim: int, num_heads: int, num_seeds: int, ln: bool = False) -> None:
        super().__init__()
        self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.S)
        self.mab = MAB(dim, dim, dim, num_heads, ln=ln)

    def forward(self, X: Tensor) -> Tensor:
        return self.mab(self.S.repeat(X.size(0), 1, 1), X)


class SetTransformer(nn.Module):
    def __init__(
        self,
        dim_input: int,
        num_outputs: int,
        dim_output: int,
        num_inds: int = 32,
        dim_hidden: int = 128,
        num_heads: int = 4,
        ln: bool = False,
    ) -> None:
        super().__init__()
        self.enc = nn.Sequential(
            ISAB(dim_input, dim_hidden, num_heads, num_inds, ln=ln),
            ISAB(dim_hidden, dim_hidden, num_heads, num_inds, ln=ln),
        )
        self.dec = nn.Sequential(
            PMA(dim_hidden, num_heads, num_outputs, ln=ln), nn.Linear(dim_hidden, dim_output)
        )

    def forward(self, X: Tensor) -> Tensor:
        return self.dec(self.enc(X))


@heldout("set_transformer", lambda: ((rand(3, 9, 2),), {}), edit=("dec.1", {"bias": False}))
def set_transformer() -> nn.Module:
    return SetTransformer(2, 1, 4, num_inds=4, dim_hidden=16, num_heads=2, ln=True)
