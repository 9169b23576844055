"""Forms against the truth: every value a form shows as read (not a guess) compared with the
argument the model's code really passed (issue 58: 0 silent).

The forms column of ``bench.sweep`` judges a form by its rebuild: the gate passed, and an
unchanged edit rebuilt the same repr, state_dict and attributes. That cannot see a value that
sets only tensor values the edit carries over (``sign * rgb_range * mean`` in a frozen
convolution), or one no part keeps (a non-persistent buffer computed from ``base``): a form may
show such a value as read, wrongly, and pass. Here each model is built twice from its entry, once
inside ``tx.record_init_args()`` (the truth: each module's call, bound to its signature with the
defaults applied) and once without (the model a user explores); each distinct class's form is
made on the second, and each field whose origin says it was read ("attribute", "derived",
"inferred") is compared with the first's argument of that name.

A mismatch is one of three things, listed apart:
- **wrong**: the value read differs and a rebuild with the true value is another module (by
  ``parts``): should not happen, the gate would have failed; a fault of the comparison.
- **unseen**: the value read differs and both rebuild the same parts: the form shows as read a
  value the gate cannot tell from the truth, where it must be a guess. A silent form.
- **keys**: a dict handed whole, shown by the keys the class reads (the others left out).
- **spelled**: equal as built but written another way, compared by text after ``repr``; and not
  listed at all: torch's spelling of a size (``3`` for ``(3, 3)``), a factory and the class it
  calls with defaults, the same ``def`` or options made again by the second build.

Run: ``python -m bench.forms_truth --family blind5 blind4 ...`` (the hand-written families of
``bench.sweep``; a few minutes each). Prints a table and every unseen value.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import sys
import types
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

import torchxray as tx
from torchxray._forms.record import recorded_args
from torchxray._signature import resolve

_READ = ("attribute", "derived", "inferred")


def _truth(module: nn.Module) -> dict[str, Any] | None:
    rec = recorded_args(module)
    if rec is None:
        return None
    try:
        bound = resolve(type(module)).bind(*rec[0], **rec[1])
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


def _partial_defaults(p: functools.partial, cls: Any) -> bool:
    """Whether ``p`` is ``cls`` with keywords at its defaults only (``partial(InstanceNorm2d,
    affine=False)``): the same factory."""
    if p.func is not cls or p.args:
        return False
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False
    return all(k in params and _equal(params[k].default, v) for k, v in p.keywords.items())


def _equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, functools.partial) and isinstance(b, functools.partial):
        return (
            (a.func is b.func and _equal(a.args, b.args) and _equal(a.keywords, b.keywords))
            or _partial_defaults(a, b.func)
            and _partial_defaults(b, a.func)
        )
    if isinstance(a, functools.partial) or isinstance(b, functools.partial):
        p, cls = (a, b) if isinstance(a, functools.partial) else (b, a)
        return _partial_defaults(p, cls)
    # torch's own spelling of a size: 3 for (3, 3), 16 for (16,)
    if isinstance(a, int) and isinstance(b, (tuple, list)) and b and not isinstance(a, bool):
        return all(type(x) is int and x == a for x in b)
    if isinstance(b, int) and isinstance(a, (tuple, list)) and a and not isinstance(b, bool):
        return all(type(x) is int and x == b for x in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (a != a and b != b)
    if isinstance(a, nn.Module) or isinstance(b, nn.Module) or isinstance(a, torch.Tensor):
        return True  # the object itself is handed over; its own form is judged apart
    if isinstance(a, types.FunctionType) and isinstance(b, types.FunctionType):
        return a.__code__ is b.__code__  # one def or lambda, made again by each build
    if type(a) is type(b) and hasattr(a, "__dict__") and not isinstance(a, type):
        return _equal(vars(a), vars(b))  # an options object made again by each build
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - no equality: by text
        return repr(a) == repr(b)


def _fewer_keys(shown: Any, true: Any) -> bool:
    """Whether ``shown`` is ``true`` without some of its keys (at any depth)."""
    if not (isinstance(shown, dict) and isinstance(true, dict)):
        return False
    return all(
        k in true and (_equal(v, true[k]) or _fewer_keys(v, true[k])) for k, v in shown.items()
    )


def _distinct(model: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    seen: set[type] = set()
    for path, m in model.named_modules():
        cls = type(m)
        if cls in seen or cls.__module__.split(".")[0] == "torch":
            continue
        seen.add(cls)
        yield path, m


def _same_parts(f: Any, name: str, value: Any) -> bool | None:
    """Whether the form built with ``name=value`` has the parts of its unchanged build (None:
    that build failed)."""
    from torchxray._forms.exact.gate import build_meta
    from torchxray._forms.rebuild.parts import parts

    try:
        with warnings.catch_warnings(), torch.random.fork_rng():
            warnings.simplefilter("ignore")
            a = parts(build_meta(f, real_ok=True))
            b = parts(build_meta(f, {name: value}, real_ok=True))
    except Exception:  # noqa: BLE001
        return None
    return a.items == b.items


def audit(entries: list[Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for e in entries:
        try:
            with warnings.catch_warnings(), torch.random.fork_rng():
                warnings.simplefilter("ignore")
                with tx.record_init_args():
                    truth_model = e.make()
                model = e.make()
        except Exception as exc:  # noqa: BLE001
            print(f"  {e.family}/{e.name}: build failed: {exc}", file=sys.stderr)
            continue
        truths = dict(truth_model.named_modules())
        for path, m in _distinct(model):
            truth = _truth(truths.get(path, m)) if path in truths else None
            if truth is None:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    f = tx.form(m)
            except Exception:  # noqa: BLE001 - judged by bench.sweep
                continue
            if f.inexact:
                continue
            for field in f.fields:
                if field.group or field.origin not in _READ or field.name not in truth:
                    continue
                if field.kind in ("varargs", "varkw", "config"):
                    continue
                true = truth[field.name]
                if field.kind in ("device", "dtype") and true is None:
                    continue  # read off the tensors: where the module lives, not a choice
                if _equal(field.value, true):
                    continue
                alike = _same_parts(f, field.name, true)
                status = (
                    "spelled"
                    if repr(field.value) == repr(true)
                    else ("unseen" if alike else "wrong")
                )
                if status == "unseen" and _fewer_keys(field.value, true):
                    status = "keys"  # a dict handed whole, shown by the keys the class reads
                rows.append({
                    "entry": f"{e.family}/{e.name}", "path": path or "(root)",
                    "class": type(m).__name__, "field": field.name, "origin": field.origin,
                    "shown": repr(field.value)[:80], "true": repr(true)[:80], "status": status,
                    "rebuild": "same parts" if alike else ("differs" if alike is False else "failed"),
                })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    from bench.sweep.families import FAMILIES

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--family", nargs="+", default=["handwritten"])
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    rows: list[dict[str, Any]] = []
    for fam in a.family:
        entries = list(FAMILIES[fam](False))
        got = audit(entries)
        rows += got
        counts = {
            s: sum(r["status"] == s for r in got) for s in ("unseen", "wrong", "keys", "spelled")
        }
        print(f"{fam}: {len(entries)} models; values shown as read but not the truth: {counts}")
    for r in rows:
        if r["status"] not in ("spelled", "keys"):
            print(f"- {r['status']}: {r['entry']} {r['path']} ({r['class']}).{r['field']} "
                  f"[{r['origin']}] shown {r['shown']}, passed {r['true']}; rebuild with the truth: "
                  f"{r['rebuild']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
