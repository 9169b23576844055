"""Forms across the ecosystem: ``python -m bench.forms_sweep [--library L] [--limit N]``.

Every distinct class that is not a torch class, met in the models of ``bench/forms_models.py``
(timm, torchvision, diffusers, transformers, open_clip, the project's zoo; configs, random init,
nothing downloaded), is taken once, from the first model that has it, and its form is opened as
the widget opens it (``tx.form(m)`` and its exactness gate, ``Form.inexact``). Each class is then:

- **exact**: the gate passed, and an independent check agrees: the unchanged edit done for real
  (``build()``, cast like the live module, the old weights carried) has the live module's repr,
  state_dict (names, shapes, dtypes, tensor types, values) and plain attributes;
- **refused**: the gate said why not (or the form raised): the person is told before Apply;
- **silent**: the gate passed and the check did not agree: a silently wrong rebuild (goal: 0).

Each form is opened a second time right away: it must be the first again (every field's value,
origin and note, and the gate's answer; the "second form differs" column, goal 0).

Then the same classes again from models built with recording on (``tx.record_everything()``).
It prints one table per library (rates, slowest and median form-open time) and the list of the
classes that were not exact. Goals: >= 95% exact without recording, 100% with, 0
silent, every form open <= 1 s.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import re
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

import torchxray as tx
from torchxray._cast import to_like
from torchxray._forms.exact.gate import build_meta
from torchxray._forms.rebuild.warmup import warm
from torchxray._patch.placement import carry

from .forms_models import LIBRARIES, MODELS, Model

GOALS = {"exact": 0.95, "recorded": 1.0, "silent": 0, "open_s": 1.0}
LAST_CPU = 0.0
LAST_AGAIN = ""
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


@dataclass
class Result:
    library: str
    cls: str
    model: str
    path: str
    status: str  # exact / refused / silent
    why: str
    open_s: float  # wall-clock seconds to open the form (its gate included)
    open_cpu_s: float = 0.0  # the same in CPU seconds of the thread: what the form's budget counts
    recorded: str = ""  # the status with recording ("" until measured)
    recorded_why: str = ""
    # A second form opened right after the first: "" when it is the same (every field's value,
    # origin and note, and the gate's answer), else the first field that differs (issue 40).
    again: str = ""


def _quiet() -> None:
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    try:
        import transformers

        transformers.logging.set_verbosity_error()
    except ImportError:
        pass


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _firsts(model: nn.Module) -> dict[type, tuple[str, nn.Module]]:
    out: dict[type, tuple[str, nn.Module]] = {}
    for path, m in model.named_modules():
        cls = type(m)
        if not cls.__module__.startswith("torch."):
            out.setdefault(cls, (path, m))
    return out


def _plain(v: Any) -> bool:
    if isinstance(v, (bool, int, float, str, type(None))):
        return True
    return isinstance(v, (tuple, list)) and all(_plain(x) for x in v)


def _repr(m: nn.Module) -> str:
    try:
        return repr(m)
    except Exception as e:  # noqa: BLE001 - a module whose repr raises (the zoo has one)
        return f"<repr raised {type(e).__name__}>"


def verify(live: nn.Module, built: nn.Module) -> str:
    """ "" when ``built`` (placed and carried) is the live module again, else the difference."""
    if _repr(built) != _repr(live):
        a, b = _repr(live).splitlines(), _repr(built).splitlines()
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        lines = (a[first] if first < len(a) else "-", b[first] if first < len(b) else "-")
        return f"repr differs: {lines[0].strip()!r} vs {lines[1].strip()!r}"
    sa, sb = live.state_dict(keep_vars=True), built.state_dict(keep_vars=True)
    if list(sa) != list(sb):
        return f"state_dict keys differ: {sorted(set(sa) ^ set(sb))[:4]}"
    for k, ta in sa.items():
        tb = sb[k]
        if not isinstance(ta, torch.Tensor) or not isinstance(tb, torch.Tensor):
            continue
        if ta.shape != tb.shape or ta.dtype != tb.dtype or type(ta) is not type(tb):
            return f"{k}: {type(ta).__name__}{tuple(ta.shape)} {ta.dtype} vs {type(tb).__name__}{tuple(tb.shape)} {tb.dtype}"
        if not ta.is_meta and not tb.is_meta and type(ta) in (torch.Tensor, nn.Parameter):
            # Values compared with NaN equal to NaN: weights made with torch.Tensor(n) (never
            # initialised) may hold NaNs, which carrying copies as they are.
            same = torch.equal(ta, tb.to(ta.device)) or (
                ta.is_floating_point()
                and bool(torch.isclose(ta, tb.to(ta.device), 0, 0, True).all())
            )
            if not same:
                return f"{k}: values differ after carrying the weights"
    mods = dict(built.named_modules())
    for path, m in live.named_modules():
        other = mods.get(path)
        if other is None:
            return f"{path}: missing"
        for key, v in m.__dict__.items():
            w = other.__dict__.get(key, v)
            if _plain(v) and _plain(w) and v != w and key != "training":
                return f"{path or '(root)'}.{key}: {v!r} vs {w!r}"
    return ""


def _rebuild_as_edit(f: Any, live: nn.Module) -> nn.Module:
    # A model built on meta may still hold real tensors (torch.Tensor(n) ignores the device).
    meta = any(t.is_meta for t in [*live.parameters(), *live.buffers()])
    if meta:
        # torchxray's own meta build (no weight init: a constructor's init code may not run on
        # meta), the one its gate compares; values are not compared on meta.
        built = build_meta(f)
    else:
        built = f.build()
    floats = [t for t in [*live.parameters(), *live.buffers()] if t.is_floating_point()]
    # As an edit places a replacement: floating tensors cast, complex ones kept (``to_like``;
    # ``nn.Module.to(dtype)`` would make a Fourier layer's complex weights real).
    if floats and not meta:
        to_like(built, floats[0].device, floats[0].dtype)
    elif floats:
        to_like(built, dtype=floats[0].dtype)
    built.train(live.training)
    try:
        carry(built, live)
    except NotImplementedError:
        if not meta:  # a meta model's constructor may also make real tensors (torch.Tensor(n)):
            raise  # nothing to carry from meta into them
    return built


def seen(f: Any) -> tuple[tuple[str, str, str, str], ...]:
    """What a person sees of a form: each field's name, value, origin and note, and the gate's
    answer. repr for the value: a factory (functools.partial) has no ==, two equal ones print the
    same; an object without its own repr prints its address, left out: its members are fields)."""
    fields = tuple((x.name, _ADDRESS.sub("", repr(x.value)), x.origin, x.note) for x in f.fields)
    return (*fields, ("(gate)", f.inexact, "", ""))


def again(m: nn.Module, first: Any) -> str:
    """ "" when a second form of ``m`` is the first again, else the first field that differs."""
    try:
        second = tx.form(m)
    except Exception as e:  # noqa: BLE001 - a second form that raises differs from the first
        return f"the second form raised {type(e).__name__}: {str(e)[:120]}"
    a, b = seen(first), seen(second)
    for x, y in zip(a, b):
        if x != y:
            return f"{x[0]}: {x[1][:60]} ({x[2]}) then {y[1][:60]} ({y[2]})"
    return "" if len(a) == len(b) else f"{len(a) - 1} fields then {len(b) - 1}"


def judge(m: nn.Module, twice: bool = False) -> tuple[str, str, float]:
    """(status, why, seconds to open the form with its gate); the CPU seconds in ``LAST_CPU``,
    and with ``twice`` whether a second form is the same in ``LAST_AGAIN`` (``again``)."""
    global LAST_CPU, LAST_AGAIN
    start, cpu = time.perf_counter(), time.thread_time()
    LAST_AGAIN = ""
    try:
        f = tx.form(m)
        why = f.inexact
    except Exception as e:  # noqa: BLE001 - a form that cannot open is a refusal, with its reason
        return (
            "refused",
            f"form() raised {type(e).__name__}: {e}"[:300],
            time.perf_counter() - start,
        )
    seconds = time.perf_counter() - start
    LAST_CPU = time.thread_time() - cpu
    if twice:
        LAST_AGAIN = again(m, f)
    if why:
        return "refused", why, seconds
    try:
        wrong = verify(m, _rebuild_as_edit(f, m))
    except Exception as e:  # noqa: BLE001 - the gate passed but the real build failed: not silent
        return "refused", f"build raised {type(e).__name__}: {str(e)[:200]}", seconds
    return ("silent", wrong, seconds) if wrong else ("exact", "", seconds)


def _build(model: Model, record: bool) -> nn.Module | None:
    torch.manual_seed(0)
    try:
        if record:
            with tx.record_init_args():
                return model.make()
        return model.make()
    except Exception as e:  # noqa: BLE001 - a model this environment cannot build is skipped
        print(
            f"  {model.library}/{model.name}: not built ({type(e).__name__}: {str(e)[:120]})",
            file=sys.stderr,
        )
        return None


def sweep(models: list[Model], recording: bool = True) -> list[Result]:
    results: dict[type, Result] = {}
    sources: dict[tuple[str, str], list[type]] = {}
    for model in models:
        built = _build(model, record=False)
        if built is None:
            continue
        for cls, (path, m) in _firsts(built).items():
            if cls in results:
                continue
            status, why, seconds = judge(m, twice=True)
            results[cls] = Result(
                model.library, cls.__qualname__, model.name, path, status, why, seconds, LAST_CPU
            )
            results[cls].again = LAST_AGAIN
            sources.setdefault((model.library, model.name), []).append(cls)
        new = len(sources.get((model.library, model.name), []))
        print(f"  {model.library}/{model.name}: {new} new classes", file=sys.stderr)
        del built
        gc.collect()
    if recording:
        by_name = {(m.library, m.name): m for m in models}
        for key, classes in sources.items():
            built = _build(by_name[key], record=True)
            # By name: a model whose classes are made anew on each build (a notebook cell's
            # exec) has other class objects the second time.
            firsts = {_name(c): v for c, v in (_firsts(built) if built is not None else {}).items()}
            for cls in classes:
                r = results[cls]
                if _name(cls) not in firsts:
                    r.recorded, r.recorded_why = "refused", "not built with recording"
                    continue
                r.recorded, r.recorded_why, _ = judge(firsts[_name(cls)][1])
            del built, firsts
            gc.collect()
    return list(results.values())


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} = {n / d:.1%}" if d else "-"


def table(results: list[Result]) -> str:
    rows = [
        "| library | classes | exact without recording | refused | silent | exact with recording "
        "| slowest open, CPU (wall) | opens over 1 s CPU | median open | second form differs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups = [(lib, [r for r in results if r.library == lib]) for lib in LIBRARIES]
    groups.append(("all", results))
    for lib, rs in groups:
        if not rs:
            continue
        n = len(rs)
        exact = sum(r.status == "exact" for r in rs)
        refused = sum(r.status == "refused" for r in rs)
        silent = sum(r.status == "silent" for r in rs) + sum(r.recorded == "silent" for r in rs)
        rec = [r for r in rs if r.recorded]
        rec_exact = sum(r.recorded == "exact" for r in rec)
        opens = [r.open_s for r in rs]
        slow = max(rs, key=lambda r: r.open_cpu_s)
        over = sum(r.open_cpu_s > GOALS["open_s"] for r in rs)
        twice = sum(bool(r.again) for r in rs)
        rows.append(
            f"| {lib} | {n} | {_pct(exact, n)} | {refused} | {silent} | {_pct(rec_exact, len(rec))} "
            f"| {slow.open_cpu_s * 1000:.0f} ms ({slow.open_s * 1000:.0f} ms, {slow.cls}) | {over} "
            f"| {statistics.median(opens) * 1000:.0f} ms | {twice} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--library", action="append", choices=LIBRARIES, help="only these libraries")
    ap.add_argument("--model", action="append", help="only these models (by name)")
    ap.add_argument("--limit", type=int, default=0, help="at most N models per library")
    ap.add_argument("--no-recording", action="store_true", help="skip the pass with recording")
    ap.add_argument("--json", help="write every class's result to this file")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    _quiet()
    torch.set_num_threads(args.threads)
    models = [m for m in MODELS if not args.library or m.library in args.library]
    if args.model:
        models = [m for m in models if m.name in args.model]
    if args.limit:
        models = [
            m for lib in LIBRARIES for m in [x for x in models if x.library == lib][: args.limit]
        ]
    warm()  # torch's one-time meta warm-up: the process's, paid before any form's clock
    start = time.perf_counter()
    results = sweep(models, recording=not args.no_recording)
    print(table(results))
    bad = [r for r in results if r.status != "exact" or r.recorded not in ("", "exact")]
    for r in (r for r in results if r.again):
        print(f"- {r.library} {r.cls} ({r.model}:{r.path or '(root)'}) second form: {r.again}")
    if bad:
        print("\nnot exact:")
        for r in bad:
            rec = (
                f" | recorded: {r.recorded} {r.recorded_why[:160]}"
                if r.recorded not in ("", "exact")
                else ""
            )
            print(
                f"- {r.library} {r.cls} ({r.model}:{r.path or '(root)'}) {r.status}: {r.why[:240]}{rec}"
            )
    print(
        f"\n{len(results)} classes from {len(models)} models in {time.perf_counter() - start:.0f} s"
    )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([asdict(r) for r in results], fh, indent=1)
    silent = sum(r.status == "silent" or r.recorded == "silent" for r in results)
    return 1 if silent or any(r.again for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
