"""Scientific ML: a Fourier-feature PINN, a Hamiltonian NN, an ODE-Net with a hand-written RK4,
and SIREN."""

import math
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

from .spec import heldout, rand

# --------------------------------------------------------------------------------------------
# PINN for the viscous Burgers equation: Fourier feature embedding + "modified MLP" (gated by
# two encoders U and V), inputs normalised to [-1, 1] with the domain bounds kept as buffers
# --------------------------------------------------------------------------------------------

ACTIVATIONS = {
    "tanh": torch.tanh,
    "sin": torch.sin,
    "gelu": F.gelu,
    "swish": lambda x: x * torch.sigmoid(x),
}


class FourierFeatures(nn.Module):
    """gamma(x) = [cos(2 pi B x), sin(2 pi B x)] with B ~ N(0, sigma^2), fixed unless trainable."""

    def __init__(self, in_features, mapping_size=64, scale=10.0, trainable=False):
        super().__init__()
        B = torch.randn(in_features, mapping_size) * scale
        if trainable:
            self.B = nn.Parameter(B)
        else:
            self.register_buffer("B", B)

    def forward(self, x):
        x_proj = 2 * math.pi * x @ self.B
        return torch.cat([torch.cos(x_proj), torch.sin(x_proj)], dim=-1)


class ModifiedMLP(nn.Module):
    def __init__(self, layers, activation="tanh"):
        super().__init__()
        self.act = ACTIVATIONS[activation]
        self.U = nn.Linear(layers[0], layers[1])
        self.V = nn.Linear(layers[0], layers[1])
        self.hidden = nn.ModuleList(
            [nn.Linear(layers[i], layers[i + 1]) for i in range(len(layers) - 2)]
        )
        self.out = nn.Linear(layers[-2], layers[-1])
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_normal_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        U = self.act(self.U(x))
        V = self.act(self.V(x))
        H = x
        for layer in self.hidden:
            Z = self.act(layer(H))
            H = (1 - Z) * U + Z * V
        return self.out(H)


class BurgersPINN(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("lb", torch.tensor(cfg.lb, dtype=torch.float32))
        self.register_buffer("ub", torch.tensor(cfg.ub, dtype=torch.float32))
        if cfg.fourier:
            self.embedding = FourierFeatures(len(cfg.lb), cfg.n_fourier, cfg.sigma)
            width_in = 2 * cfg.n_fourier
        else:
            self.embedding = nn.Identity()
            width_in = len(cfg.lb)
        self.net = ModifiedMLP([width_in] + [cfg.width] * cfg.depth + [1], cfg.activation)
        self.nu = cfg.nu

    def forward(self, t, x):
        X = torch.cat([t, x], dim=1)
        X = 2.0 * (X - self.lb) / (self.ub - self.lb) - 1.0
        return self.net(self.embedding(X))

    def residual(self, t, x):
        """u_t + u u_x - nu u_xx, by automatic differentiation (used in the loss, not in forward)."""
        t.requires_grad_(True)
        x.requires_grad_(True)
        u = self(t, x)
        ones = torch.ones_like(u)
        u_t = torch.autograd.grad(u, t, ones, create_graph=True)[0]
        u_x = torch.autograd.grad(u, x, ones, create_graph=True)[0]
        u_xx = torch.autograd.grad(u_x, x, torch.ones_like(u_x), create_graph=True)[0]
        return u_t + u * u_x - self.nu * u_xx


PINN_CFG = SimpleNamespace(
    lb=[0.0, -1.0],
    ub=[1.0, 1.0],
    fourier=True,
    n_fourier=32,
    sigma=1.0,
    width=32,
    depth=4,
    activation="tanh",
    nu=0.01 / math.pi,
)


@heldout("pinn_fourier_burgers", lambda: ((rand(64, 1).abs(), rand(64, 1, seed=1).tanh()), {}))
def build_pinn():
    return BurgersPINN(PINN_CFG)


# --------------------------------------------------------------------------------------------
# Hamiltonian Neural Network (Greydanus et al., 2019)
# --------------------------------------------------------------------------------------------


def choose_nonlinearity(name):
    nl = None
    if name == "tanh":
        nl = torch.tanh
    elif name == "relu":
        nl = torch.relu
    elif name == "sigmoid":
        nl = torch.sigmoid
    elif name == "softplus":
        nl = torch.nn.functional.softplus
    elif name == "selu":
        nl = torch.nn.functional.selu
    elif name == "elu":
        nl = torch.nn.functional.elu
    elif name == "swish":

        def nl(x):
            return x * torch.sigmoid(x)

    else:
        raise ValueError("nonlinearity not recognized")
    return nl


class MLP(torch.nn.Module):
    """Just a salt-of-the-earth MLP"""

    def __init__(self, input_dim, hidden_dim, output_dim, nonlinearity="tanh"):
        super().__init__()
        self.linear1 = torch.nn.Linear(input_dim, hidden_dim)
        self.linear2 = torch.nn.Linear(hidden_dim, hidden_dim)
        self.linear3 = torch.nn.Linear(hidden_dim, output_dim, bias=None)

        for l in [self.linear1, self.linear2, self.linear3]:  # noqa: E741
            torch.nn.init.orthogonal_(l.weight)  # use a principled initialization

        self.nonlinearity = choose_nonlinearity(nonlinearity)

    def forward(self, x, separate_fields=False):
        h = self.nonlinearity(self.linear1(x))
        h = self.nonlinearity(self.linear2(h))
        return self.linear3(h)


class HNN(torch.nn.Module):
    """Learn arbitrary vector fields that are sums of conservative and solenoidal fields"""

    def __init__(
        self,
        input_dim,
        differentiable_model,
        field_type="solenoidal",
        baseline=False,
        assume_canonical_coords=True,
    ):
        super().__init__()
        self.baseline = baseline
        self.differentiable_model = differentiable_model
        self.assume_canonical_coords = assume_canonical_coords
        self.M = self.permutation_tensor(input_dim)  # Levi-Civita permutation tensor
        self.field_type = field_type

    def forward(self, x):
        # traditional forward pass
        if self.baseline:
            return self.differentiable_model(x)

        y = self.differentiable_model(x)
        assert y.dim() == 2 and y.shape[1] == 2, "Output tensor should have shape [batch_size, 2]"
        return y.split(1, 1)

    def time_derivative(self, x, t=None, separate_fields=False):
        """NEURAL ODE-STLE VECTOR FIELD"""
        if self.baseline:
            return self.differentiable_model(x)

        """NEURAL HAMILTONIAN-STLE VECTOR FIELD"""
        F1, F2 = self.forward(x)  # traditional forward pass

        conservative_field = torch.zeros_like(x)  # start out with both components set to 0
        solenoidal_field = torch.zeros_like(x)

        if self.field_type != "solenoidal":
            dF1 = torch.autograd.grad(F1.sum(), x, create_graph=True)[
                0
            ]  # gradients for conservative field
            conservative_field = dF1 @ torch.eye(*self.M.shape)

        if self.field_type != "conservative":
            dF2 = torch.autograd.grad(F2.sum(), x, create_graph=True)[
                0
            ]  # gradients for solenoidal field
            solenoidal_field = dF2 @ self.M.t()

        if separate_fields:
            return [conservative_field, solenoidal_field]

        return conservative_field + solenoidal_field

    def permutation_tensor(self, n):
        M = None
        if self.assume_canonical_coords:
            M = torch.eye(n)
            M = torch.cat([M[n // 2 :], -M[: n // 2]])
        else:
            """Constructs the Levi-Civita permutation tensor"""
            M = torch.ones(n, n)  # matrix of ones
            M *= 1 - torch.eye(n)  # clear diagonals
            M[::2] *= -1  # pattern of signs
            M[:, ::2] *= -1

            for i in range(n):  # make asymmetric
                for j in range(i + 1, n):
                    M[i, j] *= -1
        return M


@heldout(
    "hamiltonian_nn",
    lambda: ((rand(16, 2, seed=2),), {}),
    edit=("differentiable_model", {"hidden_dim": 48}),
)
def build_hnn():
    input_dim = 2
    output_dim = 2  # the conservative and the solenoidal potentials
    nn_model = MLP(input_dim, 32, output_dim, "tanh")
    return HNN(input_dim, differentiable_model=nn_model, field_type="solenoidal")


# --------------------------------------------------------------------------------------------
# ODE-Net for MNIST (Chen et al., 2018), integrated with a fixed-step RK4 written by hand
# --------------------------------------------------------------------------------------------


def norm(dim):
    return nn.GroupNorm(min(32, dim), dim)


class ConcatConv2d(nn.Module):
    def __init__(
        self,
        dim_in,
        dim_out,
        ksize=3,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        transpose=False,
    ):
        super().__init__()
        module = nn.ConvTranspose2d if transpose else nn.Conv2d
        self._layer = module(
            dim_in + 1,
            dim_out,
            kernel_size=ksize,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            bias=bias,
        )

    def forward(self, t, x):
        tt = torch.ones_like(x[:, :1, :, :]) * t
        ttx = torch.cat([tt, x], 1)
        return self._layer(ttx)


class ODEfunc(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm1 = norm(dim)
        self.relu = nn.ReLU(inplace=True)
        self.conv1 = ConcatConv2d(dim, dim, 3, 1, 1)
        self.norm2 = norm(dim)
        self.conv2 = ConcatConv2d(dim, dim, 3, 1, 1)
        self.norm3 = norm(dim)
        self.nfe = 0

    def forward(self, t, x):
        self.nfe += 1
        out = self.norm1(x)
        out = self.relu(out)
        out = self.conv1(t, out)
        out = self.norm2(out)
        out = self.relu(out)
        out = self.conv2(t, out)
        out = self.norm3(out)
        return out


def rk4_step(func, t0, dt, y0):
    k1 = func(t0, y0)
    k2 = func(t0 + dt / 2, y0 + dt * k1 / 2)
    k3 = func(t0 + dt / 2, y0 + dt * k2 / 2)
    k4 = func(t0 + dt, y0 + dt * k3)
    return y0 + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6


def odeint_rk4(func, y0, t):
    """Solution at every time in `t`, stacked on a new first dimension."""
    ys = [y0]
    for t0, t1 in zip(t[:-1], t[1:]):
        ys.append(rk4_step(func, t0, t1 - t0, ys[-1]))
    return torch.stack(ys)


class ODEBlock(nn.Module):
    def __init__(self, odefunc, steps=4, t1=1.0):
        super().__init__()
        self.odefunc = odefunc
        self.register_buffer("integration_time", torch.linspace(0, t1, steps + 1))

    def forward(self, x):
        out = odeint_rk4(self.odefunc, x, self.integration_time.type_as(x))
        return out[-1]

    @property
    def nfe(self):
        return self.odefunc.nfe

    @nfe.setter
    def nfe(self, value):
        self.odefunc.nfe = value


class Flatten(nn.Module):
    def forward(self, x):
        shape = torch.prod(torch.tensor(x.shape[1:])).item()
        return x.view(-1, shape)


@heldout("odenet_rk4_mnist", lambda: ((rand(2, 1, 28, 28, seed=3),), {}), edit=("7", {"steps": 2}))
def build_odenet():
    dim = 16
    downsampling_layers = [
        nn.Conv2d(1, dim, 3, 1),
        norm(dim),
        nn.ReLU(inplace=True),
        nn.Conv2d(dim, dim, 4, 2, 1),
        norm(dim),
        nn.ReLU(inplace=True),
        nn.Conv2d(dim, dim, 4, 2, 1),
    ]
    feature_layers = [ODEBlock(ODEfunc(dim))]
    fc_layers = [
        norm(dim),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d((1, 1)),
        Flatten(),
        nn.Linear(dim, 10),
    ]
    return nn.Sequential(*downsampling_layers, *feature_layers, *fc_layers)


# --------------------------------------------------------------------------------------------
# SIREN (Sitzmann et al., 2020): sine activations with the paper's initialisation
# --------------------------------------------------------------------------------------------


class SineLayer(nn.Module):
    # If is_first=True, omega_0 is a frequency factor which simply multiplies the activations
    # before the nonlinearity. Hidden layers divide their weights by omega_0 so that the input
    # to sin stays in the same range.

    def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30):
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first

        self.in_features = in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)

        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features, 1 / self.in_features)
            else:
                bound = math.sqrt(6 / self.in_features) / self.omega_0
                self.linear.weight.uniform_(-bound, bound)

    def forward(self, input):
        return torch.sin(self.omega_0 * self.linear(input))


class Siren(nn.Module):
    def __init__(
        self,
        in_features,
        hidden_features,
        hidden_layers,
        out_features,
        outermost_linear=False,
        first_omega_0=30,
        hidden_omega_0=30.0,
    ):
        super().__init__()

        self.net = []
        self.net.append(
            SineLayer(in_features, hidden_features, is_first=True, omega_0=first_omega_0)
        )

        for i in range(hidden_layers):  # noqa: B007
            self.net.append(
                SineLayer(hidden_features, hidden_features, is_first=False, omega_0=hidden_omega_0)
            )

        if outermost_linear:
            final_linear = nn.Linear(hidden_features, out_features)

            with torch.no_grad():
                bound = math.sqrt(6 / hidden_features) / hidden_omega_0
                final_linear.weight.uniform_(-bound, bound)

            self.net.append(final_linear)
        else:
            self.net.append(
                SineLayer(hidden_features, out_features, is_first=False, omega_0=hidden_omega_0)
            )

        self.net = nn.Sequential(*self.net)

    def forward(self, coords):
        coords = (
            coords.clone().detach().requires_grad_(True)
        )  # allows to take derivative w.r.t. input
        output = self.net(coords)
        return output, coords


def get_mgrid(sidelen, dim=2):
    """Generates a flattened grid of (x,y,...) coordinates in a range of -1 to 1."""
    tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
    mgrid = torch.stack(torch.meshgrid(*tensors, indexing="ij"), dim=-1)
    mgrid = mgrid.reshape(-1, dim)
    return mgrid


@heldout(
    "siren_image",
    lambda: ((get_mgrid(16, 2).unsqueeze(0),), {}),
)
def build_siren():
    return Siren(
        in_features=2, out_features=3, hidden_features=32, hidden_layers=2, outermost_linear=True
    )
