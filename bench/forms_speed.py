"""The speed of ``tx.form``: ``python -m bench.forms_speed [--against REV] [--rounds N]``.

Opens the form of every distinct class of a fixed set of models as the widget opens it (``tx.form(m)``
and its exactness gate, ``Form.inexact``), each in the model's own process, and sums the CPU time of
the thread (what the form's budget and ceiling count). Models are built from configs, random
init, nothing downloaded (``bench/forms_models.py``).

``--against REV`` measures a second checkout in the same run: ``git worktree add`` makes REV's
tree in a temporary folder, and the two trees are measured in turn, A B A B ..., each round in
fresh processes (``PYTHONPATH`` points each at its own ``src``), so that a machine that speeds up
or slows down moves both. It prints each tree's median total and the median of the per-round
ratios (this tree / REV); a class whose form differs between the trees (a field's value or
origin, the hint, the gate's answer) is listed: a move must change no form.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# A spread of what forms meet: a CNN, a ViT, a block-list model, a hierarchical transformer, a
# detection-style torchvision model, a UNet from diffusers, two transformers LLMs on meta.
MODELS = (
    "resnet18",
    "convnext_atto",
    "efficientnet_b0",
    "vit_tiny_patch16_224",
    "swin_tiny_patch4_window7_224",
    "mobilenet_v3_small",
    "UNet2DModel",
    "llama",
    "bert",
)


def _one(name: str) -> dict[str, Any]:
    """Open every distinct class's form of model ``name`` in this process."""
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    import torchxray as tx

    from .forms_models import MODELS as ALL

    try:
        from torchxray._forms.rebuild.warmup import warm
    except ImportError:  # a tree from before the forms pipeline (--against)
        from torchxray._forms.warmup import warm  # type: ignore[no-redef]
    warm()
    model = next(m for m in ALL if m.name == name).make()
    seen: set[type] = set()
    cpu = 0.0
    forms: dict[str, Any] = {}
    for m in model.modules():
        cls = type(m)
        if cls in seen or cls.__module__.startswith("torch."):
            continue
        seen.add(cls)
        t = time.thread_time()
        f = tx.form(m)
        gate = f.inexact
        cpu += time.thread_time() - t
        forms[f"{cls.__module__}.{cls.__qualname__}"] = [
            [[x.name, x.text, x.origin, x.note] for x in f.fields],
            f.hint,
            gate,
        ]
    return {"model": name, "cpu": cpu, "classes": len(seen), "forms": forms}


def _measure(src: Path, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Each model in a fresh process of the tree at ``src``."""
    out = []
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    for name in names:
        run = subprocess.run(
            [sys.executable, "-m", "bench.forms_speed", "--one", name],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        out.append(json.loads(run.stdout.strip().splitlines()[-1]))
    return out


def _differs(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[str]:
    out = []
    for x, y in zip(a, b):
        for cls, form in x["forms"].items():
            if y["forms"].get(cls) != form:
                out.append(f"{x['model']}: {cls}")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--against", help="a git revision to measure in the same run (A/B)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(_one(args.one)))
        return
    names = tuple(args.models)
    trees = {"this tree": ROOT / "src"}
    tmp = None
    if args.against:
        tmp = tempfile.mkdtemp(prefix="forms_speed_")
        subprocess.run(
            ["git", "worktree", "add", "--detach", tmp, args.against],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        trees[args.against] = Path(tmp) / "src"
    totals: dict[str, list[float]] = {k: [] for k in trees}
    last: dict[str, list[dict[str, Any]]] = {}
    try:
        for r in range(args.rounds):
            for label, src in trees.items():
                got = _measure(src, names)
                last[label] = got
                totals[label].append(sum(x["cpu"] for x in got))
                print(f"round {r + 1} {label}: {totals[label][-1]:.2f} s CPU", file=sys.stderr)
    finally:
        if tmp is not None:
            subprocess.run(["git", "worktree", "remove", "--force", tmp], cwd=ROOT, check=False)
    classes = sum(x["classes"] for x in next(iter(last.values())))
    print(
        f"forms of {classes} classes from {len(names)} models, CPU seconds (median of {args.rounds} rounds):"
    )
    for label, ts in totals.items():
        print(f"- {label}: {statistics.median(ts):.2f} s (min {min(ts):.2f}, max {max(ts):.2f})")
    if args.against:
        ratios = [a / b for a, b in zip(totals["this tree"], totals[args.against])]
        print(f"- this tree / {args.against}: {statistics.median(ratios):.3f}x (per round: "
              + ", ".join(f"{x:.3f}" for x in ratios) + ")")  # fmt: skip
        diff = _differs(last["this tree"], last[args.against])
        print(f"- forms that differ: {len(diff)}" + "".join(f"\n  - {d}" for d in diff))


if __name__ == "__main__":
    main()
