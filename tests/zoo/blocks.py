"""Module classes the zoo models are made of (kept apart from the case list so each file stays short)."""

from __future__ import annotations

import dataclasses
import linecache

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBNAct(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.body = nn.Sequential(ConvBNAct(cin, cout, stride), nn.Conv2d(cout, cout, 3, 1, 1))
        self.down = nn.Conv2d(cin, cout, 1, stride) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + self.down(x))


class TinyResNet(nn.Module):
    def __init__(self, width: int = 8, classes: int = 5) -> None:
        super().__init__()
        self.stem = ConvBNAct(3, width)
        self.layer1 = nn.Sequential(BasicBlock(width, width), BasicBlock(width, width))
        self.layer2 = nn.Sequential(
            BasicBlock(width, 2 * width, 2), BasicBlock(2 * width, 2 * width)
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


class TinyViT(nn.Module):
    def __init__(self, dim: int = 16, patch: int = 4, image: int = 8, depth: int = 2) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, 2, 2 * dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class GPTBlock(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    """Decoder-only LM whose head shares the token embedding's weight (tied weights)."""

    def __init__(self, vocab: int = 50, dim: int = 16, depth: int = 2, ctx: int = 8) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.blocks = nn.ModuleList(GPTBlock(dim, 2) for _ in range(depth))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class MoE(nn.Module):
    """Top-1 mixture of experts: which rows reach which expert depends on the data."""

    def __init__(self, dim: int = 8, experts: int = 3) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        choice = self.gate(x).argmax(-1)
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            rows = x[choice == i]  # boolean indexing: output shape known only from the data
            if rows.shape[0]:
                out[choice == i] = expert(rows)
        return out


class RecurrentHead(nn.Module):
    def __init__(self, kind: str = "LSTM", dim: int = 6, hidden: int = 8) -> None:
        super().__init__()
        self.rnn = getattr(nn, kind)(dim, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


class AttentionBlock(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        y, _ = self.attn(x, x, x, key_padding_mask=mask, need_weights=False)
        return self.norm(x + y)


class SharedTwice(nn.Module):
    """One Linear registered at two paths (`a` and `b`)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(6, 6)
        self.b = self.a
        self.out = nn.Linear(6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.a(x) + self.b(x))


class CalledThrice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
        self.out = nn.Linear(6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(3):
            x = self.block(x)
        return self.out(x)


AWKWARD_KEYS = ("with space", "dash-key", "ünï", "0", "emoji🙂", "tab\tkey", "<b>html</b>")


class AwkwardKeys(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads = nn.ModuleDict({k: nn.Linear(4, 2) for k in AWKWARD_KEYS})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sum(head(x) for head in self.heads.values())  # type: ignore[return-value]


class BadRepr(nn.Linear):
    """extra_repr, __repr__ and a property all raise, as half-finished user code does."""

    def extra_repr(self) -> str:
        raise RuntimeError("extra_repr is broken")

    def __repr__(self) -> str:
        raise RuntimeError("__repr__ is broken")

    @property
    def fan_in(self) -> int:
        raise AttributeError("fan_in is broken")


class HasBadRepr(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bad = BadRepr(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.bad(x))


class KwargsForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(
        self, x: torch.Tensor, *, scale: float = 1.0, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        y = self.proj(x) * scale
        return y if mask is None else y.masked_fill(mask, 0.0)


class DictIO(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.image = nn.Linear(6, 4)
        self.text = nn.Embedding(10, 4)

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        img, txt = self.image(batch["image"]), self.text(batch["tokens"]).mean(1)
        return {"image": img, "text": txt, "score": (img * txt).sum(-1)}


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    hidden: torch.Tensor
    aux: tuple[torch.Tensor, ...] = ()


class DataclassOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> Output:
        h = self.body(x).relu()
        return Output(self.head(h), h, (h.mean(),))


class MLP(nn.Module):
    def __init__(self, sizes: tuple[int, ...] = (4, 8, 2)) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            *[nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])],
        )
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.layers(x))


class WithBuffers(nn.Module):
    """Frozen backbone, a persistent and a non-persistent buffer, and a None parameter slot."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Linear(4, 4).requires_grad_(False)
        self.head = nn.Linear(4, 2)
        self.register_buffer("scale", torch.full((4,), 2.0))
        self.register_buffer("cache", torch.zeros(4), persistent=False)
        self.register_parameter("unused", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x) * self.scale + self.cache)


class Conv1dNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(2, 4, 5, padding=2), nn.GroupNorm(2, 4), nn.SiLU(), nn.MaxPool1d(2),
            nn.Conv1d(4, 4, 3, groups=4), nn.AdaptiveMaxPool1d(1), nn.Flatten(), nn.Linear(4, 2),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


CELL_FILE = "/tmp/ipykernel_4242/2718281828.py"  # the shape of a name ipykernel gives a cell
CELL_SOURCE = '''import torch.nn as nn


class CellNet(nn.Module):
    """Defined in a notebook cell."""

    def __init__(self, width=8):
        super().__init__()
        self.fc = nn.Linear(4, width)
        self.out = nn.Linear(width, 2)

    def forward(self, x):
        return self.out(self.fc(x).relu())
'''


def cell_class(filename: str = CELL_FILE, keep_source: bool = True) -> type[nn.Module]:
    """A class made the way IPython makes one: compiled under a cell name, source in linecache."""
    if keep_source:
        lines = CELL_SOURCE.splitlines(True)
        linecache.cache[filename] = (len(CELL_SOURCE), None, lines, filename)  # type: ignore[assignment]
    else:
        linecache.cache.pop(filename, None)
    ns: dict[str, object] = {"__name__": "__main__"}
    exec(compile(CELL_SOURCE, filename, "exec"), ns)
    return ns["CellNet"]  # type: ignore[return-value]
