"""The checks the hand-written families add (issue 58, item 4): ``tx.summary``, the form of every
distinct class (judged as `bench.forms_sweep` judges it), one edit that applies, and the anchor.

- **summary**: ``tx.summary(model, *args, **kwargs)`` returns its table (a first line, "Total
  params"), its first line kept as the cell's text.
- **forms**: every distinct class of the model, its first instance, through
  `bench.forms_sweep.judge`: *exact* (the gate ``Form.inexact`` passed and an unchanged edit
  rebuilt the same repr, state_dict and attributes), *refused* (the gate said why in a sentence,
  or ``tx.form`` refused with a TypeError naming the class), *silent* (the gate passed and the
  rebuild differs) or *raised* (``tx.form`` raised anything else: a bug of ours). The cell fails
  on a silent or raised form; refusals are counted (`bench.sweep.report`) and listed with their
  sentence, user classes and torch classes apart.
- **edit**: ``tx.PatchLog(model).edit(path, **changes)``, a real probe whose output shapes are the
  bare forward's, then ``undo()`` (the model untouched after it is judged by the guard as after
  every check). A refusal fails the cell with its sentence: each edit chosen keeps every shape.
- **anchor**: every probe a bare forward allows succeeds: the fake probe, or, where fake tensors
  cannot run the forward, a fake failure that names that reason and a real probe that succeeds.

A fresh model (``Entry.fresh``) is one never called: what its first forward sets up for good (a
library's hooks, lazy state) is found on the twin the bare forward ran on (`setup_rows`: the
fingerprint rows a first forward changes and a second leaves) and may be left by a probe too.
"""

from __future__ import annotations

import copy
import time
import traceback
import warnings
from dataclasses import replace
from typing import Any

import torch
from torch import nn

import torchxray as tx

# A TypeError of `tx.form` naming what it cannot do is a refusal in a sentence; anything else
# escaping `tx.form` is a failure of ours (issue 58: an AttributeError about 'NoneType').
_REFUSALS = (TypeError, ValueError)


def setup_rows(twin: nn.Module, inputs: tuple[tuple[Any, ...], dict[str, Any]]) -> dict[str, set]:
    """{fingerprint field: keys} that a first eval forward of ``twin`` changes and a second one
    does not: what the first call sets up for good (transformers' output-capturing hooks)."""
    from tests.zoo.invariants import _keyed, state_fingerprint

    args, kwargs = inputs
    f0 = state_fingerprint(twin)
    with torch.no_grad(), warnings.catch_warnings(), torch.random.fork_rng():
        warnings.simplefilter("ignore")
        twin(*args, **kwargs)
        f1 = state_fingerprint(twin)
        twin(*args, **kwargs)
    f2 = state_fingerprint(twin)
    rows: dict[str, set] = {}
    for name in f0.__dataclass_fields__:
        a, b, c = (dict(_keyed(getattr(f, name))) for f in (f0, f1, f2))
        keys = {k for k in {*a, *b} if a.get(k) != b.get(k) and b.get(k) == c.get(k)}
        if keys:
            rows[name] = keys
    return rows


def strip(fp: Any, rows: dict[str, set]) -> Any:
    """The fingerprint without the rows a first call sets up (`setup_rows`)."""
    if not rows:
        return fp
    from tests.zoo.invariants import _keyed

    changes = {}
    for name, keys in rows.items():
        kept = [row for row, (k, _) in zip(getattr(fp, name), _keyed(getattr(fp, name)))
                if k not in keys]  # fmt: skip
        changes[name] = tuple(kept)
    return replace(fp, **changes)


def summary_check(model: nn.Module, args: tuple[Any, ...], kwargs: dict) -> tuple[str, str]:
    text = tx.summary(model, *args, **kwargs)
    first = text.splitlines()[0] if text else ""
    if "Total params" not in text:
        return "fail", f"no totals in the summary: {first[:200]}"
    return "ok", first[:200]


def _is_torch(cls: type) -> bool:
    return cls.__module__.split(".")[0] == "torch"


def judge_form(m: nn.Module, twin: Any = None) -> tuple[str, str]:
    """(status, why) of one module's form, as `bench.forms_sweep.judge` rules, with what
    ``tx.form`` raises other than a refusal kept apart as "raised" (where judge files it as a
    refusal), naming our innermost frame. `twin`: the same module in a twin of the model
    (`_verified`), or a function making it."""
    try:
        f = tx.form(m)
        why = f.inexact
    except _REFUSALS as exc:
        return "refused", f"form() raised {type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - a bug of ours: said with where it raised
        tb = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in tb if "torchxray" in f.filename]
        where = f" ({ours[-1].filename.split('src/')[-1]}:{ours[-1].lineno})" if ours else ""
        return "raised", f"form() raised {type(exc).__name__}: {exc}{where}"
    if why:
        return "refused", why
    try:
        wrong = _verified(m, f, twin() if callable(twin) else twin)
    except Exception as exc:  # noqa: BLE001 - the gate passed but the real build failed
        return "refused", f"build raised {type(exc).__name__}: {str(exc)[:200]}"
    return ("silent", wrong) if wrong else ("exact", "")


def _verified(m: nn.Module, f: Any, twin: nn.Module | None) -> str:
    """`bench.forms_sweep.verify` of the unchanged rebuild, as the harness's own step, which
    leaves the model and the RNG as they were ("untouched" judges torchxray): its real build
    draws initial weights, and a rebuild handed the live layers (``VGG(features)``,
    ``Seq2Seq(encoder, decoder)``) initialises them again or places them again (``.to``
    re-makes a GRU's flat-weights list). So it runs on `twin`, the same module in a second
    build of the model (same seed, never called, as the live one: a form is a pure function
    of the module and the model holding it, whose config a block may read), with the twin's own
    form; without one, on the live module inside the scope a form's own check runs in."""
    from bench.forms_sweep import _rebuild_as_edit, verify
    from torchxray._trace.scope import untouched

    if twin is None:
        with untouched(m):
            return verify(m, _rebuild_as_edit(f, m))
    with torch.random.fork_rng():
        return verify(twin, _rebuild_as_edit(tx.form(twin), twin))


def forms_check(
    model: nn.Module, rebuild: Any = None
) -> tuple[tuple[str, str], list[dict[str, Any]]]:
    """The forms cell and one record per distinct class (`module docstring`). `rebuild`: makes
    a twin of the model for the verification (`_verified`), built once when first needed."""
    from torchxray._unwrap import original_class

    firsts: dict[type, tuple[str, nn.Module]] = {}
    for path, m in model.named_modules():
        firsts.setdefault(original_class(type(m)), (path, m))
    records = []
    twins: list[nn.Module] = []
    for cls, (path, m) in firsts.items():
        start = time.perf_counter()
        status, why = judge_form(
            m, (lambda p=path: _twin(rebuild, twins).get_submodule(p)) if rebuild else None
        )
        records.append({
            "cls": cls.__qualname__, "module": cls.__module__, "path": path, "torch": _is_torch(cls),
            "status": status, "why": why[:400], "seconds": round(time.perf_counter() - start, 3),
        })  # fmt: skip
    counts = {
        s: sum(r["status"] == s for r in records) for s in ("exact", "refused", "silent", "raised")
    }
    text = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    bad = [r for r in records if r["status"] in ("silent", "raised")]
    if bad:
        r = bad[0]
        return (
            "fail",
            f"{text}; {r['cls']} ({r['path'] or '(root)'}) {r['status']}: {r['why'][:160]}",
        ), records
    return ("ok", text), records


def _twin(rebuild: Any, twins: list[nn.Module]) -> nn.Module:
    if not twins:
        with torch.random.fork_rng():  # the build seeds the RNG: the harness's own step
            twins.append(rebuild())
    return twins[0]


def edit_check(model: nn.Module, edit: tuple[str, dict[str, Any]], args: tuple[Any, ...], kwargs: dict,
               shapes: tuple) -> tuple[str, str]:  # fmt: skip
    from .checks import _short

    path, changes = edit
    log = tx.PatchLog(model)
    try:
        # An edit makes the layer anew, and its initialisation draws random numbers as the
        # person's own constructor call would: the harness forks the RNG around it, so that
        # "untouched" judges what the edit leaves after its undo, not that draw.
        with torch.random.fork_rng():
            log.edit(path, **copy.deepcopy(changes))
    except Exception as exc:  # noqa: BLE001 - a refusal is the cell's text
        return "fail", f"edit {path} {changes} refused: {type(exc).__name__}: {str(exc)[:200]}"
    try:
        rep = tx.probe(model, *args, mode="real", **kwargs)
        if not rep.ok:
            e = rep.error
            return (
                "fail",
                f"after the edit the real probe failed: {e.exc_type} in {e.path}: {e.message[:160]}",
            )
        got = tuple(rep[""].output_shapes)
        if got != shapes:
            return "fail", f"after the edit {_short(got)} != bare {_short(shapes)}"
    finally:
        log.undo()
    return "ok", f"{path} {changes}"


def anchor(fake: Any, real: Any) -> tuple[str, str]:
    """Every probe the bare forward allows succeeds: fake, or real with the reason named."""
    if fake is not None and fake.ok:
        return "ok", "fake"
    if real is None or not real.ok:
        why = "fake " + ("raised" if fake is None else f"failed: {fake.error.message[:100]}")
        rwhy = (
            "raised"
            if real is None
            else f"failed: {real.error.exc_type}: {real.error.message[:120]}"
        )
        return "fail", f"{why}; real {rwhy}"
    e = fake.error if fake is not None else None
    named = e is not None and (e.remedy == "real" or bool(e.headline))
    if named:
        return "ok", f"real (fake: {(e.headline or e.message)[:120]})"
    return "fail", "fake " + (
        f"failed without naming why: {e.exc_type}: {e.message[:120]}" if e else "raised"
    )


def extra_checks(entry: Any, model: nn.Module, args: tuple, kwargs: dict, shapes: tuple,
           reps: dict[str, Any], out: Any, guarded: Any, wanted: Any) -> None:  # fmt: skip
    """The hand-written families' checks (`bench.sweep.handwritten`), each guarded."""
    rebuild = None
    if entry.fresh:  # the same model again: its build seeds the RNG itself
        rebuild = lambda: entry.build(out.device)  # noqa: E731
    if "summary" in entry.extra and wanted("summary"):
        cell = guarded("summary", lambda: summary_check(model, args, kwargs))
        if cell is not None:
            out.checks["summary"] = cell
    if "forms" in entry.extra and wanted("forms"):
        done = guarded("forms", lambda: forms_check(model, rebuild))
        if done is not None:
            out.checks["forms"], out.forms = done
    if "edit" in entry.extra and wanted("edit") and entry.edit is not None:
        cell = guarded("edit", lambda: edit_check(model, entry.edit, args, kwargs, shapes))
        if cell is not None:
            out.checks["edit"] = cell
    if wanted("fake") and wanted("real"):
        out.checks["anchor"] = anchor(reps.get("fake"), reps.get("real"))
