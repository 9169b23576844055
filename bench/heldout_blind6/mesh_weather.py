"""A GraphCast-like medium-range weather model: encode the lat-lon grid onto a multi-scale mesh,
process with interaction networks (edge MLP then node MLP, residual, LayerNorm), decode back to
the grid and predict the residual to the next state. The graphs are built once, in __init__, and
kept as buffers."""

import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn

from .spec import heldout, rand

ACTIVATIONS = {"silu": nn.SiLU, "relu": nn.ReLU, "gelu": nn.GELU}


@dataclass
class GraphCastConfig:
    n_lat: int = 8
    n_lon: int = 16
    n_vars: int = 5
    n_steps: int = 2  # input time steps
    mesh_lat: int = 4
    mesh_lon: int = 8
    mesh_hops: tuple = (1, 2)  # the multi-mesh: neighbours at these distances on the mesh
    g2m_k: int = 2  # each grid node sends to its k nearest mesh nodes
    m2g_k: int = 3  # each grid node receives from its k nearest mesh nodes
    latent: int = 32
    hidden: int = 32
    processor_layers: int = 4
    activation: str = "silu"
    aggregation: str = "sum"
    variables: list = field(default_factory=lambda: ["z500", "t850", "u10", "v10", "t2m"])


def latlon_to_xyz(lat_deg, lon_deg):
    lat, lon = torch.deg2rad(lat_deg), torch.deg2rad(lon_deg)
    return torch.stack(
        [torch.cos(lat) * torch.cos(lon), torch.cos(lat) * torch.sin(lon), torch.sin(lat)], dim=-1
    )


def latlon_grid(n_lat, n_lon):
    dlat = 180.0 / n_lat
    lat = torch.linspace(-90 + dlat / 2, 90 - dlat / 2, n_lat)
    lon = torch.arange(n_lon) * (360.0 / n_lon)
    lat, lon = torch.meshgrid(lat, lon, indexing="ij")
    return lat.reshape(-1), lon.reshape(-1)


def static_features(lat_deg, lon_deg):
    lat, lon = torch.deg2rad(lat_deg), torch.deg2rad(lon_deg)
    return torch.stack([torch.sin(lat), torch.cos(lat), torch.sin(lon), torch.cos(lon)], dim=-1)


def knn_edges(src_xyz, dst_xyz, k, from_src=False):
    """Edges between nearest neighbours on the sphere. from_src=False: every dst node receives
    from its k nearest src nodes; True: every src node sends to its k nearest dst nodes."""
    if from_src:
        idx = torch.cdist(src_xyz, dst_xyz).topk(k, largest=False).indices
        senders = torch.arange(src_xyz.shape[0]).repeat_interleave(k)
        receivers = idx.reshape(-1)
    else:
        idx = torch.cdist(dst_xyz, src_xyz).topk(k, largest=False).indices
        receivers = torch.arange(dst_xyz.shape[0]).repeat_interleave(k)
        senders = idx.reshape(-1)
    return senders, receivers


def multimesh_edges(n_lat, n_lon, hops):
    senders, receivers = [], []
    for i in range(n_lat):
        for j in range(n_lon):
            node = i * n_lon + j
            for h in hops:
                neighbours = [(i, (j + h) % n_lon), (i, (j - h) % n_lon)]
                if i + h < n_lat:
                    neighbours.append((i + h, j))
                if i - h >= 0:
                    neighbours.append((i - h, j))
                for a, b in neighbours:
                    senders.append(a * n_lon + b)
                    receivers.append(node)
    return torch.tensor(senders), torch.tensor(receivers)


def edge_features(src_xyz, dst_xyz, senders, receivers):
    disp = src_xyz[senders] - dst_xyz[receivers]
    dist = disp.norm(dim=-1, keepdim=True)
    return torch.cat([disp, dist], dim=-1) / dist.max()


def build_mlp(in_dim, hidden_dim, out_dim, activation="silu", layer_norm=True):
    layers = [
        nn.Linear(in_dim, hidden_dim),
        ACTIVATIONS[activation](),
        nn.Linear(hidden_dim, out_dim),
    ]
    if layer_norm:
        layers.append(nn.LayerNorm(out_dim))
    return nn.Sequential(*layers)


class InteractionNetwork(nn.Module):
    """Messages from an edge MLP over (edge, sender, receiver), summed at the receivers, then a
    residual node MLP; edges are updated residually too."""

    def __init__(
        self, latent_dim, hidden_dim, activation="silu", aggregation="sum", update_edges=True
    ):
        super().__init__()
        self.edge_mlp = build_mlp(3 * latent_dim, hidden_dim, latent_dim, activation)
        self.node_mlp = build_mlp(2 * latent_dim, hidden_dim, latent_dim, activation)
        self.aggregation = aggregation
        self.update_edges = update_edges

    def forward(self, src_x, dst_x, edge_x, senders, receivers):
        msg = self.edge_mlp(torch.cat([edge_x, src_x[:, senders], dst_x[:, receivers]], dim=-1))
        agg = dst_x.new_zeros(dst_x.shape[0], dst_x.shape[1], msg.shape[-1]).index_add_(
            1, receivers, msg
        )
        if self.aggregation == "mean":
            deg = torch.bincount(receivers, minlength=dst_x.shape[1]).clamp(min=1).to(msg.dtype)
            agg = agg / deg[None, :, None]
        dst_x = dst_x + self.node_mlp(torch.cat([dst_x, agg], dim=-1))
        if self.update_edges:
            edge_x = edge_x + msg
        return dst_x, edge_x


class Processor(nn.Module):
    def __init__(self, latent_dim, hidden_dim, num_layers, **kwargs):
        super().__init__()
        self.layers = nn.ModuleList(
            [InteractionNetwork(latent_dim, hidden_dim, **kwargs) for _ in range(num_layers)]
        )

    def forward(self, x, edge_x, senders, receivers):
        for layer in self.layers:
            x, edge_x = layer(x, x, edge_x, senders, receivers)
        return x


class GraphCastLite(nn.Module):
    def __init__(self, cfg: GraphCastConfig):
        super().__init__()
        self.cfg = cfg
        L, H, act = cfg.latent, cfg.hidden, cfg.activation

        grid_lat, grid_lon = latlon_grid(cfg.n_lat, cfg.n_lon)
        mesh_lat, mesh_lon = latlon_grid(cfg.mesh_lat, cfg.mesh_lon)
        grid_xyz = latlon_to_xyz(grid_lat, grid_lon)
        mesh_xyz = latlon_to_xyz(mesh_lat, mesh_lon)
        self.register_buffer("grid_static", static_features(grid_lat, grid_lon))
        self.register_buffer("mesh_static", static_features(mesh_lat, mesh_lon))

        graphs = {
            "g2m": knn_edges(grid_xyz, mesh_xyz, cfg.g2m_k, from_src=True),
            "mesh": multimesh_edges(cfg.mesh_lat, cfg.mesh_lon, cfg.mesh_hops),
            "m2g": knn_edges(mesh_xyz, grid_xyz, cfg.m2g_k),
        }
        ends = {
            "g2m": (grid_xyz, mesh_xyz),
            "mesh": (mesh_xyz, mesh_xyz),
            "m2g": (mesh_xyz, grid_xyz),
        }
        for name, (senders, receivers) in graphs.items():
            src, dst = ends[name]
            self.register_buffer(f"{name}_senders", senders)
            self.register_buffer(f"{name}_receivers", receivers)
            self.register_buffer(f"{name}_edge_feat", edge_features(src, dst, senders, receivers))

        # normalisation statistics (filled from data in practice)
        self.register_buffer("mean", torch.zeros(cfg.n_vars))
        self.register_buffer("std", torch.ones(cfg.n_vars))
        self.register_buffer("diff_std", torch.full((cfg.n_vars,), 0.1))

        self.grid_embed = build_mlp(cfg.n_vars * cfg.n_steps + 4, H, L, act)
        self.mesh_embed = build_mlp(4, H, L, act)
        self.edge_embed = nn.ModuleDict({name: build_mlp(4, H, L, act) for name in graphs})

        self.encoder = InteractionNetwork(L, H, activation=act, update_edges=False)
        self.grid_update = build_mlp(L, H, L, act)
        self.processor = Processor(
            L, H, cfg.processor_layers, activation=act, aggregation=cfg.aggregation
        )
        self.decoder = InteractionNetwork(L, H, activation=act, update_edges=False)
        self.readout = build_mlp(L, H, cfg.n_vars, act, layer_norm=False)

    def forward(self, x):
        """x: (batch, n_steps, n_vars, n_lat, n_lon) -> the next state (batch, n_vars, n_lat, n_lon)"""
        B = x.shape[0]
        cfg = self.cfg
        G = cfg.n_lat * cfg.n_lon

        xn = (x - self.mean[:, None, None]) / self.std[:, None, None]
        grid_in = xn.reshape(B, -1, G).transpose(1, 2)  # (B, G, n_steps * n_vars)
        grid_in = torch.cat([grid_in, self.grid_static.expand(B, -1, -1)], dim=-1)

        vg = self.grid_embed(grid_in)
        vm = self.mesh_embed(self.mesh_static).expand(B, -1, -1)
        e = {
            name: self.edge_embed[name](getattr(self, f"{name}_edge_feat")).expand(B, -1, -1)
            for name in self.edge_embed
        }

        # encoder: grid -> mesh
        vm, _ = self.encoder(vg, vm, e["g2m"], self.g2m_senders, self.g2m_receivers)
        vg = vg + self.grid_update(vg)
        # processor: message passing on the multi-mesh
        vm = self.processor(vm, e["mesh"], self.mesh_senders, self.mesh_receivers)
        # decoder: mesh -> grid
        vg, _ = self.decoder(vm, vg, e["m2g"], self.m2g_senders, self.m2g_receivers)

        delta = self.readout(vg).transpose(1, 2).reshape(B, cfg.n_vars, cfg.n_lat, cfg.n_lon)
        return x[:, -1] + delta * self.diff_std[:, None, None]


def _weather_example():
    cfg = GraphCastConfig()
    lat = torch.linspace(-1, 1, cfg.n_lat)[:, None]
    lon = torch.linspace(0, 2 * math.pi, cfg.n_lon)[None, :]
    base = torch.cos(math.pi * lat / 2) * torch.sin(lon)
    x = base + 0.1 * rand(2, cfg.n_steps, cfg.n_vars, cfg.n_lat, cfg.n_lon)
    return (x,), {}


@heldout(
    "graphcast_mesh_processor",
    _weather_example,
    edit=("processor.layers.0", {"hidden_dim": 48}),
)
def build_graphcast():
    return GraphCastLite(GraphCastConfig())
