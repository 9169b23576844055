"""The probe's fast paths give exactly the report of the slow paths they replace.

Fast paths checked here: parameters converted to fake views before FakeTensorMode sees an op (so
its result cache applies), shared TensorInfo objects for equal metadata, raw metadata kept for
one tensor in / one tensor out, records made when first read, the single-call ModuleRecord
shortcut. Each test runs the same probe with and without one and compares whole
reports (records, shapes, dtypes, calls, FLOPs, failure localisation); only timings differ.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import torch
from test_probe import DictModel, Reuse, TinyLM
from torch import nn

from torchxray import _probe
from torchxray._probe.records import CallRecord, ModuleRecord
from torchxray.probe import ProbeReport, TensorInfo, run_probe


class Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.down: nn.Module | None = None
        if stride != 1 or cin != width:
            self.down = nn.Sequential(nn.Conv2d(cin, width, 1, stride), nn.BatchNorm2d(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.down is None else self.down(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + idt)


def resnet_like() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, 2, 1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Sequential(Bottleneck(8, 8), Bottleneck(8, 8), Bottleneck(8, 8)),
        nn.Sequential(Bottleneck(8, 16, 2), Bottleneck(16, 16)),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )


def fails_midway() -> nn.Module:
    # The third block expects 16 channels but gets 8: it raises inside conv1 of "3.0".
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, 1, 1),
        nn.BatchNorm2d(8),
        nn.Sequential(Bottleneck(8, 8), Bottleneck(8, 8)),
        nn.Sequential(Bottleneck(16, 16)),
    )


class Constants(nn.Module):
    """Real tensors that are not parameters: fake mode computes on these for real (constants)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = torch.arange(4.0)  # a plain attribute, not a buffer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = int(torch.tensor(2).item())  # a lifted constant: its value is known
        total = torch.div(self.scale, 2).sum()
        return (self.lin(x) * self.scale + total)[:, :k]


_Case = tuple[Callable[[], nn.Module], Callable[[], tuple[tuple[Any, ...], dict[str, Any]]]]

CASES: dict[str, _Case] = {
    "resnet": (resnet_like, lambda: ((torch.randn(2, 3, 16, 16),), {})),
    "transformer": (TinyLM, lambda: ((torch.randint(0, 50, (2, 7)),), {})),
    "fails": (fails_midway, lambda: ((torch.randn(1, 3, 8, 8),), {})),
    "constants": (Constants, lambda: ((torch.randn(2, 4),), {})),
    "reuse": (Reuse, lambda: ((torch.randn(3, 4),), {})),
    "dict": (DictModel, lambda: (({"x": torch.randn(2, 4)},), {"mask": torch.ones(2, 3)})),
}


def _untimed(rep: ProbeReport) -> ProbeReport:
    def strip(rec: ModuleRecord) -> ModuleRecord:
        calls = tuple(dataclasses.replace(c, time_ms=None) for c in rec.call_records)
        return dataclasses.replace(rec, time_ms=None, call_records=calls)

    records = {path: strip(rec) for path, rec in rep.records.items()}
    return dataclasses.replace(rep, records=records, wall_ms=0.0)


def _both(
    name: str, mode: str, slow: Callable[[pytest.MonkeyPatch], None], memoise: bool = True
) -> tuple[ProbeReport, ProbeReport]:
    build, inputs = CASES[name]
    torch.manual_seed(0)
    model = build()
    args, kwargs = inputs()
    fast = _untimed(run_probe(model, args, kwargs, mode=mode, memoise=memoise, flops=True))
    with pytest.MonkeyPatch.context() as mp:
        slow(mp)
        # Records are made when first read: read them while the slow path is in place.
        reference = _untimed(run_probe(model, args, kwargs, mode=mode, memoise=memoise, flops=True))
    return fast, reference


def _no_fake_conversion(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(_probe.flops, "_REAL_TYPES", ())


def _no_info_cache(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(_probe.values, "_INFOS", {})
    mp.setattr(_probe.values, "_INFO_LIMIT", 0)


@pytest.mark.parametrize("memoise", [True, False])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fake_parameter_conversion_gives_the_same_report(name: str, memoise: bool) -> None:
    fast, slow = _both(name, "fake", _no_fake_conversion, memoise)
    assert fast == slow
    assert fast.ok == (name != "fails")
    if name == "fails":
        assert fast.error is not None and fast.error.path == "3.0.conv1"
        assert fast.error.input_shapes == ((1, 8, 8, 8),)
    else:
        assert fast.total_flops is not None and fast.total_flops > 0


@pytest.mark.parametrize("mode", ["fake", "real"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_shared_tensor_infos_give_the_same_report(name: str, mode: str) -> None:
    fast, slow = _both(name, mode, _no_info_cache)
    assert fast == slow


def _no_raw_meta(mp: pytest.MonkeyPatch) -> None:
    mp.setattr(_probe.calls, "_FAST_META", False)


@pytest.mark.parametrize("mode", ["fake", "real"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_raw_metadata_gives_the_same_report(name: str, mode: str) -> None:
    fast, slow = _both(name, mode, _no_raw_meta)
    assert fast == slow


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_records_made_on_first_read_equal_records_made_at_once(mode: str) -> None:
    build, inputs = CASES["transformer"]
    model = build()
    args, kwargs = inputs()
    lazy = run_probe(model, args, kwargs, mode=mode, flops=True)
    eager = run_probe(model, args, kwargs, mode=mode, flops=True)
    eager_records = dict(eager.records.items())  # every record made, in iteration order
    assert list(lazy.records) == list(eager_records) and len(lazy.records) == len(eager_records)
    # Read in another order (the last path first): each record is still what it would have been.
    for path in reversed(list(lazy.records)):
        assert path in lazy.records
        got, want = lazy.records[path], eager_records[path]
        assert dataclasses.replace(got, time_ms=None, call_records=()) == dataclasses.replace(
            want, time_ms=None, call_records=()
        )
    assert lazy.records["layers.0"] is lazy.records["layers.0"]  # made once
    assert "nope" not in lazy.records
    with pytest.raises(KeyError, match="nope"):
        lazy["nope"]


def test_fake_conversion_lets_fake_mode_cache_parameter_ops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    model, x = resnet_like().eval(), torch.randn(1, 3, 16, 16)

    def bypasses() -> int:
        before = FakeTensorMode.cache_bypasses.get("non-fake tensor", 0)
        run_probe(model, (x,), {}, mode="fake", memoise=False)
        return FakeTensorMode.cache_bypasses.get("non-fake tensor", 0) - before

    fast = bypasses()
    _no_fake_conversion(monkeypatch)
    slow = bypasses()
    # Without the conversion every conv and BatchNorm call bypasses the cache for its real
    # weight (12 + 12 here); with it none does (the Linear's transpose of its weight alone is
    # converted too: the fake mode would convert it, no constant propagation applies).
    assert slow >= 24
    assert fast == 0


def test_info_cache_is_bounded_and_keeps_names_apart() -> None:
    t = torch.zeros(2, 3)
    a, b = _probe.values._info(t, "args[0]"), _probe.values._info(t, "args[1]")
    assert isinstance(a, TensorInfo) and isinstance(b, TensorInfo)
    assert (a.name, b.name, a.shape, a.dtype) == ("args[0]", "args[1]", (2, 3), "float32")
    assert _probe.values._info(torch.zeros(2, 3, dtype=torch.half), "args[0]") != a
    assert len(_probe.values._INFOS) <= _probe.values._INFO_LIMIT


def test_single_call_record_equals_the_general_sum() -> None:
    info = TensorInfo((2, 3), "float32", "cpu", "args[0]")
    for call in (
        CallRecord((info,), (info, "3"), flops=12, time_ms=1.5, mem_alloc=4, mem_peak=8),
        CallRecord((), (), flops=None, time_ms=None, complete=False),
    ):
        one = ModuleRecord.from_calls("a", "Linear", (call,))
        # The general path, reached with a second call whose figures add nothing.
        empty = CallRecord(call.inputs, call.outputs, complete=call.complete)
        two = ModuleRecord.from_calls("a", "Linear", (call, empty))
        assert dataclasses.replace(two, calls=1, call_records=(call,)) == one


def test_fake_logs_quiet_during_a_run_and_restored_after() -> None:
    import logging

    from torchxray._fake.mode import quiet_fake_logs

    name = "torch._subclasses.fake_tensor"
    logger, child = logging.getLogger(name), logging.getLogger(name + ".tx_test_child")
    other = logging.getLogger("tx_test_other")
    level = logger.level
    before = [(lg, lg.isEnabledFor(logging.ERROR)) for lg in (logger, child, other)]
    with quiet_fake_logs():
        assert logger.level == logging.CRITICAL
        assert not logger.isEnabledFor(logging.ERROR) and not child.isEnabledFor(logging.ERROR)
        assert other.isEnabledFor(logging.ERROR) == before[2][1]
    assert logger.level == level
    assert [(lg, lg.isEnabledFor(logging.ERROR)) for lg in (logger, child, other)] == before
    # A placeholder below it that becomes a logger later is quieted too.
    logging.getLogger(name + ".tx_test_a.b")
    with quiet_fake_logs():
        pass
    late = logging.getLogger(name + ".tx_test_a")
    assert late.isEnabledFor(logging.ERROR)
    with quiet_fake_logs():
        assert not late.isEnabledFor(logging.ERROR)
    assert late.isEnabledFor(logging.ERROR)
