"""Neural processes: a conditional neural process and an attentive neural process with a latent
path (Kim et al. 2019), as in the DeepMind notebook ports."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


class BatchMLP(nn.Module):
    """MLP applied to the last axis of a (B, N, d) tensor, ReLU between layers."""

    def __init__(self, input_size, output_sizes, act=F.relu):
        super().__init__()
        self.act = act
        sizes = [input_size] + list(output_sizes)
        self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])])

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = self.act(x)
        return x


class DeterministicEncoder(nn.Module):
    def __init__(self, output_sizes, x_dim=1, y_dim=1, attention=None):
        super().__init__()
        self._mlp = BatchMLP(x_dim + y_dim, output_sizes)
        self._attention = attention

    def forward(self, context_x, context_y, target_x=None):
        encoder_input = torch.cat([context_x, context_y], dim=-1)
        hidden = self._mlp(encoder_input)
        if self._attention is None:
            return hidden.mean(dim=1)
        return self._attention(context_x, target_x, hidden)


class LatentEncoder(nn.Module):
    def __init__(self, output_sizes, num_latents, x_dim=1, y_dim=1):
        super().__init__()
        self._mlp = BatchMLP(x_dim + y_dim, output_sizes)
        hidden = output_sizes[-1]
        self.penultimate = nn.Linear(hidden, (hidden + num_latents) // 2)
        self.mean = nn.Linear((hidden + num_latents) // 2, num_latents)
        self.log_sigma = nn.Linear((hidden + num_latents) // 2, num_latents)

    def forward(self, x, y):
        hidden = self._mlp(torch.cat([x, y], dim=-1)).mean(dim=1)
        hidden = F.relu(self.penultimate(hidden))
        mu = self.mean(hidden)
        sigma = 0.1 + 0.9 * torch.sigmoid(self.log_sigma(hidden))
        return torch.distributions.Normal(mu, sigma)


class Decoder(nn.Module):
    def __init__(self, output_sizes, in_size):
        super().__init__()
        self._mlp = BatchMLP(in_size, output_sizes)

    def forward(self, representation, target_x):
        hidden = torch.cat([representation, target_x], dim=-1)
        hidden = self._mlp(hidden)
        mu, log_sigma = torch.chunk(hidden, 2, dim=-1)
        sigma = 0.1 + 0.9 * F.softplus(log_sigma)
        return mu, sigma


class Attention(nn.Module):
    """The notebook's attention: rep in {identity, mlp}, att_type in {uniform, laplace, dot_product, multihead}."""

    def __init__(
        self, rep, output_sizes, att_type, scale=1.0, normalise=True, num_heads=8, x_dim=1
    ):
        super().__init__()
        self._rep = rep
        self._type = att_type
        self._scale = scale
        self._normalise = normalise
        if self._rep == "mlp":
            self._mlp_k = BatchMLP(x_dim, output_sizes)
            self._mlp_q = BatchMLP(x_dim, output_sizes)
        if self._type == "multihead":
            d = output_sizes[-1]
            self._num_heads = num_heads
            self._mha = nn.MultiheadAttention(d, num_heads, batch_first=True)

    def forward(self, x1, x2, r):
        if self._rep == "identity":
            k, q = x1, x2
        elif self._rep == "mlp":
            k = self._mlp_k(x1)
            q = self._mlp_q(x2)
        else:
            raise NameError("'rep' not among ['identity','mlp']")

        if self._type == "uniform":
            rep = r.mean(dim=1, keepdim=True).expand(-1, q.size(1), -1)
        elif self._type == "laplace":
            w = -torch.abs(k.unsqueeze(1) - q.unsqueeze(2)).sum(-1) / self._scale
            w = torch.softmax(w, -1) if self._normalise else 1 + torch.tanh(w)
            rep = torch.einsum("bik,bkj->bij", w, r)
        elif self._type == "dot_product":
            w = torch.einsum("bjk,bik->bij", k, q) / (q.size(-1) ** 0.5)
            w = torch.softmax(w, -1) if self._normalise else torch.sigmoid(w)
            rep = torch.einsum("bik,bkj->bij", w, r)
        elif self._type == "multihead":
            rep, _ = self._mha(q, k, r, need_weights=False)
        else:
            raise NameError("'att_type' not among ['uniform','laplace','dot_product','multihead']")
        return rep


class CNP(nn.Module):
    def __init__(self, encoder_output_sizes, decoder_output_sizes):
        super().__init__()
        self._encoder = DeterministicEncoder(encoder_output_sizes)
        self._decoder = Decoder(decoder_output_sizes, encoder_output_sizes[-1] + 1)

    def forward(self, query, num_total_points, target_y=None):
        (context_x, context_y), target_x = query
        representation = self._encoder(context_x, context_y)
        representation = representation.unsqueeze(1).expand(-1, num_total_points, -1)
        mu, sigma = self._decoder(representation, target_x)
        if target_y is not None:
            log_p = torch.distributions.Normal(mu, sigma).log_prob(target_y)
            return log_p, mu, sigma
        return None, mu, sigma


def _np_query(with_target=True):
    B, Nc, Nt = 4, 10, 25
    cx = torch.rand(B, Nc, 1, generator=torch.Generator().manual_seed(0)) * 4 - 2
    tx = torch.linspace(-2, 2, Nt).view(1, Nt, 1).expand(B, -1, -1).contiguous()
    cy, ty = torch.sin(cx * 3), torch.sin(tx * 3) + 0.05 * rand(B, Nt, 1)
    return (((cx, cy), tx), Nt), ({"target_y": ty} if with_target else {})


@heldout("cnp_1d_regression", _np_query)
def build_cnp():
    return CNP([32, 32, 32, 32], [32, 32, 2])


class LatentModel(nn.Module):
    """(Attentive) neural process with deterministic and latent paths."""

    def __init__(self, latent_encoder_output_sizes, num_latents, decoder_output_sizes, use_deterministic_path=True, deterministic_encoder_output_sizes=None, attention=None):  # fmt: skip
        super().__init__()
        self._latent_encoder = LatentEncoder(latent_encoder_output_sizes, num_latents)
        self._use_deterministic_path = use_deterministic_path
        dec_in = num_latents + 1
        if use_deterministic_path:
            self._deterministic_encoder = DeterministicEncoder(
                deterministic_encoder_output_sizes, attention=attention
            )
            dec_in += deterministic_encoder_output_sizes[-1]
        self._decoder = Decoder(decoder_output_sizes, dec_in)

    def forward(self, query, num_targets, target_y=None):
        (context_x, context_y), target_x = query
        prior = self._latent_encoder(context_x, context_y)
        if target_y is None:
            latent_rep = prior.sample()
        else:
            posterior = self._latent_encoder(target_x, target_y)
            latent_rep = posterior.sample()
        latent_rep = latent_rep.unsqueeze(1).expand(-1, num_targets, -1)
        if self._use_deterministic_path:
            deterministic_rep = self._deterministic_encoder(context_x, context_y, target_x)
            representation = torch.cat([deterministic_rep, latent_rep], dim=-1)
        else:
            representation = latent_rep
        mu, sigma = self._decoder(representation, target_x)
        if target_y is not None:
            dist = torch.distributions.Normal(mu, sigma)
            log_p = dist.log_prob(target_y).sum(-1)
            kl = torch.distributions.kl_divergence(posterior, prior).sum(-1, keepdim=True)
            loss = -torch.mean(log_p - kl / num_targets)
            return mu, sigma, log_p, kl, loss
        return mu, sigma, None, None, None


HIDDEN = 32
ATTENTION_TYPE = "multihead"


@heldout("anp_multihead", _np_query)
def build_anp():
    attention = Attention(
        rep="mlp", output_sizes=[HIDDEN, HIDDEN], att_type=ATTENTION_TYPE, num_heads=4
    )
    return LatentModel([HIDDEN] * 3, HIDDEN, [HIDDEN, HIDDEN, 2], use_deterministic_path=True, deterministic_encoder_output_sizes=[HIDDEN] * 3, attention=attention)  # fmt: skip


@heldout("anp_laplace", lambda: _np_query(with_target=False))
def build_anp_laplace():
    attention = Attention(
        rep="identity", output_sizes=[HIDDEN, HIDDEN], att_type="laplace", scale=0.5
    )
    return LatentModel([HIDDEN] * 2, 16, [HIDDEN, 2], deterministic_encoder_output_sizes=[HIDDEN] * 2, attention=attention)  # fmt: skip
