"""World models and robot policies: a mixture density network, the World Models V-M-C stack
(a conv VAE, an MDN-RNN, a linear controller), and a diffusion-policy 1-D conditional U-Net
with FiLM conditioning."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as f

from .spec import heldout, rand

# --------------------------------------------------------------------------------------------
# Mixture density network (Bishop, 1994)
# --------------------------------------------------------------------------------------------

ONEOVERSQRT2PI = 1.0 / math.sqrt(2 * math.pi)


class MDN(nn.Module):
    """A mixture density network layer: outputs pi (mixing coefficients), sigma and mu of
    `num_gaussians` Gaussians over an `out_features`-dimensional target."""

    def __init__(self, in_features, out_features, num_gaussians):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.num_gaussians = num_gaussians
        self.pi = nn.Sequential(nn.Linear(in_features, num_gaussians), nn.Softmax(dim=1))
        self.sigma = nn.Linear(in_features, out_features * num_gaussians)
        self.mu = nn.Linear(in_features, out_features * num_gaussians)

    def forward(self, minibatch):
        pi = self.pi(minibatch)
        sigma = torch.exp(self.sigma(minibatch))
        sigma = sigma.view(-1, self.num_gaussians, self.out_features)
        mu = self.mu(minibatch)
        mu = mu.view(-1, self.num_gaussians, self.out_features)
        return pi, sigma, mu


def gaussian_probability(sigma, mu, target):
    target = target.unsqueeze(1).expand_as(sigma)
    ret = ONEOVERSQRT2PI * torch.exp(-0.5 * ((target - mu) / sigma) ** 2) / sigma
    return torch.prod(ret, 2)


def mdn_loss(pi, sigma, mu, target):
    prob = pi * gaussian_probability(sigma, mu, target)
    nll = -torch.log(torch.sum(prob, dim=1))
    return torch.mean(nll)


@heldout(
    "mdn_inverse_problem",
    lambda: ((rand(64, 1),), {}),
)
def build_mdn():
    return nn.Sequential(nn.Linear(1, 32), nn.Tanh(), MDN(32, 1, 5))


# --------------------------------------------------------------------------------------------
# World Models (Ha & Schmidhuber, 2018): V (VAE), M (MDN-RNN), C (controller)
# --------------------------------------------------------------------------------------------

# Hardcoded for now
ASIZE, LSIZE, RSIZE, RED_SIZE, SIZE = 3, 16, 32, 64, 64


class Decoder(nn.Module):
    """VAE decoder"""

    def __init__(self, img_channels, latent_size):
        super().__init__()
        self.latent_size = latent_size
        self.img_channels = img_channels

        self.fc1 = nn.Linear(latent_size, 256)
        self.deconv1 = nn.ConvTranspose2d(256, 32, 5, stride=2)
        self.deconv2 = nn.ConvTranspose2d(32, 16, 5, stride=2)
        self.deconv3 = nn.ConvTranspose2d(16, 8, 6, stride=2)
        self.deconv4 = nn.ConvTranspose2d(8, img_channels, 6, stride=2)

    def forward(self, x):
        x = f.relu(self.fc1(x))
        x = x.unsqueeze(-1).unsqueeze(-1)
        x = f.relu(self.deconv1(x))
        x = f.relu(self.deconv2(x))
        x = f.relu(self.deconv3(x))
        reconstruction = torch.sigmoid(self.deconv4(x))
        return reconstruction


class Encoder(nn.Module):
    """VAE encoder"""

    def __init__(self, img_channels, latent_size):
        super().__init__()
        self.latent_size = latent_size
        self.img_channels = img_channels

        self.conv1 = nn.Conv2d(img_channels, 8, 4, stride=2)
        self.conv2 = nn.Conv2d(8, 16, 4, stride=2)
        self.conv3 = nn.Conv2d(16, 32, 4, stride=2)
        self.conv4 = nn.Conv2d(32, 64, 4, stride=2)

        self.fc_mu = nn.Linear(2 * 2 * 64, latent_size)
        self.fc_logsigma = nn.Linear(2 * 2 * 64, latent_size)

    def forward(self, x):
        x = f.relu(self.conv1(x))
        x = f.relu(self.conv2(x))
        x = f.relu(self.conv3(x))
        x = f.relu(self.conv4(x))
        x = x.view(x.size(0), -1)

        mu = self.fc_mu(x)
        logsigma = self.fc_logsigma(x)

        return mu, logsigma


class VAE(nn.Module):
    """Variational Autoencoder"""

    def __init__(self, img_channels, latent_size):
        super().__init__()
        self.encoder = Encoder(img_channels, latent_size)
        self.decoder = Decoder(img_channels, latent_size)

    def forward(self, x):
        mu, logsigma = self.encoder(x)
        sigma = logsigma.exp()
        eps = torch.randn_like(sigma)
        z = eps.mul(sigma).add_(mu)

        recon_x = self.decoder(z)
        return recon_x, mu, logsigma


def gmm_loss(batch, mus, sigmas, logpi, reduce=True):
    """Negative log likelihood of `batch` under the GMM (mus, sigmas, exp(logpi))."""
    batch = batch.unsqueeze(-2)
    normal_dist = torch.distributions.Normal(mus, sigmas)
    g_log_probs = normal_dist.log_prob(batch)
    g_log_probs = logpi + torch.sum(g_log_probs, dim=-1)
    max_log_probs = torch.max(g_log_probs, dim=-1, keepdim=True)[0]
    g_log_probs = g_log_probs - max_log_probs

    g_probs = torch.exp(g_log_probs)
    probs = torch.sum(g_probs, dim=-1)

    log_prob = max_log_probs.squeeze() + torch.log(probs)
    if reduce:
        return -torch.mean(log_prob)
    return -log_prob


class _MDRNNBase(nn.Module):
    def __init__(self, latents, actions, hiddens, gaussians):
        super().__init__()
        self.latents = latents
        self.actions = actions
        self.hiddens = hiddens
        self.gaussians = gaussians

        self.gmm_linear = nn.Linear(hiddens, (2 * latents + 1) * gaussians + 2)

    def forward(self, *inputs):
        pass


class MDRNN(_MDRNNBase):
    """MDRNN model for multi steps forward"""

    def __init__(self, latents, actions, hiddens, gaussians):
        super().__init__(latents, actions, hiddens, gaussians)
        self.rnn = nn.LSTM(latents + actions, hiddens)

    def forward(self, actions, latents):
        """MULTI STEPS forward.

        :args actions: (SEQ_LEN, BSIZE, ASIZE) torch tensor
        :args latents: (SEQ_LEN, BSIZE, LSIZE) torch tensor

        :returns: mu_nlat, sig_nlat, pi_nlat, rs, ds, parameters of the GMM
        prediction for the next latent, gaussian prediction of the reward and
        logit prediction of terminality.
        """
        seq_len, bs = actions.size(0), actions.size(1)

        ins = torch.cat([actions, latents], dim=-1)
        outs, _ = self.rnn(ins)
        gmm_outs = self.gmm_linear(outs)

        stride = self.gaussians * self.latents

        mus = gmm_outs[:, :, :stride]
        mus = mus.view(seq_len, bs, self.gaussians, self.latents)

        sigmas = gmm_outs[:, :, stride : 2 * stride]
        sigmas = sigmas.view(seq_len, bs, self.gaussians, self.latents)
        sigmas = torch.exp(sigmas)

        pi = gmm_outs[:, :, 2 * stride : 2 * stride + self.gaussians]
        pi = pi.view(seq_len, bs, self.gaussians)
        logpi = f.log_softmax(pi, dim=-1)

        rs = gmm_outs[:, :, -2]

        ds = gmm_outs[:, :, -1]

        return mus, sigmas, logpi, rs, ds


class MDRNNCell(_MDRNNBase):
    """MDRNN model for one step forward"""

    def __init__(self, latents, actions, hiddens, gaussians):
        super().__init__(latents, actions, hiddens, gaussians)
        self.rnn = nn.LSTMCell(latents + actions, hiddens)

    def forward(self, action, latent, hidden):
        """ONE STEP forward: (action (BSIZE, ASIZE), latent (BSIZE, LSIZE), hidden (h, c))"""
        in_al = torch.cat([action, latent], dim=1)

        next_hidden = self.rnn(in_al, hidden)
        out_rnn = next_hidden[0]

        out_full = self.gmm_linear(out_rnn)

        stride = self.gaussians * self.latents

        mus = out_full[:, :stride]
        mus = mus.view(-1, self.gaussians, self.latents)

        sigmas = out_full[:, stride : 2 * stride]
        sigmas = sigmas.view(-1, self.gaussians, self.latents)
        sigmas = torch.exp(sigmas)

        pi = out_full[:, 2 * stride : 2 * stride + self.gaussians]
        pi = pi.view(-1, self.gaussians)
        logpi = f.log_softmax(pi, dim=-1)

        r = out_full[:, -2]

        d = out_full[:, -1]

        return mus, sigmas, logpi, r, d, next_hidden


class Controller(nn.Module):
    """Controller"""

    def __init__(self, latents, recurrents, actions):
        super().__init__()
        self.fc = nn.Linear(latents + recurrents, actions)

    def forward(self, *inputs):
        cat_in = torch.cat(inputs, dim=1)
        return self.fc(cat_in)


class WorldModelAgent(nn.Module):
    """One step of a rollout: encode the frame, act from (z, h), advance the MDN-RNN."""

    def __init__(self, gaussians=5):
        super().__init__()
        self.vae = VAE(3, LSIZE)
        self.mdrnn = MDRNNCell(LSIZE, ASIZE, RSIZE, gaussians)
        self.controller = Controller(LSIZE, RSIZE, ASIZE)

    def forward(self, obs, hidden=None):
        _, latent_mu, _ = self.vae(obs)
        if hidden is None:
            hidden = [torch.zeros(obs.size(0), RSIZE, device=obs.device) for _ in range(2)]
        action = torch.tanh(self.controller(latent_mu, hidden[0]))
        _, _, _, _, _, next_hidden = self.mdrnn(action, latent_mu, hidden)
        return action, next_hidden


@heldout("world_model_vmc_step", lambda: ((rand(2, 3, RED_SIZE, RED_SIZE).sigmoid(),), {}))
def build_world_model():
    return WorldModelAgent()


@heldout(
    "mdrnn_sequence",
    lambda: ((rand(6, 2, ASIZE, seed=1).tanh(), rand(6, 2, LSIZE, seed=2)), {}),
)
def build_mdrnn():
    return MDRNN(LSIZE, ASIZE, RSIZE, 5)


# --------------------------------------------------------------------------------------------
# Diffusion Policy (Chi et al., 2023): a 1-D temporal U-Net over an action sequence, every
# residual block FiLM-conditioned on the diffusion step and the observation features
# --------------------------------------------------------------------------------------------


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        device = x.device
        half_dim = self.dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, device=device) * -emb)
        emb = x[:, None] * emb[None, :]
        emb = torch.cat((emb.sin(), emb.cos()), dim=-1)
        return emb


class Downsample1d(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Conv1d(dim, dim, 3, 2, 1)

    def forward(self, x):
        return self.conv(x)


class Upsample1d(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = nn.ConvTranspose1d(dim, dim, 4, 2, 1)

    def forward(self, x):
        return self.conv(x)


class Conv1dBlock(nn.Module):
    """Conv1d --> GroupNorm --> Mish"""

    def __init__(self, inp_channels, out_channels, kernel_size, n_groups=8):
        super().__init__()

        self.block = nn.Sequential(
            nn.Conv1d(inp_channels, out_channels, kernel_size, padding=kernel_size // 2),
            nn.GroupNorm(n_groups, out_channels),
            nn.Mish(),
        )

    def forward(self, x):
        return self.block(x)


class ConditionalResidualBlock1D(nn.Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        cond_dim,
        kernel_size=3,
        n_groups=8,
        cond_predict_scale=False,
    ):
        super().__init__()

        self.blocks = nn.ModuleList(
            [
                Conv1dBlock(in_channels, out_channels, kernel_size, n_groups=n_groups),
                Conv1dBlock(out_channels, out_channels, kernel_size, n_groups=n_groups),
            ]
        )

        # FiLM modulation https://arxiv.org/abs/1709.07871
        # predicts per-channel scale and bias
        cond_channels = out_channels
        if cond_predict_scale:
            cond_channels = out_channels * 2
        self.cond_predict_scale = cond_predict_scale
        self.out_channels = out_channels
        self.cond_encoder = nn.Sequential(
            nn.Mish(),
            nn.Linear(cond_dim, cond_channels),
            nn.Unflatten(-1, (cond_channels, 1)),
        )

        # make sure dimensions compatible
        self.residual_conv = (
            nn.Conv1d(in_channels, out_channels, 1)
            if in_channels != out_channels
            else nn.Identity()
        )

    def forward(self, x, cond):
        """x : [ batch_size x in_channels x horizon ], cond : [ batch_size x cond_dim]
        returns: out : [ batch_size x out_channels x horizon ]"""
        out = self.blocks[0](x)
        embed = self.cond_encoder(cond)
        if self.cond_predict_scale:
            embed = embed.reshape(embed.shape[0], 2, self.out_channels, 1)
            scale = embed[:, 0, ...]
            bias = embed[:, 1, ...]
            out = scale * out + bias
        else:
            out = out + embed
        out = self.blocks[1](out)
        out = out + self.residual_conv(x)
        return out


class ConditionalUnet1D(nn.Module):
    def __init__(
        self,
        input_dim,
        global_cond_dim=None,
        diffusion_step_embed_dim=256,
        down_dims=[256, 512, 1024],  # noqa: B006
        kernel_size=3,
        n_groups=8,
        cond_predict_scale=False,
    ):
        super().__init__()
        all_dims = [input_dim] + list(down_dims)
        start_dim = down_dims[0]

        dsed = diffusion_step_embed_dim
        diffusion_step_encoder = nn.Sequential(
            SinusoidalPosEmb(dsed),
            nn.Linear(dsed, dsed * 4),
            nn.Mish(),
            nn.Linear(dsed * 4, dsed),
        )
        cond_dim = dsed
        if global_cond_dim is not None:
            cond_dim += global_cond_dim

        in_out = list(zip(all_dims[:-1], all_dims[1:]))

        mid_dim = all_dims[-1]
        self.mid_modules = nn.ModuleList(
            [
                ConditionalResidualBlock1D(
                    mid_dim,
                    mid_dim,
                    cond_dim=cond_dim,
                    kernel_size=kernel_size,
                    n_groups=n_groups,
                    cond_predict_scale=cond_predict_scale,
                ),
                ConditionalResidualBlock1D(
                    mid_dim,
                    mid_dim,
                    cond_dim=cond_dim,
                    kernel_size=kernel_size,
                    n_groups=n_groups,
                    cond_predict_scale=cond_predict_scale,
                ),
            ]
        )

        down_modules = nn.ModuleList([])
        for ind, (dim_in, dim_out) in enumerate(in_out):
            is_last = ind >= (len(in_out) - 1)
            down_modules.append(
                nn.ModuleList(
                    [
                        ConditionalResidualBlock1D(
                            dim_in,
                            dim_out,
                            cond_dim=cond_dim,
                            kernel_size=kernel_size,
                            n_groups=n_groups,
                            cond_predict_scale=cond_predict_scale,
                        ),
                        ConditionalResidualBlock1D(
                            dim_out,
                            dim_out,
                            cond_dim=cond_dim,
                            kernel_size=kernel_size,
                            n_groups=n_groups,
                            cond_predict_scale=cond_predict_scale,
                        ),
                        Downsample1d(dim_out) if not is_last else nn.Identity(),
                    ]
                )
            )

        up_modules = nn.ModuleList([])
        for ind, (dim_in, dim_out) in enumerate(reversed(in_out[1:])):
            is_last = ind >= (len(in_out) - 1)
            up_modules.append(
                nn.ModuleList(
                    [
                        ConditionalResidualBlock1D(
                            dim_out * 2,
                            dim_in,
                            cond_dim=cond_dim,
                            kernel_size=kernel_size,
                            n_groups=n_groups,
                            cond_predict_scale=cond_predict_scale,
                        ),
                        ConditionalResidualBlock1D(
                            dim_in,
                            dim_in,
                            cond_dim=cond_dim,
                            kernel_size=kernel_size,
                            n_groups=n_groups,
                            cond_predict_scale=cond_predict_scale,
                        ),
                        Upsample1d(dim_in) if not is_last else nn.Identity(),
                    ]
                )
            )

        final_conv = nn.Sequential(
            Conv1dBlock(start_dim, start_dim, kernel_size=kernel_size),
            nn.Conv1d(start_dim, input_dim, 1),
        )

        self.diffusion_step_encoder = diffusion_step_encoder
        self.up_modules = up_modules
        self.down_modules = down_modules
        self.final_conv = final_conv

    def forward(self, sample, timestep, global_cond=None):
        """x: (B,T,input_dim); timestep: (B,) or int, diffusion step; global_cond: (B,global_cond_dim)
        output: (B,T,input_dim)"""
        sample = sample.moveaxis(-1, -2)
        # (B,T,C) -> (B,C,T)

        # 1. time
        timesteps = timestep
        if not torch.is_tensor(timesteps):
            # TODO: this requires sync between CPU and GPU. So try to pass timesteps as tensors if you can
            timesteps = torch.tensor([timesteps], dtype=torch.long, device=sample.device)
        elif torch.is_tensor(timesteps) and len(timesteps.shape) == 0:
            timesteps = timesteps[None].to(sample.device)
        # broadcast to batch dimension in a way that's compatible with ONNX/Core ML
        timesteps = timesteps.expand(sample.shape[0])

        global_feature = self.diffusion_step_encoder(timesteps)

        if global_cond is not None:
            global_feature = torch.cat([global_feature, global_cond], axis=-1)

        x = sample
        h = []
        for idx, (resnet, resnet2, downsample) in enumerate(self.down_modules):  # noqa: B007
            x = resnet(x, global_feature)
            x = resnet2(x, global_feature)
            h.append(x)
            x = downsample(x)

        for mid_module in self.mid_modules:
            x = mid_module(x, global_feature)

        for idx, (resnet, resnet2, upsample) in enumerate(self.up_modules):  # noqa: B007
            x = torch.cat((x, h.pop()), dim=1)
            x = resnet(x, global_feature)
            x = resnet2(x, global_feature)
            x = upsample(x)

        x = self.final_conv(x)

        x = x.moveaxis(-1, -2)
        # (B,C,T)->(B,T,C)
        return x


OBS_DIM = 10
N_OBS_STEPS = 2
ACTION_DIM = 2
PRED_HORIZON = 16


@heldout(
    "diffusion_policy_unet1d",
    lambda: (
        (rand(2, PRED_HORIZON, ACTION_DIM), 10),
        {"global_cond": rand(2, OBS_DIM * N_OBS_STEPS, seed=1)},
    ),
    edit=("mid_modules.0", {"kernel_size": 3}),
)
def build_diffusion_policy():
    return ConditionalUnet1D(
        input_dim=ACTION_DIM,
        global_cond_dim=OBS_DIM * N_OBS_STEPS,
        diffusion_step_embed_dim=32,
        down_dims=[16, 32, 64],
        kernel_size=5,
        n_groups=8,
        cond_predict_scale=True,
    )
