"""Speech recognition: Conformer-CTC, DeepSpeech2, QuartzNet from a YAML-like config, LAS."""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- Conformer


class Swish(nn.Module):
    def forward(self, x):
        return x * x.sigmoid()


class FeedForwardModule(nn.Module):
    def __init__(self, encoder_dim: int = 512, expansion_factor: int = 4, dropout_p: float = 0.1):
        super().__init__()
        self.sequential = nn.Sequential(
            nn.LayerNorm(encoder_dim),
            nn.Linear(encoder_dim, encoder_dim * expansion_factor, bias=True),
            Swish(),
            nn.Dropout(p=dropout_p),
            nn.Linear(encoder_dim * expansion_factor, encoder_dim, bias=True),
            nn.Dropout(p=dropout_p),
        )

    def forward(self, inputs):
        return self.sequential(inputs)


class ConformerConvModule(nn.Module):
    def __init__(self, in_channels, kernel_size=31, expansion_factor=2, dropout_p=0.1):
        super().__init__()
        assert (kernel_size - 1) % 2 == 0, "kernel_size should be a odd number for 'SAME' padding"
        assert expansion_factor == 2, "Currently, Only Supports expansion_factor 2"
        self.layer_norm = nn.LayerNorm(in_channels)
        self.pointwise1 = nn.Conv1d(in_channels, in_channels * expansion_factor, 1)
        self.glu = nn.GLU(dim=1)
        self.depthwise = nn.Conv1d(
            in_channels,
            in_channels,
            kernel_size,
            padding=(kernel_size - 1) // 2,
            groups=in_channels,
        )
        self.batch_norm = nn.BatchNorm1d(in_channels)
        self.swish = Swish()
        self.pointwise2 = nn.Conv1d(in_channels, in_channels, 1)
        self.dropout = nn.Dropout(p=dropout_p)

    def forward(self, inputs):
        x = self.layer_norm(inputs).transpose(1, 2)
        x = self.glu(self.pointwise1(x))
        x = self.swish(self.batch_norm(self.depthwise(x)))
        return self.dropout(self.pointwise2(x)).transpose(1, 2)


class RelativeMultiHeadAttention(nn.Module):
    """Transformer-XL style attention with learned u/v biases and a sinusoidal relative table."""

    def __init__(self, d_model: int = 512, num_heads: int = 16, dropout_p: float = 0.1):
        super().__init__()
        assert d_model % num_heads == 0
        self.d_head, self.num_heads = d_model // num_heads, num_heads
        self.sqrt_dim = math.sqrt(d_model)
        self.query_proj = nn.Linear(d_model, d_model)
        self.key_proj = nn.Linear(d_model, d_model)
        self.value_proj = nn.Linear(d_model, d_model)
        self.pos_proj = nn.Linear(d_model, d_model, bias=False)
        self.dropout = nn.Dropout(p=dropout_p)
        self.u_bias = nn.Parameter(torch.zeros(num_heads, self.d_head))
        self.v_bias = nn.Parameter(torch.zeros(num_heads, self.d_head))
        nn.init.xavier_uniform_(self.u_bias)
        nn.init.xavier_uniform_(self.v_bias)
        self.out_proj = nn.Linear(d_model, d_model)

    @staticmethod
    def _relative_shift(pos_score):
        b, h, t1, t2 = pos_score.size()
        zeros = pos_score.new_zeros(b, h, t1, 1)
        padded = torch.cat([zeros, pos_score], dim=-1).view(b, h, t2 + 1, t1)
        return padded[:, :, 1:].view_as(pos_score)

    def forward(self, query, key, value, pos_embedding, mask=None):
        b = value.size(0)
        q = self.query_proj(query).view(b, -1, self.num_heads, self.d_head)
        k = self.key_proj(key).view(b, -1, self.num_heads, self.d_head).permute(0, 2, 1, 3)
        v = self.value_proj(value).view(b, -1, self.num_heads, self.d_head).permute(0, 2, 1, 3)
        p = self.pos_proj(pos_embedding).view(b, -1, self.num_heads, self.d_head)
        content = torch.matmul((q + self.u_bias).transpose(1, 2), k.transpose(2, 3))
        pos = torch.matmul((q + self.v_bias).transpose(1, 2), p.permute(0, 2, 3, 1))
        score = (content + self._relative_shift(pos)) / self.sqrt_dim
        if mask is not None:
            score = score.masked_fill(mask.unsqueeze(1), -1e9)
        attn = self.dropout(F.softmax(score, -1))
        context = torch.matmul(attn, v).transpose(1, 2).reshape(b, -1, self.num_heads * self.d_head)
        return self.out_proj(context)


class ConformerBlock(nn.Module):
    def __init__(self, encoder_dim=512, num_attention_heads=8, feed_forward_expansion_factor=4,
                 conv_kernel_size=31, half_step_residual=True, dropout_p=0.1):  # fmt: skip
        super().__init__()
        self.feed_forward_residual_factor = 0.5 if half_step_residual else 1.0
        self.ff1 = FeedForwardModule(encoder_dim, feed_forward_expansion_factor, dropout_p)
        self.attn_norm = nn.LayerNorm(encoder_dim)
        self.attn = RelativeMultiHeadAttention(encoder_dim, num_attention_heads, dropout_p)
        self.conv = ConformerConvModule(encoder_dim, conv_kernel_size, dropout_p=dropout_p)
        self.ff2 = FeedForwardModule(encoder_dim, feed_forward_expansion_factor, dropout_p)
        self.norm = nn.LayerNorm(encoder_dim)

    def forward(self, x, pos_emb, mask=None):
        x = x + self.feed_forward_residual_factor * self.ff1(x)
        h = self.attn_norm(x)
        x = x + self.attn(h, h, h, pos_emb, mask)
        x = x + self.conv(x)
        x = x + self.feed_forward_residual_factor * self.ff2(x)
        return self.norm(x)


class Conv2dSubsampling(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.sequential = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=2),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=2),
            nn.ReLU(),
        )

    def forward(self, inputs, input_lengths):
        outputs = self.sequential(inputs.unsqueeze(1))
        b, c, t, f = outputs.size()
        outputs = outputs.permute(0, 2, 1, 3).contiguous().view(b, t, c * f)
        return outputs, ((input_lengths - 1) // 2 - 1) // 2


class ConformerCTC(nn.Module):
    def __init__(self, num_classes, input_dim=80, encoder_dim=144, num_layers=2, **block_kwargs):
        super().__init__()
        self.conv_subsample = Conv2dSubsampling(1, encoder_dim)
        sub_dim = encoder_dim * (((input_dim - 1) // 2 - 1) // 2)
        self.input_projection = nn.Sequential(nn.Linear(sub_dim, encoder_dim), nn.Dropout(0.1))
        self.layers = nn.ModuleList(
            ConformerBlock(encoder_dim, **block_kwargs) for _ in range(num_layers)
        )
        self.fc = nn.Linear(encoder_dim, num_classes, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, encoder_dim, 2).float() / encoder_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def positional(self, length):
        pos = torch.arange(length, dtype=self.inv_freq.dtype)
        sinusoid = torch.outer(pos, self.inv_freq)
        return torch.stack([sinusoid.sin(), sinusoid.cos()], -1).flatten(1)

    def forward(self, inputs, input_lengths):
        x, lengths = self.conv_subsample(inputs, input_lengths)
        x = self.input_projection(x)
        t = x.size(1)
        mask = torch.arange(t)[None, :] >= lengths[:, None]
        pos = self.positional(t).unsqueeze(0).expand(x.size(0), -1, -1)
        for layer in self.layers:
            x = layer(x, pos, mask[:, None, :])
        return self.fc(x).log_softmax(dim=-1), lengths


@heldout(
    "conformer_ctc",
    lambda: ((rand(2, 64, 40), torch.tensor([64, 50])), {}),
    edit=("layers.0.conv", {"kernel_size": 15, "dropout_p": 0.2}),
)
def conformer_ctc():
    return ConformerCTC(
        29, input_dim=40, encoder_dim=48, num_layers=2, num_attention_heads=4, conv_kernel_size=7
    )


# --------------------------------------------------------------------------- DeepSpeech2


class SequenceWise(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, x):
        t, n = x.size(0), x.size(1)
        x = x.contiguous().view(t * n, -1)
        return self.module(x).view(t, n, -1)


class MaskConv(nn.Module):
    def __init__(self, seq_module):
        super().__init__()
        self.seq_module = seq_module

    def forward(self, x, lengths):
        for module in self.seq_module:
            x = module(x)
            mask = torch.arange(x.size(3))[None, :] >= lengths[:, None]
            x = x.masked_fill(mask[:, None, None, :], 0)
        return x, lengths


class BatchRNN(nn.Module):
    def __init__(self, input_size, hidden_size, rnn_type=nn.LSTM, bidirectional=False,
                 batch_norm=True):  # fmt: skip
        super().__init__()
        self.bidirectional = bidirectional
        self.batch_norm = SequenceWise(nn.BatchNorm1d(input_size)) if batch_norm else None
        self.rnn = rnn_type(input_size, hidden_size, bidirectional=bidirectional, bias=True)

    def forward(self, x, output_lengths):
        if self.batch_norm is not None:
            x = self.batch_norm(x)
        x = nn.utils.rnn.pack_padded_sequence(x, output_lengths, enforce_sorted=False)
        x, _ = self.rnn(x)
        x, _ = nn.utils.rnn.pad_packed_sequence(x)
        if self.bidirectional:
            x = x.view(x.size(0), x.size(1), 2, -1).sum(2)
        return x


class Lookahead(nn.Module):
    def __init__(self, n_features, context):
        super().__init__()
        assert context > 0
        self.context = context
        self.conv = nn.Conv1d(n_features, n_features, context + 1, groups=n_features, bias=False)

    def forward(self, x):
        x = F.pad(x.permute(1, 2, 0), (0, self.context))
        return self.conv(x).permute(2, 0, 1)


class DeepSpeech(nn.Module):
    def __init__(self, labels, model_cfg: dict, n_fft=64, bidirectional=True):
        super().__init__()
        self.bidirectional = bidirectional
        num_classes = len(labels)
        self.conv = MaskConv(
            nn.Sequential(
                nn.Conv2d(1, 8, kernel_size=(11, 11), stride=(2, 2), padding=(5, 5)),
                nn.BatchNorm2d(8),
                nn.Hardtanh(0, 20, inplace=True),
                nn.Conv2d(8, 8, kernel_size=(11, 11), stride=(2, 1), padding=(5, 5)),
                nn.BatchNorm2d(8),
                nn.Hardtanh(0, 20, inplace=True),
            )
        )
        rnn_input_size = int(math.floor((n_fft // 2 + 1 + 2 * 5 - 11) / 2 + 1))
        rnn_input_size = int(math.floor(rnn_input_size + 2 * 5 - 11) / 2 + 1) * 8
        hidden, rnn_type = model_cfg["hidden_size"], model_cfg["rnn_type"]
        rnns = [("0", BatchRNN(rnn_input_size, hidden, rnn_type, bidirectional, batch_norm=False))]
        for i in range(1, model_cfg["hidden_layers"]):
            rnns.append((str(i), BatchRNN(hidden, hidden, rnn_type, bidirectional)))
        self.rnns = nn.Sequential(OrderedDict(rnns))
        self.lookahead = (
            nn.Sequential(
                Lookahead(hidden, context=model_cfg["lookahead_context"]), nn.Hardtanh(0, 20)
            )
            if not bidirectional
            else None
        )
        self.fc = nn.Sequential(
            SequenceWise(
                nn.Sequential(nn.BatchNorm1d(hidden), nn.Linear(hidden, num_classes, bias=False))
            )
        )

    def get_seq_lens(self, input_length):
        seq_len = input_length
        for m in self.conv.modules():
            if isinstance(m, nn.Conv2d):
                seq_len = seq_len + 2 * m.padding[1] - m.dilation[1] * (m.kernel_size[1] - 1) - 1
                seq_len = torch.div(seq_len, m.stride[1], rounding_mode="floor") + 1
        return seq_len.int()

    def forward(self, x, lengths):
        output_lengths = self.get_seq_lens(lengths)
        x, _ = self.conv(x, output_lengths)
        sizes = x.size()
        x = x.view(sizes[0], sizes[1] * sizes[2], sizes[3]).transpose(1, 2).transpose(0, 1)
        for rnn in self.rnns:
            x = rnn(x, output_lengths)
        if self.lookahead is not None:
            x = self.lookahead(x)
        x = self.fc(x).transpose(0, 1)
        return x.log_softmax(-1), output_lengths


LABELS = "_'ABCDEFGHIJKLMNOPQRSTUVWXYZ "


@heldout("deepspeech2", lambda: ((rand(3, 1, 33, 40), torch.tensor([40, 31, 22])), {}))
def deepspeech2():
    cfg = {"hidden_size": 32, "hidden_layers": 3, "rnn_type": nn.GRU, "lookahead_context": 4}
    return DeepSpeech(LABELS, cfg, n_fft=64, bidirectional=True)


# --------------------------------------------------------------------------- QuartzNet / Jasper

QUARTZNET_CFG = {
    "encoder": {
        "feat_in": 32,
        "activation": "relu",
        "jasper": [
            {"filters": 32, "repeat": 1, "kernel": [11], "stride": [2], "dilation": [1],
             "dropout": 0.0, "residual": False, "separable": True},
            {"filters": 32, "repeat": 2, "kernel": [13], "stride": [1], "dilation": [1],
             "dropout": 0.0, "residual": True, "separable": True},
            {"filters": 48, "repeat": 2, "kernel": [15], "stride": [1], "dilation": [1],
             "dropout": 0.1, "residual": True, "separable": True},
            {"filters": 64, "repeat": 1, "kernel": [7], "stride": [1], "dilation": [2],
             "dropout": 0.0, "residual": False, "separable": False},
        ],
    },
    "decoder": {"num_classes": 28},
}  # fmt: skip

ACTIVATIONS = {"relu": nn.ReLU, "hardtanh": lambda: nn.Hardtanh(0.0, 20.0), "swish": nn.SiLU}


class JasperBlock(nn.Module):
    def __init__(self, inplanes, planes, repeat=3, kernel_size=11, stride=1, dilation=1,
                 dropout=0.2, activation="relu", residual=True, separable=False):  # fmt: skip
        super().__init__()
        padding = dilation * (kernel_size - 1) // 2
        self.mconv = nn.ModuleList()
        in_ch = inplanes
        for i in range(repeat):
            self.mconv.extend(self._conv_bn(in_ch, planes, kernel_size, stride, dilation, padding,
                                            separable))  # fmt: skip
            if i < repeat - 1:
                self.mconv.extend([ACTIVATIONS[activation](), nn.Dropout(dropout)])
            in_ch = planes
        self.res = (
            nn.ModuleList(self._conv_bn(inplanes, planes, 1, stride, 1, 0, False))
            if residual
            else None
        )
        self.mout = nn.Sequential(ACTIVATIONS[activation](), nn.Dropout(dropout))

    @staticmethod
    def _conv_bn(cin, cout, k, stride, dilation, padding, separable):
        if separable:
            layers = [
                nn.Conv1d(cin, cin, k, stride, padding, dilation, groups=cin, bias=False),
                nn.Conv1d(cin, cout, 1, bias=False),
            ]
        else:
            layers = [nn.Conv1d(cin, cout, k, stride, padding, dilation, bias=False)]
        return layers + [nn.BatchNorm1d(cout, eps=1e-3, momentum=0.1)]

    def forward(self, xs):
        out = xs[-1]
        for layer in self.mconv:
            out = layer(out)
        if self.res is not None:
            res = xs[-1]
            for layer in self.res:
                res = layer(res)
            out = out + res
        return xs + [self.mout(out)]


class QuartzNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        enc = cfg["encoder"]
        feat_in, blocks = enc["feat_in"], []
        for lcfg in enc["jasper"]:
            blocks.append(
                JasperBlock(
                    feat_in, lcfg["filters"], repeat=lcfg["repeat"], kernel_size=lcfg["kernel"][0],
                    stride=lcfg["stride"][0], dilation=lcfg["dilation"][0], dropout=lcfg["dropout"],
                    activation=enc.get("activation", "relu"), residual=lcfg["residual"],
                    separable=lcfg.get("separable", False),
                )
            )  # fmt: skip
            feat_in = lcfg["filters"]
        self.encoder = nn.Sequential(*blocks)
        self.decoder_layers = nn.Sequential(
            nn.Conv1d(feat_in, cfg["decoder"]["num_classes"] + 1, kernel_size=1, bias=True)
        )

    def forward(self, audio_signal):
        encoded = self.encoder([audio_signal])[-1]
        return F.log_softmax(self.decoder_layers(encoded).transpose(1, 2), dim=-1)


@heldout(
    "quartznet",
    lambda: ((rand(2, 32, 64),), {}),
    edit=("encoder.2", {"repeat": 3, "kernel_size": 9}),
)
def quartznet():
    return QuartzNet(QUARTZNET_CFG)
