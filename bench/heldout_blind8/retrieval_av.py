"""Deep supervised hashing heads for image retrieval (DSH / HashNet with a continuation scale),
and audio-visual fusion (an audio-guided visual attention event localiser)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------- hashing


class AlexNetLite(nn.Module):
    def __init__(self, widths=(16, 32, 32)):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, widths[0], kernel_size=5, stride=2, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(widths[0], widths[1], kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(widths[1], widths[2], kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((2, 2)),
        )
        self.out_features = widths[2] * 4

    def forward(self, x):
        return torch.flatten(self.features(x), 1)


class HashLayer(nn.Module):
    step_size = 200
    gamma = 0.005
    power = 0.5
    init_scale = 1.0

    def __init__(self, in_features, hash_bit):
        super().__init__()
        self.hash_layer = nn.Linear(in_features, hash_bit)
        self.hash_layer.weight.data.normal_(0, 0.01)
        self.hash_layer.bias.data.fill_(0.0)
        self.activation = nn.Tanh()
        self.register_buffer("iter_num", torch.zeros((), dtype=torch.long))
        self.register_buffer("scale", torch.tensor(self.init_scale))

    def forward(self, x):
        if self.training:
            self.iter_num += 1
            if int(self.iter_num) % self.step_size == 0:
                self.scale.copy_(
                    self.init_scale * (1.0 + self.gamma * self.iter_num.float()) ** self.power
                )
        return self.activation(self.scale * self.hash_layer(x))


class HashNet(nn.Module):
    def __init__(self, hash_bit=32, n_class=None, backbone=AlexNetLite):
        super().__init__()
        self.base = backbone()
        self.fc = nn.Sequential(
            nn.Linear(self.base.out_features, 64),
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
        )
        self.hash = HashLayer(64, hash_bit)
        self.classifier = nn.Linear(hash_bit, n_class) if n_class else None

    def forward(self, x):
        h = self.hash(self.fc(self.base(x)))
        if self.classifier is not None:
            return h, self.classifier(h)
        return h

    @torch.no_grad()
    def encode(self, x):
        return torch.sign(self.forward(x)[0] if self.classifier is not None else self.forward(x))


@heldout(
    "hashnet_retrieval",
    lambda: ((rand(2, 3, 48, 48),), {}),
)
def build_hashnet():
    return HashNet(hash_bit=24, n_class=10)


class DSH(nn.Module):
    """DSH's small CNN: three conv-pool stages then two fc layers producing relaxed codes."""

    def __init__(self, num_binary=12):
        super().__init__()
        cfg = [(3, 16, 5), (16, 16, 5), (16, 32, 5)]
        blocks = []
        for i, (cin, cout, k) in enumerate(cfg):
            blocks += [
                nn.Conv2d(cin, cout, k, padding=k // 2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(3, 2, padding=1) if i == 0 else nn.AvgPool2d(3, 2, padding=1),
            ]
        self.conv = nn.Sequential(*blocks)
        self.fc = nn.Sequential(
            nn.Linear(32 * 4 * 4, 64), nn.ReLU(inplace=True), nn.Linear(64, num_binary)
        )

    def forward(self, x):
        return self.fc(self.conv(x).view(x.size(0), -1))


@heldout("dsh_hashing", lambda: ((rand(3, 3, 32, 32),), {}))
def build_dsh():
    return DSH(num_binary=12)


# ----------------------------------------------------------------------------- audio-visual


class VGGishLite(nn.Module):
    def __init__(self, out_dim=32):
        super().__init__()
        layers, c = [], 1
        for w in (8, 16, 32):
            layers += [nn.Conv2d(c, w, 3, padding=1), nn.ReLU(True), nn.MaxPool2d(2)]
            c = w
        self.features = nn.Sequential(*layers)
        self.embeddings = nn.Linear(c, out_dim)

    def forward(self, spec):
        return self.embeddings(self.features(spec).mean((2, 3)))


class AudioGuidedAttention(nn.Module):
    def __init__(self, audio_dim, visual_dim, hidden=32):
        super().__init__()
        self.affine_audio = nn.Linear(audio_dim, hidden)
        self.affine_video = nn.Linear(visual_dim, hidden)
        self.affine_v = nn.Linear(hidden, hidden, bias=False)
        self.affine_g = nn.Linear(hidden, hidden, bias=False)
        self.affine_h = nn.Linear(hidden, 1, bias=False)

    def forward(self, audio, video):
        # audio: (B*T, A); video: (B*T, HW, V)
        v_t = F.relu(self.affine_video(video))
        a_t = F.relu(self.affine_audio(audio)).unsqueeze(1)
        content_v = self.affine_v(v_t) + self.affine_g(a_t)
        z_t = self.affine_h(torch.tanh(content_v)).squeeze(-1)
        alpha_t = F.softmax(z_t, dim=-1).unsqueeze(1)
        return torch.bmm(alpha_t, video).squeeze(1)


class AVEFusion(nn.Module):
    def __init__(
        self, embed_size=32, lstm_hidden_size=16, hidden_size=32, num_classes=29, visual_channels=24
    ):
        super().__init__()
        self.audio_net = VGGishLite(embed_size)
        self.visual_net = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1),
            nn.ReLU(True),
            nn.Conv2d(16, visual_channels, 3, 2, 1),
            nn.ReLU(True),
        )
        self.attention = AudioGuidedAttention(embed_size, visual_channels, hidden_size)
        self.lstm_audio = nn.LSTM(
            embed_size, lstm_hidden_size, 1, batch_first=True, bidirectional=True
        )
        self.lstm_video = nn.LSTM(
            visual_channels, lstm_hidden_size, 1, batch_first=True, bidirectional=True
        )
        self.L1 = nn.Linear(2 * lstm_hidden_size, 64)
        self.L2 = nn.Linear(64, num_classes)

    def forward(self, audio, video):
        # audio: (B, T, 1, F, W) log-mel patches; video: (B, T, 3, H, W) frames
        B, T = audio.shape[:2]
        a = self.audio_net(audio.flatten(0, 1))
        v = self.visual_net(video.flatten(0, 1))
        v = v.flatten(2).transpose(1, 2)
        v_att = self.attention(a, v).view(B, T, -1)
        a = a.view(B, T, -1)
        lstm_audio, _ = self.lstm_audio(a)
        lstm_video, _ = self.lstm_video(v_att)
        fused = torch.mul(lstm_audio + lstm_video, 0.5)
        out = F.relu(self.L1(fused))
        return F.softmax(self.L2(out), dim=-1)


@heldout(
    "ave_audio_guided_attention",
    lambda: ((rand(2, 4, 1, 32, 24), rand(2, 4, 3, 32, 32, seed=1)), {}),
)
def build_ave():
    return AVEFusion()
