"""GPU section (runs only when CUDA is available): a real probe of a ~1 B-parameter Llama on the
GPU, per-layer time and memory from the probe's records, and the overhead against a bare forward."""

from __future__ import annotations

from typing import Any

import torch

from . import anchors
from .models import count_params, human, llama_gpu
from .report import Results, Row
from .timing import measure


def _sync(fn: Any) -> Any:
    def run() -> Any:
        out = fn()
        torch.cuda.synchronize()
        return out

    return run


def gpu_suite(res: Results, repeats: int, layers: int = 16, seq: int = 1024) -> None:
    if not torch.cuda.is_available():
        res.notes.append("GPU section skipped: CUDA is not available on this machine")
        return
    from torchxray import probe

    name = torch.cuda.get_device_name()
    model = llama_gpu(layers).eval()
    tokens = torch.randint(0, 32_000, (4, seq), device="cuda")
    label = f"Llama {human(count_params(model))} bf16, {name}"
    bare = measure(_sync(lambda: anchors.bare_forward(model, tokens)), repeats, warmup=2)
    torch.cuda.reset_peak_memory_stats()
    anchors.bare_forward(model, tokens)
    bare_peak = torch.cuda.max_memory_allocated()
    real = measure(_sync(lambda: probe(model, tokens, mode="real")), repeats, warmup=1)
    res.add(Row("GPU", label, "probe (real, CUDA)", real, "bare forward", bare, f"tokens 4x{seq}"))
    counted = measure(
        _sync(lambda: probe(model, tokens, mode="real", flops=True)), repeats, warmup=1
    )
    res.add(Row("GPU", label, "probe (real, CUDA), flops=True", counted, "bare forward", bare))
    fake = measure(lambda: probe(model, tokens, mode="fake"), repeats, warmup=1)
    res.add(Row("GPU", label, "probe (fake, CUDA model)", fake, "bare forward", bare))
    if not real.ok:
        return
    rep = probe(model, tokens, mode="real")
    recs = [r for r in rep.records.values() if getattr(r, "time_ms", None) is not None]
    recs.sort(key=lambda r: r.time_ms or 0.0, reverse=True)
    lines = [
        f"### GPU per-layer (real probe, {label}, top 12 by time)",
        "",
        f"Bare forward peak memory: {bare_peak / 2**20:.0f} MiB.",
        "",
        "| module | class | calls | time | mem alloc | mem peak |",
        "|---|---|---|---|---|---|",
    ]
    for r in recs[:12]:
        alloc = getattr(r, "mem_alloc", None)
        peak = getattr(r, "mem_peak", None)
        lines.append(
            f"| `{r.path or '(root)'}` | {r.cls} | {r.calls} | {r.time_ms:.2f} ms | "
            f"{'n/a' if alloc is None else f'{alloc / 2**20:.1f} MiB'} | "
            f"{'n/a' if peak is None else f'{peak / 2**20:.1f} MiB'} |"
        )
    res.sections.append("\n".join(lines) + "\n")
