"""The checks the sweep runs on one model, each guarded (an exception or a time-out fails that
check only), and what "the model is untouched" means after each torchxray call.

`run(entry)` builds the model (on meta first, to count its parameters; on the CPU where it is
small enough), runs its bare forward, then `tx.walk`, the fake probe, the real probe (CPU models),
`tx.memory(training=True, optimizer="adamw")` and `tx.diff` against a copy with one changed tensor,
and after each torchxray call compares the model with its fingerprint taken before: module
objects, every parameter and buffer (values included), train/eval flags, hooks, devices, and the
RNG state. A check whose question does not apply (a real probe of a meta model) is "n/a".
"""

from __future__ import annotations

import contextlib
import copy
import gc
import signal
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

import torchxray as tx

from .compile_col import compile_column
from .entry import CPU_PARAMS, Entry, Inputs, count_params
from .export_col import export_column

CHECKS = (
    "bare",
    "walk",
    "fake",
    "fake_shapes",
    "real",
    "real_shapes",
    "memory",
    "memory_exact",
    "diff",
    "summary",
    "forms",
    "edit",
    "anchor",
    "compile",
    "export",
    "untouched",
    "nothing_fake",
    "python_state",
)
TIMEOUT_S = 300
RETRY_CPU_PARAMS = 300_000_000


@dataclass
class Outcome:
    family: str
    group: str
    name: str
    device: str = "-"
    params: int = 0
    modules: int = 0
    seconds: float = 0.0
    note: str = ""
    checks: dict[str, tuple[str, str]] = field(default_factory=dict)  # check -> (status, text)
    compile: dict[str, Any] | None = None  # the compile column's details (`compile_col`)
    forms: list[dict[str, Any]] | None = None  # one record per class (`handwritten.forms_check`)
    export: dict[str, Any] | None = None  # the export column's details (`export_col`)

    def status(self, check: str) -> str:
        return self.checks.get(check, ("n/a", ""))[0]

    def first_error(self) -> tuple[str, str] | None:
        for check in CHECKS:
            status, text = self.checks.get(check, ("n/a", ""))
            if status == "fail":
                return check, text
        return None


class TimedOut(Exception):
    pass


class TooBig(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise TimedOut(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def tensor_shapes(value: Any, depth: int = 0) -> tuple[tuple[int, ...], ...]:
    """Shapes of a value's tensors in pytree order (what the probe's root record lists), a
    transformers cache opened into its layers' keys and values as a user reads them, and any
    other object by the tensors its public attributes hold (a ``torch.distributions`` object's
    ``logits``, torchvision's ``ImageList.tensors``), as the probe reads them."""
    out: list[tuple[int, ...]] = []
    for leaf in pytree.tree_leaves(value):
        if isinstance(leaf, torch.Tensor):
            out.append(tuple(leaf.shape))
        elif _cache_shapes(leaf):
            out.extend(_cache_shapes(leaf))
        elif depth < 2 and not isinstance(leaf, (nn.Module, type)):
            public = [v for k, v in (getattr(leaf, "__dict__", None) or {}).items()
                      if isinstance(k, str) and not k.startswith("_")]  # fmt: skip
            out.extend(s for v in public for s in tensor_shapes(v, depth + 1))
    return tuple(out)


def _cache_shapes(cache: Any) -> list[tuple[int, ...]]:
    parts = [getattr(cache, a, None) for a in ("self_attention_cache", "cross_attention_cache")]
    if all(p is not None and hasattr(p, "layers") for p in parts):
        return [s for p in parts for s in _cache_shapes(p)]
    layers = getattr(cache, "layers", None)
    if not isinstance(layers, list):
        return []
    return [
        tuple(t.shape)
        for layer in layers
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None))
        if isinstance(t, torch.Tensor)
    ]


def stored_bytes(t: torch.Tensor) -> int:
    """Bytes a tensor holds in memory: a wrapper subclass (torchao, DTensor) by its inner
    tensors, a plain tensor by its elements."""
    flatten = getattr(t, "__tensor_flatten__", None)
    if flatten is not None and type(t) is not nn.Parameter:
        names, _ = flatten()
        return sum(stored_bytes(getattr(t, n)) for n in names)
    return t.numel() * t.element_size()


def _distinct_params(model: nn.Module) -> list[nn.Parameter]:
    # The registered parameters, as the walk counts them (``entry.count_params``): a class may
    # override ``parameters()`` to hand its optimizer a subset, and the rest is memory all the same.
    return list({id(p): p for p in nn.Module.parameters(model)}.values())


def _modules(model: nn.Module) -> int:
    return len({id(m) for m in model.modules()})


def _fingerprint(model: nn.Module) -> Any:
    from tests.zoo.invariants import state_fingerprint

    devices = tuple(sorted({str(t.device) for t in model.state_dict(keep_vars=True).values()
                            if isinstance(t, torch.Tensor)}))  # fmt: skip
    return state_fingerprint(model), devices, torch.random.get_rng_state()


def _untouched(before: Any, model: nn.Module, step: str, setup: dict | None = None) -> str | None:
    """What changed since `before`, but what a fresh model's first call sets up for good
    (`handwritten.setup_rows`), which a probe may leave as that call would."""
    from tests.zoo.invariants import diff_fingerprints

    from .handwritten import strip

    fp, devices, rng = _fingerprint(model)
    problems = diff_fingerprints(strip(before[0], setup or {}), strip(fp, setup or {}), limit=2)
    if devices != before[1]:
        problems.append(f"devices {before[1]} -> {devices}")
    if not torch.equal(rng, before[2]):
        problems.append("the RNG state changed")
    if problems:
        return (
            f"after {step}: "
            + problems[0].splitlines()[0]
            + " "
            + " ".join(p.strip() for p in problems[0].splitlines()[1:2])
        )
    return None


def _build(entry: Entry, device: str | None = None) -> tuple[nn.Module, str, int]:
    """The model on `device`, or where its size says (meta above `CPU_PARAMS`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if entry.cpu and device in (None, "cpu"):  # small by design: no count on meta first
            model = entry.build("cpu")
            return model, "cpu", count_params(model)
        try:
            model = entry.build("meta")
        except Exception:
            if entry.cpu is False:
                raise
            # A builder that copies values while it builds (torchvision's RegNet) cannot build
            # on meta at all: on the CPU then, counted there.
            model = entry.build("cpu")
            return model, "cpu", count_params(model)
        params = count_params(model)
        if device is None:
            small = entry.cpu is None and params <= CPU_PARAMS
            device = "cpu" if entry.cpu or small else "meta"
        if device == "meta":
            return model, "meta", params
        if params > RETRY_CPU_PARAMS and entry.cpu is None:
            raise TooBig(f"{params / 1e6:.0f} M parameters: too big for a CPU retry")
        del model
        return entry.build("cpu"), "cpu", params


def _bare(model: nn.Module, inputs: Inputs) -> Any:
    args, kwargs = inputs
    torch.manual_seed(0)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model(*args, **kwargs)


def prepare(entry: Entry, out: Outcome) -> tuple[nn.Module, Inputs, Any, dict] | None:
    """Build the model and run its bare forward; None (with the failure in `out`) if either
    fails, after trying the entry's fallback. A fresh entry's bare forward runs on a twin (its
    first call's set-up found there, `handwritten.setup_rows`) and a new build is returned."""
    tries: list[tuple[Entry, str | None]] = [(entry, None)]
    if entry.cpu is None:
        # A forward with data-dependent ops (a detector's nonzero) cannot run on meta at all:
        # a model too big for the default CPU budget then runs on the CPU if it is not huge.
        tries.append((entry, "cpu"))
    if entry.fallback is not None:
        tries.append((entry.fallback, None))
    last = ""
    fails: list[str] = []
    for candidate, where in tries:
        if where == "cpu" and last == "cpu":
            continue  # it failed on the CPU already
        try:
            with _deadline(TIMEOUT_S):
                model, device, params = _build(candidate, where)
                last = device
                inputs = candidate.inputs(model, torch.device(device))
                setup: dict = {}
                if candidate.fresh:
                    from .handwritten import setup_rows

                    setup = setup_rows(model, inputs)
                bare = _bare(model, inputs)
                if candidate.fresh:
                    model, _, _ = _build(candidate, device)
                    inputs = candidate.inputs(model, torch.device(device))
        except TooBig:
            continue
        except Exception as exc:
            fails.append(f"{candidate.name} [{last}]: {_line(exc)}")
            out.checks["bare"] = ("fail", " | ".join(fails))
            continue
        out.name, out.device, out.params = candidate.name, device, params
        out.note = candidate.note
        out.modules = _modules(model)
        out.checks["bare"] = ("ok", "")
        return model, inputs, bare, setup
    return None


def run(entry: Entry, only: tuple[str, ...] = (), skip: tuple[str, ...] = ()) -> Outcome:
    """Every check on one model; `only`: just these (and the bare forward, and what judges the
    model left untouched); `skip`: not these (the test suite's sample leaves the export column,
    an ONNX export per model, to its own test and to the sweep run by hand)."""
    out = Outcome(entry.family, entry.group, entry.name, note=entry.note)
    start = time.perf_counter()
    try:
        prepared = prepare(entry, out)
        if prepared is not None:
            _checks(*prepared, out, only, entry, skip)
    finally:
        out.seconds = time.perf_counter() - start
        gc.collect()
    return out


def _checks(
    model: nn.Module,
    inputs: Inputs,
    bare: Any,
    setup: dict,
    out: Outcome,
    only: tuple[str, ...] = (),
    entry: Entry | None = None,
    skip: tuple[str, ...] = (),
) -> None:
    args, kwargs = inputs
    shapes = tensor_shapes(bare)
    del bare
    cpu = out.device == "cpu"
    before = _fingerprint(model)
    touched: list[str] = []
    # Issue 39: no fake or new meta tensor reachable, every module's Python state as it was.
    from tests.zoo.leftovers import diff_python_state, fakes_reachable, meta_ids, python_state

    python_before, metas = python_state(model), meta_ids(model)
    left: dict[str, list[str]] = {"nothing_fake": [], "python_state": []}

    def guarded(check: str, fn: Any) -> Any:
        try:
            with _deadline(TIMEOUT_S), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return fn()
        except Exception as exc:
            out.checks[check] = ("fail", _line(exc))
            if isinstance(exc, TimedOut) or not isinstance(exc, AssertionError):
                out.checks[check] = ("fail", _line(exc) + " | " + _where(exc))
            return None
        finally:
            try:
                problem = _untouched(before, model, check, setup)
            except Exception as exc:  # the model cannot even be read back as it was
                problem = f"after {check}: reading the model raised {_line(exc)}"
            if problem is not None and not touched:
                touched.append(problem)
            try:
                fakes = fakes_reachable(model, metas)
                python = diff_python_state(python_before, python_state(model))
            except Exception as exc:  # noqa: BLE001 - reading the model back failed: say so
                fakes = python = [f"reading the model raised {_line(exc)}"]
            for name, found in (("nothing_fake", fakes), ("python_state", python)):
                if found and not left[name]:
                    left[name].append(f"after {check}: {'; '.join(found)}"[:300])

    def walk() -> None:
        tree = tx.walk(model)
        want = (_modules(model), count_params(model))
        got = (len(tree), tree.root.params_total)
        assert got == want, f"walk counts {got} modules/params, the model has {want}"
        out.checks["walk"] = ("ok", "")

    def wanted(check: str) -> bool:
        return (not only or check in only) and check not in skip

    if wanted("walk"):
        guarded("walk", walk)
    reps: dict[str, Any] = {}
    for mode in ("fake", "real"):
        if not wanted(mode):
            continue
        if mode == "real" and not cpu:
            out.checks["real"] = out.checks["real_shapes"] = ("n/a", "meta")
            continue
        rep = guarded(mode, lambda mode=mode: tx.probe(model, *args, mode=mode, **kwargs))
        reps[mode] = rep
        if rep is None:
            continue
        if not rep.ok:
            e = rep.error
            out.checks[mode] = ("fail", f"{e.exc_type} in {e.path or '(root)'}: {e.message}"[:300])
            continue
        out.checks[mode] = ("ok", "")
        got = rep[""].output_shapes
        out.checks[f"{mode}_shapes"] = (
            ("ok", "")
            if tuple(got) == shapes
            else ("fail", f"{_short(got)} != bare {_short(shapes)}")
        )

    def memory() -> None:
        rep = tx.memory(model, *args, training=True, optimizer="adamw", **kwargs)
        if getattr(rep, "error", None):  # refused in a sentence (uninitialised lazy weights)
            out.checks["memory"] = ("fail", f"refused: {rep.error}"[:300])
            return
        out.checks["memory"] = ("ok", "")
        params = _distinct_params(model)
        want_p = sum(stored_bytes(p) for p in params)
        trainable = [p for p in params if p.requires_grad]
        # A step on a copy says which weights get a gradient (one the forward leaves unused gets
        # none, nor AdamW state): for real on the CPU; on meta autograd runs all the same without
        # values (an audio tower given only input_ids gets none); every trainable weight when
        # that step fails.
        rebuild = None
        if entry is not None and entry.fresh:  # the same weights: built again with its seed

            def rebuild() -> nn.Module:
                with torch.random.fork_rng():  # the build seeds the RNG: not torchxray's doing
                    return _build(entry, out.device)[0]

        graded = _graded(model, inputs, rebuild)
        want_g = sum(
            p.numel() * p.element_size()
            for i, p in enumerate(trainable)
            if graded is None or i in graded
        )
        got = (rep.params, rep.grads, rep.optimizer)
        want = (want_p, want_g, 2 * want_g)
        out.checks["memory_exact"] = (
            ("ok", "") if got == want else ("fail", f"params/grads/optimizer {got} != {want}")
        )

    if wanted("memory"):
        guarded("memory", memory)
    if out.status("memory") == "fail" and cpu and not _trains(model, inputs):
        # The inputs make no training step even bare (a detector in train mode wants targets).
        out.checks["memory"] = ("n/a", "a bare training forward fails on these inputs too")
        out.checks.pop("memory_exact", None)
    if not wanted("diff"):
        pass
    elif cpu:
        guarded("diff", lambda: _diff(model, out))
    else:
        out.checks["diff"] = ("n/a", "meta")
    if entry is not None and entry.extra:
        from .handwritten import extra_checks

        extra_checks(entry, model, args, kwargs, shapes, reps, out, guarded, wanted)
    if wanted("compile"):
        cell, out.compile = compile_column(out.family, cpu, model, args, kwargs, guarded)
        if cell is not None:
            out.checks["compile"] = cell
    if wanted("export"):
        cell, out.export = export_column(out.family, cpu, model, args, kwargs, guarded)
        if cell is not None:
            out.checks["export"] = cell
    out.checks["untouched"] = ("fail", touched[0]) if touched else ("ok", "")
    for name, found in left.items():
        out.checks[name] = ("fail", found[0]) if found else ("ok", "")


def _graded(model: nn.Module, inputs: Inputs, rebuild: Any = None) -> set[int] | None:
    """Indexes (in `_distinct_params` order, trainable ones) of the weights that have a gradient
    after a train-mode forward and backward of the sum of its float outputs, on a copy, on the
    model's own device (meta too: autograd runs without values); none when no float output
    requires grad; None when the copy or the step fails, or holds a scripted module (a deep copy
    of one does not give its copied weights gradients). `rebuild`: makes the copy where a deep
    copy fails (a model under the old ``weight_norm`` holds non-leaf weights)."""
    if any(isinstance(m, torch.jit.ScriptModule) for m in model.modules()):
        return None
    try:
        try:
            twin = copy.deepcopy(model).train()
        except Exception:
            if rebuild is None:
                raise
            twin = rebuild().train()
        args, kwargs = inputs
        # The harness's own step leaves the RNG as it was: "untouched" judges torchxray.
        with torch.random.fork_rng(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = twin(*args, **kwargs)
        leaves = [
            t
            for t in pytree.tree_leaves(out)
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()
        ]
        if not leaves:
            return set()  # nothing to run backward from: no weight gets a gradient
        sum(t.float().sum() for t in leaves).backward()  # type: ignore[union-attr]
    except Exception:
        return None
    trainable = [p for p in _distinct_params(twin) if p.requires_grad]
    return {i for i, p in enumerate(trainable) if p.grad is not None}


def _trains(model: nn.Module, inputs: Inputs) -> bool:
    """Whether a bare train-mode forward runs on these inputs (on a copy: it changes buffers)."""
    try:
        twin = copy.deepcopy(model).train()
    except Exception:
        return True  # cannot tell: count the memory check
    args, kwargs = inputs
    try:
        # The harness's own step leaves the RNG as it was (dropout, a lazy layer's init).
        with warnings.catch_warnings(), torch.random.fork_rng():
            warnings.simplefilter("ignore")
            twin(*args, **kwargs)
    except Exception:
        return False
    return True


def _twin(model: nn.Module) -> Any:
    """A copy of the model, or of its state_dict where the model refuses deepcopy (RAFT keeps
    non-leaf tensors): the copy the user would diff against."""
    try:
        return copy.deepcopy(model)
    except Exception:
        return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _diff(model: nn.Module, out: Outcome) -> None:
    same = tx.diff(model, _twin(model))
    moved = {n: c.kind for n, c in same.params.items() if c.kind != "same"}
    assert not moved and not same.retyped, f"an unchanged copy differs: {_short(moved)}"
    twin = _twin(model)
    state = twin.state_dict(keep_vars=True) if isinstance(twin, nn.Module) else twin
    name = next(
        (n for n, t in state.items() if isinstance(t, torch.Tensor) and t.is_floating_point()
         and t.numel() and type(t) in (torch.Tensor, nn.Parameter)),
        None,
    )  # fmt: skip
    if name is None:
        out.checks["diff"] = ("n/a", "no plain floating tensor to change")
        return
    with torch.no_grad():
        state[name].view(-1)[0] += 1.0
    # A tied tensor (an LM's embedding and output weight) is one tensor under several names.
    ptr = state[name].untyped_storage().data_ptr()
    tied = {
        n
        for n, t in state.items()
        if isinstance(t, torch.Tensor) and type(t) in (torch.Tensor, nn.Parameter)
        and t.untyped_storage().data_ptr() == ptr
    }  # fmt: skip
    d = tx.diff(model, twin)
    moved = {n: c.kind for n, c in d.params.items() if c.kind != "same"}
    assert moved == dict.fromkeys(tied, "values"), f"changed {name}, diff names {_short(moved)}"
    out.checks["diff"] = ("ok", "")


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "torchxray" in f.filename]
    f = (ours or frames)[-1] if (ours or frames) else None
    return f"{f.filename.rsplit('/', 2)[-2:]}:{f.lineno}" if f else ""


def _short(value: Any, n: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 1] + "…"
