"""What `tx.export_check`'s ONNX target costs against a bare ``torch.onnx.export``.

`python -m bench.export_check [--repeats 5]`. On small real models built from config (a 2-layer
transformers Llama of width 64 on 16 tokens, the issue's anchor; timm ResNet-18 at 64x64) it
times, in interleaved rounds after one untimed warm-up of each:

- bare: ``torch.onnx.export(model, (x,), kwargs=..., dynamo=True)`` (its defaults: the graph
  optimised, no report, no verification),
- onnx: ``tx.export_check(model, x, options={"targets": ("onnx",), "drift": False})`` (torch.export,
  the ONNX decomposition and dispatch of every node, the ONNX model built),
- onnx+drift: the same with drift (the eager run with a hook per module and one onnxruntime run
  of every module's output, the check's default on real weights),

and prints the medians (wall and CPU seconds of this process, one torch thread) with the ratios
against bare from the same rounds. Goal (issue 56): onnx <= 2x bare. Nothing is timed in the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import torchxray as tx

from .machine import machine


def llama() -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)  # fmt: skip
    # use_cache=False: a DynamicCache in the outputs is no pytree ONNX takes (either side).
    return LlamaForCausalLM(config).eval(), (torch.randint(0, 256, (1, 16)),), {"use_cache": False}


def resnet18() -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    import timm

    torch.manual_seed(0)
    return timm.create_model("resnet18", pretrained=False).eval(), (torch.randn(1, 3, 64, 64),), {}


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[Any, ...], dict[str, Any]]]] = {
    "llama-2-layers": llama,
    "resnet18": resnet18,
}


def _bare(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return torch.onnx.export(model, args, kwargs=kwargs, dynamo=True, verbose=False)


def _ours(drift: bool) -> Callable[..., Any]:
    def run(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        rep = tx.export_check(
            model, *args, options={"targets": ("onnx",), "drift": drift}, **kwargs
        )
        assert rep.ok and rep.targets["onnx"].program is not None, str(rep)
        assert not drift or rep.drift, "drift was not measured"
        return rep

    return run


SIDES: dict[str, Callable[..., Any]] = {
    "bare": _bare,
    "onnx": _ours(False),
    "onnx+drift": _ours(True),
}


def measure(name: str, repeats: int) -> dict[str, tuple[float, float]]:
    model, args, kwargs = MODELS[name]()
    for side in SIDES.values():  # warm: imports, torchlib's registry, first compile of kernels
        side(model, args, kwargs)
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in SIDES}
    for _ in range(repeats):
        for key, side in SIDES.items():
            wall, cpu = time.perf_counter(), time.process_time()
            side(model, args, kwargs)
            runs[key].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
            for k, v in runs.items()}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    opts = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(machine())
    print(f"medians of {opts.repeats} interleaved rounds; wall s / CPU s (ratio to bare, CPU)")
    for name in opts.models:
        got = measure(name, opts.repeats)
        bare_cpu = got["bare"][1]
        cells = [f"{k} {w:.2f} / {c:.2f} s ({c / bare_cpu:.2f}x)" for k, (w, c) in got.items()]
        print(f"{name}: " + "; ".join(cells))
    print("goal: onnx <= 2x bare (issue 56)")


if __name__ == "__main__":
    main()
