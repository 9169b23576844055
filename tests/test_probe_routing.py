"""How a probe reaches every module call (`_probe.wrap`): most modules are recorded by an
instance ``_call_impl``, the rest (own hooks, compiled in place, a class with its own
``__call__``, global hooks registered) through an instance ``forward``. Both routes give the
same report, leave nothing behind, and let every other module in the process run untouched."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from test_probe_fast import CASES, _untimed
from torch import nn
from torch.nn.modules import module as nn_module

from torchxray import _probe
from torchxray.probe import ProbeReport, probe, run_probe

_CALL = nn.Module.__call__
_CALL_IMPL = nn.Module._call_impl


def _left_behind(model: nn.Module) -> list[str]:
    """Everything a probe's routing could leave behind."""
    out = [f"{p}: instance forward" for p, m in model.named_modules() if "forward" in vars(m)]
    out += [
        f"{p}: instance _call_impl" for p, m in model.named_modules() if "_call_impl" in vars(m)
    ]
    if nn.Module.__call__ is not _CALL:
        out.append("nn.Module.__call__ replaced")
    if nn.Module._call_impl is not _CALL_IMPL:
        out.append("nn.Module._call_impl replaced")
    return out


def _all_on_instances(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(_probe.wrap.Patches, "direct_class", lambda self, cls: False)


def _report(name: str, mode: str) -> ProbeReport:
    build, inputs = CASES[name]
    torch.manual_seed(0)
    args, kwargs = inputs()
    return _untimed(run_probe(build(), args, kwargs, mode=mode, flops=True))


@pytest.mark.parametrize("mode", ["fake", "real"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_both_routes_give_the_same_report(name: str, mode: str) -> None:
    direct = _report(name, mode)
    with pytest.MonkeyPatch.context() as mp:
        _all_on_instances(mp)
        via_instances = _report(name, mode)
    assert direct == via_instances
    assert len(direct.records) >= 2


@pytest.mark.parametrize("mode", ["fake", "real"])
@pytest.mark.parametrize("outcome", ["ok", "error", "interrupt"])
def test_nothing_left_behind(mode: str, outcome: str) -> None:
    class Boom(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if outcome == "error":
                raise ValueError("boom")
            if outcome == "interrupt":
                raise KeyboardInterrupt
            return x

    model = nn.Sequential(nn.Linear(4, 4), Boom(), nn.ReLU())
    model[0].register_forward_hook(lambda m, a, o: None)  # one module on the instance route
    if outcome == "interrupt":
        with pytest.raises(KeyboardInterrupt):
            probe(model, torch.randn(2, 4), mode=mode)
    else:
        rep = probe(model, torch.randn(2, 4), mode=mode)
        assert rep.ok == (outcome == "ok")
        if outcome == "error":
            assert rep.error is not None and rep.error.path == "1"
    assert _left_behind(model) == []
    if outcome == "ok":
        assert model(torch.randn(2, 4)).shape == (2, 4)


def test_modules_of_other_models_run_unrecorded_inside_and_alongside() -> None:
    other = nn.Linear(4, 4)

    class UsesOthers(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.__dict__["helper"] = other  # not registered: not part of this model

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            made_here = nn.Linear(4, 4)
            return made_here(self.helper(self.fc(x)))

    model = UsesOthers()
    rep = probe(model, torch.randn(2, 4), mode="real")
    assert rep.ok and list(rep.records) == ["", "fc"]
    assert rep[""].output_shapes == ((2, 4),)
    assert _left_behind(model) == []


def test_another_thread_runs_its_model_while_a_probe_runs() -> None:
    model = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.GELU()) for _ in range(200)])
    theirs = nn.Sequential(nn.Linear(3, 5), nn.ReLU())
    x = torch.randn(2, 3)
    want = theirs(x)
    stop = threading.Event()
    results: list[bool] = []

    def run_theirs() -> None:
        while not stop.is_set():
            with torch.no_grad():
                results.append(torch.equal(theirs(x), want))

    worker = threading.Thread(target=run_theirs)
    worker.start()
    try:
        reps = [probe(model, torch.randn(4, 8), mode="real") for _ in range(5)]
    finally:
        stop.set()
        worker.join()
    assert results and all(results)
    paths = [p for p, _ in model.named_modules()]
    for rep in reps:  # the other thread's calls are not in it
        assert rep.ok and list(rep.records) == paths
        assert all(r.input_shapes == ((4, 8),) for r in rep.records.values())
    assert _left_behind(model) == [] and _left_behind(theirs) == []


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_users_global_hooks_still_fire_and_every_module_is_recorded(mode: str) -> None:
    seen: list[str] = []
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    handle = nn_module.register_module_forward_hook(lambda m, a, o: seen.append(type(m).__name__))
    try:
        with_hook = _untimed(probe(model, torch.randn(3, 4), mode=mode))
    finally:
        handle.remove()
    assert seen == ["Linear", "ReLU", "Linear", "Sequential"]
    assert with_hook == _untimed(probe(model, torch.randn(3, 4), mode=mode))
    assert _left_behind(model) == []


def test_own_hooks_run_around_the_recorded_forward() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(8, 2))

    def widen(m: nn.Module, args: tuple[Any, ...]) -> tuple[torch.Tensor]:
        return (torch.cat([args[0], args[0]], dim=-1),)

    model[1].register_forward_pre_hook(widen)
    model[1].register_forward_hook(lambda m, a, o: o * 0)
    rep = probe(model, torch.randn(3, 4), mode="real")
    assert rep.ok
    # The record shows what the forward received (after the pre-hook) and returned (before the
    # forward hook), and the hooks' own effects reach the caller as usual.
    assert rep["1"].input_shapes == ((3, 8),) and rep["1"].output_shapes == ((3, 2),)
    assert _left_behind(model) == []


def test_special_modules_take_the_instance_route_and_are_recorded_once() -> None:
    class OwnCall(nn.Linear):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return super().__call__(*args, **kwargs) + 1

    class SuperForward(nn.Linear):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return super().forward(x) * 2  # through nn.Linear.forward, which is not patched

    compiled = nn.Linear(4, 4)
    compiled.__dict__["_compiled_call_impl"] = functools.partial(nn.Module._call_impl, compiled)
    model = nn.Sequential(OwnCall(4, 4), SuperForward(4, 4), compiled, nn.Linear(4, 4))
    x = torch.randn(2, 4)
    with torch.no_grad():
        want = model(x)
    rep = probe(model, x, mode="real")
    assert rep.ok and [r.calls for r in rep.records.values()] == [1, 1, 1, 1, 1]
    assert list(rep.records) == ["", "0", "1", "2", "3"]
    assert torch.equal(model(x), want)
    assert _left_behind(model) == [] and "_compiled_call_impl" in vars(compiled)


def test_a_call_through_a_bound_call_taken_before_the_probe_is_recorded() -> None:
    # torch.compile's OptimizedModule keeps ``_orig_mod.__call__`` from when it was made: the
    # replacement sits in ``_call_impl``, which that bound ``__call__`` still reaches.
    class Holder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = nn.Linear(4, 3)
            self.call_inner = self.inner.__call__

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.call_inner(x)

    class NamesCallImpl(nn.Linear):
        _call_impl = nn.Module._call_impl  # its own attribute: the replacement is not seen

    own = nn.Linear(2, 2)
    own_call = own.__dict__["_call_impl"] = functools.partial(nn.Module._call_impl, own)
    model = nn.Sequential(Holder(), NamesCallImpl(3, 2), own)
    for mode in ("fake", "real"):
        rep = probe(model, torch.randn(2, 4), mode=mode)
        assert rep.ok and list(rep.records) == ["", "0", "0.inner", "1", "2"], mode
        assert rep["0.inner"].output_shapes == ((2, 3),)
        assert rep["1"].calls == 1 and rep["2"].calls == 1
        assert vars(own).pop("_call_impl") is own_call
        assert _left_behind(model) == []
        own.__dict__["_call_impl"] = own_call


def test_instance_route_keeps_the_forward_signature_visible() -> None:
    seen: list[list[str]] = []

    class Introspects(nn.Module):
        def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
            seen.append(list(inspect.signature(self.forward).parameters))
            return x * scale

    model = Introspects()
    model.register_forward_hook(lambda m, a, o: None)  # instance route
    assert probe(model, torch.randn(2), mode="real").ok
    assert seen == [["x", "scale"]]


def test_in_place_metadata_change_between_modules_is_seen() -> None:
    class Reshapes(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Identity(), nn.Flatten(0)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.a(x)
            h.unsqueeze_(0)  # same tensor object as a's output, new shape
            return self.b(h)

    for mode in ("fake", "real"):
        rep = probe(Reshapes(), torch.randn(2, 3), mode=mode)
        assert rep["a"].output_shapes == ((2, 3),)
        assert rep["b"].input_shapes == ((1, 2, 3),), mode


def test_inference_tensor_inputs() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    with torch.inference_mode():
        x = torch.randn(2, 4)
    rep = probe(model, x, mode="real")
    assert rep.ok and rep["1"].input_shapes == ((2, 4),)


@pytest.fixture
def many() -> Iterator[nn.Module]:
    yield nn.Sequential(*[nn.Linear(2, 2) for _ in range(50)])


def test_a_probe_inside_a_forward_of_another_probe_nests(many: nn.Module) -> None:
    inner_reports: list[ProbeReport] = []

    class ProbesInside(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            inner_reports.append(probe(many, torch.randn(1, 2), mode="real"))
            return x

    outer = probe(nn.Sequential(nn.Linear(2, 2), ProbesInside()), torch.randn(1, 2), mode="real")
    assert outer.ok and list(outer.records) == ["", "0", "1"]
    assert inner_reports[0].ok and len(inner_reports[0].records) == 51
    assert _left_behind(many) == []
