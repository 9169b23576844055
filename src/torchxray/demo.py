"""Small built-in models for tours, notebooks and tests; built in code, nothing downloaded.

    >>> from torchxray import demo
    >>> model = demo.resnet_ish()
    >>> model(demo.images()).shape
    torch.Size([2, 10])

Every custom class keeps its constructor arguments as attributes of the same name, so forms can
prefill them from a live instance.
"""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F
from torch import nn

_log = logging.getLogger(__name__)

__all__ = [
    "BasicBlock",
    "Block",
    "LoggedGELU",
    "CheckedMLP",
    "CompileNet",
    "LlamaAttention",
    "LlamaDecoderLayer",
    "LlamaLike",
    "LlamaMLP",
    "ResNetIsh",
    "RMSNorm",
    "TinyTransformer",
    "images",
    "llama_like",
    "many_modules",
    "resnet_ish",
    "compile_net",
    "ExportNet",
    "GatedMLP",
    "OrthoLinear",
    "RunningMax",
    "export_net",
    "sequences",
    "tiny_transformer",
    "tokens",
]


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual connection, as in ResNet-18."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.stride = stride
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample: nn.Module | None = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNetIsh(nn.Module):
    """A small ResNet: stem, two stages of basic blocks, pooling and a classifier."""

    def __init__(self, num_classes: int = 10, width: int = 16, in_channels: int = 3) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.width = width
        self.in_channels = in_channels
        self.conv1 = nn.Conv2d(in_channels, width, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = nn.Sequential(BasicBlock(width, width), BasicBlock(width, width))
        self.layer2 = nn.Sequential(
            BasicBlock(width, 2 * width, 2), BasicBlock(2 * width, 2 * width)
        )
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet_ish(num_classes: int = 10, width: int = 16) -> ResNetIsh:
    """A ~43k-parameter ResNet for 3x32x32 images (see :func:`images`)."""
    torch.manual_seed(0)
    return ResNetIsh(num_classes, width).eval()


def images(batch: int = 2, size: int = 32, channels: int = 3) -> torch.Tensor:
    """A random image batch of shape (batch, channels, size, size)."""
    return torch.randn(batch, channels, size, size, generator=torch.Generator().manual_seed(0))


class Block(nn.Module):
    """A pre-norm transformer block: self-attention then an MLP, each with a residual."""

    def __init__(self, dim: int, heads: int, mlp_ratio: int = 4, dropout: float = 0.0) -> None:
        super().__init__()
        self.dim = dim
        self.heads = heads
        self.mlp_ratio = mlp_ratio
        self.dropout = dropout
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyTransformer(nn.Module):
    """A GPT-style language model small enough to run anywhere in milliseconds."""

    def __init__(
        self, vocab: int = 100, dim: int = 32, depth: int = 2, heads: int = 4, max_len: int = 64
    ) -> None:
        super().__init__()
        self.vocab = vocab
        self.dim = dim
        self.depth = depth
        self.heads = heads
        self.max_len = max_len
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def tiny_transformer(vocab: int = 100, dim: int = 32, depth: int = 2) -> TinyTransformer:
    """A two-block transformer over a 100-token vocabulary (see :func:`tokens`)."""
    torch.manual_seed(0)
    return TinyTransformer(vocab, dim, depth).eval()


def tokens(batch: int = 2, length: int = 16, vocab: int = 100) -> torch.Tensor:
    """Random token ids of shape (batch, length)."""
    return torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(0))


class RMSNorm(nn.Module):
    """Root-mean-square layer norm, as in Llama."""

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaAttention(nn.Module):
    """Grouped-query attention (fewer key/value heads than query heads).

    Rotary position embeddings are left out: they change values, not shapes or parameter counts,
    and this model exists to be explored, not trained.
    """

    def __init__(self, dim: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        self.dim = dim
        self.heads = heads
        self.kv_heads = kv_heads
        head_dim = dim // heads
        self.q_proj = nn.Linear(dim, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, -1).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, -1).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, -1).transpose(1, 2)
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class LlamaMLP(nn.Module):
    """The SwiGLU feed-forward block."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.dim = dim
        self.hidden = hidden
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int, kv_heads: int, hidden: int) -> None:
        super().__init__()
        self.dim = dim
        self.heads = heads
        self.kv_heads = kv_heads
        self.hidden = hidden
        self.input_layernorm = RMSNorm(dim)
        self.self_attn = LlamaAttention(dim, heads, kv_heads)
        self.post_attention_layernorm = RMSNorm(dim)
        self.mlp = LlamaMLP(dim, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaLike(nn.Module):
    """A decoder-only LLM with the module layout of Llama 3."""

    def __init__(
        self,
        vocab: int = 128256,
        dim: int = 8192,
        n_layers: int = 80,
        heads: int = 64,
        kv_heads: int = 8,
        hidden: int = 28672,
    ) -> None:
        super().__init__()
        self.vocab = vocab
        self.dim = dim
        # Not `layers`: that attribute is the ModuleList, and forms read arguments back by name.
        self.n_layers = n_layers
        self.heads = heads
        self.kv_heads = kv_heads
        self.hidden = hidden
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            LlamaDecoderLayer(dim, heads, kv_heads, hidden) for _ in range(n_layers)
        )
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


def llama_like(
    *,
    vocab: int = 128256,
    dim: int = 8192,
    layers: int = 80,
    heads: int = 64,
    kv_heads: int = 8,
    hidden: int = 28672,
    device: str | torch.device = "meta",
) -> LlamaLike:
    """A Llama-3-70B-shaped model (about 70.6 billion parameters with the defaults).

    On the default ``"meta"`` device the parameters have shapes but no storage, so the whole
    architecture costs a few megabytes of Python objects; pass smaller sizes and ``device="cpu"``
    for a model that really runs.
    """
    with torch.device(device):
        return LlamaLike(vocab, dim, layers, heads, kv_heads, hidden).eval()


def many_modules(n: int = 10_000, width: int = 4) -> nn.Sequential:
    """A deep model with ``n`` modules (for n = 1 + 3k): a Sequential of (Linear, ReLU) stages.

    Stage widths alternate (``width`` and ``width + 1``) so no two neighbouring stages are alike
    and nothing folds: views must cope with every row. Its input is ``torch.randn(batch, width)``.
    """
    stages = max(1, (n - 1) // 3)
    widths = [width + (i % 2) for i in range(stages + 1)]
    return nn.Sequential(
        *(nn.Sequential(nn.Linear(widths[i], widths[i + 1]), nn.ReLU()) for i in range(stages))
    ).eval()


class LoggedGELU(nn.Module):
    """GELU that logs the shapes it sees (at DEBUG: silent by default): a logging call is a
    graph break under ``torch.compile``; ``nn.GELU`` computes the same without it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _log.debug("gelu input %s", tuple(x.shape))
        return F.gelu(x)


class CheckedMLP(nn.Module):
    """Linear, GELU, Linear; ``check_finite=True`` stops on NaN/Inf in the hidden activations, a
    ``.item()`` branch that graph-breaks under ``torch.compile`` (``check_finite=False`` skips it)."""

    def __init__(self, dim: int, hidden: int, check_finite: bool = True) -> None:
        super().__init__()
        self.dim = dim
        self.hidden = hidden
        self.check_finite = check_finite
        self.fc1 = nn.Linear(dim, hidden)
        self.act = LoggedGELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.fc1(x))
        if self.check_finite and not torch.isfinite(h).all().item():
            raise ValueError("CheckedMLP: non-finite activations")
        return x + self.fc2(h)


class CompileNet(nn.Module):
    """An embedding, one `CheckedMLP` and a head: two graph breaks under ``torch.compile``, one in
    ``mlp.act`` (a logging call) and one in ``mlp`` (a ``.item()`` branch). notebooks/10-compile.ipynb
    finds and fixes both. Its input is `tokens`."""

    def __init__(self, vocab: int = 100, dim: int = 32, hidden: int = 64) -> None:
        super().__init__()
        self.vocab = vocab
        self.dim = dim
        self.hidden = hidden
        self.embed = nn.Embedding(vocab, dim)
        self.mlp = CheckedMLP(dim, hidden)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.mlp(self.embed(ids)))


def compile_net(vocab: int = 100, dim: int = 32, hidden: int = 64) -> CompileNet:
    """A `CompileNet` in eval mode: ``tx.compile_check(compile_net(), tokens())`` finds two breaks."""
    return CompileNet(vocab, dim, hidden).eval()


class OrthoLinear(nn.Module):
    """A bias-free linear layer whose weight is made orthonormal in the forward (QR) with
    ``orthogonal=True``: the ONNX exporter has no translation for ``torch.linalg.qr``;
    ``orthogonal=False`` (or ``nn.Linear``) exports."""

    def __init__(self, features: int, orthogonal: bool = True) -> None:
        super().__init__()
        self.features = features
        self.orthogonal = orthogonal
        self.weight = nn.Parameter(torch.randn(features, features) / features**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.orthogonal:
            return x @ self.weight
        q, _ = torch.linalg.qr(self.weight)
        return x @ q


class RunningMax(nn.Module):
    """The running maximum along a dimension (``torch.cummax``), which ONNX cannot translate."""

    def __init__(self, dim: int = 1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cummax(x, self.dim).values


class GatedMLP(nn.Module):
    """A residual MLP that rescales its update when it grows large: with ``gate=True`` a branch on
    a tensor's value, which ``torch.export`` cannot trace (``gate=False`` skips it)."""

    def __init__(self, dim: int, hidden: int, gate: bool = True) -> None:
        super().__init__()
        self.dim = dim
        self.hidden = hidden
        self.gate = gate
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc2(F.gelu(self.fc1(x)))
        if self.gate and h.abs().mean() > 1.0:
            h = h / h.abs().mean()
        return x + h


class ExportNet(nn.Module):
    """Three planted export problems, one per module: ``proj`` (QR) and ``mixer`` (cummax) have
    no ONNX translation, ``mlp`` branches on a value under ``torch.export``. notebooks/12-export.ipynb
    finds all three in one ``tx.export_check`` and fixes them. Its input is `sequences`."""

    def __init__(self, dim: int = 16, hidden: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.dim = dim
        self.hidden = hidden
        self.classes = classes
        self.proj = OrthoLinear(dim)
        self.mixer = RunningMax(1)
        self.mlp = GatedMLP(dim, hidden)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.mlp(self.mixer(self.proj(x))))


def export_net(dim: int = 16, hidden: int = 32, classes: int = 4) -> ExportNet:
    """An `ExportNet` in eval mode (seeded): ``tx.export_check(export_net(), sequences())``."""
    torch.manual_seed(0)
    return ExportNet(dim, hidden, classes).eval()


def sequences(batch: int = 2, length: int = 8, dim: int = 16) -> torch.Tensor:
    """A batch of random feature sequences, (batch, length, dim)."""
    return torch.randn(batch, length, dim)
