"""Recurrent models written by hand: an RNN tagger with getattr(nn, rnn_type), a word LM with tied
weights and a ModuleList of LSTMs of differing sizes, a char-RNN returning its hidden state, a
GRU seq2seq with Bahdanau attention."""

from __future__ import annotations

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, tokens

# --- Tagger: getattr(nn, rnn_type), packed sequences, forward(tokens, lengths) --------------------


class RNNTagger(nn.Module):
    def __init__(
        self,
        vocab_size,
        n_tags,
        emb_dim=32,
        hidden_dim=32,
        n_layers=2,
        rnn_type="LSTM",
        bidirectional=True,
        dropout=0.5,
        pad_idx=0,
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_idx)
        self.rnn = getattr(nn, rnn_type)(
            emb_dim,
            hidden_dim,
            num_layers=n_layers,
            bidirectional=bidirectional,
            dropout=dropout if n_layers > 1 else 0,
            batch_first=True,
        )
        self.fc = nn.Linear(hidden_dim * 2 if bidirectional else hidden_dim, n_tags)
        self.dropout = nn.Dropout(dropout)

    def forward(self, text, text_lengths):
        embedded = self.dropout(self.embedding(text))
        packed = nn.utils.rnn.pack_padded_sequence(
            embedded, text_lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        packed_output, _ = self.rnn(packed)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(
            packed_output, batch_first=True, total_length=text.shape[1]
        )
        return self.fc(self.dropout(outputs))


case(
    "rnn_tagger_getattr",
    lambda: RNNTagger(50, 5, emb_dim=8, hidden_dim=8, n_layers=2, rnn_type="GRU", dropout=0.3),
    args(lambda: tokens(3, 7), lambda: torch.tensor([7, 5, 2])),
    edit=("dropout", {"p": 0.1}),
    styles="getattr(nn, rnn_type), hidden_dim * 2 if bidirectional, packed sequences, forward(text, lengths)",
)

# --- Word language model: tied weights, ModuleList of LSTMs of differing sizes -------------------


class RNNModel(nn.Module):
    def __init__(
        self,
        ntoken,
        ninp,
        nhid,
        nlayers,
        dropout=0.5,
        dropouth=0.5,
        dropouti=0.5,
        tie_weights=False,
    ):
        super(RNNModel, self).__init__()
        self.lockdrop = nn.Dropout(dropout)
        self.idrop = nn.Dropout(dropouti)
        self.hdrop = nn.Dropout(dropouth)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnns = [
            nn.LSTM(
                ninp if l == 0 else nhid,
                nhid if l != nlayers - 1 else (ninp if tie_weights else nhid),
                1,
            )
            for l in range(nlayers)
        ]
        self.rnns = torch.nn.ModuleList(self.rnns)
        self.decoder = nn.Linear(nhid if not tie_weights else ninp, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.ninp, self.nhid, self.nlayers, self.tie_weights = ninp, nhid, nlayers, tie_weights

    def forward(self, input, hidden):
        emb = self.idrop(self.encoder(input))
        raw_output = emb
        new_hidden = []
        for l, rnn in enumerate(self.rnns):
            raw_output, new_h = rnn(raw_output, hidden[l])
            new_hidden.append(new_h)
            if l != self.nlayers - 1:
                raw_output = self.hdrop(raw_output)
        output = self.lockdrop(raw_output)
        return self.decoder(output), new_hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters()).data
        return [
            (
                weight.new(
                    1,
                    bsz,
                    self.nhid
                    if l != self.nlayers - 1
                    else (self.ninp if self.tie_weights else self.nhid),
                ).zero_(),
                weight.new(
                    1,
                    bsz,
                    self.nhid
                    if l != self.nlayers - 1
                    else (self.ninp if self.tie_weights else self.nhid),
                ).zero_(),
            )
            for l in range(self.nlayers)
        ]


def _lm_hidden():
    m = RNNModel(40, 8, 12, 3, tie_weights=True)
    return m.init_hidden(2)


case(
    "awd_lm_tied",
    lambda: RNNModel(40, 8, 12, 3, dropout=0.4, tie_weights=True),
    args(lambda: tokens(5, 2, vocab=40), _lm_hidden),
    edit=("hdrop", {"p": 0.2}),
    styles="tied weights, a ModuleList of LSTMs of differing sizes, forward(input, hidden) -> (out, list of tuples)",
)

# --- char-RNN: forward(x, hidden) -> (out, hidden), hidden as a tuple ----------------------------


class CharRNN(nn.Module):
    def __init__(self, tokens, n_hidden=256, n_layers=2, drop_prob=0.5):
        super().__init__()
        self.drop_prob = drop_prob
        self.n_layers = n_layers
        self.n_hidden = n_hidden
        self.chars = tokens
        self.int2char = dict(enumerate(self.chars))
        self.char2int = {ch: ii for ii, ch in self.int2char.items()}
        self.lstm = nn.LSTM(
            len(self.chars), n_hidden, n_layers, dropout=drop_prob, batch_first=True
        )
        self.dropout = nn.Dropout(drop_prob)
        self.fc = nn.Linear(n_hidden, len(self.chars))

    def forward(self, x, hidden):
        r_output, hidden = self.lstm(x, hidden)
        out = self.dropout(r_output).contiguous().view(-1, self.n_hidden)
        return self.fc(out), hidden


def _char_inputs():
    x = F.one_hot(tokens(2, 6, vocab=12), 12).float()
    h = (torch.zeros(2, 2, 16), torch.zeros(2, 2, 16))
    return (x, h), {}


case(
    "char_rnn_hidden",
    lambda: CharRNN(tuple("abcdefghijkl"), n_hidden=16, n_layers=2, drop_prob=0.3),
    _char_inputs,
    edit=("dropout", {"p": 0.1}),
    styles="a tuple of characters measured with len(), dicts built from it, (h, c) in and out",
)

# --- GRU seq2seq with Bahdanau attention, teacher forcing by random.random() ---------------------


class Encoder(nn.Module):
    def __init__(self, input_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim, enc_hid_dim, bidirectional=True)
        self.fc = nn.Linear(enc_hid_dim * 2, dec_hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        outputs, hidden = self.rnn(self.dropout(self.embedding(src)))
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
        return outputs, hidden


class Attention(nn.Module):
    def __init__(self, enc_hid_dim, dec_hid_dim):
        super().__init__()
        self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
        self.v = nn.Linear(dec_hid_dim, 1, bias=False)

    def forward(self, hidden, encoder_outputs):
        src_len = encoder_outputs.shape[0]
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        return F.softmax(self.v(energy).squeeze(2), dim=1)


class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, attention):
        super().__init__()
        self.output_dim = output_dim
        self.attention = attention
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.GRU((enc_hid_dim * 2) + emb_dim, dec_hid_dim)
        self.fc_out = nn.Linear((enc_hid_dim * 2) + dec_hid_dim + emb_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input.unsqueeze(0)))
        a = self.attention(hidden, encoder_outputs).unsqueeze(1)
        weighted = torch.bmm(a, encoder_outputs.permute(1, 0, 2)).permute(1, 0, 2)
        output, hidden = self.rnn(torch.cat((embedded, weighted), dim=2), hidden.unsqueeze(0))
        prediction = self.fc_out(
            torch.cat((output.squeeze(0), weighted.squeeze(0), embedded.squeeze(0)), dim=1)
        )
        return prediction, hidden.squeeze(0)


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, src, trg, teacher_forcing_ratio=0.5):
        trg_len, batch_size = trg.shape
        outputs = torch.zeros(trg_len, batch_size, self.decoder.output_dim, device=src.device)
        encoder_outputs, hidden = self.encoder(src)
        input = trg[0, :]
        for t in range(1, trg_len):
            output, hidden = self.decoder(input, hidden, encoder_outputs)
            outputs[t] = output
            teacher_force = random.random() < teacher_forcing_ratio
            input = trg[t] if teacher_force else output.argmax(1)
        return outputs


# The encoder's and decoder's widths differ, so that the GRU's input (enc_hid * 2 + emb) and the
# attention's (enc_hid * 2 + dec_hid) are sums no single argument explains.
def seq2seq(src_vocab=30, trg_vocab=32, emb=6, enc_hid=12, dec_hid=10, dropout=0.2):
    attn = Attention(enc_hid, dec_hid)
    return Seq2Seq(
        Encoder(src_vocab, emb, enc_hid, dec_hid, dropout),
        Decoder(trg_vocab, emb, enc_hid, dec_hid, dropout, attn),
    )


case(
    "gru_seq2seq_attention",
    seq2seq,
    args(
        lambda: tokens(6, 2, vocab=30),
        lambda: tokens(5, 2, vocab=32, seed=1),
        teacher_forcing_ratio=1.0,
    ),
    edit=("encoder.dropout", {"p": 0.1}),
    styles="modules passed to constructors (encoder, decoder, attention), a decoding loop, random.random(), widths as sums of arguments",
)
