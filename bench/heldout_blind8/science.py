"""Protein and chemistry toys: an Evoformer-lite block (MSA row/column attention, outer product
mean, triangle updates), SchNet continuous-filter convolutions and a DimeNet-lite directional
message passing net over dense triplets."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------- Evoformer-lite


class Linear(nn.Linear):
    """Linear with the AlphaFold init schemes chosen by name."""

    def __init__(self, in_dim, out_dim, bias=True, init="default"):
        super().__init__(in_dim, out_dim, bias=bias)
        if bias:
            with torch.no_grad():
                self.bias.fill_(0)
        if init == "relu":
            nn.init.kaiming_normal_(self.weight, nonlinearity="relu")
        elif init == "final":
            with torch.no_grad():
                self.weight.fill_(0.0)
        elif init == "gating":
            with torch.no_grad():
                self.weight.fill_(0.0)
                if bias:
                    self.bias.fill_(1.0)
        elif init == "glorot":
            nn.init.xavier_uniform_(self.weight, gain=1)


class GatedAttention(nn.Module):
    def __init__(self, c_q, c_hidden, no_heads, gating=True):
        super().__init__()
        self.c_hidden = c_hidden
        self.no_heads = no_heads
        self.gating = gating
        self.linear_q = Linear(c_q, c_hidden * no_heads, bias=False, init="glorot")
        self.linear_k = Linear(c_q, c_hidden * no_heads, bias=False, init="glorot")
        self.linear_v = Linear(c_q, c_hidden * no_heads, bias=False, init="glorot")
        self.linear_o = Linear(c_hidden * no_heads, c_q, init="final")
        self.linear_g = Linear(c_q, c_hidden * no_heads, init="gating") if gating else None

    def forward(self, x, biases=()):
        *lead, n, _ = x.shape
        q = self.linear_q(x).view(*lead, n, self.no_heads, self.c_hidden).transpose(-2, -3)
        k = self.linear_k(x).view(*lead, n, self.no_heads, self.c_hidden).transpose(-2, -3)
        v = self.linear_v(x).view(*lead, n, self.no_heads, self.c_hidden).transpose(-2, -3)
        a = q @ k.transpose(-1, -2) / math.sqrt(self.c_hidden)
        for b in biases:
            a = a + b
        o = (a.softmax(-1) @ v).transpose(-2, -3)
        if self.linear_g is not None:
            g = torch.sigmoid(self.linear_g(x)).view(*lead, n, self.no_heads, self.c_hidden)
            o = o * g
        return self.linear_o(o.reshape(*lead, n, -1))


class MSARowAttentionWithPairBias(nn.Module):
    def __init__(self, c_m, c_z, c_hidden, no_heads):
        super().__init__()
        self.layer_norm_m = nn.LayerNorm(c_m)
        self.layer_norm_z = nn.LayerNorm(c_z)
        self.linear_z = Linear(c_z, no_heads, bias=False, init="normal")
        self.mha = GatedAttention(c_m, c_hidden, no_heads)

    def forward(self, m, z):
        m = self.layer_norm_m(m)
        bias = self.linear_z(self.layer_norm_z(z)).permute(0, 3, 1, 2).unsqueeze(1)
        return self.mha(m, biases=(bias,))


class MSAColumnAttention(nn.Module):
    def __init__(self, c_m, c_hidden, no_heads):
        super().__init__()
        self.layer_norm_m = nn.LayerNorm(c_m)
        self.mha = GatedAttention(c_m, c_hidden, no_heads)

    def forward(self, m):
        m = m.transpose(-2, -3)
        m = self.mha(self.layer_norm_m(m))
        return m.transpose(-2, -3)


class Transition(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.layer_norm = nn.LayerNorm(c)
        self.linear_1 = Linear(c, n * c, init="relu")
        self.relu = nn.ReLU()
        self.linear_2 = Linear(n * c, c, init="final")

    def forward(self, x):
        return self.linear_2(self.relu(self.linear_1(self.layer_norm(x))))


class OuterProductMean(nn.Module):
    def __init__(self, c_m, c_z, c_hidden, eps=1e-3):
        super().__init__()
        self.eps = eps
        self.layer_norm = nn.LayerNorm(c_m)
        self.linear_1 = Linear(c_m, c_hidden)
        self.linear_2 = Linear(c_m, c_hidden)
        self.linear_out = Linear(c_hidden**2, c_z, init="final")

    def forward(self, m):
        m = self.layer_norm(m)
        a, b = self.linear_1(m), self.linear_2(m)
        outer = torch.einsum("...sic,...sjd->...ijcd", a, b)
        outer = outer.reshape(outer.shape[:-2] + (-1,))
        return self.linear_out(outer) / (self.eps + m.shape[-3])


class TriangleMultiplicativeUpdate(nn.Module):
    _outgoing = True

    def __init__(self, c_z, c_hidden):
        super().__init__()
        self.layer_norm_in = nn.LayerNorm(c_z)
        self.linear_a_p = Linear(c_z, c_hidden)
        self.linear_a_g = Linear(c_z, c_hidden, init="gating")
        self.linear_b_p = Linear(c_z, c_hidden)
        self.linear_b_g = Linear(c_z, c_hidden, init="gating")
        self.linear_g = Linear(c_z, c_z, init="gating")
        self.linear_z = Linear(c_hidden, c_z, init="final")
        self.layer_norm_out = nn.LayerNorm(c_hidden)

    def _combine(self, a, b):
        if self._outgoing:
            return torch.einsum("bikc,bjkc->bijc", a, b)
        return torch.einsum("bkic,bkjc->bijc", a, b)

    def forward(self, z):
        z = self.layer_norm_in(z)
        a = self.linear_a_p(z) * torch.sigmoid(self.linear_a_g(z))
        b = self.linear_b_p(z) * torch.sigmoid(self.linear_b_g(z))
        x = self.linear_z(self.layer_norm_out(self._combine(a, b)))
        return x * torch.sigmoid(self.linear_g(z))


class TriangleMultiplicationOutgoing(TriangleMultiplicativeUpdate):
    _outgoing = True


class TriangleMultiplicationIncoming(TriangleMultiplicativeUpdate):
    _outgoing = False


class EvoformerBlock(nn.Module):
    def __init__(
        self,
        c_m,
        c_z,
        c_hidden_msa_att=8,
        c_hidden_opm=4,
        c_hidden_mul=8,
        no_heads_msa=2,
        transition_n=2,
        msa_dropout=0.15,
        pair_dropout=0.25,
    ):
        super().__init__()
        self.msa_att_row = MSARowAttentionWithPairBias(c_m, c_z, c_hidden_msa_att, no_heads_msa)
        self.msa_att_col = MSAColumnAttention(c_m, c_hidden_msa_att, no_heads_msa)
        self.msa_transition = Transition(c_m, transition_n)
        self.outer_product_mean = OuterProductMean(c_m, c_z, c_hidden_opm)
        self.tri_mul_out = TriangleMultiplicationOutgoing(c_z, c_hidden_mul)
        self.tri_mul_in = TriangleMultiplicationIncoming(c_z, c_hidden_mul)
        self.pair_transition = Transition(c_z, transition_n)
        self.msa_dropout = nn.Dropout(msa_dropout)
        self.pair_dropout = nn.Dropout(pair_dropout)

    def forward(self, m, z):
        m = m + self.msa_dropout(self.msa_att_row(m, z))
        m = m + self.msa_att_col(m)
        m = m + self.msa_transition(m)
        z = z + self.outer_product_mean(m)
        z = z + self.pair_dropout(self.tri_mul_out(z))
        z = z + self.pair_dropout(self.tri_mul_in(z))
        z = z + self.pair_transition(z)
        return m, z


class EvoformerStack(nn.Module):
    def __init__(self, c_m=16, c_z=8, c_s=24, no_blocks=2, **block_kwargs):
        super().__init__()
        self.blocks = nn.ModuleList(
            EvoformerBlock(c_m, c_z, **block_kwargs) for _ in range(no_blocks)
        )
        self.linear = Linear(c_m, c_s)

    def forward(self, m, z):
        for b in self.blocks:
            m, z = b(m, z)
        s = self.linear(m[..., 0, :, :])
        return m, z, s


@heldout(
    "evoformer_lite",
    lambda: ((rand(1, 4, 8, 16), rand(1, 8, 8, 8, seed=1)), {}),
    edit=("blocks.1.outer_product_mean", {"c_hidden": 2}),
)
def build_evoformer():
    return EvoformerStack(c_m=16, c_z=8, c_s=24, no_blocks=2, no_heads_msa=4, transition_n=2)


# ----------------------------------------------------------------------------- SchNet


class ShiftedSoftplus(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = torch.log(torch.tensor(2.0)).item()

    def forward(self, x):
        return F.softplus(x) - self.shift


class GaussianSmearing(nn.Module):
    def __init__(self, start=0.0, stop=5.0, num_gaussians=50):
        super().__init__()
        offset = torch.linspace(start, stop, num_gaussians)
        self.coeff = -0.5 / (offset[1] - offset[0]).item() ** 2
        self.register_buffer("offset", offset)

    def forward(self, dist):
        dist = dist.unsqueeze(-1) - self.offset
        return torch.exp(self.coeff * torch.pow(dist, 2))


class CFConv(nn.Module):
    def __init__(self, in_channels, out_channels, num_filters, nn_filter, cutoff):
        super().__init__()
        self.lin1 = nn.Linear(in_channels, num_filters, bias=False)
        self.lin2 = nn.Linear(num_filters, out_channels)
        self.nn = nn_filter
        self.cutoff = cutoff

    def forward(self, x, dist, edge_attr, adj):
        C = 0.5 * (torch.cos(dist * math.pi / self.cutoff) + 1.0) * adj
        W = self.nn(edge_attr) * C.unsqueeze(-1)
        x = self.lin1(x)
        x = torch.einsum("ijf,jf->if", W, x)
        return self.lin2(x)


class InteractionBlock(nn.Module):
    def __init__(self, hidden_channels, num_gaussians, num_filters, cutoff):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(num_gaussians, num_filters),
            ShiftedSoftplus(),
            nn.Linear(num_filters, num_filters),
        )
        self.conv = CFConv(hidden_channels, hidden_channels, num_filters, self.mlp, cutoff)
        self.act = ShiftedSoftplus()
        self.lin = nn.Linear(hidden_channels, hidden_channels)

    def forward(self, x, dist, edge_attr, adj):
        return self.lin(self.act(self.conv(x, dist, edge_attr, adj)))


class SchNet(nn.Module):
    def __init__(
        self,
        hidden_channels=32,
        num_filters=16,
        num_interactions=3,
        num_gaussians=20,
        cutoff=5.0,
        readout="add",
    ):
        super().__init__()
        self.readout = readout
        self.cutoff = cutoff
        self.embedding = nn.Embedding(100, hidden_channels, padding_idx=0)
        self.distance_expansion = GaussianSmearing(0.0, cutoff, num_gaussians)
        self.interactions = nn.ModuleList(
            [
                InteractionBlock(hidden_channels, num_gaussians, num_filters, cutoff)
                for _ in range(num_interactions)
            ]
        )
        self.lin1 = nn.Linear(hidden_channels, hidden_channels // 2)
        self.act = ShiftedSoftplus()
        self.lin2 = nn.Linear(hidden_channels // 2, 1)

    def forward(self, z, pos, batch):
        h = self.embedding(z)
        dist = torch.cdist(pos, pos)
        same = batch.unsqueeze(0) == batch.unsqueeze(1)
        adj = (same & (dist < self.cutoff) & ~torch.eye(len(z), dtype=torch.bool)).float()
        edge_attr = self.distance_expansion(dist)
        for interaction in self.interactions:
            h = h + interaction(h, dist, edge_attr, adj)
        h = self.lin2(self.act(self.lin1(h)))
        n_graphs = int(batch.max()) + 1
        out = torch.zeros(n_graphs, 1).index_add_(0, batch, h)
        if self.readout == "mean":
            out = out / torch.bincount(batch, minlength=n_graphs).unsqueeze(-1)
        return out


def _molecules():
    z = torch.tensor([6, 1, 1, 1, 1, 8, 1, 1, 6, 6, 8])
    batch = torch.tensor([0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2])
    return (z, rand(11, 3, seed=2) * 1.5, batch), {}


@heldout(
    "schnet_cfconv",
    _molecules,
    edit=("interactions.1", {"num_filters": 8}),
)
def build_schnet():
    return SchNet()


# ----------------------------------------------------------------------------- DimeNet-lite


class BesselBasis(nn.Module):
    def __init__(self, num_radial, cutoff=5.0, envelope_exponent=5):
        super().__init__()
        self.cutoff = cutoff
        self.p = envelope_exponent + 1
        self.freq = nn.Parameter(torch.arange(1, num_radial + 1).float() * math.pi)

    def envelope(self, x):
        p = self.p
        a, b, c = -(p + 1) * (p + 2) / 2, p * (p + 2), -p * (p + 1) / 2
        return 1.0 / x + a * x ** (p - 1) + b * x**p + c * x ** (p + 1)

    def forward(self, dist):
        d = (dist / self.cutoff).clamp(min=1e-3).unsqueeze(-1)
        return self.envelope(d) * torch.sin(self.freq * d) * (d < 1).float()


class SphericalBasisLite(nn.Module):
    """Radial Bessel terms times Legendre polynomials of the bond angle."""

    def __init__(self, num_spherical, num_radial, cutoff=5.0):
        super().__init__()
        self.num_spherical = num_spherical
        self.radial = BesselBasis(num_radial, cutoff)

    def legendre(self, x):
        out = [torch.ones_like(x), x]
        for n in range(1, self.num_spherical - 1):
            out.append(((2 * n + 1) * x * out[n] - n * out[n - 1]) / (n + 1))
        return torch.stack(out[: self.num_spherical], -1)

    def forward(self, dist, cos_angle):
        rbf = self.radial(dist)  # (N, N, R)
        cbf = self.legendre(cos_angle)  # (N, N, N, S)
        return (cbf.unsqueeze(-1) * rbf[None, :, :, None, :]).flatten(-2)


class ResidualLayer(nn.Module):
    def __init__(self, hidden, act=F.silu):
        super().__init__()
        self.lin1 = nn.Linear(hidden, hidden)
        self.lin2 = nn.Linear(hidden, hidden)
        self.act = act

    def forward(self, x):
        return x + self.act(self.lin2(self.act(self.lin1(x))))


class EmbeddingBlock(nn.Module):
    def __init__(self, num_radial, hidden, act=F.silu):
        super().__init__()
        self.act = act
        self.emb = nn.Embedding(95, hidden)
        self.lin_rbf = nn.Linear(num_radial, hidden)
        self.lin = nn.Linear(3 * hidden, hidden)

    def forward(self, z, rbf):
        x = self.emb(z)
        n = x.shape[0]
        rbf = self.act(self.lin_rbf(rbf))
        xi = x.unsqueeze(1).expand(n, n, -1)
        xj = x.unsqueeze(0).expand(n, n, -1)
        return self.act(self.lin(torch.cat([xi, xj, rbf], -1)))


class InteractionPPBlock(nn.Module):
    def __init__(
        self,
        hidden,
        int_emb_size,
        basis_emb_size,
        num_spherical,
        num_radial,
        num_before_skip=1,
        num_after_skip=1,
        act=F.silu,
    ):
        super().__init__()
        self.act = act
        self.lin_rbf1 = nn.Linear(num_radial, basis_emb_size, bias=False)
        self.lin_rbf2 = nn.Linear(basis_emb_size, hidden, bias=False)
        self.lin_sbf1 = nn.Linear(num_spherical * num_radial, basis_emb_size, bias=False)
        self.lin_sbf2 = nn.Linear(basis_emb_size, int_emb_size, bias=False)
        self.lin_kj = nn.Linear(hidden, hidden)
        self.lin_ji = nn.Linear(hidden, hidden)
        self.lin_down = nn.Linear(hidden, int_emb_size, bias=False)
        self.lin_up = nn.Linear(int_emb_size, hidden, bias=False)
        self.layers_before_skip = nn.ModuleList(
            [ResidualLayer(hidden, act) for _ in range(num_before_skip)]
        )
        self.lin = nn.Linear(hidden, hidden)
        self.layers_after_skip = nn.ModuleList(
            [ResidualLayer(hidden, act) for _ in range(num_after_skip)]
        )

    def forward(self, m, rbf, sbf, mask3):
        x_ji = self.act(self.lin_ji(m))
        x_kj = self.act(self.lin_kj(m)) * self.lin_rbf2(self.lin_rbf1(rbf))
        x_kj = self.act(self.lin_down(x_kj))  # (k, j, I)
        s = self.lin_sbf2(self.lin_sbf1(sbf))  # (k, j, i, I)
        # message k->j, then j->i, weighted by the angle k-j-i
        x_kj = torch.einsum("kjI,kjiI,kji->jiI", x_kj, s, mask3)
        h = x_ji + self.act(self.lin_up(x_kj))
        for layer in self.layers_before_skip:
            h = layer(h)
        h = self.act(self.lin(h)) + m
        for layer in self.layers_after_skip:
            h = layer(h)
        return h


class OutputBlock(nn.Module):
    def __init__(self, num_radial, hidden, out_channels, num_layers=1, act=F.silu):
        super().__init__()
        self.act = act
        self.lin_rbf = nn.Linear(num_radial, hidden, bias=False)
        self.lins = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(num_layers)])
        self.lin = nn.Linear(hidden, out_channels, bias=False)

    def forward(self, m, rbf, adj):
        x = (self.lin_rbf(rbf) * m * adj.unsqueeze(-1)).sum(1)
        for lin in self.lins:
            x = self.act(lin(x))
        return self.lin(x)


class DimeNetLite(nn.Module):
    def __init__(
        self,
        hidden=16,
        out_channels=1,
        num_blocks=2,
        int_emb_size=8,
        basis_emb_size=4,
        num_spherical=3,
        num_radial=4,
        cutoff=5.0,
    ):
        super().__init__()
        self.cutoff = cutoff
        self.rbf = BesselBasis(num_radial, cutoff)
        self.sbf = SphericalBasisLite(num_spherical, num_radial, cutoff)
        self.emb = EmbeddingBlock(num_radial, hidden)
        self.output_blocks = nn.ModuleList(
            [OutputBlock(num_radial, hidden, out_channels) for _ in range(num_blocks + 1)]
        )
        self.interaction_blocks = nn.ModuleList(
            [
                InteractionPPBlock(hidden, int_emb_size, basis_emb_size, num_spherical, num_radial)
                for _ in range(num_blocks)
            ]
        )

    def forward(self, z, pos):
        n = z.shape[0]
        vec = pos.unsqueeze(0) - pos.unsqueeze(1)  # vec[j, i] = pos_i - pos_j
        dist = vec.norm(dim=-1)
        eye = torch.eye(n, dtype=torch.bool)
        adj = ((dist < self.cutoff) & ~eye).float()
        # angle at j between k->j and j->i
        cos = torch.einsum("kjd,jid->kji", vec, vec) / (
            dist.unsqueeze(-1) * dist.unsqueeze(0) + 1e-9
        )
        mask3 = adj.unsqueeze(-1) * adj.unsqueeze(0)
        mask3 = mask3 * (1 - torch.eye(n)).unsqueeze(1)  # k != i
        rbf = self.rbf(dist)
        sbf = self.sbf(dist, cos.clamp(-1, 1))
        m = self.emb(z, rbf)
        P = self.output_blocks[0](m, rbf, adj)
        for inter, out in zip(self.interaction_blocks, self.output_blocks[1:]):
            m = inter(m, rbf, sbf, mask3)
            P = P + out(m, rbf, adj)
        return P.sum(0)


@heldout("dimenet_lite", lambda: ((torch.tensor([6, 1, 1, 8, 1, 6, 1]), rand(7, 3, seed=3)), {}))
def build_dimenet():
    return DimeNetLite()
