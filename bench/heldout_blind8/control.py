"""Robot control and driving: an ACT-style action-chunking transformer with a CVAE encoder,
a BCQ-style CVAE policy with a perturbation actor, a VectorNet polyline encoder and a DeepVO
CNN-LSTM for visual odometry."""

from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------- ACT


class FrozenBatchNorm2d(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("weight", torch.ones(n))
        self.register_buffer("bias", torch.zeros(n))
        self.register_buffer("running_mean", torch.zeros(n))
        self.register_buffer("running_var", torch.ones(n))

    def forward(self, x):
        scale = self.weight * (self.running_var + 1e-5).rsqrt()
        bias = self.bias - self.running_mean * scale
        return x * scale.reshape(1, -1, 1, 1) + bias.reshape(1, -1, 1, 1)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, norm_layer=FrozenBatchNorm2d):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = norm_layer(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = norm_layer(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes, 1, stride, bias=False), norm_layer(planes)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + identity)


class Backbone(nn.Module):
    def __init__(self, widths=(16, 32), norm_layer=FrozenBatchNorm2d):
        super().__init__()
        self.stem = nn.Sequential(
            OrderedDict(
                [
                    ("conv1", nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)),
                    ("bn1", norm_layer(widths[0])),
                    ("relu", nn.ReLU(inplace=True)),
                    ("maxpool", nn.MaxPool2d(3, 2, 1)),
                ]
            )
        )
        layers, c = [], widths[0]
        for i, w in enumerate(widths):
            layers.append(BasicBlock(c, w, stride=1 if i == 0 else 2, norm_layer=norm_layer))
            c = w
        self.body = nn.Sequential(*layers)
        self.num_channels = c

    def forward(self, x):
        return self.body(self.stem(x))


class PositionEmbeddingSine(nn.Module):
    def __init__(self, num_pos_feats=16, temperature=10000):
        super().__init__()
        self.num_pos_feats = num_pos_feats
        self.temperature = temperature

    def forward(self, x):
        _, _, h, w = x.shape
        y_embed = torch.arange(1, h + 1, dtype=torch.float32).view(h, 1).expand(h, w)
        x_embed = torch.arange(1, w + 1, dtype=torch.float32).view(1, w).expand(h, w)
        y_embed = y_embed / h * 6.2832
        x_embed = x_embed / w * 6.2832
        dim_t = torch.arange(self.num_pos_feats, dtype=torch.float32)
        dim_t = self.temperature ** (2 * (dim_t // 2) / self.num_pos_feats)
        pos_x = x_embed[:, :, None] / dim_t
        pos_y = y_embed[:, :, None] / dim_t
        pos_x = torch.stack((pos_x[:, :, 0::2].sin(), pos_x[:, :, 1::2].cos()), dim=3).flatten(2)
        pos_y = torch.stack((pos_y[:, :, 0::2].sin(), pos_y[:, :, 1::2].cos()), dim=3).flatten(2)
        return torch.cat((pos_y, pos_x), dim=2).permute(2, 0, 1).unsqueeze(0)


class DETRVAE(nn.Module):
    def __init__(
        self, backbones, transformer, encoder, state_dim, num_queries, camera_names, latent_dim=8
    ):
        super().__init__()
        self.num_queries = num_queries
        self.camera_names = camera_names
        self.transformer = transformer
        self.encoder = encoder
        hidden_dim = transformer.d_model
        self.action_head = nn.Linear(hidden_dim, state_dim)
        self.is_pad_head = nn.Linear(hidden_dim, 1)
        self.query_embed = nn.Embedding(num_queries, hidden_dim)
        self.input_proj = nn.Conv2d(backbones[0].num_channels, hidden_dim, kernel_size=1)
        self.backbones = nn.ModuleList(backbones)
        self.position = PositionEmbeddingSine(hidden_dim // 2)
        self.input_proj_robot_state = nn.Linear(state_dim, hidden_dim)
        self.latent_dim = latent_dim
        self.cls_embed = nn.Embedding(1, hidden_dim)
        self.encoder_action_proj = nn.Linear(state_dim, hidden_dim)
        self.encoder_joint_proj = nn.Linear(state_dim, hidden_dim)
        self.latent_proj = nn.Linear(hidden_dim, self.latent_dim * 2)
        self.register_buffer(
            "pos_table", self.get_sinusoid_encoding_table(1 + 1 + num_queries, hidden_dim)
        )
        self.latent_out_proj = nn.Linear(self.latent_dim, hidden_dim)
        self.additional_pos_embed = nn.Embedding(2, hidden_dim)

    @staticmethod
    def get_sinusoid_encoding_table(n_position, d_hid):
        pos = torch.arange(n_position).float().unsqueeze(1)
        j = torch.arange(d_hid).float().unsqueeze(0)
        table = pos / torch.pow(10000, 2 * (j // 2) / d_hid)
        table[:, 0::2] = torch.sin(table[:, 0::2])
        table[:, 1::2] = torch.cos(table[:, 1::2])
        return table.unsqueeze(0)

    def forward(self, qpos, image, actions=None, is_pad=None):
        is_training = actions is not None
        bs = qpos.shape[0]
        if is_training:
            action_embed = self.encoder_action_proj(actions)
            qpos_embed = self.encoder_joint_proj(qpos).unsqueeze(1)
            cls_embed = self.cls_embed.weight.unsqueeze(0).repeat(bs, 1, 1)
            encoder_input = torch.cat([cls_embed, qpos_embed, action_embed], axis=1)
            cls_joint_is_pad = torch.full((bs, 2), False, device=qpos.device)
            if is_pad is None:
                is_pad = torch.zeros(actions.shape[:2], dtype=torch.bool, device=qpos.device)
            is_pad = torch.cat([cls_joint_is_pad, is_pad], axis=1)
            encoder_output = self.encoder(
                encoder_input + self.pos_table, src_key_padding_mask=is_pad
            )
            latent_info = self.latent_proj(encoder_output[:, 0])
            mu = latent_info[:, : self.latent_dim]
            logvar = latent_info[:, self.latent_dim :]
            latent_sample = mu + (logvar / 2).exp() * torch.randn_like(mu)
            latent_input = self.latent_out_proj(latent_sample)
        else:
            mu = logvar = None
            latent_input = self.latent_out_proj(
                torch.zeros([bs, self.latent_dim], dtype=torch.float32, device=qpos.device)
            )
        all_cam_features, all_cam_pos = [], []
        for cam_id, _ in enumerate(self.camera_names):
            features = self.backbones[0](image[:, cam_id])
            all_cam_features.append(self.input_proj(features))
            all_cam_pos.append(self.position(features).expand(bs, -1, -1, -1))
        src = torch.cat(all_cam_features, axis=3).flatten(2).permute(0, 2, 1)
        pos = torch.cat(all_cam_pos, axis=3).flatten(2).permute(0, 2, 1)
        proprio = self.input_proj_robot_state(qpos)
        extra = torch.stack([latent_input, proprio], 1) + self.additional_pos_embed.weight
        memory = torch.cat([extra, src + pos], 1)
        tgt = self.query_embed.weight.unsqueeze(0).repeat(bs, 1, 1)
        hs = self.transformer.decoder(tgt, self.transformer.encoder(memory))
        return self.action_head(hs), self.is_pad_head(hs), [mu, logvar]


def build_act_from_args(args):
    backbone = Backbone(widths=args.widths)
    transformer = nn.Transformer(
        d_model=args.hidden_dim,
        nhead=args.nheads,
        num_encoder_layers=args.enc_layers,
        num_decoder_layers=args.dec_layers,
        dim_feedforward=args.dim_feedforward,
        dropout=args.dropout,
        batch_first=True,
    )
    enc_layer = nn.TransformerEncoderLayer(
        args.hidden_dim, args.nheads, args.dim_feedforward, args.dropout, batch_first=True
    )
    encoder = nn.TransformerEncoder(enc_layer, args.enc_layers, enable_nested_tensor=False)
    return DETRVAE(
        [backbone],
        transformer,
        encoder,
        state_dim=args.state_dim,
        num_queries=args.chunk_size,
        camera_names=args.camera_names,
    )


@heldout(
    "act_action_chunking",
    lambda: ((rand(2, 6), rand(2, 2, 3, 48, 48, seed=1)), {"actions": rand(2, 5, 6, seed=2)}),
    train=True,
)
def build_act():
    args = SimpleNamespace(
        hidden_dim=32,
        nheads=4,
        enc_layers=1,
        dec_layers=2,
        dim_feedforward=64,
        dropout=0.1,
        state_dim=6,
        chunk_size=5,
        camera_names=["top", "wrist"],
        widths=(16, 32),
    )
    return build_act_from_args(args)


# ----------------------------------------------------------------------------- BCQ


class Actor(nn.Module):
    def __init__(self, state_dim, action_dim, max_action, phi=0.05):
        super().__init__()
        self.l1 = nn.Linear(state_dim + action_dim, 64)
        self.l2 = nn.Linear(64, 48)
        self.l3 = nn.Linear(48, action_dim)
        self.max_action = max_action
        self.phi = phi

    def forward(self, state, action):
        a = F.relu(self.l1(torch.cat([state, action], 1)))
        a = F.relu(self.l2(a))
        a = self.phi * self.max_action * torch.tanh(self.l3(a))
        return (a + action).clamp(-self.max_action, self.max_action)


class Critic(nn.Module):
    def __init__(self, state_dim, action_dim):
        super().__init__()
        self.l1 = nn.Linear(state_dim + action_dim, 64)
        self.l2 = nn.Linear(64, 48)
        self.l3 = nn.Linear(48, 1)
        self.l4 = nn.Linear(state_dim + action_dim, 64)
        self.l5 = nn.Linear(64, 48)
        self.l6 = nn.Linear(48, 1)

    def forward(self, state, action):
        sa = torch.cat([state, action], 1)
        q1 = self.l3(F.relu(self.l2(F.relu(self.l1(sa)))))
        q2 = self.l6(F.relu(self.l5(F.relu(self.l4(sa)))))
        return q1, q2


class VAE(nn.Module):
    def __init__(self, state_dim, action_dim, latent_dim, max_action):
        super().__init__()
        self.e1 = nn.Linear(state_dim + action_dim, 64)
        self.e2 = nn.Linear(64, 64)
        self.mean = nn.Linear(64, latent_dim)
        self.log_std = nn.Linear(64, latent_dim)
        self.d1 = nn.Linear(state_dim + latent_dim, 64)
        self.d2 = nn.Linear(64, 64)
        self.d3 = nn.Linear(64, action_dim)
        self.max_action = max_action
        self.latent_dim = latent_dim

    def forward(self, state, action):
        z = F.relu(self.e1(torch.cat([state, action], 1)))
        z = F.relu(self.e2(z))
        mean = self.mean(z)
        log_std = self.log_std(z).clamp(-4, 15)
        std = torch.exp(log_std)
        z = mean + std * torch.randn_like(std) if self.training else mean
        return self.decode(state, z), mean, std

    def decode(self, state, z=None):
        if z is None:
            z = torch.zeros((state.shape[0], self.latent_dim), device=state.device)
        a = F.relu(self.d1(torch.cat([state, z], 1)))
        a = F.relu(self.d2(a))
        return self.max_action * torch.tanh(self.d3(a))


class BCQ(nn.Module):
    def __init__(
        self, state_dim, action_dim, max_action, discount=0.99, tau=0.005, lmbda=0.75, phi=0.05
    ):
        super().__init__()
        latent_dim = action_dim * 2
        self.actor = Actor(state_dim, action_dim, max_action, phi)
        self.critic = Critic(state_dim, action_dim)
        self.vae = VAE(state_dim, action_dim, latent_dim, max_action)
        self.discount, self.tau, self.lmbda = discount, tau, lmbda

    def forward(self, state, action):
        recon, mean, std = self.vae(state, action)
        sampled = self.vae.decode(state)
        perturbed = self.actor(state, sampled)
        q1, q2 = self.critic(state, perturbed)
        return (
            recon,
            mean,
            std,
            self.lmbda * torch.min(q1, q2) + (1 - self.lmbda) * torch.max(q1, q2),
        )


@heldout(
    "bcq_cvae_policy",
    lambda: ((rand(4, 11), rand(4, 3, seed=1).tanh()), {}),
)
def build_bcq():
    return BCQ(state_dim=11, action_dim=3, max_action=1.0)


# ----------------------------------------------------------------------------- VectorNet


class MLP(nn.Module):
    def __init__(
        self, in_channel, out_channel, hidden=64, bias=True, activation="relu", norm="layer"
    ):
        super().__init__()
        act_layer = {"relu": nn.ReLU, "relu6": nn.ReLU6, "leaky": nn.LeakyReLU, "gelu": nn.GELU}
        norm_layer = {"layer": nn.LayerNorm, "batch": nn.BatchNorm1d}
        self.linear1 = nn.Linear(in_channel, hidden, bias=bias)
        self.linear2 = nn.Linear(hidden, out_channel, bias=bias)
        self.norm1 = norm_layer[norm](hidden)
        self.norm2 = norm_layer[norm](out_channel)
        self.act1 = act_layer[activation](inplace=True)
        self.act2 = act_layer[activation](inplace=True)
        self.shortcut = None
        if in_channel != out_channel:
            self.shortcut = nn.Sequential(
                nn.Linear(in_channel, out_channel, bias=bias), norm_layer[norm](out_channel)
            )

    def forward(self, x):
        out = self.norm2(self.linear2(self.act1(self.norm1(self.linear1(x)))))
        out = out + (x if self.shortcut is None else self.shortcut(x))
        return self.act2(out)


class SubGraph(nn.Module):
    def __init__(self, in_channels, num_subgraph_layers=3, hidden_unit=32):
        super().__init__()
        self.num_subgraph_layers = num_subgraph_layers
        self.layer_seq = nn.Sequential()
        for i in range(num_subgraph_layers):
            self.layer_seq.add_module(f"glp_{i}", MLP(in_channels, hidden_unit, hidden_unit))
            in_channels = hidden_unit * 2
        self.linear = nn.Linear(hidden_unit * 2, hidden_unit)

    def forward(self, x, mask):
        # x: (B, P, V, C); mask: (B, P, V) True for valid vectors
        for layer in self.layer_seq:
            x = layer(x)
            agg = x.masked_fill(~mask.unsqueeze(-1), -1e4).max(dim=2, keepdim=True).values
            x = torch.cat([x, agg.expand_as(x)], dim=-1)
        x = self.linear(x)
        x = x.masked_fill(~mask.unsqueeze(-1), -1e4).max(dim=2).values
        return F.normalize(x, p=2.0, dim=-1)


class GlobalGraph(nn.Module):
    def __init__(self, in_channels, global_graph_width, num_global_layers=1, need_scale=False):
        super().__init__()
        self.layers = nn.Sequential()
        for i in range(num_global_layers):
            self.layers.add_module(
                f"glp_{i}", SelfAttentionFCLayer(in_channels, global_graph_width, need_scale)
            )
            in_channels = global_graph_width

    def forward(self, x, valid):
        for layer in self.layers:
            x = layer(x, valid)
        return x


class SelfAttentionFCLayer(nn.Module):
    def __init__(self, in_channels, global_graph_width, need_scale=False):
        super().__init__()
        self.q_lin = nn.Linear(in_channels, global_graph_width)
        self.k_lin = nn.Linear(in_channels, global_graph_width)
        self.v_lin = nn.Linear(in_channels, global_graph_width)
        self.scale_factor_d = 1 + int(global_graph_width**0.5) if need_scale else 1

    def forward(self, x, valid):
        q, k, v = self.q_lin(x), self.k_lin(x), self.v_lin(x)
        scores = torch.bmm(q, k.transpose(1, 2)) / self.scale_factor_d
        scores = scores.masked_fill(~valid.unsqueeze(1), -1e12)
        return torch.bmm(scores.softmax(-1), v)


class VectorNet(nn.Module):
    def __init__(
        self,
        in_channels=8,
        horizon=6,
        num_subgraph_layers=3,
        subgraph_width=32,
        global_graph_width=32,
        traj_pred_mlp_width=32,
        with_aux=False,
    ):
        super().__init__()
        self.horizon = horizon
        self.out_channels = 2
        self.subgraph = SubGraph(in_channels, num_subgraph_layers, subgraph_width)
        self.global_graph = GlobalGraph(subgraph_width + 2, global_graph_width, need_scale=True)
        self.traj_pred_mlp = nn.Sequential(
            MLP(global_graph_width, traj_pred_mlp_width, traj_pred_mlp_width),
            nn.Linear(traj_pred_mlp_width, self.horizon * self.out_channels),
        )
        self.with_aux = with_aux
        if with_aux:
            self.aux_mlp = nn.Sequential(
                nn.Linear(global_graph_width, traj_pred_mlp_width),
                nn.LayerNorm(traj_pred_mlp_width),
                nn.ReLU(),
                nn.Linear(traj_pred_mlp_width, subgraph_width),
            )

    def forward(self, vectors, vector_mask, poly_id):
        x = self.subgraph(vectors, vector_mask)
        valid = vector_mask.any(-1)
        x = torch.cat([x, poly_id], dim=-1)
        g = self.global_graph(x, valid)
        pred = self.traj_pred_mlp(g[:, 0]).view(-1, self.horizon, self.out_channels)
        if self.with_aux and self.training:
            return pred, self.aux_mlp(g[:, 1:])
        return pred


def _vectornet_example():
    g = torch.Generator().manual_seed(4)
    mask = torch.rand(2, 5, 6, generator=g) > 0.2
    mask[:, :, 0] = True
    return (rand(2, 5, 6, 8), mask, rand(2, 5, 2, seed=5)), {}


@heldout(
    "vectornet_polyline",
    _vectornet_example,
    edit=("subgraph", {"num_subgraph_layers": 2}),
    train=True,
)
def build_vectornet():
    return VectorNet(with_aux=True)


# ----------------------------------------------------------------------------- DeepVO


def conv(batch_norm, in_planes, out_planes, kernel_size=3, stride=1, dropout=0.0):
    if batch_norm:
        return nn.Sequential(
            nn.Conv2d(
                in_planes, out_planes, kernel_size, stride, (kernel_size - 1) // 2, bias=False
            ),
            nn.BatchNorm2d(out_planes),
            nn.LeakyReLU(0.1, inplace=True),
            nn.Dropout(dropout),
        )
    return nn.Sequential(
        nn.Conv2d(in_planes, out_planes, kernel_size, stride, (kernel_size - 1) // 2, bias=True),
        nn.LeakyReLU(0.1, inplace=True),
        nn.Dropout(dropout),
    )


class DeepVO(nn.Module):
    CONV_CFG = [  # name, out, kernel, stride
        ("conv1", 16, 7, 2),
        ("conv2", 32, 5, 2),
        ("conv3", 32, 5, 2),
        ("conv3_1", 32, 3, 1),
        ("conv4", 64, 3, 2),
    ]

    def __init__(
        self,
        imsize1,
        imsize2,
        batchNorm=True,
        rnn_hidden_size=32,
        rnn_dropout_out=0.2,
        conv_dropout=0.1,
    ):
        super().__init__()
        self.batchNorm = batchNorm
        in_planes = 6
        for name, out, k, s in self.CONV_CFG:
            setattr(self, name, conv(self.batchNorm, in_planes, out, k, s, conv_dropout))
            in_planes = out
        __tmp = torch.zeros(1, 6, imsize1, imsize2)
        __tmp = self.encode_image(__tmp)
        self.rnn = nn.LSTM(
            input_size=int(__tmp.numel()),
            hidden_size=rnn_hidden_size,
            num_layers=2,
            dropout=0.0,
            batch_first=True,
        )
        self.rnn_drop_out = nn.Dropout(rnn_dropout_out)
        self.linear = nn.Linear(rnn_hidden_size, 6)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight.data)
                if m.bias is not None:
                    m.bias.data.zero_()

    def encode_image(self, x):
        for name, *_ in self.CONV_CFG:
            x = getattr(self, name)(x)
        return x

    def forward(self, x):
        x = torch.cat((x[:, :-1], x[:, 1:]), dim=2)
        batch_size, seq_len = x.size(0), x.size(1)
        x = x.view(batch_size * seq_len, x.size(2), x.size(3), x.size(4))
        x = self.encode_image(x).view(batch_size, seq_len, -1)
        out, _ = self.rnn(x)
        return self.linear(self.rnn_drop_out(out))


@heldout("deepvo_cnn_lstm", lambda: ((rand(2, 4, 3, 32, 48),), {}))
def build_deepvo():
    return DeepVO(32, 48)
