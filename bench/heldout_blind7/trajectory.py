"""Trajectory prediction: Social LSTM with grid social pooling and a Social GAN generator."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------------------------
# Social LSTM (Alahi et al. 2016): occupancy-grid pooling of neighbours' hidden states
# ----------------------------------------------------------------------------------------------


@dataclass
class SocialArgs:
    rnn_size: int = 32
    grid_size: int = 4
    embedding_size: int = 16
    input_size: int = 2
    output_size: int = 5
    neighborhood_size: float = 4.0
    dropout: float = 0.0
    seq_length: int = 8
    gru: bool = False


class SocialModel(nn.Module):
    def __init__(self, args, infer=False):
        super().__init__()
        self.args = args
        self.infer = infer
        self.seq_length = 1 if infer else args.seq_length
        self.rnn_size = args.rnn_size
        self.grid_size = args.grid_size
        self.embedding_size = args.embedding_size
        self.input_size = args.input_size
        self.output_size = args.output_size
        self.gru = args.gru

        if self.gru:
            self.cell = nn.GRUCell(2 * self.embedding_size, self.rnn_size)
        else:
            self.cell = nn.LSTMCell(2 * self.embedding_size, self.rnn_size)
        self.input_embedding_layer = nn.Linear(self.input_size, self.embedding_size)
        self.tensor_embedding_layer = nn.Linear(
            self.grid_size * self.grid_size * self.rnn_size, self.embedding_size
        )
        self.output_layer = nn.Linear(self.rnn_size, self.output_size)
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(args.dropout)

    def get_grid_mask(self, frame):
        """(P, 2) positions -> (P, P, G*G) one-hot cell of each neighbour in each ego's grid."""
        P = frame.size(0)
        half = self.args.neighborhood_size / 2
        rel = frame.unsqueeze(0) - frame.unsqueeze(1)
        cell = ((rel + half) / self.args.neighborhood_size * self.grid_size).floor().long()
        inside = ((cell >= 0) & (cell < self.grid_size)).all(-1)
        inside = inside & ~torch.eye(P, dtype=torch.bool, device=frame.device)
        idx = cell[..., 0].clamp(0, self.grid_size - 1) * self.grid_size + cell[..., 1].clamp(
            0, self.grid_size - 1
        )
        mask = torch.zeros(P, P, self.grid_size * self.grid_size, device=frame.device)
        mask.scatter_(2, idx.unsqueeze(-1), 1.0)
        return mask * inside.unsqueeze(-1).float()

    def getSocialTensor(self, grid, hidden_states):
        # (P, P, G*G) x (P, H) -> (P, G*G*H)
        social = torch.einsum("ijg,jh->igh", grid, hidden_states)
        return social.reshape(grid.size(0), -1)

    def forward(self, input_data, hidden_states=None, cell_states=None):
        # input_data: (seq, peds, 2) positions of every pedestrian in the scene
        numNodes = input_data.size(1)
        if hidden_states is None:
            hidden_states = input_data.new_zeros(numNodes, self.rnn_size)
            cell_states = input_data.new_zeros(numNodes, self.rnn_size)
        outputs = []
        for framenum in range(input_data.size(0)):
            frame = input_data[framenum]
            grid = self.get_grid_mask(frame)
            social_tensor = self.getSocialTensor(grid, hidden_states)
            input_embedded = self.dropout(self.relu(self.input_embedding_layer(frame)))
            tensor_embedded = self.dropout(self.relu(self.tensor_embedding_layer(social_tensor)))
            concat_embedded = torch.cat((input_embedded, tensor_embedded), 1)
            if not self.gru:
                hidden_states, cell_states = self.cell(
                    concat_embedded, (hidden_states, cell_states)
                )
            else:
                hidden_states = self.cell(concat_embedded, hidden_states)
            outputs.append(self.output_layer(hidden_states))
        return torch.stack(outputs), hidden_states, cell_states


@heldout("social_lstm", lambda: ((rand(8, 6, 2).cumsum(0) * 0.5,), {}))
def build_social_lstm():
    return SocialModel(SocialArgs())


# ----------------------------------------------------------------------------------------------
# Social GAN generator (Gupta et al. 2018): encoder, pooling module, decoder with noise
# ----------------------------------------------------------------------------------------------


def make_mlp(dim_list, activation="relu", batch_norm=True, dropout=0):
    layers = []
    for dim_in, dim_out in zip(dim_list[:-1], dim_list[1:]):
        layers.append(nn.Linear(dim_in, dim_out))
        if batch_norm:
            layers.append(nn.BatchNorm1d(dim_out))
        if activation == "relu":
            layers.append(nn.ReLU())
        elif activation == "leakyrelu":
            layers.append(nn.LeakyReLU())
        if dropout > 0:
            layers.append(nn.Dropout(p=dropout))
    return nn.Sequential(*layers)


def get_noise(shape, noise_type):
    if noise_type == "gaussian":
        return torch.randn(*shape)
    elif noise_type == "uniform":
        return torch.rand(*shape).sub_(0.5).mul_(2.0)
    raise ValueError(f'Unrecognized noise type "{noise_type}"')


class Encoder(nn.Module):
    def __init__(self, embedding_dim=64, h_dim=64, mlp_dim=1024, num_layers=1, dropout=0.0):
        super().__init__()
        self.mlp_dim = 1024
        self.h_dim = h_dim
        self.embedding_dim = embedding_dim
        self.num_layers = num_layers
        self.encoder = nn.LSTM(embedding_dim, h_dim, num_layers, dropout=dropout)
        self.spatial_embedding = nn.Linear(2, embedding_dim)

    def init_hidden(self, batch):
        return (
            torch.zeros(self.num_layers, batch, self.h_dim),
            torch.zeros(self.num_layers, batch, self.h_dim),
        )

    def forward(self, obs_traj):
        batch = obs_traj.size(1)
        obs_traj_embedding = self.spatial_embedding(obs_traj.contiguous().view(-1, 2))
        obs_traj_embedding = obs_traj_embedding.view(-1, batch, self.embedding_dim)
        state_tuple = self.init_hidden(batch)
        output, state = self.encoder(obs_traj_embedding, state_tuple)
        return state[0]


class PoolHiddenNet(nn.Module):
    """Pooling module as proposed in our paper."""

    def __init__(
        self,
        embedding_dim=64,
        h_dim=64,
        mlp_dim=1024,
        bottleneck_dim=1024,
        activation="relu",
        batch_norm=True,
        dropout=0.0,
    ):
        super().__init__()
        self.mlp_dim = 1024
        self.h_dim = h_dim
        self.bottleneck_dim = bottleneck_dim
        self.embedding_dim = embedding_dim
        mlp_pre_dim = embedding_dim + h_dim
        mlp_pre_pool_dims = (
            [mlp_pre_dim, 512, bottleneck_dim]
            if mlp_dim >= 512
            else [mlp_pre_dim, mlp_dim, bottleneck_dim]
        )
        self.spatial_embedding = nn.Linear(2, embedding_dim)
        self.mlp_pre_pool = make_mlp(
            mlp_pre_pool_dims, activation=activation, batch_norm=batch_norm, dropout=dropout
        )

    def repeat(self, tensor, num_reps):
        col_len = tensor.size(1)
        tensor = tensor.unsqueeze(dim=1).repeat(1, num_reps, 1)
        tensor = tensor.view(-1, col_len)
        return tensor

    def forward(self, h_states, seq_start_end, end_pos):
        pool_h = []
        for _, (start, end) in enumerate(seq_start_end):
            start = start.item()
            end = end.item()
            num_ped = end - start
            curr_hidden = h_states.view(-1, self.h_dim)[start:end]
            curr_end_pos = end_pos[start:end]
            curr_hidden_1 = curr_hidden.repeat(num_ped, 1)
            curr_end_pos_1 = curr_end_pos.repeat(num_ped, 1)
            curr_end_pos_2 = self.repeat(curr_end_pos, num_ped)
            curr_rel_pos = curr_end_pos_1 - curr_end_pos_2
            curr_rel_embedding = self.spatial_embedding(curr_rel_pos)
            mlp_h_input = torch.cat([curr_rel_embedding, curr_hidden_1], dim=1)
            curr_pool_h = self.mlp_pre_pool(mlp_h_input)
            curr_pool_h = curr_pool_h.view(num_ped, num_ped, -1).max(1)[0]
            pool_h.append(curr_pool_h)
        return torch.cat(pool_h, dim=0)


class Decoder(nn.Module):
    def __init__(self, seq_len, embedding_dim=64, h_dim=128, mlp_dim=1024, num_layers=1, pool_every_timestep=True, dropout=0.0, bottleneck_dim=1024, activation="relu", batch_norm=True, pooling_type="pool_net", neighborhood_size=2.0, grid_size=8):  # fmt: skip
        super().__init__()
        self.seq_len = seq_len
        self.mlp_dim = mlp_dim
        self.h_dim = h_dim
        self.embedding_dim = embedding_dim
        self.pool_every_timestep = pool_every_timestep
        self.decoder = nn.LSTM(embedding_dim, h_dim, num_layers, dropout=dropout)
        if pool_every_timestep:
            if pooling_type == "pool_net":
                self.pool_net = PoolHiddenNet(embedding_dim=self.embedding_dim, h_dim=self.h_dim, mlp_dim=mlp_dim, bottleneck_dim=bottleneck_dim, activation=activation, batch_norm=batch_norm, dropout=dropout)  # fmt: skip
            mlp_dims = [h_dim + bottleneck_dim, mlp_dim, h_dim]
            self.mlp = make_mlp(
                mlp_dims, activation=activation, batch_norm=batch_norm, dropout=dropout
            )
        self.spatial_embedding = nn.Linear(2, embedding_dim)
        self.hidden2pos = nn.Linear(h_dim, 2)

    def forward(self, last_pos, last_pos_rel, state_tuple, seq_start_end):
        batch = last_pos.size(0)
        pred_traj_fake_rel = []
        decoder_input = self.spatial_embedding(last_pos_rel)
        decoder_input = decoder_input.view(1, batch, self.embedding_dim)
        for _ in range(self.seq_len):
            output, state_tuple = self.decoder(decoder_input, state_tuple)
            rel_pos = self.hidden2pos(output.view(-1, self.h_dim))
            curr_pos = rel_pos + last_pos
            if self.pool_every_timestep:
                decoder_h = state_tuple[0]
                pool_h = self.pool_net(decoder_h, seq_start_end, curr_pos)
                decoder_h = torch.cat([decoder_h.view(-1, self.h_dim), pool_h], dim=1)
                decoder_h = self.mlp(decoder_h)
                decoder_h = torch.unsqueeze(decoder_h, 0)
                state_tuple = (decoder_h, state_tuple[1])
            embedding_input = rel_pos
            decoder_input = self.spatial_embedding(embedding_input)
            decoder_input = decoder_input.view(1, batch, self.embedding_dim)
            pred_traj_fake_rel.append(rel_pos.view(batch, -1))
            last_pos = curr_pos
        pred_traj_fake_rel = torch.stack(pred_traj_fake_rel, dim=0)
        return pred_traj_fake_rel, state_tuple[0]


@dataclass
class GenConfig:
    obs_len: int = 8
    pred_len: int = 8
    embedding_dim: int = 16
    encoder_h_dim: int = 32
    decoder_h_dim: int = 32
    mlp_dim: int = 64
    num_layers: int = 1
    noise_dim: tuple = (8,)
    noise_type: str = "gaussian"
    noise_mix_type: str = "ped"
    pooling_type: str = "pool_net"
    pool_every_timestep: bool = True
    dropout: float = 0.0
    bottleneck_dim: int = 32
    activation: str = "relu"
    batch_norm: bool = True
    extra: dict = field(default_factory=dict)


class TrajectoryGenerator(nn.Module):
    def __init__(self, cfg: GenConfig):
        super().__init__()
        self.obs_len = cfg.obs_len
        self.pred_len = cfg.pred_len
        self.mlp_dim = cfg.mlp_dim
        self.encoder_h_dim = cfg.encoder_h_dim
        self.decoder_h_dim = cfg.decoder_h_dim
        self.embedding_dim = cfg.embedding_dim
        self.noise_dim = cfg.noise_dim
        self.num_layers = cfg.num_layers
        self.noise_type = cfg.noise_type
        self.noise_mix_type = cfg.noise_mix_type
        self.pooling_type = cfg.pooling_type
        self.noise_first_dim = 0
        self.pool_every_timestep = cfg.pool_every_timestep
        self.bottleneck_dim = cfg.bottleneck_dim

        self.encoder = Encoder(embedding_dim=cfg.embedding_dim, h_dim=cfg.encoder_h_dim, mlp_dim=cfg.mlp_dim, num_layers=cfg.num_layers, dropout=cfg.dropout)  # fmt: skip
        self.decoder = Decoder(
            cfg.pred_len,
            embedding_dim=cfg.embedding_dim,
            h_dim=cfg.decoder_h_dim,
            mlp_dim=cfg.mlp_dim,
            num_layers=cfg.num_layers,
            pool_every_timestep=cfg.pool_every_timestep,
            dropout=cfg.dropout,
            bottleneck_dim=cfg.bottleneck_dim,
            activation=cfg.activation,
            batch_norm=cfg.batch_norm,
            pooling_type=cfg.pooling_type,
        )
        if cfg.pooling_type == "pool_net":
            self.pool_net = PoolHiddenNet(embedding_dim=self.embedding_dim, h_dim=cfg.encoder_h_dim, mlp_dim=cfg.mlp_dim, bottleneck_dim=cfg.bottleneck_dim, activation=cfg.activation, batch_norm=cfg.batch_norm)  # fmt: skip

        if self.noise_dim[0] == 0:
            self.noise_dim = None
        else:
            self.noise_first_dim = self.noise_dim[0]

        input_dim = cfg.encoder_h_dim + (cfg.bottleneck_dim if cfg.pooling_type else 0)
        if self.mlp_decoder_needed():
            mlp_decoder_context_dims = [
                input_dim,
                cfg.mlp_dim,
                cfg.decoder_h_dim - self.noise_first_dim,
            ]
            self.mlp_decoder_context = make_mlp(mlp_decoder_context_dims, activation=cfg.activation, batch_norm=cfg.batch_norm, dropout=cfg.dropout)  # fmt: skip

    def add_noise(self, _input, seq_start_end):
        if not self.noise_dim:
            return _input
        if self.noise_mix_type == "global":
            noise_shape = (seq_start_end.size(0),) + self.noise_dim
        else:
            noise_shape = (_input.size(0),) + self.noise_dim
        z_decoder = get_noise(noise_shape, self.noise_type).to(_input)
        if self.noise_mix_type == "global":
            _list = []
            for idx, (start, end) in enumerate(seq_start_end):
                _vec = z_decoder[idx].view(1, -1)
                _to_cat = _vec.repeat(end.item() - start.item(), 1)
                _list.append(torch.cat([_input[start:end], _to_cat], dim=1))
            return torch.cat(_list, dim=0)
        return torch.cat([_input, z_decoder], dim=1)

    def mlp_decoder_needed(self):
        return bool(self.noise_dim or self.pooling_type or self.encoder_h_dim != self.decoder_h_dim)

    def forward(self, obs_traj, obs_traj_rel, seq_start_end, user_noise=None):
        batch = obs_traj_rel.size(1)
        final_encoder_h = self.encoder(obs_traj_rel)
        if self.pooling_type:
            end_pos = obs_traj[-1, :, :]
            pool_h = self.pool_net(final_encoder_h, seq_start_end, end_pos)
            mlp_decoder_context_input = torch.cat(
                [final_encoder_h.view(-1, self.encoder_h_dim), pool_h], dim=1
            )
        else:
            mlp_decoder_context_input = final_encoder_h.view(-1, self.encoder_h_dim)
        if self.mlp_decoder_needed():
            noise_input = self.mlp_decoder_context(mlp_decoder_context_input)
        else:
            noise_input = mlp_decoder_context_input
        decoder_h = self.add_noise(noise_input, seq_start_end)
        decoder_h = torch.unsqueeze(decoder_h, 0)
        decoder_c = torch.zeros(self.num_layers, batch, self.decoder_h_dim)
        state_tuple = (decoder_h, decoder_c)
        last_pos = obs_traj[-1]
        last_pos_rel = obs_traj_rel[-1]
        decoder_out = self.decoder(last_pos, last_pos_rel, state_tuple, seq_start_end)
        pred_traj_fake_rel, final_decoder_h = decoder_out
        return pred_traj_fake_rel


def _sgan_example():
    obs = rand(8, 7, 2).cumsum(0)
    rel = torch.zeros_like(obs)
    rel[1:] = obs[1:] - obs[:-1]
    seq_start_end = torch.tensor([[0, 3], [3, 7]])
    return (obs, rel, seq_start_end), {}


@heldout("social_gan_generator", _sgan_example)
def build_sgan():
    return TrajectoryGenerator(GenConfig())
