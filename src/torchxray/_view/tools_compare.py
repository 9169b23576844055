"""The selection, compare and health tools' requests (listed in ``_view/handlers.py``): "select
all N matches" of the tree filter, bulk freeze / unfreeze / replace as one undoable patch, PEFT
``target_modules`` with the LoRA parameters rank r adds, the Diff tab (against the model as it was
when the explorer opened, or a checkpoint file), parameter statistics of one module and the
modules whose weights hold NaN or Inf.
"""

from __future__ import annotations

import math
import os
import re
import weakref
from collections.abc import Mapping

import torch
from torch import nn

from ..diff import ModelDiff, diff
from ..forms import form
from ..select import peft_targets
from ..stats import tensor_stats
from ..tree import ModelTree
from . import serialize as ser
from . import tools_classes
from ._compare_rows import stat_row
from .compare_types import (
    BulkRequest,
    DiffReply,
    DiffRequest,
    DiffRow,
    HealthReply,
    HealthRequest,
    PeftLayer,
    PeftReply,
    PeftRequest,
    PickReply,
    PickRequest,
    PlanReply,
    PlanRequest,
    StatsReply,
    StatsRequest,
)
from .host import ALL, NONE, Host, States
from .origin import module_table
from .replies import PatchedReply

__all__ = [
    "has_nonfinite",
    "on_bulk",
    "on_diff",
    "on_health",
    "on_peft",
    "on_pick",
    "on_plan",
    "on_stats",
]

MAX_ROWS = 500  # diff rows sent; `total` says how many there were
CHUNK = 1 << 20  # elements read at a time by the non-finite check


# -- selection ------------------------------------------------------------------------------------


def on_pick(host: Host, req: PickRequest) -> tuple[PickReply, States]:
    """Every path the tree filter matches (it shows at most a page of them)."""
    query = req["query"].strip()
    if not query:
        raise ValueError("type a filter first: 'select all' selects the modules it matches")
    found = ser.matching(host.tree, query, req["regex"], req["names"])
    return {"kind": "pick", "paths": [n.path for n in found]}, NONE


def _paths(host: Host, paths: list[str]) -> list[str]:
    if not paths:
        raise ValueError("nothing selected: tick modules in the tree (or 'select all' matches)")
    return list(dict.fromkeys(host.tree[p].path for p in paths))  # KeyError names close paths


def _outermost(host: Host, paths: list[str]) -> list[tuple[nn.Module, str]]:
    """The modules a bulk replace swaps: a selected module inside another selected one goes with
    it, and a module reachable at several paths counts once."""
    chosen, seen, out = set(paths), set(), []
    for p in paths:
        parent = host.tree[p].parent
        nested = False
        while parent is not None:
            if parent in chosen:
                nested = True
                break
            parent = host.tree[parent].parent
        m = host.tree.module(p)
        if not nested and id(m) not in seen and p != "":
            seen.add(id(m))
            out.append((m, p))
    return out


def on_plan(host: Host, req: PlanRequest) -> tuple[PlanReply, States]:
    found = _outermost(host, _paths(host, req["paths"]))
    classes: dict[str, int] = {}
    for m, _ in found:
        classes[type(m).__name__] = classes.get(type(m).__name__, 0) + 1
    what = ", ".join(f"{n}×{c}" for n, c in classes.items())
    target = req["cls"].rsplit(".", 1)[-1] if req["cls"] else "…"
    note = f"replace {len(found)} module{'s' if len(found) != 1 else ''} ({what}) with {target}"
    if not found:
        note = "nothing to replace: the model itself cannot be replaced from here"
    return {"kind": "plan", "count": len(found), "classes": classes, "note": note}, NONE


def on_bulk(host: Host, req: BulkRequest) -> tuple[PatchedReply, States]:
    paths = _paths(host, req["paths"])
    if req["op"] in ("freeze", "unfreeze"):
        entry = host.patch(req["op"], paths)
        return {"kind": "patched", "id": entry.id, "rev": host.rev}, ALL
    if not req["cls"]:
        raise ValueError("choose the class to replace the selected modules with")
    cls = tools_classes.imported(host, req["cls"])
    found = _outermost(host, paths)
    if not found:
        raise ValueError("nothing to replace: the model itself cannot be replaced from here")
    # Built before anything changes: a field that fails for one module leaves the model as it was.
    made = {id(m): _build(host, cls, m, req["changes"], req["prefill"]) for m, _ in found}
    match = "|".join(re.escape(p) for _, p in found)
    entry = host.patch("replace_all", match, lambda old: made.get(id(old), old))
    return {"kind": "patched", "id": entry.id, "rev": host.rev}, ALL


def _build(
    host: Host, cls: type, old: nn.Module, changes: dict[str, str], prefill: bool
) -> nn.Module:
    new_form = form(cls)
    values = dict(changes)
    if prefill:
        names = {f.name for f in new_form.fields if f.kind not in ("varargs", "varkw")}
        for f in host.form(old).fields:
            if f.name in names and f.name not in values and f.origin in ("attribute", "recorded"):
                values[f.name] = f.text
    return new_form.build(**values)


def _lora_size(m: nn.Module) -> tuple[int, int] | None:
    """(in, out) features of a layer LoRA adapts: A is r x in, B is out x r (a conv's A is a conv
    of the same kernel with r output channels: r * in_channels/groups * kernel)."""
    if isinstance(m, nn.Linear):
        return m.in_features, m.out_features
    if isinstance(m, nn.modules.conv._ConvNd):
        return m.in_channels * math.prod(m.kernel_size) // m.groups, m.out_channels
    if type(m).__name__ == "Conv1D" and hasattr(m, "nf"):  # transformers' GPT-2 Conv1D
        w = getattr(m, "weight", None)
        if isinstance(w, torch.Tensor) and w.dim() == 2:
            return int(w.shape[0]), int(w.shape[1])
    return None


def on_peft(host: Host, req: PeftRequest) -> tuple[PeftReply, States]:
    paths = _paths(host, req["paths"])
    r = req["r"]
    if r < 1:
        raise ValueError(f"rank r must be at least 1, got {r}")
    targets = peft_targets(host.live_model(), paths)
    layers: list[PeftLayer] = []
    skipped = []
    for p in paths:
        m = host.tree.module(p)
        size = _lora_size(m)
        if size is None:
            skipped.append(p)
            continue
        fin, fout = size
        layers.append({"path": p, "cls": type(m).__name__, "in_features": fin,
                       "out_features": fout, "lora": r * (fin + fout)})  # fmt: skip
    total = sum(layer["lora"] for layer in layers)
    return {"kind": "peft", "targets": repr(targets), "r": r, "lora_params": total,
            "layers": layers, "skipped": skipped}, NONE  # fmt: skip


# -- diff ---------------------------------------------------------------------------------------

_BADGE_ORDER = (
    "added", "retyped", "changed", "shape", "dtype", "values", "missing", "frozen", "unfrozen"
)  # fmt: skip


def on_diff(host: Host, req: DiffRequest) -> tuple[DiffReply, States]:
    model = host.live_model()
    rows: list[DiffRow] = []
    badges: dict[str, str] = {}
    if req["against"] == "open":
        if host.origin is None:
            raise ValueError(
                "the model as opened was not kept (its state_dict() failed when the explorer "
                "opened, or the explorer was closed); compare with a checkpoint file instead"
            )
        d = diff(model, host.origin.tensors)
        label = "the model when the explorer opened"
        rows += _module_rows(host.origin.modules, module_table(model), badges)
        rows += _grad_rows(host.origin.trainable, model, badges)
        # diff(now, opened): "missing" is a tensor only now has, "unexpected" one only then had.
        rename = {"missing": "added", "unexpected": "removed"}
    else:
        file = os.path.expanduser(req["file"].strip())
        if not file:
            raise ValueError("type a checkpoint path (.safetensors, .pt or .bin) to compare with")
        d = diff(model, file)
        label = file
        rename = {}
    rows += _param_rows(d, rename, host.tree)
    for path, kind in d.by_module(("shape", "dtype", "values", "missing")).items():
        _badge(badges, path, kind)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["kind"]] = counts.get(row["kind"], 0) + 1
    return {"kind": "diff", "label": label, "rows": rows[:MAX_ROWS], "total": len(rows),
            "badges": badges, "counts": counts}, NONE  # fmt: skip


def _badge(badges: dict[str, str], path: str, kind: str) -> None:
    old = badges.get(path)
    if old is None or _BADGE_ORDER.index(kind) < _BADGE_ORDER.index(old):
        badges[path] = kind


def _module_rows(
    before: Mapping[str, tuple[type, str]],
    now: Mapping[str, tuple[type, str]],
    badges: dict[str, str],
) -> list[DiffRow]:
    rows: list[DiffRow] = []
    for path, (cls, text) in now.items():
        old = before.get(path)
        if old is None:
            rows.append(_row(path, "added", cls.__name__))
        elif old[0] is not cls:
            rows.append(_row(path, "retyped", f"{old[0].__name__} → {cls.__name__}"))
        elif old[1] != text:
            rows.append(_row(path, "changed", f"{old[1]} → {text}"))
        else:
            continue
        _badge(badges, path, rows[-1]["kind"])
    rows += [
        _row(p, "removed", cls.__name__, module=None)
        for p, (cls, _) in before.items()
        if p not in now
    ]
    return rows


def _grad_rows(
    before: Mapping[str, bool], model: nn.Module, badges: dict[str, str]
) -> list[DiffRow]:
    """One row per module whose own parameters were frozen (or unfrozen) since the model opened."""
    flipped: dict[tuple[str, bool], list[str]] = {}
    for name, p in model.named_parameters():
        was = before.get(name)
        if was is not None and was != p.requires_grad:
            owner, _, leaf = name.rpartition(".")
            flipped.setdefault((owner, p.requires_grad), []).append(leaf)
    rows = []
    for (owner, now), leaves in flipped.items():
        kind = "unfrozen" if now else "frozen"
        detail = f"requires_grad {not now} → {now}: {', '.join(leaves)}"
        rows.append(_row(owner, kind, detail))
        _badge(badges, owner, kind)
    return rows


def _row(
    path: str, kind: str, detail: str, rel: float | None = None, module: str | None = ""
) -> DiffRow:
    module = path if module == "" else module
    return {"path": path or "(model)", "kind": kind, "detail": detail[:300], "rel_change": rel,
            "module": module}  # fmt: skip


def _param_rows(d: ModelDiff, rename: dict[str, str], tree: ModelTree) -> list[DiffRow]:
    rows = []
    for c in d.params.values():
        if c.kind == "same":
            continue
        if c.kind == "shape":
            detail = f"shape {c.shape_a} → {c.shape_b}"
        elif c.kind == "dtype":
            detail = f"dtype {c.dtype_a} → {c.dtype_b}"
        else:
            detail = f"{c.dtype_a or c.dtype_b} {c.shape_a or c.shape_b}"
        kind = rename.get(c.kind, c.kind)
        owner = c.name.rpartition(".")[0]
        module = None if kind in ("removed", "unexpected") and owner not in tree else owner
        rows.append(_row(c.name, kind, detail, _finite(c.rel_change), module))
    return rows


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None  # JSON has no NaN or Infinity


# -- stats and health ----------------------------------------------------------------------------


def _own(m: nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(m.named_parameters(recurse=False)), **dict(m.named_buffers(recurse=False))}


def on_stats(host: Host, req: StatsRequest) -> tuple[StatsReply, States]:
    path = host.tree[req["path"]].path
    own = _own(host.tree.module(path))
    return {"kind": "stats", "path": path,
            "rows": [stat_row(n, tensor_stats(t)) for n, t in own.items()]}, NONE  # fmt: skip


# id(tensor) -> (a weak reference to it, its version counter then, the answer): scrolling the tree
# asks again about the same rows, and a weight read once is not read again until an in-place
# change bumps its version (writes through ``.data`` do not: torch does not count them). One per
# session, kept in ``host.caches`` for as long as its tree.
Checked = dict[int, tuple[weakref.ref[torch.Tensor], int, bool]]


def has_nonfinite(t: torch.Tensor, checked: Checked | None = None) -> bool:
    """NaN or Inf anywhere in ``t``, read a chunk at a time (no tensor-sized temporary); the
    answer is kept in ``checked`` until ``t`` changes in place."""
    if t.is_meta or not (t.is_floating_point() or t.is_complex()) or _fake(t):
        return False
    seen = checked.get(id(t)) if checked is not None else None
    if seen is not None and seen[0]() is t and seen[1] == t._version:
        return seen[2]
    flat = t.detach().reshape(-1)
    bad = any(
        not bool(torch.isfinite(flat[i : i + CHUNK]).all()) for i in range(0, flat.numel(), CHUNK)
    )
    if checked is not None:
        checked[id(t)] = (weakref.ref(t), t._version, bad)
    return bad


def _fake(t: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


def on_health(host: Host, req: HealthRequest) -> tuple[HealthReply, States]:
    checked: Checked = host.caches.get("nonfinite", host.tree, dict)
    bad = []
    for p in dict.fromkeys(req["paths"]):
        node = host.tree.get(p)
        if node is not None and any(
            has_nonfinite(t, checked) for t in _own(host.tree.module(node.path)).values()
        ):
            bad.append(p)
    rec = host.report.nonfinite if host.report is not None else None
    note = ""
    if rec is not None:
        note = f"non-finite values: first in the outputs of {rec.path or '(model)'} ({rec.cls})"
    return {"kind": "health", "nonfinite": bad,
            "probe_path": None if rec is None else rec.path, "probe_note": note}, NONE  # fmt: skip
