"""Faults injected into a probe or a patch: each leaves the model exactly as it was and the
explorer usable afterwards."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn as nn

from torchxray.patch import PatchLog
from torchxray.probe import probe

from .invariants import assert_untouched, state_fingerprint

_BUNDLE = Path(__file__).resolve().parents[2] / "src" / "torchxray" / "static" / "widget.js"
needs_bundle = pytest.mark.skipif(
    not _BUNDLE.exists(), reason="the frontend is not built (make js)"
)


class Trap(nn.Module):
    """A layer whose forward raises what `fault` says (nothing when it is None)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.fault: BaseException | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if self.fault is not None:
            raise self.fault
        return y


def _model() -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Sequential(nn.ReLU(), Trap()), nn.Linear(4, 2)
    )


FAULTS = {
    "raises": lambda: ValueError("the forward is broken"),
    "cuda_oom": lambda: torch.cuda.OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 15.77 GiB total capacity)"
    ),
}


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _set_fault(model: nn.Module, fault: BaseException | None) -> None:
    # Written into __dict__ directly so the fingerprint (which lists attribute names) is unchanged.
    model[2][1].__dict__["fault"] = fault  # type: ignore[index]


@pytest.mark.parametrize("mode", ["fake", "real"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_forward_fault_is_localised(fault: str, mode: str) -> None:
    model = _model()
    _set_fault(model, FAULTS[fault]())
    before = state_fingerprint(model)
    rep = probe(model, torch.randn(3, 4), mode=mode)
    assert not rep.ok
    assert rep.error is not None
    assert rep.error.path == "2.1" and rep.error.cls == "Trap"
    assert rep.error.input_shapes == ((3, 4),)
    assert ("OutOfMemoryError" if fault == "cuda_oom" else "ValueError") in rep.error.exc_type
    assert_untouched(before, model, f"{fault} in a {mode} probe")
    _set_fault(model, None)
    assert probe(model, torch.randn(3, 4), mode=mode).ok, "the model no longer probes"


def test_cuda_oom_hint_suggests_a_way_out() -> None:
    model = _model()
    _set_fault(model, FAULTS["cuda_oom"]())
    rep = probe(model, torch.randn(3, 4), mode="real")
    assert rep.error is not None and rep.error.hint
    assert any(w in rep.error.hint.lower() for w in ("fake", "memory", "batch", "smaller")), (
        rep.error
    )


@pytest.mark.parametrize("mode", ["fake", "real"])
@pytest.mark.parametrize("where", ["forward", "user_hook"])
def test_keyboard_interrupt_during_probe(mode: str, where: str) -> None:
    """Ctrl-C mid-probe propagates (the user asked to stop) but leaves no hook, flag or state."""
    model = _model()
    model.train()
    if where == "forward":
        _set_fault(model, KeyboardInterrupt())
    else:

        def interrupt(mod: nn.Module, args: Any, out: Any) -> None:
            raise KeyboardInterrupt

        model[1].register_forward_hook(interrupt)
    before = state_fingerprint(model)
    with pytest.raises(KeyboardInterrupt):
        probe(model, torch.randn(3, 4), mode=mode)
    assert_untouched(before, model, f"KeyboardInterrupt in a {mode} probe")
    assert model.training and model[1].training


def test_factory_raising_halfway_through_replace_all() -> None:
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(6)])
    before = state_fingerprint(model)
    log = PatchLog(model)
    calls = []

    def factory(old: nn.Module) -> nn.Module:
        calls.append(old)
        if len(calls) == 4:
            raise RuntimeError("factory broke on the fourth layer")
        return nn.Linear(4, 4, bias=False)

    with pytest.raises(RuntimeError, match="fourth"):
        log.replace_all(nn.Linear, factory)
    assert len(calls) == 4
    assert_untouched(before, model, "failed replace_all")
    assert not log.can_undo and not log.entries
    entry = log.replace_all(nn.Linear, lambda old: nn.Linear(4, 4, bias=False))
    assert len(entry.paths) == 6 and all(m.bias is None for m in model)
    log.undo()
    assert_untouched(before, model, "undo after a failed replace_all")


@pytest.mark.parametrize(
    "bad",
    [
        lambda old: "not a module",
        lambda old: nn.Linear,
        lambda old: (_ for _ in ()).throw(KeyboardInterrupt),
    ],
    ids=["returns-str", "returns-class", "keyboard-interrupt"],
)
def test_factory_returning_garbage(bad: Any) -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
    before = state_fingerprint(model)
    log = PatchLog(model)
    with pytest.raises((TypeError, KeyboardInterrupt)):
        log.replace_all(nn.Linear, bad)
    assert_untouched(before, model, "garbage factory")
    assert not log.entries


class BrokenSlots(nn.Module):
    """A parent whose slot assignment fails for one key, to fault the middle of a multi-slot swap."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)


def test_swap_failing_midway_puts_back_what_it_did() -> None:
    model = BrokenSlots()
    before = state_fingerprint(model)

    class Trip(dict):  # type: ignore[type-arg]
        def __setitem__(self, key: str, value: Any) -> None:
            if key == "c" and getattr(value, "bias", 1) is None:
                raise KeyboardInterrupt
            super().__setitem__(key, value)

    model._modules = Trip(model._modules)  # type: ignore[assignment]
    before = state_fingerprint(model)
    log = PatchLog(model)
    with pytest.raises(KeyboardInterrupt):
        log.replace_all(nn.Linear, lambda old: nn.Linear(4, 4, bias=False))
    assert_untouched(before, model, "interrupted swap")
    assert not log.entries


@needs_bundle
def test_explorer_survives_faults() -> None:
    from torchxray.widget import explore

    model = _model()
    before = state_fingerprint(model)
    ex = explore(model, torch.randn(3, 4))
    try:
        assert ex.probe_report is not None and ex.probe_report.ok
        _set_fault(model, ValueError("broken"))
        rep = ex.run_probe("real")
        assert rep is not None and not rep.ok and rep.error is not None
        assert rep.error.path == "2.1"
        _set_fault(model, KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt):
            ex.run_probe("fake")
        assert ex.busy == ""
        _set_fault(model, None)
        assert_untouched(before, model, "faulty probes through the explorer")
        with pytest.raises(RuntimeError, match="factory broke"):
            ex.replace_all(nn.Linear, _fails_on(2))
        assert_untouched(before, model, "failed replace_all through the explorer")
        assert ex.busy == "" and not ex.patches
        # still usable: select, edit, probe, undo
        assert ex.select("3") == "3"
        ex.edit("3", bias=False)
        assert ex.probe_report is not None and ex.probe_report.ok
        ex.undo()
        reply = ex.rpc({"kind": "ping"}, [])
        assert reply[0]["kind"] == "pong"
    finally:
        ex.close()
    assert_untouched(before, model, "explorer closed")


def _fails_on(n: int) -> Any:
    calls: list[nn.Module] = []

    def factory(old: nn.Module) -> nn.Module:
        calls.append(old)
        if len(calls) == n:
            raise RuntimeError(f"factory broke on call {n}")
        return nn.Linear(old.in_features, old.out_features)  # type: ignore[arg-type]

    return factory
