"""Text-to-speech: a FastSpeech 2 encoder/variance adaptor/decoder with a length regulator, and a
Tacotron 2-lite with location-sensitive attention."""

from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------------------------
# FastSpeech 2 (Ren et al. 2021)
# ----------------------------------------------------------------------------------------------

PAD = 0


def get_sinusoid_encoding_table(n_position, d_hid, padding_idx=None):
    def cal_angle(position, hid_idx):
        return position / np.power(10000, 2 * (hid_idx // 2) / d_hid)

    def get_posi_angle_vec(position):
        return [cal_angle(position, hid_j) for hid_j in range(d_hid)]

    sinusoid_table = np.array([get_posi_angle_vec(pos_i) for pos_i in range(n_position)])
    sinusoid_table[:, 0::2] = np.sin(sinusoid_table[:, 0::2])
    sinusoid_table[:, 1::2] = np.cos(sinusoid_table[:, 1::2])
    if padding_idx is not None:
        sinusoid_table[padding_idx] = 0.0
    return torch.FloatTensor(sinusoid_table)


class ScaledDotProductAttention(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature
        self.softmax = nn.Softmax(dim=2)

    def forward(self, q, k, v, mask=None):
        attn = torch.bmm(q, k.transpose(1, 2)) / self.temperature
        if mask is not None:
            attn = attn.masked_fill(mask, -np.inf)
        attn = self.softmax(attn)
        return torch.bmm(attn, v), attn


class MultiHeadAttention(nn.Module):
    def __init__(self, n_head, d_model, d_k, d_v, dropout=0.1):
        super().__init__()
        self.n_head = n_head
        self.d_k = d_k
        self.d_v = d_v
        self.w_qs = nn.Linear(d_model, n_head * d_k)
        self.w_ks = nn.Linear(d_model, n_head * d_k)
        self.w_vs = nn.Linear(d_model, n_head * d_v)
        self.attention = ScaledDotProductAttention(temperature=np.power(d_k, 0.5))
        self.layer_norm = nn.LayerNorm(d_model)
        self.fc = nn.Linear(n_head * d_v, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        d_k, d_v, n_head = self.d_k, self.d_v, self.n_head
        sz_b, len_q, _ = q.size()
        sz_b, len_k, _ = k.size()
        sz_b, len_v, _ = v.size()
        residual = q
        q = self.w_qs(q).view(sz_b, len_q, n_head, d_k)
        k = self.w_ks(k).view(sz_b, len_k, n_head, d_k)
        v = self.w_vs(v).view(sz_b, len_v, n_head, d_v)
        q = q.permute(2, 0, 1, 3).contiguous().view(-1, len_q, d_k)
        k = k.permute(2, 0, 1, 3).contiguous().view(-1, len_k, d_k)
        v = v.permute(2, 0, 1, 3).contiguous().view(-1, len_v, d_v)
        mask = mask.repeat(n_head, 1, 1)
        output, attn = self.attention(q, k, v, mask=mask)
        output = output.view(n_head, sz_b, len_q, d_v)
        output = output.permute(1, 2, 0, 3).contiguous().view(sz_b, len_q, -1)
        output = self.dropout(self.fc(output))
        output = self.layer_norm(output + residual)
        return output, attn


class PositionwiseFeedForward(nn.Module):
    """A two-feed-forward-layer module, with convolutions (FFT block)."""

    def __init__(self, d_in, d_hid, kernel_size, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Conv1d(
            d_in, d_hid, kernel_size=kernel_size[0], padding=(kernel_size[0] - 1) // 2
        )
        self.w_2 = nn.Conv1d(
            d_hid, d_in, kernel_size=kernel_size[1], padding=(kernel_size[1] - 1) // 2
        )
        self.layer_norm = nn.LayerNorm(d_in)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        residual = x
        output = x.transpose(1, 2)
        output = self.w_2(F.relu(self.w_1(output)))
        output = output.transpose(1, 2)
        output = self.dropout(output)
        return self.layer_norm(output + residual)


class FFTBlock(nn.Module):
    def __init__(self, d_model, n_head, d_k, d_v, d_inner, kernel_size, dropout=0.1):
        super().__init__()
        self.slf_attn = MultiHeadAttention(n_head, d_model, d_k, d_v, dropout=dropout)
        self.pos_ffn = PositionwiseFeedForward(d_model, d_inner, kernel_size, dropout=dropout)

    def forward(self, enc_input, mask=None, slf_attn_mask=None):
        enc_output, enc_slf_attn = self.slf_attn(
            enc_input, enc_input, enc_input, mask=slf_attn_mask
        )
        enc_output = enc_output.masked_fill(mask.unsqueeze(-1), 0)
        enc_output = self.pos_ffn(enc_output)
        enc_output = enc_output.masked_fill(mask.unsqueeze(-1), 0)
        return enc_output, enc_slf_attn


class FFTStack(nn.Module):
    """Encoder (with a phoneme embedding) or decoder (without) of FastSpeech 2."""

    def __init__(self, config, part="encoder", n_src_vocab=None):
        super().__init__()
        n_position = config["max_seq_len"] + 1
        cfg = config["transformer"]
        d_word_vec = cfg[f"{part}_hidden"]
        n_layers = cfg[f"{part}_layer"]
        n_head = cfg[f"{part}_head"]
        d_k = d_v = cfg[f"{part}_hidden"] // cfg[f"{part}_head"]
        d_model = cfg[f"{part}_hidden"]
        d_inner = cfg["conv_filter_size"]
        kernel_size = cfg["conv_kernel_size"]
        dropout = cfg[f"{part}_dropout"]

        self.max_seq_len = config["max_seq_len"]
        self.d_model = d_model
        if n_src_vocab is not None:
            self.src_word_emb = nn.Embedding(n_src_vocab, d_word_vec, padding_idx=PAD)
        self.position_enc = nn.Parameter(
            get_sinusoid_encoding_table(n_position, d_word_vec).unsqueeze(0), requires_grad=False
        )
        self.layer_stack = nn.ModuleList(
            [
                FFTBlock(d_model, n_head, d_k, d_v, d_inner, kernel_size, dropout=dropout)
                for _ in range(n_layers)
            ]
        )

    def forward(self, x, mask):
        batch_size, max_len = mask.shape[0], mask.shape[1]
        slf_attn_mask = mask.unsqueeze(1).expand(-1, max_len, -1)
        if hasattr(self, "src_word_emb"):
            x = self.src_word_emb(x)
        out = x + self.position_enc[:, :max_len, :].expand(batch_size, -1, -1)
        for layer in self.layer_stack:
            out, _ = layer(out, mask=mask, slf_attn_mask=slf_attn_mask)
        return out


class Conv(nn.Module):
    """Convolution module (channels-last in, channels-last out)."""

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size=1,
        stride=1,
        padding=0,
        dilation=1,
        bias=True,
        w_init="linear",
    ):
        super().__init__()
        self.conv = nn.Conv1d(
            in_channels,
            out_channels,
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            bias=bias,
        )

    def forward(self, x):
        x = x.contiguous().transpose(1, 2)
        x = self.conv(x)
        return x.contiguous().transpose(1, 2)


class VariancePredictor(nn.Module):
    """Duration, Pitch and Energy Predictor."""

    def __init__(self, model_config):
        super().__init__()
        self.input_size = model_config["transformer"]["encoder_hidden"]
        self.filter_size = model_config["variance_predictor"]["filter_size"]
        self.kernel = model_config["variance_predictor"]["kernel_size"]
        self.conv_output_size = model_config["variance_predictor"]["filter_size"]
        self.dropout = model_config["variance_predictor"]["dropout"]

        self.conv_layer = nn.Sequential(
            OrderedDict(
                [
                    (
                        "conv1d_1",
                        Conv(
                            self.input_size,
                            self.filter_size,
                            kernel_size=self.kernel,
                            padding=(self.kernel - 1) // 2,
                        ),
                    ),
                    ("relu_1", nn.ReLU()),
                    ("layer_norm_1", nn.LayerNorm(self.filter_size)),
                    ("dropout_1", nn.Dropout(self.dropout)),
                    (
                        "conv1d_2",
                        Conv(
                            self.filter_size, self.filter_size, kernel_size=self.kernel, padding=1
                        ),
                    ),
                    ("relu_2", nn.ReLU()),
                    ("layer_norm_2", nn.LayerNorm(self.filter_size)),
                    ("dropout_2", nn.Dropout(self.dropout)),
                ]
            )
        )
        self.linear_layer = nn.Linear(self.conv_output_size, 1)

    def forward(self, encoder_output, mask):
        out = self.conv_layer(encoder_output)
        out = self.linear_layer(out)
        out = out.squeeze(-1)
        if mask is not None:
            out = out.masked_fill(mask, 0.0)
        return out


class LengthRegulator(nn.Module):
    def forward(self, x, duration, max_len=None):
        output = []
        mel_len = []
        for batch, expand_target in zip(x, duration):
            expanded = self.expand(batch, expand_target)
            output.append(expanded)
            mel_len.append(expanded.shape[0])
        max_len = max_len or max(mel_len)
        output = torch.stack([F.pad(o, (0, 0, 0, max_len - o.size(0))) for o in output])
        return output, torch.LongTensor(mel_len).to(x.device)

    def expand(self, batch, predicted):
        out = []
        for i, vec in enumerate(batch):
            expand_size = int(predicted[i].item())
            out.append(vec.expand(max(expand_size, 0), -1))
        return torch.cat(out, 0)


class VarianceAdaptor(nn.Module):
    def __init__(self, preprocess_config, model_config):
        super().__init__()
        self.duration_predictor = VariancePredictor(model_config)
        self.length_regulator = LengthRegulator()
        self.pitch_predictor = VariancePredictor(model_config)
        self.energy_predictor = VariancePredictor(model_config)
        n_bins = model_config["variance_embedding"]["n_bins"]
        pmin, pmax = preprocess_config["pitch"]
        emin, emax = preprocess_config["energy"]
        self.pitch_bins = nn.Parameter(torch.linspace(pmin, pmax, n_bins - 1), requires_grad=False)
        self.energy_bins = nn.Parameter(torch.linspace(emin, emax, n_bins - 1), requires_grad=False)
        hidden = model_config["transformer"]["encoder_hidden"]
        self.pitch_embedding = nn.Embedding(n_bins, hidden)
        self.energy_embedding = nn.Embedding(n_bins, hidden)

    def forward(self, x, src_mask, d_control=1.0, p_control=1.0, e_control=1.0):
        log_duration_prediction = self.duration_predictor(x, src_mask)
        pitch_prediction = self.pitch_predictor(x, src_mask) * p_control
        x = x + self.pitch_embedding(torch.bucketize(pitch_prediction, self.pitch_bins))
        energy_prediction = self.energy_predictor(x, src_mask) * e_control
        x = x + self.energy_embedding(torch.bucketize(energy_prediction, self.energy_bins))
        duration_rounded = torch.clamp(
            torch.round(torch.exp(log_duration_prediction) - 1) * d_control, min=1
        )
        duration_rounded = duration_rounded.masked_fill(src_mask, 0)
        x, mel_len = self.length_regulator(x, duration_rounded)
        mel_mask = torch.arange(x.size(1), device=x.device).unsqueeze(0) >= mel_len.unsqueeze(1)
        return (
            x,
            pitch_prediction,
            energy_prediction,
            log_duration_prediction,
            duration_rounded,
            mel_len,
            mel_mask,
        )


class PostNet(nn.Module):
    def __init__(
        self,
        n_mel_channels=80,
        postnet_embedding_dim=512,
        postnet_kernel_size=5,
        postnet_n_convolutions=5,
    ):
        super().__init__()
        self.convolutions = nn.ModuleList()
        pad = int((postnet_kernel_size - 1) / 2)
        chans = (
            [n_mel_channels]
            + [postnet_embedding_dim] * (postnet_n_convolutions - 1)
            + [n_mel_channels]
        )
        for i in range(postnet_n_convolutions):
            self.convolutions.append(
                nn.Sequential(
                    nn.Conv1d(chans[i], chans[i + 1], kernel_size=postnet_kernel_size, padding=pad),
                    nn.BatchNorm1d(chans[i + 1]),
                )
            )

    def forward(self, x):
        x = x.contiguous().transpose(1, 2)
        for i in range(len(self.convolutions) - 1):
            x = F.dropout(torch.tanh(self.convolutions[i](x)), 0.5, self.training)
        x = F.dropout(self.convolutions[-1](x), 0.5, self.training)
        return x.contiguous().transpose(1, 2)


class FastSpeech2(nn.Module):
    def __init__(self, preprocess_config, model_config):
        super().__init__()
        self.model_config = model_config
        self.encoder = FFTStack(model_config, "encoder", n_src_vocab=model_config["n_symbols"])
        self.variance_adaptor = VarianceAdaptor(preprocess_config, model_config)
        self.decoder = FFTStack(model_config, "decoder")
        self.mel_linear = nn.Linear(
            model_config["transformer"]["decoder_hidden"], preprocess_config["n_mel_channels"]
        )
        self.postnet = PostNet(preprocess_config["n_mel_channels"], 32, 5, 3)

    def forward(self, texts, src_lens):
        max_src_len = texts.size(1)
        src_masks = torch.arange(max_src_len).unsqueeze(0) >= src_lens.unsqueeze(1)
        output = self.encoder(texts, src_masks)
        output, p_predictions, e_predictions, log_d_predictions, d_rounded, mel_lens, mel_masks = (
            self.variance_adaptor(output, src_masks)
        )
        output = self.decoder(output, mel_masks)
        output = self.mel_linear(output)
        postnet_output = self.postnet(output) + output
        return (
            output,
            postnet_output,
            p_predictions,
            e_predictions,
            log_d_predictions,
            d_rounded,
            src_masks,
            mel_masks,
            mel_lens,
        )


PREPROCESS = {"n_mel_channels": 20, "pitch": (-2.0, 2.0), "energy": (-2.0, 2.0)}
MODEL = {
    "n_symbols": 40,
    "max_seq_len": 200,
    "transformer": {
        "encoder_layer": 2,
        "encoder_head": 2,
        "encoder_hidden": 32,
        "decoder_layer": 2,
        "decoder_head": 2,
        "decoder_hidden": 32,
        "conv_filter_size": 64,
        "conv_kernel_size": [9, 1],
        "encoder_dropout": 0.2,
        "decoder_dropout": 0.2,
    },
    "variance_predictor": {"filter_size": 32, "kernel_size": 3, "dropout": 0.5},
    "variance_embedding": {"n_bins": 32},
}


def _fs2_example():
    g = torch.Generator().manual_seed(0)
    texts = torch.randint(1, 40, (2, 12), generator=g)
    texts[1, 9:] = PAD
    return (texts, torch.tensor([12, 9])), {}


@heldout("fastspeech2_variance_adaptor", _fs2_example)
def build_fastspeech2():
    return FastSpeech2(PREPROCESS, MODEL)


# ----------------------------------------------------------------------------------------------
# Tacotron 2-lite (Shen et al. 2018): encoder convs + BiLSTM, prenet, location-sensitive attention
# ----------------------------------------------------------------------------------------------


class LinearNorm(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True, w_init_gain="linear"):
        super().__init__()
        self.linear_layer = nn.Linear(in_dim, out_dim, bias=bias)
        nn.init.xavier_uniform_(self.linear_layer.weight, gain=nn.init.calculate_gain(w_init_gain))

    def forward(self, x):
        return self.linear_layer(x)


class ConvNorm(nn.Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size=1,
        stride=1,
        padding=None,
        dilation=1,
        bias=True,
        w_init_gain="linear",
    ):
        super().__init__()
        if padding is None:
            assert kernel_size % 2 == 1
            padding = int(dilation * (kernel_size - 1) / 2)
        self.conv = nn.Conv1d(
            in_channels,
            out_channels,
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            bias=bias,
        )
        nn.init.xavier_uniform_(self.conv.weight, gain=nn.init.calculate_gain(w_init_gain))

    def forward(self, signal):
        return self.conv(signal)


class LocationLayer(nn.Module):
    def __init__(self, attention_n_filters, attention_kernel_size, attention_dim):
        super().__init__()
        padding = int((attention_kernel_size - 1) / 2)
        self.location_conv = ConvNorm(
            2,
            attention_n_filters,
            kernel_size=attention_kernel_size,
            padding=padding,
            bias=False,
            stride=1,
            dilation=1,
        )
        self.location_dense = LinearNorm(
            attention_n_filters, attention_dim, bias=False, w_init_gain="tanh"
        )

    def forward(self, attention_weights_cat):
        processed_attention = self.location_conv(attention_weights_cat)
        processed_attention = processed_attention.transpose(1, 2)
        return self.location_dense(processed_attention)


class Attention(nn.Module):
    def __init__(
        self,
        attention_rnn_dim,
        embedding_dim,
        attention_dim,
        attention_location_n_filters,
        attention_location_kernel_size,
    ):
        super().__init__()
        self.query_layer = LinearNorm(
            attention_rnn_dim, attention_dim, bias=False, w_init_gain="tanh"
        )
        self.memory_layer = LinearNorm(embedding_dim, attention_dim, bias=False, w_init_gain="tanh")
        self.v = LinearNorm(attention_dim, 1, bias=False)
        self.location_layer = LocationLayer(
            attention_location_n_filters, attention_location_kernel_size, attention_dim
        )
        self.score_mask_value = -float("inf")

    def get_alignment_energies(self, query, processed_memory, attention_weights_cat):
        processed_query = self.query_layer(query.unsqueeze(1))
        processed_attention_weights = self.location_layer(attention_weights_cat)
        energies = self.v(
            torch.tanh(processed_query + processed_attention_weights + processed_memory)
        )
        return energies.squeeze(-1)

    def forward(
        self, attention_hidden_state, memory, processed_memory, attention_weights_cat, mask
    ):
        alignment = self.get_alignment_energies(
            attention_hidden_state, processed_memory, attention_weights_cat
        )
        if mask is not None:
            alignment.data.masked_fill_(mask, self.score_mask_value)
        attention_weights = F.softmax(alignment, dim=1)
        attention_context = torch.bmm(attention_weights.unsqueeze(1), memory)
        return attention_context.squeeze(1), attention_weights


class Prenet(nn.Module):
    def __init__(self, in_dim, sizes):
        super().__init__()
        in_sizes = [in_dim] + sizes[:-1]
        self.layers = nn.ModuleList(
            [
                LinearNorm(in_size, out_size, bias=False)
                for (in_size, out_size) in zip(in_sizes, sizes)
            ]
        )

    def forward(self, x):
        for linear in self.layers:
            x = F.dropout(F.relu(linear(x)), p=0.5, training=True)
        return x


class TacoEncoder(nn.Module):
    def __init__(self, hparams):
        super().__init__()
        convolutions = []
        for _ in range(hparams.encoder_n_convolutions):
            conv_layer = nn.Sequential(
                ConvNorm(hparams.encoder_embedding_dim, hparams.encoder_embedding_dim, kernel_size=hparams.encoder_kernel_size, stride=1, padding=int((hparams.encoder_kernel_size - 1) / 2), dilation=1, w_init_gain="relu"),
                nn.BatchNorm1d(hparams.encoder_embedding_dim),
            )  # fmt: skip
            convolutions.append(conv_layer)
        self.convolutions = nn.ModuleList(convolutions)
        self.lstm = nn.LSTM(
            hparams.encoder_embedding_dim,
            int(hparams.encoder_embedding_dim / 2),
            1,
            batch_first=True,
            bidirectional=True,
        )

    def forward(self, x):
        for conv in self.convolutions:
            x = F.dropout(F.relu(conv(x)), 0.5, self.training)
        x = x.transpose(1, 2)
        outputs, _ = self.lstm(x)
        return outputs


class TacoDecoder(nn.Module):
    def __init__(self, hparams):
        super().__init__()
        self.hp = hparams
        self.prenet = Prenet(hparams.n_mel_channels, [hparams.prenet_dim, hparams.prenet_dim])
        self.attention_rnn = nn.LSTMCell(
            hparams.prenet_dim + hparams.encoder_embedding_dim, hparams.attention_rnn_dim
        )
        self.attention_layer = Attention(hparams.attention_rnn_dim, hparams.encoder_embedding_dim, hparams.attention_dim, hparams.attention_location_n_filters, hparams.attention_location_kernel_size)  # fmt: skip
        self.decoder_rnn = nn.LSTMCell(
            hparams.attention_rnn_dim + hparams.encoder_embedding_dim, hparams.decoder_rnn_dim, 1
        )
        self.linear_projection = LinearNorm(
            hparams.decoder_rnn_dim + hparams.encoder_embedding_dim, hparams.n_mel_channels
        )
        self.gate_layer = LinearNorm(
            hparams.decoder_rnn_dim + hparams.encoder_embedding_dim,
            1,
            bias=True,
            w_init_gain="sigmoid",
        )

    def forward(self, memory, decoder_inputs, memory_lengths):
        hp = self.hp
        B, T_in, _ = memory.shape
        go = memory.new_zeros(1, B, hp.n_mel_channels)
        decoder_inputs = torch.cat((go, decoder_inputs.permute(2, 0, 1)), dim=0)
        decoder_inputs = self.prenet(decoder_inputs)
        mask = torch.arange(T_in).unsqueeze(0) >= memory_lengths.unsqueeze(1)

        ah = memory.new_zeros(B, hp.attention_rnn_dim)
        ac = memory.new_zeros(B, hp.attention_rnn_dim)
        dh = memory.new_zeros(B, hp.decoder_rnn_dim)
        dc = memory.new_zeros(B, hp.decoder_rnn_dim)
        aw = memory.new_zeros(B, T_in)
        aw_cum = memory.new_zeros(B, T_in)
        ctx = memory.new_zeros(B, hp.encoder_embedding_dim)
        processed_memory = self.attention_layer.memory_layer(memory)

        mel_outputs, gate_outputs, alignments = [], [], []
        for t in range(decoder_inputs.size(0) - 1):
            cell_input = torch.cat((decoder_inputs[t], ctx), -1)
            ah, ac = self.attention_rnn(cell_input, (ah, ac))
            attention_weights_cat = torch.cat((aw.unsqueeze(1), aw_cum.unsqueeze(1)), dim=1)
            ctx, aw = self.attention_layer(
                ah, memory, processed_memory, attention_weights_cat, mask
            )
            aw_cum = aw_cum + aw
            dh, dc = self.decoder_rnn(torch.cat((ah, ctx), -1), (dh, dc))
            hc = torch.cat((dh, ctx), dim=1)
            mel_outputs.append(self.linear_projection(hc))
            gate_outputs.append(self.gate_layer(hc).squeeze(1))
            alignments.append(aw)
        return torch.stack(mel_outputs, 2), torch.stack(gate_outputs, 1), torch.stack(alignments, 1)


class Tacotron2(nn.Module):
    def __init__(self, hparams):
        super().__init__()
        self.embedding = nn.Embedding(hparams.n_symbols, hparams.symbols_embedding_dim)
        std = (2.0 / (hparams.n_symbols + hparams.symbols_embedding_dim)) ** 0.5
        val = (3.0**0.5) * std
        self.embedding.weight.data.uniform_(-val, val)
        self.encoder = TacoEncoder(hparams)
        self.decoder = TacoDecoder(hparams)
        self.postnet = PostNet(
            hparams.n_mel_channels,
            hparams.postnet_embedding_dim,
            hparams.postnet_kernel_size,
            hparams.postnet_n_convolutions,
        )

    def forward(self, text_inputs, text_lengths, mels):
        embedded_inputs = self.embedding(text_inputs).transpose(1, 2)
        encoder_outputs = self.encoder(embedded_inputs)
        mel_outputs, gate_outputs, alignments = self.decoder(
            encoder_outputs, mels, memory_lengths=text_lengths
        )
        mel_outputs_postnet = (
            self.postnet(mel_outputs.transpose(1, 2)).transpose(1, 2) + mel_outputs
        )
        return mel_outputs, mel_outputs_postnet, gate_outputs, alignments


taco_hparams = SimpleNamespace(
    n_symbols=40,
    symbols_embedding_dim=32,
    encoder_kernel_size=5,
    encoder_n_convolutions=2,
    encoder_embedding_dim=32,
    n_mel_channels=16,
    attention_rnn_dim=48,
    decoder_rnn_dim=48,
    prenet_dim=24,
    attention_dim=16,
    attention_location_n_filters=8,
    attention_location_kernel_size=31,
    postnet_embedding_dim=32,
    postnet_kernel_size=5,
    postnet_n_convolutions=3,
)


def _taco_example():
    g = torch.Generator().manual_seed(0)
    text = torch.randint(1, 40, (2, 10), generator=g)
    return (text, torch.tensor([10, 7]), rand(2, 16, 12)), {}


@heldout(
    "tacotron2_lite",
    _taco_example,
    edit=("decoder.attention_layer.location_layer", {"attention_kernel_size": 15}),
)
def build_tacotron():
    return Tacotron2(taco_hparams)
