"""Sketch generation: Sketch-RNN (Ha & Eck 2017), bidirectional encoder, HyperLSTM-free decoder
emitting a bivariate Gaussian mixture and pen states."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


class HParams:
    def __init__(self):
        self.enc_hidden_size = 32
        self.dec_hidden_size = 64
        self.Nz = 16
        self.M = 5
        self.dropout = 0.1
        self.temperature = 0.4
        self.max_seq_length = 20
        self.use_layer_norm = True


hp = HParams()


class LayerNormLSTMCell(nn.LSTMCell):
    """LSTM cell with layer normalisation on the gates and the cell (Sketch-RNN's default)."""

    def __init__(self, input_size, hidden_size, bias=True, forget_bias=1.0):
        super().__init__(input_size, hidden_size, bias=bias)
        self.forget_bias = forget_bias
        self.ln_gates = nn.LayerNorm(4 * hidden_size)
        self.ln_cell = nn.LayerNorm(hidden_size)

    def forward(self, input, hx=None):
        if hx is None:
            z = input.new_zeros(input.size(0), self.hidden_size)
            hx = (z, z)
        h, c = hx
        gates = F.linear(input, self.weight_ih, self.bias_ih) + F.linear(
            h, self.weight_hh, self.bias_hh
        )
        i, f, g, o = self.ln_gates(gates).chunk(4, 1)
        c = torch.sigmoid(f + self.forget_bias) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(self.ln_cell(c))
        return h, c


class EncoderRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, hp.enc_hidden_size, dropout=hp.dropout, bidirectional=True)
        self.fc_mu = nn.Linear(2 * hp.enc_hidden_size, hp.Nz)
        self.fc_sigma = nn.Linear(2 * hp.enc_hidden_size, hp.Nz)
        self.train()

    def forward(self, inputs, batch_size, hidden_cell=None):
        if hidden_cell is None:
            hidden = torch.zeros(2, batch_size, hp.enc_hidden_size)
            cell = torch.zeros(2, batch_size, hp.enc_hidden_size)
            hidden_cell = (hidden, cell)
        _, (hidden, cell) = self.lstm(inputs.float(), hidden_cell)
        hidden_forward, hidden_backward = torch.split(hidden, 1, 0)
        hidden_cat = torch.cat([hidden_forward.squeeze(0), hidden_backward.squeeze(0)], 1)
        mu = self.fc_mu(hidden_cat)
        sigma_hat = self.fc_sigma(hidden_cat)
        sigma = torch.exp(sigma_hat / 2.0)
        N = torch.normal(torch.zeros(mu.size()), torch.ones(mu.size()))
        z = mu + sigma * N
        return z, mu, sigma_hat


class DecoderRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_hc = nn.Linear(hp.Nz, 2 * hp.dec_hidden_size)
        cell_cls = LayerNormLSTMCell if hp.use_layer_norm else nn.LSTMCell
        self.cell = cell_cls(hp.Nz + 5, hp.dec_hidden_size)
        self.fc_params = nn.Linear(hp.dec_hidden_size, 6 * hp.M + 3)

    def forward(self, inputs, z, hidden_cell=None):
        if hidden_cell is None:
            hidden, cell = torch.split(torch.tanh(self.fc_hc(z)), hp.dec_hidden_size, 1)
            hidden_cell = (hidden.contiguous(), cell.contiguous())
        outs = []
        for t in range(inputs.size(0)):
            hidden_cell = self.cell(inputs[t], hidden_cell)
            outs.append(hidden_cell[0])
        outputs = torch.stack(outs)
        y = self.fc_params(outputs.view(-1, hp.dec_hidden_size))
        params = torch.split(y, 6, 1)
        params_mixture = torch.stack(params[:-1])  # trajectory
        params_pen = params[-1]  # pen up/down
        pi, mu_x, mu_y, sigma_x, sigma_y, rho_xy = torch.split(params_mixture, 1, 2)
        len_out = inputs.size(0)
        pi = F.softmax(pi.transpose(0, 1).squeeze(), dim=-1).view(len_out, -1, hp.M)
        sigma_x = torch.exp(sigma_x.transpose(0, 1).squeeze()).view(len_out, -1, hp.M)
        sigma_y = torch.exp(sigma_y.transpose(0, 1).squeeze()).view(len_out, -1, hp.M)
        rho_xy = torch.tanh(rho_xy.transpose(0, 1).squeeze()).view(len_out, -1, hp.M)
        mu_x = mu_x.transpose(0, 1).squeeze().contiguous().view(len_out, -1, hp.M)
        mu_y = mu_y.transpose(0, 1).squeeze().contiguous().view(len_out, -1, hp.M)
        q = F.softmax(params_pen, dim=-1).view(len_out, -1, 3)
        return pi, mu_x, mu_y, sigma_x, sigma_y, rho_xy, q, hidden_cell[0], hidden_cell[1]


class SketchRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = EncoderRNN()
        self.decoder = DecoderRNN()

    def forward(self, batch):
        # batch: (seq, B, 5) strokes in stroke-5 format
        seq_len, B, _ = batch.shape
        z, mu, sigma_hat = self.encoder(batch, B)
        sos = torch.stack([torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0])] * B).unsqueeze(0)
        batch_init = torch.cat([sos, batch[:-1]], 0)
        z_stack = torch.stack([z] * seq_len)
        inputs = torch.cat([batch_init, z_stack], 2)
        outs = self.decoder(inputs, z)
        return (*outs[:7], mu, sigma_hat)


def _strokes():
    g = torch.Generator().manual_seed(0)
    T, B = 20, 3
    xy = rand(T, B, 2) * 0.3
    pen = F.one_hot(torch.randint(0, 2, (T, B), generator=g), 3).float()
    return (torch.cat([xy, pen], -1),), {}


@heldout("sketch_rnn", _strokes)
def build_sketch_rnn():
    return SketchRNN()
