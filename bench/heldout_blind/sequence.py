"""Sequence models: a decoder-only LM written from scratch, a GRU seq2seq with additive
attention, a temporal convolutional network, a BiLSTM tagger with a char CNN, a mixture-of-experts
transformer block and a Set Transformer."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from .spec import heldout, rand


def _ints(*shape, high, seed=0, low=0):
    return torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------------------------
# A GPT-style LM: a dataclass config, causal mask and sinusoidal table as buffers, tied weights.


@dataclass
class LMConfig:
    vocab_size: int = 50
    block_size: int = 16
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 32
    dropout: float = 0.1
    bias: bool = True
    ffn_mult: int = 4
    pad_id: int = 0


class CausalSelfAttention(nn.Module):
    def __init__(self, config: LMConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        mask = torch.tril(torch.ones(config.block_size, config.block_size))
        self.register_buffer("bias", mask.view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class FeedForward(nn.Module):
    def __init__(self, config: LMConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, config.ffn_mult * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(config.ffn_mult * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: LMConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = FeedForward(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class SinusoidalPositions(nn.Module):
    def __init__(self, d_model, max_len=512):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class TinyGPT(nn.Module):
    def __init__(self, config: LMConfig):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd, padding_idx=config.pad_id),
                wpe=SinusoidalPositions(config.n_embd, config.block_size),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd),
            )
        )
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying

    def forward(self, idx, targets=None):
        x = self.transformer.drop(self.transformer.wpe(self.transformer.wte(idx)))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits
        loss = F.cross_entropy(
            logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=self.config.pad_id
        )
        return logits, loss


def _gpt_inputs():
    idx = _ints(2, 12, high=50, seed=10)
    return (idx,), {"targets": torch.roll(idx, -1, 1)}


@heldout("tiny_gpt", _gpt_inputs)
def tiny_gpt():
    return TinyGPT(LMConfig(n_layer=2, n_embd=32, dropout=0.0))


# --------------------------------------------------------------------------------------------
# GRU encoder-decoder with Bahdanau attention (Bahdanau et al. 2015), teacher forcing.


class EncoderRNN(nn.Module):
    def __init__(
        self, input_size, emb_size, hidden_size, dec_hid_dim=None, n_layers=1, dropout=0.0
    ):
        super().__init__()
        self.hidden_size = hidden_size
        dec_hid_dim = dec_hid_dim or hidden_size
        self.embedding = nn.Embedding(input_size, emb_size, padding_idx=0)
        self.gru = nn.GRU(
            emb_size,
            hidden_size,
            n_layers,
            dropout=(0 if n_layers == 1 else dropout),
            bidirectional=True,
            batch_first=True,
        )
        self.fc = nn.Linear(hidden_size * 2, dec_hid_dim)

    def forward(self, src):
        outputs, hidden = self.gru(self.embedding(src))
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2], hidden[-1]), dim=1)))
        return outputs, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, enc_hid_dim, dec_hid_dim, attn_dim=None):
        super().__init__()
        attn_dim = attn_dim or dec_hid_dim
        self.attn = nn.Linear(enc_hid_dim * 2 + dec_hid_dim, attn_dim)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def forward(self, hidden, encoder_outputs, mask=None):
        src_len = encoder_outputs.shape[1]
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        attention = self.v(energy).squeeze(2)
        if mask is not None:
            attention = attention.masked_fill(mask == 0, -1e10)
        return F.softmax(attention, dim=1)


class AttnDecoderRNN(nn.Module):
    def __init__(self, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, attention, dropout=0.1):
        super().__init__()
        self.output_dim = output_dim
        self.attention = attention
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.GRU(enc_hid_dim * 2 + emb_dim, dec_hid_dim, batch_first=True)
        self.fc_out = nn.Linear(enc_hid_dim * 2 + dec_hid_dim + emb_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, inp, hidden, encoder_outputs, mask):
        embedded = self.dropout(self.embedding(inp.unsqueeze(1)))
        a = self.attention(hidden, encoder_outputs, mask).unsqueeze(1)
        weighted = torch.bmm(a, encoder_outputs)
        output, hidden = self.rnn(torch.cat((embedded, weighted), dim=2), hidden.unsqueeze(0))
        pred = self.fc_out(torch.cat((output, weighted, embedded), dim=2).squeeze(1))
        return pred, hidden.squeeze(0), a.squeeze(1)


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, src_pad_idx=0):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_pad_idx = src_pad_idx

    def forward(self, src, trg):
        batch_size, trg_len = trg.shape
        outputs = torch.zeros(batch_size, trg_len, self.decoder.output_dim)
        attns = []
        encoder_outputs, hidden = self.encoder(src)
        mask = src != self.src_pad_idx
        inp = trg[:, 0]
        for t in range(1, trg_len):
            output, hidden, a = self.decoder(inp, hidden, encoder_outputs, mask)
            outputs[:, t] = output
            attns.append(a)
            inp = trg[:, t]
        return outputs, torch.stack(attns, 1)


def _s2s_inputs():
    src = _ints(2, 9, high=30, low=1, seed=11)
    src[1, -3:] = 0
    return (src, _ints(2, 6, high=25, low=1, seed=12)), {}


@heldout("gru_seq2seq_attn", _s2s_inputs, edit=("decoder.attention", {"attn_dim": 12}))
def gru_seq2seq_attn():
    enc_hid, dec_hid = 16, 24
    attn = BahdanauAttention(enc_hid, dec_hid)
    enc = EncoderRNN(30, 12, enc_hid, dec_hid)
    dec = AttnDecoderRNN(25, 12, enc_hid, dec_hid, attn)
    return Seq2Seq(enc, dec)


# --------------------------------------------------------------------------------------------
# Temporal Convolutional Network (Bai et al. 2018): weight-normed causal dilated convs.


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super().__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, : -self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2):
        super().__init__()
        self.conv1 = weight_norm(
            nn.Conv1d(n_inputs, n_outputs, kernel_size, stride=stride, padding=padding,
                      dilation=dilation)
        )  # fmt: skip
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)
        self.conv2 = weight_norm(
            nn.Conv1d(n_outputs, n_outputs, kernel_size, stride=stride, padding=padding,
                      dilation=dilation)
        )  # fmt: skip
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)
        self.net = nn.Sequential(
            self.conv1, self.chomp1, self.relu1, self.dropout1,
            self.conv2, self.chomp2, self.relu2, self.dropout2,
        )  # fmt: skip
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Module):
    def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2):
        super().__init__()
        layers = []
        for i in range(len(num_channels)):
            dilation_size = 2**i
            in_channels = num_inputs if i == 0 else num_channels[i - 1]
            layers += [
                TemporalBlock(in_channels, num_channels[i], kernel_size, stride=1,
                              dilation=dilation_size, padding=(kernel_size - 1) * dilation_size,
                              dropout=dropout)
            ]  # fmt: skip
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


class TCNClassifier(nn.Module):
    def __init__(self, input_size, output_size, num_channels, kernel_size, dropout):
        super().__init__()
        self.tcn = TemporalConvNet(input_size, num_channels, kernel_size=kernel_size,
                                   dropout=dropout)  # fmt: skip
        self.linear = nn.Linear(num_channels[-1], output_size)

    def forward(self, inputs):
        y1 = self.tcn(inputs)
        return F.log_softmax(self.linear(y1[:, :, -1]), dim=1)


@heldout("tcn_seqmnist", lambda: ((rand(2, 1, 40, seed=13),), {}))
def tcn_seqmnist():
    return TCNClassifier(1, 10, [16] * 3, kernel_size=3, dropout=0.05)


# --------------------------------------------------------------------------------------------
# BiLSTM tagger with a character CNN (Ma & Hovy 2016), without the CRF decoding.


class CharCNN(nn.Module):
    def __init__(self, n_chars, char_dim=8, n_filters=12, window=3):
        super().__init__()
        self.char_embed = nn.Embedding(n_chars, char_dim, padding_idx=0)
        self.conv = nn.Conv1d(char_dim, n_filters, window, padding=window // 2)

    def forward(self, chars):
        B, T, L = chars.shape
        x = self.char_embed(chars.view(B * T, L)).transpose(1, 2)
        x = self.conv(x).max(dim=2).values
        return x.view(B, T, -1)


class LSTMEncoder(nn.Module):
    """A thin wrapper that packs padded sequences."""

    def __init__(self, input_dim, hidden_dim, num_layers=1, bidirectional=True):
        super().__init__()
        self.lstm = nn.LSTM(input_dim, hidden_dim // (2 if bidirectional else 1), num_layers,
                            batch_first=True, bidirectional=bidirectional)  # fmt: skip

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(
            x, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        out, _ = self.lstm(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return out


class BiLSTMTagger(nn.Module):
    def __init__(self, vocab, n_chars, n_tags, word_dim=16, hidden=32, char_filters=12, p=0.5):
        super().__init__()
        self.word_embed = nn.Embedding(vocab, word_dim, padding_idx=0)
        self.char_cnn = CharCNN(n_chars, n_filters=char_filters)
        self.encoder = LSTMEncoder(word_dim + char_filters, hidden)
        self.drop = nn.Dropout(p)
        self.hidden2tag = nn.Linear(hidden, n_tags)
        self.transitions = nn.Parameter(torch.randn(n_tags, n_tags) * 0.01)

    def forward(self, words, chars):
        lengths = (words != 0).sum(1)
        x = torch.cat([self.word_embed(words), self.char_cnn(chars)], dim=-1)
        h = self.encoder(self.drop(x), lengths)
        emissions = self.hidden2tag(self.drop(h))
        # one step of Viterbi-style scoring so that the transitions take part
        scores = emissions[:, 1:, :, None] + self.transitions[None, None]
        return emissions, scores.max(-2).values


def _tagger_inputs():
    words = _ints(2, 7, high=40, low=1, seed=14)
    words[1, 5:] = 0
    chars = _ints(2, 7, 6, high=26, low=1, seed=15)
    return (words, chars), {}


@heldout("bilstm_char_tagger", _tagger_inputs, edit=("char_cnn", {"window": 5}))
def bilstm_char_tagger():
    return BiLSTMTagger(40, 26, n_tags=5)


# --------------------------------------------------------------------------------------------
# A switch-style mixture-of-experts block with top-k routing and a load-balancing loss.


class Expert(nn.Module):
    def __init__(self, d_model, d_ff, act="gelu"):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)
        self.act = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu}[act]

    def forward(self, x):
        return self.w2(self.act(self.w1(x)))


class TopKRouter(nn.Module):
    def __init__(self, d_model, num_experts, k=2, noise_std=1.0):
        super().__init__()
        self.k = k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.noise_std = noise_std

    def forward(self, x):
        logits = self.gate(x)
        if self.training and self.noise_std > 0:
            logits = logits + torch.randn_like(logits) * self.noise_std
        probs = logits.softmax(-1)
        topv, topi = probs.topk(self.k, dim=-1)
        return topv / topv.sum(-1, keepdim=True), topi, probs


class MoELayer(nn.Module):
    def __init__(self, d_model, num_experts=4, k=2, d_ff=None, **expert_kw):
        super().__init__()
        d_ff = d_ff or 2 * d_model
        self.router = TopKRouter(d_model, num_experts, k)
        self.experts = nn.ModuleList(
            [Expert(d_model, d_ff, **expert_kw) for _ in range(num_experts)]
        )
        self.num_experts = num_experts

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        weights, idx, probs = self.router(x)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            hit = idx == e
            rows = hit.any(-1).nonzero(as_tuple=True)[0]
            if rows.numel() == 0:
                continue
            w = (weights * hit).sum(-1)[rows, None]
            out[rows] += w * expert(x[rows])
        frac = F.one_hot(idx[:, 0], self.num_experts).float().mean(0)
        aux = self.num_experts * (frac * probs.mean(0)).sum()
        return out.view(shape), aux


class MoETransformerBlock(nn.Module):
    def __init__(self, d_model=32, n_heads=4, num_experts=4, top_k=2, dropout=0.1, act="gelu"):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(d_model)
        self.moe = MoELayer(d_model, num_experts, top_k, act=act)

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        y, aux = self.moe(self.norm2(x))
        return x + y, aux


class MoEEncoder(nn.Module):
    def __init__(self, depth, in_dim, **block_kw):
        super().__init__()
        d_model = block_kw.get("d_model", 32)
        self.proj = nn.Linear(in_dim, d_model)
        for i in range(depth):
            setattr(self, f"block_{i}", MoETransformerBlock(**block_kw))
        self.depth = depth

    def forward(self, x):
        x = self.proj(x)
        total_aux = x.new_zeros(())
        for i in range(self.depth):
            x, aux = getattr(self, f"block_{i}")(x)
            total_aux = total_aux + aux
        return {"hidden": x, "aux_loss": total_aux}


@heldout("moe_encoder", lambda: ((rand(2, 10, 12, seed=16),), {}), edit=("block_1", {"top_k": 1}))
def moe_encoder():
    return MoEEncoder(2, 12, d_model=32, n_heads=4, num_experts=4, top_k=2, act="silu")


# --------------------------------------------------------------------------------------------
# Set Transformer (Lee et al. 2019): MAB, SAB, ISAB and PMA blocks.


class MAB(nn.Module):
    def __init__(self, dim_Q, dim_K, dim_V, num_heads, ln=False):
        super().__init__()
        self.dim_V = dim_V
        self.num_heads = num_heads
        self.fc_q = nn.Linear(dim_Q, dim_V)
        self.fc_k = nn.Linear(dim_K, dim_V)
        self.fc_v = nn.Linear(dim_K, dim_V)
        if ln:
            self.ln0 = nn.LayerNorm(dim_V)
            self.ln1 = nn.LayerNorm(dim_V)
        self.fc_o = nn.Linear(dim_V, dim_V)

    def forward(self, Q, K):
        Q = self.fc_q(Q)
        K, V = self.fc_k(K), self.fc_v(K)
        dim_split = self.dim_V // self.num_heads
        Q_ = torch.cat(Q.split(dim_split, 2), 0)
        K_ = torch.cat(K.split(dim_split, 2), 0)
        V_ = torch.cat(V.split(dim_split, 2), 0)
        A = torch.softmax(Q_.bmm(K_.transpose(1, 2)) / math.sqrt(self.dim_V), 2)
        O = torch.cat((Q_ + A.bmm(V_)).split(Q.size(0), 0), 2)  # noqa: E741
        O = O if getattr(self, "ln0", None) is None else self.ln0(O)  # noqa: E741
        O = O + F.relu(self.fc_o(O))  # noqa: E741
        O = O if getattr(self, "ln1", None) is None else self.ln1(O)  # noqa: E741
        return O


class SAB(nn.Module):
    def __init__(self, dim_in, dim_out, num_heads, ln=False):
        super().__init__()
        self.mab = MAB(dim_in, dim_in, dim_out, num_heads, ln=ln)

    def forward(self, X):
        return self.mab(X, X)


class ISAB(nn.Module):
    def __init__(self, dim_in, dim_out, num_heads, num_inds, ln=False):
        super().__init__()
        self.I = nn.Parameter(torch.Tensor(1, num_inds, dim_out))
        nn.init.xavier_uniform_(self.I)
        self.mab0 = MAB(dim_out, dim_in, dim_out, num_heads, ln=ln)
        self.mab1 = MAB(dim_in, dim_out, dim_out, num_heads, ln=ln)

    def forward(self, X):
        H = self.mab0(self.I.repeat(X.size(0), 1, 1), X)
        return self.mab1(X, H)


class PMA(nn.Module):
    def __init__(self, dim, num_heads, num_seeds, ln=False):
        super().__init__()
        self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.S)
        self.mab = MAB(dim, dim, dim, num_heads, ln=ln)

    def forward(self, X):
        return self.mab(self.S.repeat(X.size(0), 1, 1), X)


class SetTransformer(nn.Module):
    def __init__(self, dim_input, num_outputs, dim_output, num_inds=8, dim_hidden=32,
                 num_heads=4, ln=True):  # fmt: skip
        super().__init__()
        self.enc = nn.Sequential(
            ISAB(dim_input, dim_hidden, num_heads, num_inds, ln=ln),
            ISAB(dim_hidden, dim_hidden, num_heads, num_inds, ln=ln),
        )
        self.dec = nn.Sequential(
            PMA(dim_hidden, num_heads, num_outputs, ln=ln),
            SAB(dim_hidden, dim_hidden, num_heads, ln=ln),
            nn.Linear(dim_hidden, dim_output),
        )

    def forward(self, X):
        return self.dec(self.enc(X))


@heldout("set_transformer", lambda: ((rand(3, 11, 2, seed=17),), {}))
def set_transformer():
    return SetTransformer(2, num_outputs=4, dim_output=5)
