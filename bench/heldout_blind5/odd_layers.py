"""Less common layers: S4D (diagonal state space), a Hyena long-convolution LM, a spline KAN,
and a spiking LIF convnet trained with a surrogate gradient."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- S4D


class S4DKernel(nn.Module):
    """Generate convolution kernel from diagonal SSM parameters."""

    def __init__(self, d_model, N=64, dt_min=0.001, dt_max=0.1, lr=None):
        super().__init__()
        H = d_model
        log_dt = torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        C = torch.randn(H, N // 2, dtype=torch.cfloat)
        self.C = nn.Parameter(torch.view_as_real(C))
        self.register("log_dt", log_dt, lr)
        log_A_real = torch.log(0.5 * torch.ones(H, N // 2))
        A_imag = math.pi * torch.arange(N // 2).repeat(H, 1)
        self.register("log_A_real", log_A_real, lr)
        self.register("A_imag", A_imag, lr)

    def forward(self, L):
        dt = torch.exp(self.log_dt)
        C = torch.view_as_complex(self.C)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag
        dtA = A * dt.unsqueeze(-1)
        K = dtA.unsqueeze(-1) * torch.arange(L, device=A.device)
        C = C * (torch.exp(dtA) - 1.0) / A
        return 2 * torch.einsum("hn, hnl -> hl", C, torch.exp(K)).real

    def register(self, name, tensor, lr=None):
        if lr == 0.0:
            self.register_buffer(name, tensor)
        else:
            self.register_parameter(name, nn.Parameter(tensor))
            optim = {"weight_decay": 0.0}
            if lr is not None:
                optim["lr"] = lr
            getattr(self, name)._optim = optim


class S4D(nn.Module):
    def __init__(self, d_model, d_state=64, dropout=0.0, transposed=True, **kernel_args):
        super().__init__()
        self.h, self.n = d_model, d_state
        self.transposed = transposed
        self.D = nn.Parameter(torch.randn(self.h))
        self.kernel = S4DKernel(self.h, N=self.n, **kernel_args)
        self.activation = nn.GELU()
        self.dropout = nn.Dropout1d(dropout) if dropout > 0.0 else nn.Identity()
        self.output_linear = nn.Sequential(
            nn.Conv1d(self.h, 2 * self.h, kernel_size=1), nn.GLU(dim=-2)
        )

    def forward(self, u, **kwargs):
        if not self.transposed:
            u = u.transpose(-1, -2)
        L = u.size(-1)
        k = self.kernel(L=L)
        k_f = torch.fft.rfft(k, n=2 * L)
        u_f = torch.fft.rfft(u, n=2 * L)
        y = torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]
        y = y + u * self.D.unsqueeze(-1)
        y = self.output_linear(self.dropout(self.activation(y)))
        if not self.transposed:
            y = y.transpose(-1, -2)
        return y, None


class S4Model(nn.Module):
    def __init__(self, d_input, d_output=10, d_model=256, n_layers=4, dropout=0.2, prenorm=False,
                 lr=None):  # fmt: skip
        super().__init__()
        self.prenorm = prenorm
        self.encoder = nn.Linear(d_input, d_model)
        self.s4_layers, self.norms, self.dropouts = (
            nn.ModuleList(),
            nn.ModuleList(),
            nn.ModuleList(),
        )
        for _ in range(n_layers):
            self.s4_layers.append(
                S4D(d_model, dropout=dropout, transposed=True, lr=min(0.001, lr or 1))
            )
            self.norms.append(nn.LayerNorm(d_model))
            self.dropouts.append(nn.Dropout1d(dropout))
        self.decoder = nn.Linear(d_model, d_output)

    def forward(self, x):
        x = self.encoder(x).transpose(-1, -2)
        for layer, norm, dropout in zip(self.s4_layers, self.norms, self.dropouts):
            z = x
            if self.prenorm:
                z = norm(z.transpose(-1, -2)).transpose(-1, -2)
            z, _ = layer(z)
            x = dropout(z) + x
            if not self.prenorm:
                x = norm(x.transpose(-1, -2)).transpose(-1, -2)
        return self.decoder(x.transpose(-1, -2).mean(dim=1))


@heldout(
    "s4d_classifier",
    lambda: ((rand(2, 64, 3),), {}),
)
def s4d_classifier():
    return S4Model(3, d_output=5, d_model=32, n_layers=2, dropout=0.1, prenorm=True)


# --------------------------------------------------------------------------- Hyena


def fftconv(u, k, D):
    seqlen = u.shape[-1]
    fft_size = 2 * seqlen
    k_f = torch.fft.rfft(k, n=fft_size) / fft_size
    u_f = torch.fft.rfft(u.to(dtype=k.dtype), n=fft_size)
    y = torch.fft.irfft(u_f * k_f, n=fft_size, norm="forward")[..., :seqlen]
    return (y + u * D.unsqueeze(-1)).to(dtype=u.dtype)


class Sin(nn.Module):
    def __init__(self, dim, w=10, train_freq=True):
        super().__init__()
        self.freq = nn.Parameter(w * torch.ones(1, dim)) if train_freq else w * torch.ones(1, dim)

    def forward(self, x):
        return torch.sin(self.freq * x)


class PositionalEmbedding(nn.Module):
    def __init__(self, emb_dim: int, seq_len: int):
        super().__init__()
        self.seq_len = seq_len
        t = torch.linspace(0, 1, self.seq_len)[None, :, None]
        bands = (emb_dim - 1) // 2
        t_rescaled = torch.linspace(0, seq_len - 1, seq_len)[None, :, None]
        w = 2 * math.pi * t_rescaled / seq_len
        f = torch.linspace(1e-4, bands - 1, bands)[None, None]
        z = torch.exp(-1j * f * w)
        z = torch.cat([t, z.real, z.imag], dim=-1)
        self.register_buffer("z", z, persistent=False)
        self.register_buffer("t", t, persistent=False)

    def forward(self, L):
        return self.z[:, :L], self.t[:, :L]


class ExponentialModulation(nn.Module):
    def __init__(self, d_model, fast_decay_pct=0.3, slow_decay_pct=1.5, target=1e-2, shift=0.0):
        super().__init__()
        self.shift = shift
        max_decay = math.log(target) / fast_decay_pct
        min_decay = math.log(target) / slow_decay_pct
        self.register_buffer("deltas", torch.linspace(min_decay, max_decay, d_model)[None, None])

    def forward(self, t, x):
        return x * (torch.exp(-t * self.deltas.abs()) + self.shift)


class HyenaFilter(nn.Module):
    def __init__(self, d_model, emb_dim=3, order=16, seq_len=1024, w=1, num_inner_mlps=2):
        super().__init__()
        self.d_model = d_model
        self.bias = nn.Parameter(torch.randn(self.d_model))
        assert emb_dim % 2 != 0 and emb_dim >= 3, "emb_dim must be odd and greater or equal to 3"
        self.pos_emb = PositionalEmbedding(emb_dim, seq_len)
        act = Sin(dim=order, w=w)
        layers = [nn.Linear(emb_dim, order), act]
        for _ in range(num_inner_mlps):
            layers += [nn.Linear(order, order), act]  # the same Sin is reused, as upstream does
        layers.append(nn.Linear(order, d_model, bias=False))
        self.implicit_filter = nn.Sequential(*layers)
        self.modulation = ExponentialModulation(d_model)

    def filter(self, L):
        z, t = self.pos_emb(L)
        return self.modulation(t, self.implicit_filter(z))

    def forward(self, x, L, k=None, bias=None):
        k = self.filter(L)[0].transpose(0, 1) if k is None else k
        return fftconv(x, k, self.bias if bias is None else bias)


class HyenaOperator(nn.Module):
    def __init__(self, d_model, l_max, order=2, filter_order=64, dropout=0.0, filter_dropout=0.0,
                 **filter_args):  # fmt: skip
        super().__init__()
        self.d_model, self.l_max, self.order = d_model, l_max, order
        inner_width = d_model * (order + 1)
        self.dropout = nn.Dropout(dropout)
        self.in_proj = nn.Linear(d_model, inner_width)
        self.out_proj = nn.Linear(d_model, d_model)
        self.short_filter = nn.Conv1d(inner_width, inner_width, 3, padding=2, groups=inner_width)
        self.filter_fn = HyenaFilter(d_model * (order - 1), order=filter_order, seq_len=l_max,
                                     **filter_args)  # fmt: skip
        self.filter_dropout = nn.Dropout(filter_dropout)

    def forward(self, u):
        L = min(u.size(-2), self.l_max)
        u = self.in_proj(u).transpose(1, 2)
        uc = self.short_filter(u)[..., :L]
        *x, v = uc.split(self.d_model, dim=1)
        k = self.filter_fn.filter(L)[0]
        k = k.transpose(0, 1).reshape(self.order - 1, self.d_model, L)
        bias = self.filter_fn.bias.reshape(self.order - 1, self.d_model)
        for o, x_i in enumerate(reversed(x[1:])):
            v = self.dropout(v * x_i)
            v = self.filter_fn(v, L, k=self.filter_dropout(k[o]), bias=bias[o])
        return self.out_proj((v * x[0]).transpose(1, 2))


class HyenaBlock(nn.Module):
    def __init__(self, d_model, l_max, mlp_ratio=2, **op_kwargs):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mixer = HyenaOperator(d_model, l_max, **op_kwargs)
        self.mlp = nn.Sequential(nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(),
                                 nn.Linear(mlp_ratio * d_model, d_model))  # fmt: skip

    def forward(self, x):
        x = x + self.mixer(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class LMOutput(NamedTuple):
    logits: torch.Tensor
    hidden_states: torch.Tensor


class HyenaLM(nn.Module):
    def __init__(self, vocab_size, d_model, n_layer, l_max, **block_kwargs):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(
            HyenaBlock(d_model, l_max, **block_kwargs) for _ in range(n_layer)
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.embeddings.weight  # tied

    def forward(self, input_ids):
        h = self.embeddings(input_ids)
        for layer in self.layers:
            h = layer(h)
        h = self.ln_f(h)
        return LMOutput(self.lm_head(h), h)


@heldout(
    "hyena_lm",
    lambda: ((torch.randint(0, 50, (2, 32), generator=torch.Generator().manual_seed(0)),), {}),
    edit=("layers.0.mixer", {"order": 3, "filter_order": 16}),
)
def hyena_lm():
    return HyenaLM(50, 32, n_layer=2, l_max=64, filter_order=24)


# --------------------------------------------------------------------------- spline KAN


class KANLinear(nn.Module):
    def __init__(self, in_features, out_features, grid_size=5, spline_order=3, scale_noise=0.1,
                 scale_base=1.0, scale_spline=1.0, base_activation=nn.SiLU, grid_eps=0.02,
                 grid_range=(-1, 1)):  # fmt: skip
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.grid_size, self.spline_order = grid_size, spline_order
        h = (grid_range[1] - grid_range[0]) / grid_size
        grid = torch.arange(-spline_order, grid_size + spline_order + 1) * h + grid_range[0]
        self.register_buffer("grid", grid.expand(in_features, -1).contiguous())
        self.base_weight = nn.Parameter(torch.empty(out_features, in_features))
        self.spline_weight = nn.Parameter(
            torch.empty(out_features, in_features, grid_size + spline_order)
        )
        self.spline_scaler = nn.Parameter(torch.empty(out_features, in_features))
        self.scale_base, self.scale_spline, self.scale_noise = scale_base, scale_spline, scale_noise
        self.base_activation = base_activation()
        self.grid_eps = grid_eps
        nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5) * self.scale_base)
        with torch.no_grad():
            nn.init.normal_(self.spline_weight, std=scale_noise / grid_size)
            nn.init.kaiming_uniform_(self.spline_scaler, a=math.sqrt(5) * self.scale_spline)

    def b_splines(self, x: torch.Tensor):
        grid = self.grid
        x = x.unsqueeze(-1)
        bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
        for k in range(1, self.spline_order + 1):
            bases = (
                (x - grid[:, : -(k + 1)]) / (grid[:, k:-1] - grid[:, : -(k + 1)]) * bases[:, :, :-1]
            ) + ((grid[:, k + 1 :] - x) / (grid[:, k + 1 :] - grid[:, 1:(-k)]) * bases[:, :, 1:])
        return bases.contiguous()

    @property
    def scaled_spline_weight(self):
        return self.spline_weight * self.spline_scaler.unsqueeze(-1)

    def forward(self, x: torch.Tensor):
        original_shape = x.shape
        x = x.reshape(-1, self.in_features)
        base_output = F.linear(self.base_activation(x), self.base_weight)
        spline_output = F.linear(
            self.b_splines(x).view(x.size(0), -1),
            self.scaled_spline_weight.view(self.out_features, -1),
        )
        return (base_output + spline_output).reshape(*original_shape[:-1], self.out_features)


class KAN(nn.Module):
    def __init__(
        self, layers_hidden, grid_size=5, spline_order=3, base_activation=nn.SiLU, **kwargs
    ):
        super().__init__()
        self.layers = nn.ModuleList(
            KANLinear(i, o, grid_size=grid_size, spline_order=spline_order,
                      base_activation=base_activation, **kwargs)
            for i, o in zip(layers_hidden, layers_hidden[1:])
        )  # fmt: skip

    def forward(self, x: torch.Tensor):
        for layer in self.layers:
            x = layer(x)
        return x

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        return sum(layer.spline_weight.abs().mean() for layer in self.layers)


@heldout("spline_kan", lambda: ((rand(16, 4).tanh(),), {}), edit=("layers.0", {"grid_size": 8}))
def spline_kan():
    return KAN([4, 16, 8, 2], grid_size=5, base_activation=nn.GELU)


# --------------------------------------------------------------------------- spiking LIF net


class FastSigmoid(torch.autograd.Function):
    scale = 25.0

    @staticmethod
    def forward(ctx, input_):
        ctx.save_for_backward(input_)
        return (input_ > 0).float()

    @staticmethod
    def backward(ctx, grad_output):
        (input_,) = ctx.saved_tensors
        return grad_output / (FastSigmoid.scale * torch.abs(input_) + 1.0) ** 2


class Leaky(nn.Module):
    """Leaky integrate-and-fire neuron with a learnable decay and subtractive reset."""

    def __init__(self, beta, threshold=1.0, learn_beta=False, reset_mechanism="subtract"):
        super().__init__()
        beta = torch.as_tensor(beta, dtype=torch.float32)
        if learn_beta:
            self.beta = nn.Parameter(beta)
        else:
            self.register_buffer("beta", beta)
        self.threshold = threshold
        self.reset_mechanism = reset_mechanism
        self.spike_grad = FastSigmoid.apply

    def forward(self, input_, mem=None):
        if mem is None:
            mem = torch.zeros_like(input_)
        reset = (mem - self.threshold > 0).float().detach()
        mem = self.beta.clamp(0, 1) * mem + input_
        if self.reset_mechanism == "subtract":
            mem = mem - reset * self.threshold
        else:
            mem = mem * (1 - reset)
        return self.spike_grad(mem - self.threshold), mem


class SpikingConvNet(nn.Module):
    def __init__(self, num_steps=8, beta=0.9, channels=(8, 16), num_outputs=10):
        super().__init__()
        self.num_steps = num_steps
        self.conv1 = nn.Conv2d(1, channels[0], 5, padding=2)
        self.lif1 = Leaky(beta=beta)
        self.conv2 = nn.Conv2d(channels[0], channels[1], 5, padding=2)
        self.lif2 = Leaky(beta=beta, learn_beta=True)
        self.fc = nn.Linear(channels[1] * 7 * 7, num_outputs)
        self.lif3 = Leaky(
            beta=torch.full((num_outputs,), beta), learn_beta=True, reset_mechanism="zero"
        )

    def forward(self, x):
        mem1 = mem2 = mem3 = None
        spk_rec, mem_rec = [], []
        for _ in range(self.num_steps):
            spk1, mem1 = self.lif1(F.max_pool2d(self.conv1(x), 2), mem1)
            spk2, mem2 = self.lif2(F.max_pool2d(self.conv2(spk1), 2), mem2)
            spk3, mem3 = self.lif3(self.fc(spk2.flatten(1)), mem3)
            spk_rec.append(spk3)
            mem_rec.append(mem3)
        return torch.stack(spk_rec), torch.stack(mem_rec)


@heldout("spiking_lif_convnet", lambda: ((rand(2, 1, 28, 28).abs() * 2,), {}))
def spiking_lif_convnet():
    return SpikingConvNet(num_steps=6)
