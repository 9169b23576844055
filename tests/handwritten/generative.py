"""Generative models as their papers' code writes them: a conv VAE, a DCGAN pair with spectral norm,
a conditional GAN, a VQ-VAE with an EMA codebook (buffers and parameters reassigned in forward)."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import spectral_norm

from .case import args, case, randn

# --- Conv VAE: hidden_dims list reversed for the decoder, returns [recon, input, mu, log_var] -----


class VanillaVAE(nn.Module):
    def __init__(self, in_channels, latent_dim, hidden_dims=None, img_size=32, **kwargs):
        super(VanillaVAE, self).__init__()
        self.latent_dim = latent_dim
        modules = []
        if hidden_dims is None:
            hidden_dims = [32, 64, 128, 256, 512]
        for h_dim in hidden_dims:
            modules.append(
                nn.Sequential(
                    nn.Conv2d(in_channels, out_channels=h_dim, kernel_size=3, stride=2, padding=1),
                    nn.BatchNorm2d(h_dim),
                    nn.LeakyReLU(),
                )
            )
            in_channels = h_dim
        self.encoder = nn.Sequential(*modules)
        self.last = img_size // 2 ** len(hidden_dims)
        self.fc_mu = nn.Linear(hidden_dims[-1] * self.last**2, latent_dim)
        self.fc_var = nn.Linear(hidden_dims[-1] * self.last**2, latent_dim)
        modules = []
        self.decoder_input = nn.Linear(latent_dim, hidden_dims[-1] * self.last**2)
        hidden_dims.reverse()
        for i in range(len(hidden_dims) - 1):
            modules.append(
                nn.Sequential(
                    nn.ConvTranspose2d(
                        hidden_dims[i],
                        hidden_dims[i + 1],
                        kernel_size=3,
                        stride=2,
                        padding=1,
                        output_padding=1,
                    ),
                    nn.BatchNorm2d(hidden_dims[i + 1]),
                    nn.LeakyReLU(),
                )
            )
        self.decoder = nn.Sequential(*modules)
        self.final_layer = nn.Sequential(
            nn.ConvTranspose2d(
                hidden_dims[-1],
                hidden_dims[-1],
                kernel_size=3,
                stride=2,
                padding=1,
                output_padding=1,
            ),
            nn.BatchNorm2d(hidden_dims[-1]),
            nn.LeakyReLU(),
            nn.Conv2d(hidden_dims[-1], out_channels=3, kernel_size=3, padding=1),
            nn.Tanh(),
        )
        self.hidden_last = hidden_dims[0]

    def encode(self, input):
        result = torch.flatten(self.encoder(input), start_dim=1)
        return [self.fc_mu(result), self.fc_var(result)]

    def decode(self, z):
        result = self.decoder_input(z).view(-1, self.hidden_last, self.last, self.last)
        return self.final_layer(self.decoder(result))

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return eps * std + mu

    def forward(self, input, **kwargs):
        mu, log_var = self.encode(input)
        z = self.reparameterize(mu, log_var)
        return [self.decode(z), input, mu, log_var]


case(
    "vae_hidden_dims",
    lambda: VanillaVAE(3, 8, hidden_dims=[8, 16], img_size=16),
    args(lambda: randn(2, 3, 16, 16)),
    edit=("encoder.0.2", {"negative_slope": 0.2}),
    styles="hidden_dims list reversed in place, **kwargs swallowed, returns a list, randn in forward",
)

# --- DCGAN pair with spectral norm in D; a GAN wrapper returning a dict --------------------------


class Generator(nn.Module):
    def __init__(self, nz=100, ngf=64, nc=3, img_size=64):
        super().__init__()
        n_up = int(math.log2(img_size)) - 3
        mult = 2**n_up
        layers = [
            nn.ConvTranspose2d(nz, ngf * mult, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * mult),
            nn.ReLU(True),
        ]
        for i in range(n_up):
            layers += [
                nn.ConvTranspose2d(ngf * mult, ngf * mult // 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf * mult // 2),
                nn.ReLU(True),
            ]
            mult //= 2
        layers += [nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh()]
        self.main = nn.Sequential(*layers)

    def forward(self, z):
        return self.main(z.view(z.size(0), -1, 1, 1))


class Discriminator(nn.Module):
    def __init__(self, ndf=64, nc=3, img_size=64):
        super().__init__()
        n_down = int(math.log2(img_size)) - 3
        layers = [spectral_norm(nn.Conv2d(nc, ndf, 4, 2, 1)), nn.LeakyReLU(0.2, inplace=True)]
        mult = 1
        for i in range(n_down):
            layers += [
                spectral_norm(nn.Conv2d(ndf * mult, ndf * mult * 2, 4, 2, 1)),
                nn.LeakyReLU(0.2, inplace=True),
            ]
            mult *= 2
        layers.append(spectral_norm(nn.Conv2d(ndf * mult, 1, 4, 1, 0)))
        self.main = nn.Sequential(*layers)

    def forward(self, img):
        return self.main(img).view(-1)


class GAN(nn.Module):
    def __init__(self, nz, ngf, ndf, img_size):
        super().__init__()
        self.nz = nz
        self.G = Generator(nz, ngf, 3, img_size)
        self.D = Discriminator(ndf, 3, img_size)

    def forward(self, z):
        fake = self.G(z)
        return {"fake": fake, "score": self.D(fake)}


case(
    "dcgan_spectral_pair",
    lambda: GAN(nz=16, ngf=4, ndf=4, img_size=16),
    args(lambda: randn(2, 16)),
    edit=("D.main.1", {"negative_slope": 0.1}),
    styles="n_up = int(math.log2(img_size)) - 3, ngf * mult loops, spectral_norm (hooks), a G/D pair, dict out",
)

# --- Conditional GAN: labels embedded, forward(z, labels), img_shape tuple ------------------------


class CondGenerator(nn.Module):
    def __init__(self, n_classes, latent_dim, img_shape):
        super().__init__()
        self.img_shape = img_shape
        self.label_emb = nn.Embedding(n_classes, n_classes)

        def block(in_feat, out_feat, normalize=True):
            layers = [nn.Linear(in_feat, out_feat)]
            if normalize:
                layers.append(nn.BatchNorm1d(out_feat, 0.8))
            layers.append(nn.LeakyReLU(0.2, inplace=True))
            return layers

        self.model = nn.Sequential(
            *block(latent_dim + n_classes, 32, normalize=False),
            *block(32, 64),
            nn.Linear(64, int(np.prod(img_shape))),
            nn.Tanh(),
        )

    def forward(self, noise, labels):
        gen_input = torch.cat((self.label_emb(labels), noise), -1)
        img = self.model(gen_input)
        return img.view(img.size(0), *self.img_shape)


case(
    "cgan_labels",
    lambda: CondGenerator(10, 16, (1, 8, 8)),
    args(lambda: randn(4, 16), lambda: torch.tensor([0, 3, 5, 9])),
    edit=("model.1", {"negative_slope": 0.1}),
    styles="a nested block() helper, BatchNorm1d(out, 0.8) (eps given as momentum's place), np.prod(img_shape)",
)

# --- VQ-VAE with an EMA codebook: buffers updated in forward (train mode) ------------------------


class VectorQuantizerEMA(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost, decay, epsilon=1e-5):
        super(VectorQuantizerEMA, self).__init__()
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
        encodings = torch.zeros(
            encoding_indices.shape[0], self._num_embeddings, device=inputs.device
        )
        encodings.scatter_(1, encoding_indices, 1)
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)
        if self.training:
            self._ema_cluster_size = self._ema_cluster_size * self._decay + (
                1 - self._decay
            ) * torch.sum(encodings, 0)
            n = torch.sum(self._ema_cluster_size.data)
            self._ema_cluster_size = (
                (self._ema_cluster_size + self._epsilon)
                / (n + self._num_embeddings * self._epsilon)
                * n
            )
            dw = torch.matmul(encodings.t(), flat_input)
            self._ema_w = nn.Parameter(self._ema_w * self._decay + (1 - self._decay) * dw)
            self._embedding.weight = nn.Parameter(self._ema_w / self._ema_cluster_size.unsqueeze(1))
        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        loss = self._commitment_cost * e_latent_loss
        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class VQVAE(nn.Module):
    def __init__(self, num_hiddens, num_embeddings, embedding_dim, commitment_cost, decay=0.0):
        super(VQVAE, self).__init__()
        self._encoder = nn.Sequential(
            nn.Conv2d(3, num_hiddens // 2, 4, 2, 1),
            nn.ReLU(),
            nn.Conv2d(num_hiddens // 2, num_hiddens, 4, 2, 1),
        )
        self._pre_vq_conv = nn.Conv2d(num_hiddens, embedding_dim, kernel_size=1, stride=1)
        self._vq_vae = VectorQuantizerEMA(num_embeddings, embedding_dim, commitment_cost, decay)
        self._decoder = nn.Sequential(
            nn.ConvTranspose2d(embedding_dim, num_hiddens // 2, 4, 2, 1),
            nn.ReLU(),
            nn.ConvTranspose2d(num_hiddens // 2, 3, 4, 2, 1),
        )

    def forward(self, x):
        loss, quantized, perplexity, _ = self._vq_vae(self._pre_vq_conv(self._encoder(x)))
        return loss, self._decoder(quantized), perplexity


case(
    "vqvae_ema",
    lambda: VQVAE(16, 12, 4, 0.25, decay=0.99),
    args(lambda: randn(2, 3, 16, 16)),
    edit=("_encoder.1", {"inplace": True}),
    styles="torch.Tensor(n, d) parameters, buffers and parameters reassigned in forward (train), argmin",
    train=True,
)
