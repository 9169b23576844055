"""Generative models: a VQ-VAE with an EMA codebook, a RealNVP flow of affine couplings, a
conditional VAE configured by an argparse namespace, a DCGAN pair and a hypernetwork."""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------------------------
# VQ-VAE (van den Oord et al. 2017) with an exponential-moving-average codebook.


class Residual(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_hiddens):
        super().__init__()
        self._block = nn.Sequential(
            nn.ReLU(True),
            nn.Conv2d(in_channels, num_residual_hiddens, 3, 1, 1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(num_residual_hiddens, num_hiddens, 1, 1, bias=False),
        )

    def forward(self, x):
        return x + self._block(x)


class ResidualStack(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_layers, num_residual_hiddens):
        super().__init__()
        self._num_residual_layers = num_residual_layers
        self._layers = nn.ModuleList(
            [Residual(in_channels, num_hiddens, num_residual_hiddens)
             for _ in range(self._num_residual_layers)]
        )  # fmt: skip

    def forward(self, x):
        for layer in self._layers:
            x = layer(x)
        return F.relu(x)


class VectorQuantizerEMA(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost, decay, epsilon=1e-5):
        super().__init__()
        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings
        self._embedding = nn.Embedding(self._num_embeddings, self._embedding_dim)
        self._embedding.weight.data.normal_()
        self._commitment_cost = commitment_cost
        self.register_buffer("_ema_cluster_size", torch.zeros(num_embeddings))
        self._ema_w = nn.Parameter(torch.Tensor(num_embeddings, self._embedding_dim))
        self._ema_w.data.normal_()
        self._decay = decay
        self._epsilon = epsilon

    def forward(self, inputs):
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape
        flat_input = inputs.view(-1, self._embedding_dim)
        distances = (
            torch.sum(flat_input**2, dim=1, keepdim=True)
            + torch.sum(self._embedding.weight**2, dim=1)
            - 2 * torch.matmul(flat_input, self._embedding.weight.t())
        )
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings,
                                device=inputs.device)  # fmt: skip
        encodings.scatter_(1, encoding_indices, 1)
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)
        if self.training:
            with torch.no_grad():
                self._ema_cluster_size.mul_(self._decay).add_(
                    (1 - self._decay) * torch.sum(encodings, 0)
                )
                n = torch.sum(self._ema_cluster_size)
                self._ema_cluster_size.copy_(
                    (self._ema_cluster_size + self._epsilon)
                    / (n + self._num_embeddings * self._epsilon)
                    * n
                )
                dw = torch.matmul(encodings.t(), flat_input)
                self._ema_w.mul_(self._decay).add_((1 - self._decay) * dw)
                self._embedding.weight.copy_(self._ema_w / self._ema_cluster_size.unsqueeze(1))
        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        loss = self._commitment_cost * e_latent_loss
        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class VQEncoder(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_layers, num_residual_hiddens):
        super().__init__()
        self._conv_1 = nn.Conv2d(in_channels, num_hiddens // 2, 4, 2, 1)
        self._conv_2 = nn.Conv2d(num_hiddens // 2, num_hiddens, 4, 2, 1)
        self._conv_3 = nn.Conv2d(num_hiddens, num_hiddens, 3, 1, 1)
        self._residual_stack = ResidualStack(num_hiddens, num_hiddens, num_residual_layers,
                                             num_residual_hiddens)  # fmt: skip

    def forward(self, inputs):
        x = F.relu(self._conv_1(inputs))
        x = F.relu(self._conv_2(x))
        return self._residual_stack(self._conv_3(x))


class VQDecoder(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_layers, num_residual_hiddens,
                 out_channels=3):  # fmt: skip
        super().__init__()
        self._conv_1 = nn.Conv2d(in_channels, num_hiddens, 3, 1, 1)
        self._residual_stack = ResidualStack(num_hiddens, num_hiddens, num_residual_layers,
                                             num_residual_hiddens)  # fmt: skip
        self._conv_trans_1 = nn.ConvTranspose2d(num_hiddens, num_hiddens // 2, 4, 2, 1)
        self._conv_trans_2 = nn.ConvTranspose2d(num_hiddens // 2, out_channels, 4, 2, 1)

    def forward(self, inputs):
        x = self._residual_stack(self._conv_1(inputs))
        x = F.relu(self._conv_trans_1(x))
        return self._conv_trans_2(x)


class VQVAE(nn.Module):
    def __init__(self, num_hiddens, num_residual_layers, num_residual_hiddens, num_embeddings,
                 embedding_dim, commitment_cost, decay=0.99):  # fmt: skip
        super().__init__()
        self._encoder = VQEncoder(3, num_hiddens, num_residual_layers, num_residual_hiddens)
        self._pre_vq_conv = nn.Conv2d(num_hiddens, embedding_dim, 1, 1)
        self._vq_vae = VectorQuantizerEMA(num_embeddings, embedding_dim, commitment_cost, decay)
        self._decoder = VQDecoder(embedding_dim, num_hiddens, num_residual_layers,
                                  num_residual_hiddens)  # fmt: skip

    def forward(self, x):
        z = self._pre_vq_conv(self._encoder(x))
        loss, quantized, perplexity, _ = self._vq_vae(z)
        return loss, self._decoder(quantized), perplexity


@heldout("vqvae_ema", lambda: ((rand(2, 3, 16, 16, seed=20),), {}))
def vqvae_ema():
    return VQVAE(32, 2, 8, num_embeddings=16, embedding_dim=8, commitment_cost=0.25)


# --------------------------------------------------------------------------------------------
# RealNVP (Dinh et al. 2017) on vectors: alternating-mask affine couplings, a learnable scale.


class CouplingNet(nn.Module):
    def __init__(self, dim, hidden, n_hidden=2):
        super().__init__()
        layers = [nn.Linear(dim, hidden), nn.LeakyReLU(0.2)]
        for _ in range(n_hidden - 1):
            layers += [nn.Linear(hidden, hidden), nn.LeakyReLU(0.2)]
        self.body = nn.Sequential(*layers)
        self.s_head = nn.Linear(hidden, dim)
        self.t_head = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.body(x)
        return torch.tanh(self.s_head(h)), self.t_head(h)


class AffineCoupling(nn.Module):
    def __init__(self, dim, hidden, parity):
        super().__init__()
        mask = torch.arange(dim) % 2 == parity
        self.register_buffer("mask", mask.float())
        self.net = CouplingNet(dim, hidden)
        self.scale = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        x_masked = x * self.mask
        s, t = self.net(x_masked)
        s = self.scale * s * (1 - self.mask)
        t = t * (1 - self.mask)
        y = x_masked + (1 - self.mask) * (x * torch.exp(s) + t)
        return y, s.sum(-1)


class RealNVP(nn.Module):
    def __init__(self, dim=6, hidden=32, n_couplings=4):
        super().__init__()
        self.layers = nn.ModuleList(
            [AffineCoupling(dim, hidden, i % 2) for i in range(n_couplings)]
        )
        self.register_buffer("prior_loc", torch.zeros(dim))
        self.register_buffer("prior_scale", torch.ones(dim))

    def forward(self, x):
        log_det = x.new_zeros(x.shape[0])
        for layer in self.layers:
            x, ld = layer(x)
            log_det = log_det + ld
        prior = torch.distributions.Normal(self.prior_loc, self.prior_scale)
        return x, prior.log_prob(x).sum(-1) + log_det


@heldout("realnvp_2d", lambda: ((rand(8, 6, seed=21),), {}), edit=("layers.2", {"hidden": 16}))
def realnvp_2d():
    return RealNVP(dim=6, hidden=32, n_couplings=4)


# --------------------------------------------------------------------------------------------
# Conditional VAE (Sohn et al. 2015), configured by an argparse namespace as training scripts do.


class CVAE(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.latent = args.latent_dim
        self.n_cls = args.num_classes
        enc_dims = [args.input_dim + args.num_classes] + list(args.enc_hidden)
        self.encoder = nn.Sequential()
        for i, (a, b) in enumerate(zip(enc_dims[:-1], enc_dims[1:])):
            self.encoder.add_module(f"L{i}", nn.Linear(a, b))
            self.encoder.add_module(f"A{i}", nn.ReLU())
        self.fc_mu = nn.Linear(enc_dims[-1], args.latent_dim)
        self.fc_logvar = nn.Linear(enc_dims[-1], args.latent_dim)
        dec_dims = [args.latent_dim + args.num_classes] + list(reversed(args.enc_hidden))
        self.decoder = nn.Sequential()
        for i, (a, b) in enumerate(zip(dec_dims[:-1], dec_dims[1:])):
            self.decoder.add_module(f"L{i}", nn.Linear(a, b))
            self.decoder.add_module(f"A{i}", nn.ReLU())
        self.decoder.add_module("out", nn.Linear(dec_dims[-1], args.input_dim))

    def forward(self, x, y):
        c = F.one_hot(y, self.n_cls).float()
        h = self.encoder(torch.cat([x, c], 1))
        mu, logvar = self.fc_mu(h), self.fc_logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar) if self.training else mu
        recon = torch.sigmoid(self.decoder(torch.cat([z, c], 1)))
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1).mean()
        return {"recon": recon, "mu": mu, "logvar": logvar, "kld": kld}


def _cvae_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--input_dim", type=int, default=64)
    parser.add_argument("--num_classes", type=int, default=10)
    parser.add_argument("--latent_dim", type=int, default=8)
    parser.add_argument("--enc_hidden", type=int, nargs="+", default=[48, 24])
    return parser.parse_args([])


def _cvae_inputs():
    y = torch.randint(0, 10, (4,), generator=torch.Generator().manual_seed(22))
    return (torch.sigmoid(rand(4, 64, seed=23)), y), {}


@heldout("cvae_namespace", _cvae_inputs)
def cvae_namespace():
    return CVAE(_cvae_args())


# --------------------------------------------------------------------------------------------
# DCGAN (Radford et al. 2016) generator and discriminator, with the paper's weight init.


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self, nz=16, ngf=8, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, nc=3, ndf=8, use_spectral_norm=False):
        super().__init__()
        sn = nn.utils.spectral_norm if use_spectral_norm else (lambda m: m)
        self.main = nn.Sequential(
            sn(nn.Conv2d(nc, ndf, 4, 2, 1, bias=False)),
            nn.LeakyReLU(0.2, inplace=True),
            sn(nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False)),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            sn(nn.Conv2d(ndf * 2, 1, 8, 1, 0, bias=False)),
        )

    def forward(self, input):
        return self.main(input).view(-1)


class DCGAN(nn.Module):
    def __init__(self, nz=16, ngf=8, ndf=8, nc=3):
        super().__init__()
        self.nz = nz
        self.netG = Generator(nz, ngf, nc)
        self.netD = Discriminator(nc, ndf)
        self.apply(weights_init)

    def forward(self, noise, real):
        fake = self.netG(noise)
        return self.netD(real), self.netD(fake), fake


@heldout(
    "dcgan_pair",
    lambda: ((rand(2, 16, 1, 1, seed=24), rand(2, 3, 32, 32, seed=25)), {}),
    edit=("netG", {"ngf": 12}),
)
def dcgan_pair():
    return DCGAN()


# --------------------------------------------------------------------------------------------
# HyperNetwork (Ha et al. 2017, static variant): an embedding per target layer is mapped by a
# shared hypernetwork to that layer's weights, and the target MLP is run functionally.


class HyperLayerGenerator(nn.Module):
    def __init__(self, z_dim, in_size, out_size, hidden=32):
        super().__init__()
        self.in_size, self.out_size = in_size, out_size
        self.net = nn.Sequential(nn.Linear(z_dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.w_basis = nn.Parameter(torch.randn(in_size * out_size, z_dim) * 0.05)
        self.b = nn.Linear(z_dim, out_size)

    def forward(self, z):
        w = self.net(self.w_basis * z).view(self.out_size, self.in_size)
        return w, self.b(z)


class HyperMLP(nn.Module):
    def __init__(self, sizes=(10, 24, 24, 3), z_dim=8, hyper_hidden=32):
        super().__init__()
        self.sizes = list(sizes)
        self.z = nn.ParameterList([nn.Parameter(torch.randn(z_dim)) for _ in sizes[:-1]])
        self.hyper = nn.ModuleList(
            HyperLayerGenerator(z_dim, a, b, hyper_hidden) for a, b in zip(sizes[:-1], sizes[1:])
        )

    def forward(self, x):
        for i, (z, gen) in enumerate(zip(self.z, self.hyper)):
            w, b = gen(z)
            x = F.linear(x, w, b)
            if i < len(self.hyper) - 1:
                x = F.elu(x)
        return x


@heldout("hyper_mlp", lambda: ((rand(5, 10, seed=26),), {}))
def hyper_mlp():
    return HyperMLP()
