"""Nothing torchxray keeps may pin a user's model, a replaced module or a user class in memory
longer than the user (or the undo history they asked for) does."""

from __future__ import annotations

import gc
import tracemalloc
import warnings
import weakref
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn as nn

from torchxray.catalog import catalog
from torchxray.forms import form, record_init_args
from torchxray.mro import mro_classes, mro_graph
from torchxray.patch import PatchLog
from torchxray.probe import probe
from torchxray.source import source
from torchxray.tree import walk

_BUNDLE = Path(__file__).resolve().parents[2] / "src" / "torchxray" / "static" / "widget.js"
needs_bundle = pytest.mark.skipif(
    not _BUNDLE.exists(), reason="the frontend is not built (make js)"
)


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _small() -> nn.Sequential:
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def _collected(*refs: weakref.ref[Any]) -> bool:
    for _ in range(2):  # classes and modules sit in reference cycles: let the collector run
        gc.collect()
    return all(ref() is None for ref in refs)


@needs_bundle
@pytest.mark.parametrize("mode", ["fake", "real"])
def test_closed_explorer_releases_the_model(mode: str) -> None:
    from torchxray.widget import explore

    model = _small()
    ref = weakref.ref(model)
    ex = explore(model, torch.randn(2, 8), mode=mode)
    ex.select("0")
    ex.edit("0", bias=False)
    ex.undo()
    ex.run_probe()
    ex.close()
    del model
    assert _collected(ref), f"the model is still referenced after close(): {_referrers(ref)}"
    assert ex is not None  # the closed widget object itself may live on; the model must not


def _referrers(ref: weakref.ref[Any]) -> list[str]:
    obj = ref()
    return [] if obj is None else [type(r).__name__ for r in gc.get_referrers(obj)][:8]


def test_patch_log_and_reports_do_not_pin_the_model() -> None:
    model = _small()
    ref = weakref.ref(model)
    log = PatchLog(model)
    log.edit("0", bias=False)
    reports = [probe(model, torch.randn(2, 8), mode=m) for m in ("fake", "real")]
    tree = walk(model)
    del tree, log, model
    assert _collected(ref), _referrers(ref)
    assert all(r.ok for r in reports)  # reports outlive the model: they hold no tensors


def test_edit_undo_cycles_do_not_grow() -> None:
    model = _small()
    log = PatchLog(model)

    def cycles(n: int) -> None:
        for _ in range(n):
            log.edit("2", bias=False)  # the live value is True: each edit changes it
            log.undo()

    cycles(50)  # warm caches, interned strings, ...
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        cycles(1000)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    # Once torch._dynamo is imported (the compile tests do), it tags every module made in a
    # global table keyed by id (mutation_guard's GenerationTracker); an entry goes with its
    # module, but the table never shrinks, and after the whole suite's tens of thousands of
    # modules one of these cycles' builds makes it grow: 2 x 1.28 MB at once in the full run
    # (found with tracemalloc's tracebacks), torch's own and not per cycle. Not counted.
    torch_tables = [tracemalloc.Filter(False, "*/torch/_dynamo/*")]
    start = sum(t.size for t in before.filter_traces(torch_tables).traces)
    end = sum(t.size for t in after.filter_traces(torch_tables).traces)
    # One undone entry is kept for redo (a Linear(16, 4): well under 1 KB of tensors); everything
    # else must be released. 256 KB allows for allocator noise and for what torch keeps of the
    # exactness gate's meta build per edit (130-150 bytes: tracemalloc attributes it to attribute
    # reads of the meta tensors; no module, tensor or record stays alive), not for 1,000 kept
    # modules (over 1 MB).
    assert end - start < 256 * 1024, (
        f"memory grew by {(end - start) / 1024:.0f} KB over 1,000 cycles"
    )
    assert not log.entries and log.can_redo and not log.can_undo
    assert len(log._done) + len(log._undone) == 1  # the history kept is the redo of the last undo


def test_history_is_what_grows_and_clear_frees_it() -> None:
    model = nn.Sequential(nn.Linear(64, 64))
    log = PatchLog(model)
    replaced = []
    for i in range(20):
        replaced.append(weakref.ref(model[0]))
        log.edit("0", bias=i % 2 == 1)  # alternates, starting from the live True
    assert len(log.entries) == 20
    kept = log.retained_bytes
    assert kept >= 20 * 64 * 64 * 4  # each replaced Linear's weight is held for undo
    gc.collect()
    assert all(r() is not None for r in replaced), "undo history lost a module"
    freed = log.clear()
    assert freed == kept and log.retained_bytes == 0
    assert _collected(*replaced), "clear() kept replaced modules alive"
    assert not log.can_undo and len(log.entries) == 20  # still listed for to_code()
    assert "bias" in log.to_code()


def test_replace_then_clear_frees_the_old_module() -> None:
    model = _small()
    log = PatchLog(model)
    old = weakref.ref(model[1])
    log.replace("1", nn.GELU())
    assert old() is not None
    log.undo()
    log.redo()
    log.clear()
    assert _collected(old)


def _user_class() -> type[nn.Module]:
    """A class made at run time, as a notebook re-running a cell makes a new one each time."""

    class Throwaway(nn.Module):
        def __init__(self, width: int = 4) -> None:
            super().__init__()
            self.fc = nn.Linear(width, width)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x).relu()

    return Throwaway


def test_caches_hold_classes_and_modules_weakly() -> None:
    cls = _user_class()
    with record_init_args():
        model = nn.Sequential(cls(4), cls(4))
    x = torch.randn(2, 4)
    walk(model)
    for target in (model, model[0], cls):
        source(target)
        form(target)
        mro_graph(target)
        mro_classes(target)
    del target  # the loop variable would keep the class alive itself
    form(model[0]).build(width=6)
    catalog("Throwaway", model)
    probe(model, x)
    probe(model, x, mode="real")
    log = PatchLog(model)
    log.edit("0", width=6)  # 4 is the live value: an edit must change something
    log.undo()
    cls_ref, model_ref, inner_ref = weakref.ref(cls), weakref.ref(model), weakref.ref(model[0])
    del cls, model, log
    assert _collected(model_ref, inner_ref), _referrers(inner_ref)
    assert _collected(cls_ref), f"a cache keeps the user's class alive: {_referrers(cls_ref)}"


@needs_bundle
def test_closed_explorers_are_collected() -> None:
    """Opening and closing explorers on one model leaves nothing behind (widget registry included)."""
    from torchxray.widget import explore

    model = _small()
    refs = []
    for _ in range(5):
        ex = explore(model, torch.randn(2, 8))
        ex.edit("0", bias=False)
        ex.undo()
        ex.close()
        refs.append(weakref.ref(ex))
        del ex
    assert _collected(*refs)
