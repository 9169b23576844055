"""Reservoir and continuous-time recurrent nets: an echo state network, an LTC cell, CfC and a
modern Hopfield layer."""

from __future__ import annotations

import enum
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------------------------
# Echo state network: fixed random reservoir with a spectral radius, only the readout is trained
# ----------------------------------------------------------------------------------------------


class Reservoir(nn.Module):
    def __init__(
        self,
        input_size,
        hidden_size,
        spectral_radius=0.9,
        leaking_rate=0.3,
        input_scaling=1.0,
        density=0.2,
        bias_scaling=0.1,
        seed=42,
    ):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.leaking_rate = leaking_rate
        rng = np.random.RandomState(seed)
        w = rng.uniform(-1, 1, size=(hidden_size, hidden_size))
        w[rng.rand(hidden_size, hidden_size) > density] = 0.0
        radius = np.max(np.abs(np.linalg.eigvals(w)))
        w = w * (spectral_radius / max(radius, 1e-8))
        w_in = rng.uniform(-input_scaling, input_scaling, size=(hidden_size, input_size))
        b = rng.uniform(-bias_scaling, bias_scaling, size=(hidden_size,))
        self.register_buffer("w", torch.tensor(w, dtype=torch.float32))
        self.register_buffer("w_in", torch.tensor(w_in, dtype=torch.float32))
        self.register_buffer("b", torch.tensor(b, dtype=torch.float32))

    def forward(self, u, h0=None):
        B, T, _ = u.shape
        h = u.new_zeros(B, self.hidden_size) if h0 is None else h0
        states = []
        a = self.leaking_rate
        for t in range(T):
            pre = F.linear(u[:, t], self.w_in) + F.linear(h, self.w) + self.b
            h = (1 - a) * h + a * torch.tanh(pre)
            states.append(h)
        return torch.stack(states, 1)


class ESN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, washout=10, **reservoir_kwargs):
        super().__init__()
        self.washout = washout
        self.reservoir = Reservoir(input_size, hidden_size, **reservoir_kwargs)
        self.readout = nn.Linear(hidden_size + input_size, output_size)

    def forward(self, u):
        states = self.reservoir(u)
        z = torch.cat([states, u], dim=-1)[:, self.washout :]
        return self.readout(z)


@heldout(
    "esn_mackey_glass",
    lambda: ((rand(2, 60, 1),), {}),
    edit=("reservoir", {"spectral_radius": 1.2, "leaking_rate": 0.5}),
)
def build_esn():
    return ESN(1, 64, 1, washout=20, spectral_radius=0.95, leaking_rate=0.25, density=0.1)


# ----------------------------------------------------------------------------------------------
# Liquid time-constant cell (Hasani et al. 2021) with a fused ODE solver, wired fully
# ----------------------------------------------------------------------------------------------


class MappingType(enum.Enum):
    Identity = 0
    Linear = 1
    Affine = 2


class ODESolver(enum.Enum):
    SemiImplicit = 0
    Explicit = 1
    RungeKutta = 2


class LTCCell(nn.Module):
    def __init__(
        self,
        num_units,
        input_size,
        *,
        solver=ODESolver.SemiImplicit,
        ode_solver_unfolds=6,
        input_mapping=MappingType.Affine,
        erev_init_factor=1,
        w_init_min=0.01,
        w_init_max=1.0,
        cm_init_min=0.5,
        cm_init_max=0.5,
        gleak_init_min=1.0,
        gleak_init_max=1.0,
    ):
        super().__init__()
        self._num_units = num_units
        self._input_size = input_size
        self._solver = solver
        self._ode_solver_unfolds = ode_solver_unfolds
        self._input_mapping = input_mapping
        self._erev_init_factor = erev_init_factor
        self._w_init_min, self._w_init_max = w_init_min, w_init_max
        self._cm_init = (cm_init_min, cm_init_max)
        self._gleak_init = (gleak_init_min, gleak_init_max)
        self._build_params()

    def _uniform(self, shape, lo, hi):
        return nn.Parameter(torch.rand(*shape) * (hi - lo) + lo)

    def _build_params(self):
        n, d = self._num_units, self._input_size
        if self._input_mapping in (MappingType.Affine, MappingType.Linear):
            self.input_w = nn.Parameter(torch.ones(d))
        if self._input_mapping == MappingType.Affine:
            self.input_b = nn.Parameter(torch.zeros(d))
        self.sensory_mu = self._uniform((d, n), 0.3, 0.8)
        self.sensory_sigma = self._uniform((d, n), 3.0, 8.0)
        self.sensory_W = self._uniform((d, n), self._w_init_min, self._w_init_max)
        erev = 2 * torch.randint(0, 2, (d, n)).float() - 1
        self.sensory_erev = nn.Parameter(erev * self._erev_init_factor)
        self.mu = self._uniform((n, n), 0.3, 0.8)
        self.sigma = self._uniform((n, n), 3.0, 8.0)
        self.W = self._uniform((n, n), self._w_init_min, self._w_init_max)
        erev = 2 * torch.randint(0, 2, (n, n)).float() - 1
        self.erev = nn.Parameter(erev * self._erev_init_factor)
        self.vleak = self._uniform((n,), -0.2, 0.2)
        self.gleak = self._uniform((n,), *self._gleak_init)
        self.cm_t = self._uniform((n,), *self._cm_init)

    @staticmethod
    def _sigmoid(v_pre, mu, sigma):
        v_pre = v_pre.unsqueeze(-1)
        return torch.sigmoid(sigma * (v_pre - mu))

    def _map_inputs(self, x):
        if self._input_mapping in (MappingType.Affine, MappingType.Linear):
            x = x * self.input_w
        if self._input_mapping == MappingType.Affine:
            x = x + self.input_b
        return x

    def _f_prime(self, inputs, state):
        w_act = self.sensory_W * self._sigmoid(inputs, self.sensory_mu, self.sensory_sigma)
        s_in = (w_act * self.sensory_erev).sum(1)
        w_act = self.W * self._sigmoid(state, self.mu, self.sigma)
        syn = (w_act * self.erev).sum(1)
        return (self.gleak * (self.vleak - state) + s_in + syn) / self.cm_t

    def _ode_step_semi_implicit(self, inputs, state):
        v_pre = state
        sensory_w_activation = self.sensory_W * self._sigmoid(
            inputs, self.sensory_mu, self.sensory_sigma
        )
        sensory_rev_activation = sensory_w_activation * self.sensory_erev
        w_numerator_sensory = sensory_rev_activation.sum(1)
        w_denominator_sensory = sensory_w_activation.sum(1)
        for _ in range(self._ode_solver_unfolds):
            w_activation = self.W * self._sigmoid(v_pre, self.mu, self.sigma)
            rev_activation = w_activation * self.erev
            w_numerator = rev_activation.sum(1) + w_numerator_sensory
            w_denominator = w_activation.sum(1) + w_denominator_sensory
            numerator = self.cm_t * v_pre + self.gleak * self.vleak + w_numerator
            denominator = self.cm_t + self.gleak + w_denominator
            v_pre = numerator / denominator
        return v_pre

    def _ode_step_explicit(self, inputs, state, h=0.1):
        v = state
        for _ in range(self._ode_solver_unfolds):
            v = v + h * self._f_prime(inputs, v)
        return v

    def _ode_step_runge_kutta(self, inputs, state, h=0.1):
        for _ in range(self._ode_solver_unfolds):
            k1 = h * self._f_prime(inputs, state)
            k2 = h * self._f_prime(inputs, state + k1 * 0.5)
            k3 = h * self._f_prime(inputs, state + k2 * 0.5)
            k4 = h * self._f_prime(inputs, state + k3)
            state = state + (k1 + 2 * k2 + 2 * k3 + k4) / 6.0
        return state

    def forward(self, inputs, state):
        inputs = self._map_inputs(inputs)
        step = {
            ODESolver.SemiImplicit: self._ode_step_semi_implicit,
            ODESolver.Explicit: self._ode_step_explicit,
            ODESolver.RungeKutta: self._ode_step_runge_kutta,
        }[self._solver]
        next_state = step(inputs, state)
        return next_state, next_state


class LTCSequence(nn.Module):
    def __init__(self, input_size, units, output_size, **cell_kwargs):
        super().__init__()
        self.cell = LTCCell(units, input_size, **cell_kwargs)
        self.fc = nn.Linear(units, output_size)

    def forward(self, x):
        h = x.new_zeros(x.size(0), self.cell._num_units)
        outs = []
        for t in range(x.size(1)):
            y, h = self.cell(x[:, t], h)
            outs.append(self.fc(y))
        return torch.stack(outs, 1)


@heldout("ltc_half_cheetah", lambda: ((rand(2, 12, 17),), {}))
def build_ltc():
    torch.manual_seed(3)
    return LTCSequence(17, 24, 6, solver=ODESolver.RungeKutta, ode_solver_unfolds=2)


# ----------------------------------------------------------------------------------------------
# Closed-form continuous-time cell (Hasani et al. 2022), default "cfc" mode with a backbone
# ----------------------------------------------------------------------------------------------


class LeCun(nn.Module):
    def __init__(self):
        super().__init__()
        self.tanh = nn.Tanh()

    def forward(self, x):
        return 1.7159 * self.tanh(0.666 * x)


class CfcCell(nn.Module):
    def __init__(self, input_size, hidden_size, hparams):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.hparams = hparams
        self._no_gate = False
        if "no_gate" in self.hparams:
            self._no_gate = self.hparams["no_gate"]
        self._minimal = False
        if "minimal" in self.hparams:
            self._minimal = self.hparams["minimal"]

        if self.hparams["backbone_activation"] == "silu":
            backbone_activation = nn.SiLU
        elif self.hparams["backbone_activation"] == "relu":
            backbone_activation = nn.ReLU
        elif self.hparams["backbone_activation"] == "tanh":
            backbone_activation = nn.Tanh
        elif self.hparams["backbone_activation"] == "gelu":
            backbone_activation = nn.GELU
        elif self.hparams["backbone_activation"] == "lecun":
            backbone_activation = LeCun
        else:
            raise ValueError("Unknown activation")
        layer_list = [
            nn.Linear(input_size + hidden_size, self.hparams["backbone_units"]),
            backbone_activation(),
        ]
        for _ in range(1, self.hparams["backbone_layers"]):
            layer_list.append(
                nn.Linear(self.hparams["backbone_units"], self.hparams["backbone_units"])
            )
            layer_list.append(backbone_activation())
            if "backbone_dr" in self.hparams.keys():
                layer_list.append(torch.nn.Dropout(self.hparams["backbone_dr"]))
        self.backbone = nn.Sequential(*layer_list)
        self.tanh = nn.Tanh()
        self.sigmoid = nn.Sigmoid()
        self.ff1 = nn.Linear(self.hparams["backbone_units"], hidden_size)
        if self._minimal:
            self.w_tau = torch.nn.Parameter(
                data=torch.zeros(1, self.hidden_size), requires_grad=True
            )
            self.A = torch.nn.Parameter(data=torch.ones(1, self.hidden_size), requires_grad=True)
        else:
            self.ff2 = nn.Linear(self.hparams["backbone_units"], hidden_size)
            self.time_a = nn.Linear(self.hparams["backbone_units"], hidden_size)
            self.time_b = nn.Linear(self.hparams["backbone_units"], hidden_size)
        self.init_weights()

    def init_weights(self):
        init_gain = self.hparams.get("init")
        if init_gain is not None:
            for w in self.parameters():
                if w.dim() == 2:
                    torch.nn.init.xavier_uniform_(w, gain=init_gain)

    def forward(self, input, hx, ts):
        batch_size = input.size(0)
        ts = ts.view(batch_size, 1)
        x = torch.cat([input, hx], 1)
        x = self.backbone(x)
        if self._minimal:
            ff1 = self.ff1(x)
            new_hidden = (
                -self.A * torch.exp(-ts * (torch.abs(self.w_tau) + torch.abs(ff1))) * ff1 + self.A
            )
        else:
            ff1 = self.tanh(self.ff1(x))
            ff2 = self.tanh(self.ff2(x))
            t_a = self.time_a(x)
            t_b = self.time_b(x)
            t_interp = self.sigmoid(t_a * ts + t_b)
            if self._no_gate:
                new_hidden = ff1 + t_interp * ff2
            else:
                new_hidden = ff1 * (1.0 - t_interp) + t_interp * ff2
        return new_hidden


class Cfc(nn.Module):
    def __init__(
        self,
        in_features,
        hidden_size,
        out_feature,
        hparams,
        return_sequences=False,
        use_mixed=False,
    ):
        super().__init__()
        self.in_features = in_features
        self.hidden_size = hidden_size
        self.out_feature = out_feature
        self.return_sequences = return_sequences
        self.rnn_cell = CfcCell(in_features, hidden_size, hparams)
        self.use_mixed = use_mixed
        if self.use_mixed:
            self.lstm = nn.LSTMCell(in_features, hidden_size)
        self.fc = nn.Linear(self.hidden_size, self.out_feature)

    def forward(self, x, timespans=None, mask=None):
        device = x.device
        batch_size = x.size(0)
        seq_len = x.size(1)
        h_state = torch.zeros((batch_size, self.hidden_size), device=device)
        if self.use_mixed:
            c_state = torch.zeros((batch_size, self.hidden_size), device=device)
        output_sequence = []
        last_output = torch.zeros((batch_size, self.out_feature), device=device)
        for t in range(seq_len):
            inputs = x[:, t]
            ts = (
                timespans[:, t].squeeze()
                if timespans is not None
                else torch.ones(batch_size, device=device)
            )
            if self.use_mixed:
                h_state, c_state = self.lstm(inputs, (h_state, c_state))
            h_state = self.rnn_cell.forward(inputs, h_state, ts)
            current_output = self.fc(h_state)
            if mask is not None:
                cur_mask = mask[:, t].view(batch_size, 1)
                last_output = cur_mask * current_output + (1.0 - cur_mask) * last_output
            else:
                last_output = current_output
            if self.return_sequences:
                output_sequence.append(current_output)
        if self.return_sequences:
            return torch.stack(output_sequence, dim=1)
        return last_output


CFC_HPARAMS = {
    "backbone_activation": "lecun",
    "backbone_units": 32,
    "backbone_layers": 2,
    "backbone_dr": 0.1,
    "weight_decay": 1e-6,
    "init": 1.2,
    "use_mixed": True,
}


def _cfc_example():
    g = torch.Generator().manual_seed(1)
    x = rand(3, 10, 4)
    ts = torch.rand(3, 10, 1, generator=g) + 0.5
    mask = (torch.rand(3, 10, generator=g) > 0.2).float()
    return (x,), {"timespans": ts, "mask": mask}


@heldout(
    "cfc_irregular", _cfc_example, edit=("rnn_cell.backbone.0", {"out_features": 32, "bias": False})
)
def build_cfc():
    return Cfc(4, 20, 2, CFC_HPARAMS, return_sequences=False, use_mixed=CFC_HPARAMS["use_mixed"])


# ----------------------------------------------------------------------------------------------
# Modern Hopfield layer (Ramsauer et al. 2021), a "Hopfield is all you need"-style pooling head
# ----------------------------------------------------------------------------------------------


class HopfieldCore(nn.Module):
    def __init__(
        self,
        d_model,
        num_heads=1,
        scaling=None,
        update_steps_max=0,
        dropout=0.0,
        normalize_pattern=True,
    ):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.scaling = scaling if scaling is not None else 1.0 / math.sqrt(self.head_dim)
        self.update_steps_max = update_steps_max
        self.dropout = nn.Dropout(dropout)
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d_model, d_model))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d_model))
        self.out_proj = nn.Linear(d_model, d_model)
        self.norm_stored = (
            nn.LayerNorm(self.head_dim, elementwise_affine=False) if normalize_pattern else None
        )
        self.norm_state = (
            nn.LayerNorm(self.head_dim, elementwise_affine=False) if normalize_pattern else None
        )
        nn.init.xavier_uniform_(self.in_proj_weight)

    def forward(self, state, stored):
        B, Lq, D = state.shape
        H, hd = self.num_heads, self.head_dim
        wq, wk, wv = self.in_proj_weight.chunk(3)
        bq, bk, bv = self.in_proj_bias.chunk(3)
        xi = F.linear(state, wq, bq).view(B, Lq, H, hd).transpose(1, 2)
        Y = F.linear(stored, wk, bk).view(B, -1, H, hd).transpose(1, 2)
        V = F.linear(stored, wv, bv).view(B, -1, H, hd).transpose(1, 2)
        if self.norm_stored is not None:
            Y = self.norm_stored(Y)
            xi = self.norm_state(xi)
        # fixed-point iteration of the new update rule: xi <- Y^T softmax(beta Y xi)
        for _ in range(self.update_steps_max):
            a = torch.softmax(self.scaling * xi @ Y.transpose(-1, -2), -1)
            xi = a @ Y
        a = self.dropout(torch.softmax(self.scaling * xi @ Y.transpose(-1, -2), -1))
        out = (a @ V).transpose(1, 2).reshape(B, Lq, D)
        return self.out_proj(out)


class HopfieldPooling(nn.Module):
    """A learned static state pattern queries the stored patterns (the input set)."""

    def __init__(self, d_model, quantity=1, **kwargs):
        super().__init__()
        self.pooling_weights = nn.Parameter(torch.empty(1, quantity, d_model))
        nn.init.normal_(self.pooling_weights, std=0.02)
        self.hopfield = HopfieldCore(d_model, **kwargs)

    def forward(self, x):
        return self.hopfield(self.pooling_weights.expand(x.size(0), -1, -1), x).flatten(1)


class HopfieldMIL(nn.Module):
    """Multiple-instance learning (immune repertoire style): embed bag members, pool, classify."""

    def __init__(self, in_features, d_model=32, heads=4, n_classes=2):
        super().__init__()
        self.embed = nn.Sequential(
            nn.Linear(in_features, d_model), nn.ReLU(), nn.LayerNorm(d_model)
        )
        self.pool = HopfieldPooling(
            d_model, quantity=2, num_heads=heads, update_steps_max=2, dropout=0.1
        )
        self.head = nn.Linear(2 * d_model, n_classes)

    def forward(self, bag):
        return self.head(self.pool(self.embed(bag)))


@heldout("hopfield_mil", lambda: ((rand(2, 30, 12),), {}), train=True)
def build_hopfield_mil():
    return HopfieldMIL(12)
