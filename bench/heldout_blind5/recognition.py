"""Sequence recognition: CRNN for OCR (with and without an STN in front), Listen-Attend-Spell."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- CRNN


class BidirectionalLSTM(nn.Module):
    def __init__(self, nIn, nHidden, nOut):
        super().__init__()
        self.rnn = nn.LSTM(nIn, nHidden, bidirectional=True)
        self.embedding = nn.Linear(nHidden * 2, nOut)

    def forward(self, input):
        recurrent, _ = self.rnn(input)
        T, b, h = recurrent.size()
        output = self.embedding(recurrent.view(T * b, h))
        return output.view(T, b, -1)


class CRNN(nn.Module):
    def __init__(self, imgH, nc, nclass, nh, n_rnn=2, leakyRelu=False):
        super().__init__()
        assert imgH % 16 == 0, "imgH has to be a multiple of 16"
        ks = [3, 3, 3, 3, 3, 3, 2]
        ps = [1, 1, 1, 1, 1, 1, 0]
        ss = [1, 1, 1, 1, 1, 1, 1]
        nm = [16, 32, 64, 64, 96, 96, 96]
        cnn = nn.Sequential()

        def convRelu(i, batchNormalization=False):
            nIn = nc if i == 0 else nm[i - 1]
            nOut = nm[i]
            cnn.add_module(f"conv{i}", nn.Conv2d(nIn, nOut, ks[i], ss[i], ps[i]))
            if batchNormalization:
                cnn.add_module(f"batchnorm{i}", nn.BatchNorm2d(nOut))
            if leakyRelu:
                cnn.add_module(f"relu{i}", nn.LeakyReLU(0.2, inplace=True))
            else:
                cnn.add_module(f"relu{i}", nn.ReLU(True))

        convRelu(0)
        cnn.add_module("pooling0", nn.MaxPool2d(2, 2))
        convRelu(1)
        cnn.add_module("pooling1", nn.MaxPool2d(2, 2))
        convRelu(2, True)
        convRelu(3)
        cnn.add_module("pooling2", nn.MaxPool2d((2, 2), (2, 1), (0, 1)))
        convRelu(4, True)
        convRelu(5)
        cnn.add_module("pooling3", nn.MaxPool2d((2, 2), (2, 1), (0, 1)))
        convRelu(6, True)
        self.cnn = cnn
        self.rnn = nn.Sequential(BidirectionalLSTM(96, nh, nh), BidirectionalLSTM(nh, nh, nclass))

    def forward(self, input):
        conv = self.cnn(input)
        b, c, h, w = conv.size()
        assert h == 1, "the height of conv must be 1"
        conv = conv.squeeze(2).permute(2, 0, 1)  # [w, b, c]
        return F.log_softmax(self.rnn(conv), dim=2)


@heldout("crnn", lambda: ((rand(2, 1, 32, 100),), {}), train=False)
def crnn():
    return CRNN(32, 1, 37, 32, leakyRelu=True)


class STNLocalizer(nn.Module):
    """Affine spatial transformer in front of the recogniser, initialised to identity."""

    def __init__(self, in_channels=1, hidden=32):
        super().__init__()
        self.localization = nn.Sequential(
            nn.Conv2d(in_channels, 8, kernel_size=5, padding=2),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=3, padding=1),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.AdaptiveAvgPool2d((2, 6)),
        )
        self.fc_loc = nn.Sequential(
            nn.Linear(10 * 2 * 6, hidden), nn.ReLU(True), nn.Linear(hidden, 6)
        )
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def forward(self, x):
        theta = self.fc_loc(self.localization(x).flatten(1)).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False), theta


class RectifiedCRNN(nn.Module):
    def __init__(self, stn: STNLocalizer, recognizer: CRNN):
        super().__init__()
        self.stn = stn
        self.recognizer = recognizer

    def forward(self, images, return_theta: bool = False):
        rectified, theta = self.stn(images)
        logits = self.recognizer(rectified)
        return (logits, theta) if return_theta else logits


@heldout(
    "stn_crnn",
    lambda: ((rand(2, 1, 32, 64, seed=1),), {"return_theta": True}),
)
def stn_crnn():
    return RectifiedCRNN(STNLocalizer(1), CRNN(32, 1, 11, 24, leakyRelu=False))


# --------------------------------------------------------------------------- Listen, Attend and Spell


@dataclass
class LASConfig:
    input_dim: int = 40
    listener_hidden: int = 32
    listener_layers: int = 3
    speller_hidden: int = 64
    vocab_size: int = 30
    max_label_len: int = 12
    rnn_unit: str = "LSTM"


class pBLSTMLayer(nn.Module):
    def __init__(self, input_feature_dim, hidden_dim, rnn_unit="LSTM", dropout_rate=0.0):
        super().__init__()
        self.rnn_unit = getattr(nn, rnn_unit.upper())
        # the input of each pyramid layer is two concatenated frames
        self.BLSTM = self.rnn_unit(input_feature_dim * 2, hidden_dim, 1, bidirectional=True,
                                   dropout=dropout_rate, batch_first=True)  # fmt: skip

    def forward(self, input_x):
        batch_size, timestep, feature_dim = input_x.size()
        if timestep % 2:
            input_x = input_x[:, :-1]
            timestep -= 1
        input_x = input_x.contiguous().view(batch_size, timestep // 2, feature_dim * 2)
        output, hidden = self.BLSTM(input_x)
        return output, hidden


class Listener(nn.Module):
    def __init__(self, input_feature_dim, listener_hidden_dim, listener_layer, rnn_unit, **kwargs):
        super().__init__()
        self.listener_layer = listener_layer
        assert self.listener_layer >= 1, "Listener should have at least 1 layer"
        self.pLSTM_layer0 = pBLSTMLayer(input_feature_dim, listener_hidden_dim, rnn_unit, **kwargs)
        for i in range(1, self.listener_layer):
            setattr(
                self,
                "pLSTM_layer" + str(i),
                pBLSTMLayer(listener_hidden_dim * 2, listener_hidden_dim, rnn_unit, **kwargs),
            )

    def forward(self, input_x):
        output, _ = self.pLSTM_layer0(input_x)
        for i in range(1, self.listener_layer):
            output, _ = getattr(self, "pLSTM_layer" + str(i))(output)
        return output


class Attention(nn.Module):
    def __init__(self, mlp_preprocess_input, preprocess_mlp_dim, activate, input_feature_dim=512):
        super().__init__()
        self.mlp_preprocess_input = mlp_preprocess_input
        self.relu = nn.ReLU() if activate == "relu" else nn.Identity()
        if mlp_preprocess_input:
            self.phi = nn.Linear(input_feature_dim, preprocess_mlp_dim)
            self.psi = nn.Linear(input_feature_dim, preprocess_mlp_dim)

    def forward(self, decoder_state, listener_feature):
        if self.mlp_preprocess_input:
            comp_decoder_state = self.relu(self.phi(decoder_state))
            comp_listener_feature = self.relu(self.psi(listener_feature))
        else:
            comp_decoder_state, comp_listener_feature = decoder_state, listener_feature
        energy = torch.bmm(comp_decoder_state, comp_listener_feature.transpose(1, 2)).squeeze(1)
        attention_score = F.softmax(energy, dim=-1)
        context = torch.sum(listener_feature * attention_score.unsqueeze(2), dim=1)
        return attention_score, context


class Speller(nn.Module):
    def __init__(self, output_class_dim, speller_hidden_dim, rnn_unit, max_label_len, listener_dim):
        super().__init__()
        self.rnn_unit = getattr(nn, rnn_unit.upper())
        self.max_label_len = max_label_len
        self.label_dim = output_class_dim
        self.rnn_layer = self.rnn_unit(output_class_dim + speller_hidden_dim, speller_hidden_dim,
                                       batch_first=True)  # fmt: skip
        self.attention = Attention(True, 32, "relu", input_feature_dim=speller_hidden_dim)
        self.character_distribution = nn.Linear(speller_hidden_dim * 2, output_class_dim)
        assert listener_dim == speller_hidden_dim

    def forward_step(self, input_word, last_hidden_state, listener_feature):
        rnn_output, hidden_state = self.rnn_layer(input_word, last_hidden_state)
        attention_score, context = self.attention(rnn_output, listener_feature)
        concat_feature = torch.cat([rnn_output.squeeze(dim=1), context], dim=-1)
        raw_pred = F.log_softmax(self.character_distribution(concat_feature), dim=-1)
        return raw_pred, hidden_state, context, attention_score

    def forward(self, listener_feature, ground_truth=None):
        batch_size = listener_feature.size(0)
        output_word = listener_feature.new_zeros(batch_size, 1, self.label_dim)
        output_word[:, :, 0] = 1.0  # <sos>
        rnn_input = torch.cat([output_word, listener_feature[:, 0:1, :]], dim=-1)
        hidden_state, raw_pred_seq, attention_record = None, [], []
        steps = self.max_label_len if ground_truth is None else ground_truth.size(1)
        for step in range(steps):
            raw_pred, hidden_state, context, attn = self.forward_step(
                rnn_input, hidden_state, listener_feature
            )
            raw_pred_seq.append(raw_pred)
            attention_record.append(attn)
            if ground_truth is not None:  # teacher forcing
                output_word = F.one_hot(ground_truth[:, step], self.label_dim).float()
            else:
                output_word = F.one_hot(raw_pred.argmax(-1), self.label_dim).float()
            rnn_input = torch.cat([output_word, context], dim=-1).unsqueeze(1)
        return torch.stack(raw_pred_seq, 1), torch.stack(attention_record, 1)


class LAS(nn.Module):
    def __init__(self, cfg: LASConfig):
        super().__init__()
        self.listener = Listener(cfg.input_dim, cfg.listener_hidden, cfg.listener_layers,
                                 cfg.rnn_unit)  # fmt: skip
        self.speller = Speller(cfg.vocab_size, cfg.speller_hidden, cfg.rnn_unit,
                               cfg.max_label_len, listener_dim=2 * cfg.listener_hidden)  # fmt: skip

    def forward(self, batch_data, batch_label=None):
        return self.speller(self.listener(batch_data), batch_label)


def _las_labels():
    return torch.randint(0, 30, (2, 7), generator=torch.Generator().manual_seed(9))


@heldout("las_teacher_forced", lambda: ((rand(2, 48, 40), _las_labels()), {}))
def las_teacher_forced():
    return LAS(LASConfig())


@heldout("las_greedy", lambda: ((rand(2, 40, 20, seed=2),), {}))
def las_greedy():
    return LAS(LASConfig(input_dim=20, listener_layers=2, rnn_unit="gru", max_label_len=6))
