"""Every inspection step on every zoo model, and after each one: no hooks left, nothing changed
that was not meant to (module objects, parameters, buffers, dtypes, devices, train/eval flags)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn as nn
from torch.utils import _pytree as pytree

from torchxray.forms import form
from torchxray.mro import mro_classes, mro_graph
from torchxray.patch import PatchLog
from torchxray.probe import probe
from torchxray.source import source
from torchxray.tree import walk

from .invariants import Fingerprint, assert_untouched, state_fingerprint
from .models import CASES, Case

NAMES = list(CASES)
FIELD_KINDS = {
    "int", "float", "bool", "str", "choice", "int_or_tuple", "dtype", "device", "class",
    "callable", "literal", "varargs", "varkw", "tensor",
}  # fmt: skip


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _distinct(model: nn.Module) -> list[tuple[str, nn.Module]]:
    seen: set[int] = set()
    out = []
    for path, m in model.named_modules():
        if id(m) not in seen:
            seen.add(id(m))
            out.append((path, m))
    return out


def _leaf_shapes(out: Any) -> tuple[tuple[int, ...], ...]:
    leaves = pytree.tree_leaves(out)
    return tuple(tuple(t.shape) for t in leaves if isinstance(t, torch.Tensor))


def _forward_changes(case: Case) -> set[str]:
    """Fingerprint fields a plain eval/no-grad forward changes on a fresh copy (lazy modules
    initialise, dropping their init hook and changing class)."""
    twin = case.build().eval()
    args, kwargs = case.inputs()
    before = state_fingerprint(twin)
    with torch.no_grad():
        twin(*args, **kwargs)
    after = state_fingerprint(twin)
    return {f for f in before.__dataclass_fields__ if getattr(before, f) != getattr(after, f)}


def _check_after(case: Case, before: Fingerprint, model: nn.Module, step: str) -> None:
    assert_untouched(before, model, step)


@pytest.mark.parametrize("name", NAMES)
def test_walk(name: str) -> None:
    case = CASES[name]
    model = case.build()
    before = state_fingerprint(model)
    tree = walk(model)
    _check_after(case, before, model, "walk")
    distinct = _distinct(model)
    assert len(tree) == len(distinct)
    for path, m in model.named_modules(remove_duplicate=False):
        assert path in tree, path
        assert tree.module(path) is m
        names = {c.__name__ for c in type(m).__mro__} | {_original_cls(m)}
        assert tree[path].cls in names, (tree[path].cls, names)
    assert tree.root.params_total == _packed_count(model) + sum(
        p.numel()
        for p in model.parameters()
        if not isinstance(p, nn.parameter.UninitializedParameter)
    )
    for node in tree:
        assert isinstance(node.extra_repr, str)


def _packed_count(model: nn.Module) -> int:
    """Elements of the weights quantized layers keep packed (not parameters), read through their
    public ``weight()`` / ``bias()`` methods: the walk counts them as the layer's parameters."""
    n = 0
    for m in model.modules():
        if type(m).__module__.startswith("torch.ao.nn.quantized") and callable(
            getattr(m, "weight", None)
        ):
            bias = m.bias() if callable(getattr(m, "bias", None)) else None
            n += m.weight().numel() + (bias.numel() if bias is not None else 0)
    return n


def _original_cls(m: nn.Module) -> str:
    # parametrize swaps in a generated subclass and a ScriptModule keeps the scripted class's
    # name: the tree reports the class the user wrote
    if hasattr(m, "parametrizations"):
        return type(m).__mro__[1].__name__
    return str(getattr(m, "original_name", type(m).__name__))


@pytest.mark.parametrize("name", NAMES)
def test_source(name: str) -> None:
    case = CASES[name]
    model = case.build()
    before = state_fingerprint(model)
    for _path, m in _distinct(model):
        src = source(m)
        assert src.text is not None or src.reason, f"{type(m).__name__}: no text and no reason"
    _check_after(case, before, model, "source")
    if name == "notebook_cell":
        src = source(model)
        assert src.text is not None and "class CellNet" in src.text
        assert src.forward_lines is not None
    if name == "notebook_cell_lost_source":
        src = source(model)
        assert src.text is None and src.reason


@pytest.mark.parametrize("name", NAMES)
def test_forms(name: str) -> None:
    case = CASES[name]
    model = case.build()
    before = state_fingerprint(model)
    for path, m in _distinct(model):
        try:
            f = form(m)
        except TypeError as exc:  # a form may be refused, but with a message that says why
            assert str(exc), f"form({path!r}) raised an empty TypeError"
            continue
        for fld in f.fields:
            assert fld.kind in FIELD_KINDS, (path, fld.name, fld.kind)
            assert isinstance(fld.text, str)
        assert isinstance(f.values, dict)
        assert isinstance(f.validate(), dict)
    _check_after(case, before, model, "form")
    if case.edit is not None and not case.edit_may_refuse:
        path, changes = case.edit
        assert form(_sub(model, path)).validate(**changes) == {}


@pytest.mark.parametrize("name", NAMES)
def test_mro(name: str) -> None:
    case = CASES[name]
    model = case.build()
    before = state_fingerprint(model)
    for _path, m in _distinct(model):
        graph = mro_graph(m)
        assert "digraph" in graph.source
        classes = mro_classes(m)
        assert classes and all(c.group in ("torch", "user", "builtin") for c in classes)
    _check_after(case, before, model, "mro")


@pytest.mark.parametrize("mode", ["fake", "real"])
@pytest.mark.parametrize("name", NAMES)
def test_probe(name: str, mode: str) -> None:
    case = CASES[name]
    model = case.build()
    args, kwargs = case.inputs()
    before = state_fingerprint(model)
    dtypes = {p.dtype for p in model.parameters()}
    rep = probe(model, *args, mode=mode, **kwargs)
    changes = _forward_changes(case) if mode == "real" else set()
    if changes:
        # The user's own forward changes the model (lazy init): what it does not change must hold.
        after = state_fingerprint(model)
        for field in set(before.__dataclass_fields__) - changes:
            assert getattr(before, field) == getattr(after, field), field
    else:
        _check_after(case, before, model, f"{mode} probe")
    assert {p.dtype for p in model.parameters()} <= dtypes | {torch.float32}
    expected = case.fake if mode == "fake" else case.real
    if expected == "fail":
        assert not rep.ok, f"{name}: {mode} probe was expected to fail"
        err = rep.error
        assert err is not None and err.message and err.exc_type
        assert err.path is not None
        assert case.fail_hint.lower() in ((err.hint or "") + err.message).lower(), err
        return
    assert rep.ok, f"{name}: {mode} probe failed: {rep.error}"
    assert rep.records, "an ok probe recorded nothing"
    out = _forward_for_shapes(case)
    if out is not None and "" in rep:
        assert rep[""].output_shapes == out, f"{mode} probe shapes differ from a real forward"


def _forward_for_shapes(case: Case) -> tuple[tuple[int, ...], ...] | None:
    """Output shapes of a plain forward on a fresh copy (None for outputs pytree cannot see into)."""
    model = case.build().eval()
    args, kwargs = case.inputs()
    with torch.no_grad():
        out = model(*args, **kwargs)
    if not isinstance(out, (torch.Tensor, tuple, list, dict)):
        return None
    return _leaf_shapes(out)


def _sub(model: nn.Module, path: str) -> nn.Module:
    """get_submodule that also works on ScriptModules (which refuse get_submodule)."""
    for part in path.split(".") if path else ():
        model = model._modules[part]  # type: ignore[assignment]
    return model


def _params_by_path(model: nn.Module, path: str) -> dict[str, tuple[torch.dtype, torch.device]]:
    m = _sub(model, path)
    return {n: (t.dtype, t.device) for n, t in [*m.named_parameters(), *m.named_buffers()]}


@pytest.mark.parametrize("name", NAMES)
def test_patch_and_undo(name: str) -> None:
    case = CASES[name]
    assert case.edit is not None
    path, changes = case.edit
    model = case.build()
    args, kwargs = case.inputs()
    before = state_fingerprint(model)
    old = _sub(model, path)
    old_tensors = _params_by_path(model, path)
    try:
        log = PatchLog(model)
        entry = log.edit(path, **changes)
    except (TypeError, ValueError, KeyError) as exc:
        assert case.edit_may_refuse, f"{name}: edit refused: {type(exc).__name__}: {exc}"
        assert str(exc)
        _check_after(case, before, model, "refused edit")
        return
    # An edit of the model itself (path "") makes the log's model the rebuilt one.
    new = log.model if path == "" else _sub(model, path)
    assert new is not old
    assert new.training == old.training
    values = form(new).values
    for key, value in changes.items():
        assert values[key] == value, (key, values[key], value)
    for tname, (dtype, device) in _params_by_path(log.model, path).items():
        if tname in old_tensors:
            assert (dtype, device) == old_tensors[tname], tname
    _unchanged_outside(before, state_fingerprint(model), path)
    if name == "shared_two_paths":
        assert model.a is model.b is new
    if case.fake == "ok":
        rep = probe(log.model, *args, mode="fake", **kwargs)
        assert rep.ok, rep.error
    assert entry.op == "edit"
    log.undo()
    assert_untouched(before, model, "undo")
    log.redo()
    assert (log.model if path == "" else _sub(model, path)) is new
    log.undo()
    assert_untouched(before, model, "second undo")


def _unchanged_outside(before: Fingerprint, after: Fingerprint, path: str) -> None:
    """Modules and tensors outside `path` (and not aliases of it) keep their identity and data."""

    def inside(p: str) -> bool:
        return p == path or p.startswith(path + ".") if path else True

    old_ids = {row[1] for row in before.modules if inside(row[0])}
    keep = [r for r in before.modules if not inside(r[0]) and r[1] not in old_ids]
    now = {(r[0], r[1]) for r in after.modules}
    missing = [r[0] for r in keep if (r[0], r[1]) not in now]
    assert not missing, f"edit of {path!r} replaced modules outside it: {missing[:5]}"
    after_tensors = {k: (i, d) for k, i, d in after.tensors}
    for key, tid, digest in before.tensors:
        owner = key.rsplit(".", 1)[0] if "." in key else ""
        if not inside(owner) and key in after_tensors:
            assert after_tensors[key] == (tid, digest), f"edit of {path!r} changed {key}"


_BUNDLE = Path(__file__).resolve().parents[2] / "src" / "torchxray" / "static" / "widget.js"


@pytest.mark.skipif(not _BUNDLE.exists(), reason="the frontend is not built (make js)")
@pytest.mark.parametrize("name", NAMES)
def test_explorer(name: str) -> None:
    """Open, select, edit, undo and close through the widget's Python API; the model ends as it was
    and the first state is JSON-serialisable."""
    from torchxray.widget import explore

    case = CASES[name]
    model = case.build()
    args, kwargs = case.inputs()
    before = state_fingerprint(model)
    ex = explore(model, *args, **kwargs)
    try:
        assert_untouched(before, model, "explore()")
        json.dumps(ex.get_state(), default=_no_bytes)
        rep = ex.probe_report
        assert rep is not None and rep.ok == (case.fake == "ok"), rep
        path, changes = case.edit or ("", {})
        ex.select(path)
        try:
            ex.edit(path, **changes)
        except (TypeError, ValueError, KeyError) as exc:
            assert case.edit_may_refuse, f"{name}: explorer edit refused: {exc}"
            assert_untouched(before, model, "refused explorer edit")
        else:
            assert ex.patches and ex.patches[-1].op == "edit"
            ex.undo()
            assert_untouched(before, model, "explorer undo")
    finally:
        ex.close()
    assert_untouched(before, model, "close()")
    with pytest.raises(RuntimeError, match="closed"):
        ex.select("")


def _no_bytes(obj: Any) -> Any:
    if isinstance(obj, (bytes, memoryview)):
        return f"<{len(obj)} bytes>"
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


# What the tree must say about the awkward part of each model: case -> path -> {Node field: value}.
WALK_FACTS: dict[str, dict[str, dict[str, Any]]] = {
    "data_parallel": {"": {"wraps": "module", "cls": "DataParallel"}},
    "compiled": {"": {"wraps": "_orig_mod"}},
    "weight_norm": {"0": {"cls": "Linear", "parametrizations": ("weight: _WeightNorm",)}},
    "orthogonal": {"0": {"cls": "Linear"}},
    "meta_device": {"": {"devices": ("meta",)}},
    # Linear(4, 8) and Linear(8, 2), packed as int8 weights with float32 biases; not trainable.
    "quantized_dynamic": {
        "": {"params_total": 4 * 8 + 8 + 8 * 2 + 2, "bytes_total": 4 * 8 + 8 * 4 + 8 * 2 + 2 * 4},
        "0._packed_params": {"params_own": 40, "trainable_own": 0, "dtypes": ("float32", "qint8")},
    },
    "half": {"": {"dtypes": ("float16",)}},
    "bfloat16": {"": {"dtypes": ("bfloat16",)}},
    "shared_two_paths": {"a": {"aliases": ("b",)}, "b": {"path": "a"}},
    "awkward_keys": {f"heads.{k}": {"name": k, "cls": "Linear"} for k in ("ünï", "with space")},
    "user_hooks": {"layers.0": {"hooks": lambda h: [x.name for x in h] == ["users_own_hook"]}},
    "instance_forward": {
        "layers.1": {"forward_patched": True},
        "layers.0": {"forward_patched": False},
    },
    "raising_repr": {"bad": {"extra_repr": lambda s: "raised" in s or "unavailable" in s}},
    "notebook_cell": {"": {"cls": "CellNet", "is_custom": True}},
    "buffers_frozen": {"": {"trainable_total": 10}, "backbone": {"trainable_total": 0}},
    "deep_nesting": {"0" + ".0" * 39: {"depth": 40, "cls": "Linear"}},
}


@pytest.mark.parametrize("name", sorted(WALK_FACTS))
def test_walk_facts(name: str) -> None:
    model = CASES[name].build()
    tree = walk(model)
    for path, facts in WALK_FACTS[name].items():
        node = tree[path]
        for field, want in facts.items():
            got = getattr(node, field)
            assert want(got) if callable(want) else got == want, (path, field, got)
    if name == "shared_two_paths":  # tied/shared tensors count once
        assert tree.root.params_total == sum(p.numel() for p in model.parameters())


# Calls recorded per path: a module called three times, a module shared at two paths.
PROBE_CALLS = {"called_thrice": {"block": 3, "block.0": 3, "out": 1}, "shared_two_paths": {"a": 2}}


@pytest.mark.parametrize("mode", ["fake", "real"])
@pytest.mark.parametrize("name", sorted(PROBE_CALLS))
def test_probe_counts_calls(name: str, mode: str) -> None:
    case = CASES[name]
    model = case.build()
    args, kwargs = case.inputs()
    rep = probe(model, *args, mode=mode, **kwargs)
    assert rep.ok
    for path, calls in PROBE_CALLS[name].items():
        assert rep[path].calls == calls, (path, rep[path].calls)


@pytest.mark.parametrize("name", ["dict_in_dict_out", "dataclass_out", "kwargs_forward"])
def test_probe_sees_structured_io(name: str) -> None:
    case = CASES[name]
    model = case.build()
    args, kwargs = case.inputs()
    rep = probe(model, *args, **kwargs)
    assert rep.ok
    root = rep[""]
    names = [o.name for o in root.outputs if not isinstance(o, str)]
    if name == "dict_in_dict_out":
        assert names == ["image", "text", "score"]  # output keys read as attributes
        assert root.input_shapes == ((2, 6), (2, 3))
    elif name == "dataclass_out":
        assert root.output_shapes == ((2, 3), (2, 8), ())
    else:
        assert (2, 4) in root.input_shapes and len(root.input_shapes) == 2  # x and mask (kwarg)
