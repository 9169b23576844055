"""Issue 39, leave no trace: every run leaves the model exactly as it found it, Python state
included, and `rep.writes` says what the forward wrote. The side-effect zoo
(`fixtures/side_effects.py`), each case for fake and real probes, with the first call inside
the probe and after a real forward; then tx.memory, tx.summary, a form's check, a watch and an
explorer."""

from __future__ import annotations

import copy
import os

import pytest
import torch
from fixtures.side_effects import CASES, REGISTRY, Untouched, WritesFile, example
from torch import nn

import torchxray as tx

_FIRST_CALL_ONLY = {"lazy_proj", "memo", "new_buffer", "frozen"}


@pytest.fixture(autouse=True)
def _clean_globals():
    dtype = torch.get_default_dtype()
    yield
    torch.set_default_dtype(dtype)
    torch.use_deterministic_algorithms(False)
    torch.set_autocast_enabled("cpu", False)
    torch.set_default_device(None)
    REGISTRY.clear()
    nn.modules.module._global_forward_hooks.clear()


def _model(name: str, warmed: bool) -> nn.Module:
    torch.manual_seed(0)
    model = CASES[name][0]()
    if warmed:  # its caches filled, its lazy parts made, as after a user's first forward
        with torch.no_grad():
            model(example(model))
        torch.set_default_dtype(torch.float32)
        torch.use_deterministic_algorithms(False)
        torch.set_autocast_enabled("cpu", False)
        torch.set_default_device(None)
        nn.modules.module._global_forward_hooks.clear()
    return model


@pytest.mark.parametrize("warmed", [False, True], ids=["first-call", "after-a-forward"])
@pytest.mark.parametrize("mode", ["fake", "real"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_probe_leaves_the_model_as_it_found_it(name: str, mode: str, warmed: bool) -> None:
    model = _model(name, warmed)
    x = example(model)
    before = Untouched(model)
    rep = tx.probe(model, x, mode=mode)
    assert rep.ok, rep.error
    assert before.check() == []
    kinds = {w.kind for w in rep.writes}
    # A cache filled, a part made or a layer frozen on the first call is not written again.
    expected = set() if warmed and name in _FIRST_CALL_ONLY else CASES[name][1]
    assert expected <= kinds, rep.writes
    # Run for real afterwards: no fake tensor or submodule left behind breaks it.
    with torch.no_grad():
        out = model(x)
    assert type(out) is torch.Tensor and not out.is_meta


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_the_writes_name_what_was_written(mode: str) -> None:
    rep = tx.probe(CASES["seen"][0](), torch.randn(2, 4), mode=mode)
    (w,) = rep.writes
    assert (w.path, w.attribute, w.kind, w.restored) == ("", "seen", "container", True)
    assert w.label == "writes self.seen" and "1 item added" in str(w)
    rep = tx.probe(CASES["halve"][0](), torch.randn(2, 4), mode=mode)
    assert [(w.path, w.attribute, w.kind) for w in rep.writes] == [
        ("lin", "weight", "in-place parameter")
    ]
    rep = tx.probe(CASES["count"][0](), torch.randn(2, 4), mode=mode)
    assert [(w.attribute, w.kind, w.detail) for w in rep.writes] == [("calls", "counter", "0 -> 1")]


def test_a_file_written_is_named_and_said_never_put_back() -> None:
    model = WritesFile()
    rep = tx.probe(model, torch.randn(2, 4), mode="real")
    (w,) = [w for w in rep.writes if w.kind == "file"]
    assert not w.restored and model.path in str(w)
    assert any("cannot put back" in n and model.path in n for n in rep.notes)
    os.remove(model.path)


def test_a_model_without_writes_reports_none() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4).eval(), nn.ReLU())
    before = Untouched(model)
    for mode in ("fake", "real"):
        assert tx.probe(model, torch.randn(2, 4), mode=mode).writes == ()
    assert before.check() == []


def test_batchnorm_in_train_mode_says_it_writes_its_running_statistics() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    before = Untouched(model)
    # A fake run names what an op's schema says it writes (the step counter); BatchNorm's kernels
    # update the running statistics without saying so, which a real run sees in their values.
    rep = tx.probe(model, torch.randn(3, 4))
    assert ("1", "num_batches_tracked") in {(w.path, w.attribute) for w in rep.writes}
    rep = tx.probe(model, torch.randn(3, 4), mode="real")
    written = {(w.path, w.attribute) for w in rep.writes}
    assert {("1", "running_mean"), ("1", "running_var"), ("1", "num_batches_tracked")} <= written
    assert before.check() == []


def test_running_statistics_kept_as_parameters_are_put_back_and_named() -> None:
    from fixtures.side_effects import StatsParam

    model = StatsParam()
    before = Untouched(model)
    rep = tx.probe(model, torch.randn(3, 4), mode="real")
    written = {(w.attribute, w.kind) for w in rep.writes}
    assert {("mean", "in-place parameter"), ("var", "in-place parameter")} <= written
    assert before.check() == []  # before: the probe left them moved by one batch


def test_a_failed_probe_puts_back_what_it_wrote_before_failing() -> None:
    class Fails(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[int] = []
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.seen.append(1)
            with torch.no_grad():
                self.lin.weight.mul_(2)
            return self.lin(x[:, :3])

    model = Fails()
    before = Untouched(model)
    for mode in ("fake", "real"):
        assert not tx.probe(model, torch.randn(2, 4), mode=mode).ok
        assert before.check() == []


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("name", ["seen", "memo", "lazy_proj", "count", "hook", "halve", "ema"])
def test_memory_leaves_the_model_as_it_found_it(name: str, training: bool) -> None:
    model = _model(name, warmed=False)
    before = Untouched(model)
    rep = tx.memory(model, example(model), training=training)
    assert before.check() == []
    if name in ("seen", "memo", "count"):
        assert {w.kind for w in rep.writes} & CASES[name][1]


@pytest.mark.parametrize("name", ["seen", "count", "halve", "default_dtype"])
def test_summary_leaves_the_model_as_it_found_it(name: str) -> None:
    model = _model(name, warmed=False)
    before = Untouched(model)
    tx.summary(model, example(model))
    assert before.check() == []


def test_a_forms_check_leaves_a_layer_it_hands_to_the_constructor_as_it_was() -> None:
    class Wrap(nn.Module):
        def __init__(self, inner: nn.Module, scale: float = 1.0) -> None:
            super().__init__()
            self.inner = inner
            with torch.no_grad():
                inner.weight.mul_(scale)  # a constructor that changes the layer it is given
            inner.tag = "wrapped"
            self.scale = scale

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x)

    lin = nn.Linear(4, 4)
    model = Wrap(lin, 0.5)
    lin.tag = "live"
    before = Untouched(model)
    f = tx.form(model)
    assert before.check() == [] and lin.tag == "live"
    assert f.inexact  # the rebuild tags its layer "wrapped": said, not hidden


def test_a_watch_closed_leaves_no_hook_or_attribute() -> None:
    model = _model("seen", warmed=False)
    before = Untouched(model)
    snapshot = copy.deepcopy(before.python)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the weights stay as they were
    w = tx.watch(model, opt, every=1)
    for _ in range(3):
        loss = model(torch.randn(2, 4)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        w.step(loss)
    w.close()
    model.seen.clear()  # the user's own forwards appended: theirs, not the watch's
    assert before._python() == snapshot


def test_an_explorer_closed_leaves_the_model_as_it_found_it() -> None:
    model = _model("nested", warmed=False)
    before = Untouched(model)
    ex = tx.explore(model, example(model))
    ex.wait() if hasattr(ex, "wait") else None
    assert ex.probe_report is not None and ex.probe_report.ok
    assert {w.kind for w in ex.probe_report.writes} == {"container", "attribute"} or (
        "container" in {w.kind for w in ex.probe_report.writes}
    )
    ex.close()
    assert before.check() == []
