"""How close a sampled step's update ratio and weight norm are to every value's (issue 55).

``python -m bench.watch_sample``: six models built in code (an MLP under SGD with momentum and
under Adam, ``torchxray.demo.resnet_ish`` and ``llama_like`` under AdamW, timm's ResNet-50 and
transformers' Llama from ``bench.watch``), five
steps each watched with ``every=1``; each step the weights are copied whole before the update,
and each module's ``update_ratio`` and ``param_norm`` from the watch (read from a sample of a
large tensor, ``_watch/record.py``: ``EXACT``, ``SAMPLE``) are compared with the ratio and norm
of every value. Prints the worst relative error of each figure per model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

import torchxray as tx
from torchxray.demo import images, llama_like, resnet_ish, tokens

Loss = Callable[[nn.Module], torch.Tensor]


def _ce(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def _own(model: nn.Module) -> Iterator[tuple[str, list[str]]]:
    for path, m in model.named_modules():
        names = [f"{path}.{n}" if path else n for n, _ in m.named_parameters(recurse=False)]
        if names:
            yield path, names


def worst(
    model: nn.Module, loss_of: Loss, opt: torch.optim.Optimizer, steps: int = 5
) -> tuple[float, float]:
    """The worst relative error of the update ratio and of the weight norm over ``steps``."""
    params = dict(model.named_parameters())
    bad_ratio = bad_norm = 0.0
    with tx.watch(model, opt, every=1) as w:
        for _ in range(steps):
            before = {n: p.detach().clone() for n, p in params.items()}
            opt.zero_grad()
            loss_of(model).backward()
            opt.step()
            ratios, norms = w.latest("update_ratio"), w.latest("param_norm")
            for path, names in _own(model):
                delta = math.sqrt(
                    sum(((params[n].detach() - before[n]) ** 2).sum().item() for n in names)
                )
                norm = math.sqrt(sum((before[n] ** 2).sum().item() for n in names))
                if path in ratios and norm > 0 and delta > 0:
                    bad_ratio = max(bad_ratio, abs(ratios[path] / (delta / norm) - 1))
                    bad_norm = max(bad_norm, abs(norms[path] / norm - 1))
    return bad_ratio, bad_norm


def main() -> None:
    torch.manual_seed(0)

    def mlp(width: int) -> nn.Module:
        return nn.Sequential(
            nn.Linear(784, width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, 10),
        )

    def digits(n: int) -> Loss:
        return lambda m: _ce(m(torch.randn(n, 784)), torch.randint(0, 10, (n,)))

    llama = llama_like(vocab=2000, dim=256, layers=2, heads=4, kv_heads=2, hidden=688, device="cpu")
    resnet = resnet_ish(width=32)
    from bench.watch import llama as hf_llama
    from bench.watch import resnet50

    timm_resnet, timm_loss = resnet50(2, 64)
    hf, hf_loss = hf_llama(2, 32)
    rows: list[tuple[str, nn.Module, Loss, Callable[..., torch.optim.Optimizer]]] = [
        ("MLP 784-256-256-10, SGD momentum", mlp(256), digits(128),
         lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9)),
        ("MLP 784-512-512-10, Adam", mlp(512), digits(64), lambda p: torch.optim.Adam(p, lr=1e-3)),
        ("resnet_ish width 32, AdamW", resnet,
         lambda m: _ce(m(images(4, size=32)), torch.randint(0, 10, (4,))),
         lambda p: torch.optim.AdamW(p, lr=1e-3)),
        ("llama_like 2 layers, width 256, vocab 2000, AdamW", llama,
         lambda m: _ce(m(tokens(2, 16, vocab=2000)), tokens(2, 16, vocab=2000)),
         lambda p: torch.optim.AdamW(p, lr=1e-3)),
        ("timm resnet50, 2x3x64x64, SGD momentum", timm_resnet, timm_loss,
         lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9)),
        ("transformers Llama, 4 layers, width 256, AdamW", hf, hf_loss,
         lambda p: torch.optim.AdamW(p, lr=1e-3)),
    ]  # fmt: skip
    print("| model | update ratio: worst error | weight norm: worst error |")
    print("|---|---:|---:|")
    for name, model, loss_of, make in rows:
        ratio, norm = worst(model, loss_of, make(model.parameters()))
        print(f"| {name} | {ratio * 100:.2f}% | {norm * 100:.2f}% |")


if __name__ == "__main__":
    main()
