"""What `tx.compile_check` costs against ``torch._dynamo.explain`` (and what the stubs save).

`python -m bench.compile_check [--repeats 3]`. For small real models built from config (timm
ResNet-18 and ViT-Tiny at 64x64; 2-layer transformers Llama, BERT and CTRL of width 64, where
CTRL breaks and fails export) and a stack of identical MLP blocks
(2 and 24 of them, and 24 that each
print: 24 breaks) it times ``tx.compile_check(model, x)`` (fake inputs; with and without
torch.export) and ``torch._dynamo.explain(model)(x)`` on real CPU tensors, and says whether both
agree (no graph break iff ``rep.ok``). Each is timed warm (one untimed call of each on a
throwaway model first), in interleaved rounds (check, check without export, explain; again), and
the median CPU time (ms of this process, one torch thread) of the rounds is printed with the
ratios against explain from the same rounds, then 24 blocks against 2. explain resets dynamo as
it starts, so it always runs cold; each check is timed right after a ``torch._dynamo.reset()``
(untimed), so that both sides pay dynamo's warm-up alike. explain counts compiled graphs minus one, not breaks per call: identical
blocks share one compiled frame, so 24 breaks read 1 there. Nothing is timed in the tests.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import torchxray as tx


class Block(nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.down = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(self.act(self.up(self.norm(x))))


class Chatty(Block):
    """A block that logs with print: one graph break per block."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print(end="")
        return super().forward(x)


class Stack(nn.Module):
    def __init__(self, depth: int, width: int = 64, block: type[Block] = Block) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(block(width) for _ in range(depth))
        self.head = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def resnet18() -> tuple[nn.Module, tuple[Any, ...]]:
    import timm

    return timm.create_model("resnet18", pretrained=False).eval(), (torch.randn(1, 3, 64, 64),)


def _tiny_text(config_cls: Any, model_cls: Any, **extra: Any) -> tuple[nn.Module, tuple[Any, ...]]:
    """A transformers model of 2 layers, width 64, on 16 tokens."""
    config = config_cls(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        **extra,
    )
    return model_cls(config).eval(), (torch.randint(0, 256, (1, 16)),)


def llama() -> tuple[nn.Module, tuple[Any, ...]]:
    from transformers import LlamaConfig, LlamaForCausalLM

    return _tiny_text(LlamaConfig, LlamaForCausalLM, num_key_value_heads=2)


def vit() -> tuple[nn.Module, tuple[Any, ...]]:
    import timm

    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64)
    return model.eval(), (torch.randn(1, 3, 64, 64),)


def bert() -> tuple[nn.Module, tuple[Any, ...]]:
    from transformers import BertConfig, BertModel

    return _tiny_text(BertConfig, BertModel, max_position_embeddings=64)


def ctrl() -> tuple[nn.Module, tuple[Any, ...]]:
    """A library model that breaks: its forward registers a buffer (``register_buffer``, which
    dynamo cannot trace), and its output holds a ``DynamicCache`` export cannot flatten."""
    from transformers import CTRLConfig, CTRLLMHeadModel

    config = CTRLConfig(vocab_size=256, n_positions=64, n_embd=64, dff=128, n_layer=2, n_head=4)
    return CTRLLMHeadModel(config).eval(), (torch.randint(0, 256, (1, 16)),)


def stack(
    depth: int, block: type[Block] = Block
) -> Callable[[], tuple[nn.Module, tuple[Any, ...]]]:
    return lambda: (Stack(depth, block=block).eval(), (torch.randn(2, 8, 64),))


MODELS: list[tuple[str, Callable[[], tuple[nn.Module, tuple[Any, ...]]]]] = [
    ("timm resnet18 (64x64)", resnet18),
    ("timm vit_tiny (64x64)", vit),
    ("transformers Llama, 2 layers, width 64", llama),
    ("transformers BERT, 2 layers, width 64", bert),
    ("transformers CTRL, 2 layers, width 64 (breaks)", ctrl),
    ("2 identical MLP blocks", stack(2)),
    ("24 identical MLP blocks", stack(24)),
    ("24 identical MLP blocks, a print in each", stack(24, Chatty)),
]


def _explain(model: nn.Module, args: tuple[Any, ...]) -> Any:
    # Not under no_grad: there, explain reads 0 breaks for the 24 printing blocks (the first
    # break comes before any op of the root's frame, and the blocks' resumed frames share one
    # compiled code), while torch.compile still splits every block's graph at its print.
    return torch._dynamo.explain(model)(*args)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    # CPU time of this process, not wall time: on 2 CPUs shared with other work, wall times
    # of one call swung 3x between rounds, CPU time far less (torch runs on one thread here).
    start = time.process_time()
    out = fn()
    return (time.process_time() - start) * 1e3, out


def measure(model: nn.Module, args: tuple[Any, ...], repeats: int) -> dict[str, Any]:
    """Medians (ms) of the full check, the check without export, and explain, interleaved: one
    of each per round, so that a slow spell of the shared machine weighs on all three."""
    runs: dict[str, list[float]] = {"check": [], "no_export": [], "explain": []}
    rep = ex = None
    for _ in range(repeats):
        # explain resets dynamo as it starts (and as it ends): it always runs cold. Each check
        # is run after a reset too, untimed, so that all three pay dynamo's warm-up alike (the
        # check without export used to run warm, right after the check with export).
        torch._dynamo.reset()
        t, rep = _timed(lambda: tx.compile_check(model, *args))
        runs["check"].append(t)
        torch._dynamo.reset()
        t, _ = _timed(lambda: tx.compile_check(model, *args, options={"export": False}))
        runs["no_export"].append(t)
        t, ex = _timed(lambda: _explain(model, args))
        runs["explain"].append(t)
    out: dict[str, Any] = {k: statistics.median(v) for k, v in runs.items()}
    out["rep"], out["explain_out"] = rep, ex
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    torch.set_num_threads(1)
    warm, warm_args = stack(1)()
    tx.compile_check(warm, *warm_args)
    _explain(warm, warm_args)
    print(
        "| model | compile_check (ms) | without export (ms) | traces | explain (ms) "
        "| check / explain | without export / explain | breaks / explain's | agree |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    got: dict[str, dict[str, Any]] = {}
    for name, build in MODELS:
        m = got[name] = measure(*build(), opts.repeats)
        rep, ex = m["rep"], m["explain_out"]
        agree = (ex.graph_break_count == 0) == rep.ok
        print(
            f"| {name} | {m['check']:.0f} | {m['no_export']:.0f} | {rep.checked} "
            f"| {m['explain']:.0f} | {m['check'] / m['explain']:.2f}x "
            f"| {m['no_export'] / m['explain']:.2f}x "
            f"| {len(rep.breaks)} / {ex.graph_break_count} | {'yes' if agree else 'NO'} |",
            flush=True,
        )
    two, many = got["2 identical MLP blocks"], got["24 identical MLP blocks"]
    print(
        f"\n24 blocks / 2 blocks: compile_check {many['check'] / two['check']:.2f}x, without "
        f"export {many['no_export'] / two['no_export']:.2f}x, explain "
        f"{many['explain'] / two['explain']:.2f}x (goal: compile_check <= 3x)"
    )
    worst = max(got.items(), key=lambda kv: kv[1]["check"] / kv[1]["explain"])
    print(
        f"worst compile_check / explain: {worst[1]['check'] / worst[1]['explain']:.2f}x on "
        f"{worst[0]} (goal: <= 1.5x); medians of {opts.repeats} interleaved rounds"
    )


if __name__ == "__main__":
    main()
