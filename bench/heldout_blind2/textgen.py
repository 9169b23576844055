# ruff: noqa: UP008, UP045  (the authors' habits are kept: this set measures code as people write it)
"""Text generation: a Transformer-XL-lite LM with segment memory, a pointer-generator summariser."""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout

# --- Transformer-XL-lite: relative positions + segment memory -----------------------------------


class PositionalEmbedding(nn.Module):
    def __init__(self, demb):
        super(PositionalEmbedding, self).__init__()
        self.demb = demb
        inv_freq = 1 / (10000 ** (torch.arange(0.0, demb, 2.0) / demb))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, pos_seq, bsz=None):
        sinusoid_inp = torch.ger(pos_seq, self.inv_freq)
        pos_emb = torch.cat([sinusoid_inp.sin(), sinusoid_inp.cos()], dim=-1)
        if bsz is not None:
            return pos_emb[:, None, :].expand(-1, bsz, -1)
        return pos_emb[:, None, :]


class PositionwiseFF(nn.Module):
    def __init__(self, d_model, d_inner, dropout, pre_lnorm=False):
        super(PositionwiseFF, self).__init__()
        self.CoreNet = nn.Sequential(
            nn.Linear(d_model, d_inner),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(d_inner, d_model),
            nn.Dropout(dropout),
        )
        self.layer_norm = nn.LayerNorm(d_model)
        self.pre_lnorm = pre_lnorm

    def forward(self, inp):
        if self.pre_lnorm:
            return self.CoreNet(self.layer_norm(inp)) + inp
        return self.layer_norm(inp + self.CoreNet(inp))


class RelPartialLearnableMultiHeadAttn(nn.Module):
    def __init__(self, n_head, d_model, d_head, dropout, dropatt=0, pre_lnorm=False):
        super().__init__()
        self.n_head, self.d_model, self.d_head = n_head, d_model, d_head
        self.qkv_net = nn.Linear(d_model, 3 * n_head * d_head, bias=False)
        self.r_net = nn.Linear(d_model, n_head * d_head, bias=False)
        self.drop = nn.Dropout(dropout)
        self.dropatt = nn.Dropout(dropatt)
        self.o_net = nn.Linear(n_head * d_head, d_model, bias=False)
        self.layer_norm = nn.LayerNorm(d_model)
        self.scale = 1 / (d_head**0.5)
        self.pre_lnorm = pre_lnorm

    @staticmethod
    def _rel_shift(x):
        zero_pad = torch.zeros((x.size(0), 1, *x.size()[2:]), device=x.device, dtype=x.dtype)
        x_padded = torch.cat([zero_pad, x], dim=1)
        x_padded = x_padded.view(x.size(1) + 1, x.size(0), *x.size()[2:])
        return x_padded[1:].view_as(x)

    def forward(self, w, r, r_w_bias, r_r_bias, attn_mask=None, mems=None):
        qlen, rlen, bsz = w.size(0), r.size(0), w.size(1)
        cat = torch.cat([mems, w], 0) if mems is not None else w
        w_heads = self.qkv_net(self.layer_norm(cat) if self.pre_lnorm else cat)
        r_head_k = self.r_net(r)
        w_head_q, w_head_k, w_head_v = torch.chunk(w_heads, 3, dim=-1)
        w_head_q = w_head_q[-qlen:]
        klen = w_head_k.size(0)
        w_head_q = w_head_q.view(qlen, bsz, self.n_head, self.d_head)
        w_head_k = w_head_k.view(klen, bsz, self.n_head, self.d_head)
        w_head_v = w_head_v.view(klen, bsz, self.n_head, self.d_head)
        r_head_k = r_head_k.view(rlen, self.n_head, self.d_head)

        AC = torch.einsum("ibnd,jbnd->ijbn", (w_head_q + r_w_bias, w_head_k))
        BD = self._rel_shift(torch.einsum("ibnd,jnd->ijbn", (w_head_q + r_r_bias, r_head_k)))
        attn_score = (AC + BD) * self.scale
        if attn_mask is not None:
            attn_score = attn_score.float().masked_fill(attn_mask[:, :, :, None], -float("inf"))
        attn_prob = self.dropatt(F.softmax(attn_score, dim=1))
        attn_vec = torch.einsum("ijbn,jbnd->ibnd", (attn_prob, w_head_v))
        attn_vec = attn_vec.contiguous().view(qlen, bsz, self.n_head * self.d_head)
        attn_out = self.drop(self.o_net(attn_vec))
        if self.pre_lnorm:
            return w + attn_out
        return self.layer_norm(w + attn_out)


class RelPartialLearnableDecoderLayer(nn.Module):
    def __init__(self, n_head, d_model, d_head, d_inner, dropout, **kwargs):
        super().__init__()
        self.dec_attn = RelPartialLearnableMultiHeadAttn(n_head, d_model, d_head, dropout, **kwargs)
        self.pos_ff = PositionwiseFF(d_model, d_inner, dropout, pre_lnorm=kwargs.get("pre_lnorm"))

    def forward(self, dec_inp, r, r_w_bias, r_r_bias, dec_attn_mask=None, mems=None):
        output = self.dec_attn(dec_inp, r, r_w_bias, r_r_bias, attn_mask=dec_attn_mask, mems=mems)
        return self.pos_ff(output)


class MemTransformerLM(nn.Module):
    def __init__(
        self,
        n_token,
        n_layer,
        n_head,
        d_model,
        d_head,
        d_inner,
        dropout,
        dropatt,
        tie_weight=True,
        pre_lnorm=False,
        mem_len=0,
    ):
        super().__init__()
        self.n_token, self.d_model, self.n_head, self.d_head = n_token, d_model, n_head, d_head
        self.word_emb = nn.Embedding(n_token, d_model)
        self.drop = nn.Dropout(dropout)
        self.n_layer = n_layer
        self.mem_len = mem_len
        self.layers = nn.ModuleList(
            [
                RelPartialLearnableDecoderLayer(
                    n_head, d_model, d_head, d_inner, dropout, dropatt=dropatt, pre_lnorm=pre_lnorm
                )
                for _ in range(n_layer)
            ]
        )
        self.out_layer = nn.Linear(d_model, n_token)
        if tie_weight:
            self.out_layer.weight = self.word_emb.weight
        self.pos_emb = PositionalEmbedding(self.d_model)
        self.r_w_bias = nn.Parameter(torch.Tensor(self.n_head, self.d_head).normal_(0, 0.02))
        self.r_r_bias = nn.Parameter(torch.Tensor(self.n_head, self.d_head).normal_(0, 0.02))

    def init_mems(self, bsz):
        if self.mem_len > 0:
            param = next(self.parameters())
            return [
                torch.zeros(0, bsz, self.d_model, dtype=param.dtype, device=param.device)
                for _ in range(self.n_layer + 1)
            ]
        return None

    def _update_mems(self, hids, mems, qlen, mlen):
        if mems is None:
            return None
        with torch.no_grad():
            end_idx = mlen + max(0, qlen)
            beg_idx = max(0, end_idx - self.mem_len)
            return [
                torch.cat([mems[i], hids[i]], dim=0)[beg_idx:end_idx].detach()
                for i in range(len(hids))
            ]

    def forward(self, data, mems: Optional[list] = None):
        # data: (qlen, bsz) token ids, time-major as in the original code
        if not mems:
            mems = self.init_mems(data.size(1))
        qlen, bsz = data.size()
        word_emb = self.word_emb(data)
        mlen = mems[0].size(0) if mems is not None else 0
        klen = mlen + qlen
        dec_attn_mask = torch.triu(word_emb.new_ones(qlen, klen), diagonal=1 + mlen).bool()[
            :, :, None
        ]
        pos_seq = torch.arange(klen - 1, -1, -1.0, device=word_emb.device, dtype=word_emb.dtype)
        pos_emb = self.drop(self.pos_emb(pos_seq))
        core_out = self.drop(word_emb)
        hids = [core_out]
        for i, layer in enumerate(self.layers):
            mems_i = None if mems is None else mems[i]
            core_out = layer(
                core_out,
                pos_emb,
                self.r_w_bias,
                self.r_r_bias,
                dec_attn_mask=dec_attn_mask,
                mems=mems_i,
            )
            hids.append(core_out)
        core_out = self.drop(core_out)
        new_mems = self._update_mems(hids, mems, qlen, mlen)
        logits = self.out_layer(core_out)
        return (logits,) if new_mems is None else (logits, *new_mems)


@heldout(
    "transformer_xl_lite",
    example=lambda: (
        (torch.randint(0, 100, (12, 2), generator=torch.Generator().manual_seed(51)),),
        {},
    ),
    edit=("layers.1.pos_ff", {"pre_lnorm": True}),
)
def transformer_xl_lite() -> nn.Module:
    torch.manual_seed(51)
    return MemTransformerLM(
        100,
        n_layer=2,
        n_head=4,
        d_model=32,
        d_head=8,
        d_inner=64,
        dropout=0.1,
        dropatt=0.0,
        mem_len=8,
    )


# --- pointer-generator network (See et al. 2017) ---------------------------------------------


class Encoder(nn.Module):
    def __init__(self, vocab_size, emb_dim, hidden_dim, embedding: Optional[nn.Embedding] = None):
        super().__init__()
        self.embedding = embedding if embedding is not None else nn.Embedding(vocab_size, emb_dim)
        self.lstm = nn.LSTM(emb_dim, hidden_dim, num_layers=1, batch_first=True, bidirectional=True)
        self.W_h = nn.Linear(hidden_dim * 2, hidden_dim * 2, bias=False)
        self.reduce_h = nn.Linear(hidden_dim * 2, hidden_dim)
        self.reduce_c = nn.Linear(hidden_dim * 2, hidden_dim)

    def forward(self, x):
        outputs, (h, c) = self.lstm(self.embedding(x))
        h = F.relu(self.reduce_h(torch.cat([h[0], h[1]], -1)))
        c = F.relu(self.reduce_c(torch.cat([c[0], c[1]], -1)))
        return outputs, self.W_h(outputs), (h, c)


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_dim, use_coverage=True):
        super().__init__()
        self.decode_proj = nn.Linear(hidden_dim * 2, hidden_dim * 2)
        self.v = nn.Linear(hidden_dim * 2, 1, bias=False)
        self.W_c = nn.Linear(1, hidden_dim * 2, bias=False) if use_coverage else None

    def forward(self, s_t_hat, enc_out, enc_feature, enc_mask, coverage):
        att = enc_feature + self.decode_proj(s_t_hat).unsqueeze(1)
        if self.W_c is not None:
            att = att + self.W_c(coverage.unsqueeze(-1))
        scores = self.v(torch.tanh(att)).squeeze(-1)
        attn = F.softmax(scores, dim=1) * enc_mask
        attn = attn / attn.sum(1, keepdim=True)
        c_t = torch.bmm(attn.unsqueeze(1), enc_out).squeeze(1)
        if self.W_c is not None:
            coverage = coverage + attn
        return c_t, attn, coverage


class Decoder(nn.Module):
    def __init__(
        self, vocab_size, emb_dim, hidden_dim, pointer_gen=True, use_coverage=True, embedding=None
    ):
        super().__init__()
        self.attention_network = BahdanauAttention(hidden_dim, use_coverage)
        self.embedding = embedding if embedding is not None else nn.Embedding(vocab_size, emb_dim)
        self.x_context = nn.Linear(hidden_dim * 2 + emb_dim, emb_dim)
        self.lstm = nn.LSTMCell(emb_dim, hidden_dim)
        self.pointer_gen = pointer_gen
        if pointer_gen:
            self.p_gen_linear = nn.Linear(hidden_dim * 4 + emb_dim, 1)
        self.out1 = nn.Linear(hidden_dim * 3, hidden_dim)
        self.out2 = nn.Linear(hidden_dim, vocab_size)

    def forward(
        self,
        y_t,
        s_t,
        enc_out,
        enc_feature,
        enc_mask,
        c_t,
        extra_zeros,
        enc_batch_extend_vocab,
        coverage,
    ):
        y_emb = self.embedding(y_t)
        x = self.x_context(torch.cat((c_t, y_emb), 1))
        h, c = self.lstm(x, s_t)
        s_t_hat = torch.cat((h, c), 1)
        c_t, attn, coverage = self.attention_network(
            s_t_hat, enc_out, enc_feature, enc_mask, coverage
        )
        vocab_dist = F.softmax(self.out2(self.out1(torch.cat((h, c_t), 1))), dim=1)
        if self.pointer_gen:
            p_gen = torch.sigmoid(self.p_gen_linear(torch.cat((c_t, s_t_hat, x), 1)))
            vocab_dist = p_gen * vocab_dist
            attn_ = (1 - p_gen) * attn
            if extra_zeros is not None:
                vocab_dist = torch.cat([vocab_dist, extra_zeros], 1)
            final_dist = vocab_dist.scatter_add(1, enc_batch_extend_vocab, attn_)
        else:
            final_dist = vocab_dist
        return final_dist, (h, c), c_t, attn, coverage


class PointerGenerator(nn.Module):
    def __init__(
        self,
        vocab_size=50000,
        emb_dim=128,
        hidden_dim=256,
        pointer_gen=True,
        is_coverage=False,
        share_embedding=True,
    ):
        super().__init__()
        shared = nn.Embedding(vocab_size, emb_dim) if share_embedding else None
        self.encoder = Encoder(vocab_size, emb_dim, hidden_dim, embedding=shared)
        self.decoder = Decoder(
            vocab_size, emb_dim, hidden_dim, pointer_gen, is_coverage, embedding=shared
        )
        self.hidden_dim = hidden_dim

    def forward(self, enc_batch, enc_batch_extend_vocab, dec_batch, n_extra: int = 0):
        enc_mask = (enc_batch != 0).float()
        enc_out, enc_feature, s_t = self.encoder(enc_batch)
        b = enc_batch.size(0)
        c_t = enc_out.new_zeros(b, 2 * self.hidden_dim)
        coverage = enc_out.new_zeros(enc_batch.shape)
        extra_zeros = enc_out.new_zeros(b, n_extra) if n_extra > 0 else None
        steps = []
        for t in range(dec_batch.size(1)):
            dist, s_t, c_t, attn, coverage = self.decoder(
                dec_batch[:, t],
                s_t,
                enc_out,
                enc_feature,
                enc_mask,
                c_t,
                extra_zeros,
                enc_batch_extend_vocab,
                coverage,
            )
            steps.append(dist)
        return torch.stack(steps, 1)


def _pgen_inputs():
    g = torch.Generator().manual_seed(53)
    enc = torch.randint(1, 80, (2, 9), generator=g)
    ext = enc.clone()
    ext[:, 3] = 81  # an out-of-vocabulary word copied from the source
    return (enc, ext, torch.randint(1, 80, (2, 4), generator=g)), {"n_extra": 3}


@heldout(
    "pointer_generator",
    example=_pgen_inputs,
    edit=("decoder.attention_network", {"use_coverage": False}),
)
def pointer_generator() -> nn.Module:
    torch.manual_seed(53)
    return PointerGenerator(vocab_size=80, emb_dim=16, hidden_dim=24, is_coverage=True)
