"""The real probe's CUDA bookkeeping (time from events, memory left allocated, peak folded into the
callers), driven on the CPU through a fake of the few torch.cuda calls it makes. The CUDA tests
(`test_probe_cuda.py`) check the same on a GPU where one exists; this runs everywhere."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
import torch
from torch import nn

from torchxray._probe.run import ProbeRun


class FakeCuda:
    """An allocator's counters and a clock that ticks once per recorded event."""

    def __init__(self) -> None:
        self.allocated = 0
        self.peak = 0
        self.clock = 0.0

    def alloc(self, n: int) -> None:
        self.allocated += n
        self.peak = max(self.peak, self.allocated)

    def free(self, n: int) -> None:
        self.allocated -= n

    def install(self, mp: pytest.MonkeyPatch) -> None:
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.t = 0.0

            def record(self) -> None:
                fake.clock += 1.0
                self.t = fake.clock

            def elapsed_time(self, end: Any) -> float:
                return float(end.t - self.t)

        def reset(device: Any = None) -> None:
            fake.peak = fake.allocated

        mp.setattr(torch.cuda, "Event", Event)

        def stats(device: Any = None) -> dict[str, Any]:
            counters = {"current": fake.allocated, "peak": fake.peak}
            return {"allocated_bytes": {"all": counters}}

        mp.setattr(torch.cuda, "memory_stats_as_nested_dict", stats)
        mp.setattr(torch.cuda, "reset_peak_memory_stats", reset)
        mp.setattr(torch.cuda, "synchronize", lambda device=None: None)
        mp.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())


class Uses(nn.Module):
    """Allocates `keep + scratch` bytes, frees the scratch, keeps `keep` (its output)."""

    def __init__(self, fake: FakeCuda, keep: int, scratch: int) -> None:
        super().__init__()
        self.fake, self.keep, self.scratch = fake, keep, scratch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.fake.alloc(self.keep + self.scratch)
        self.fake.free(self.scratch)
        return x


def test_times_memory_and_peaks_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCuda()
    fake.install(monkeypatch)
    fake.alloc(1000)  # the weights, before the probe
    model = nn.Sequential(Uses(fake, 10, 500), nn.Sequential(Uses(fake, 20, 50), Uses(fake, 5, 0)))
    run = ProbeRun(model, "real", torch.device("cuda"), flops=False)
    with run:
        model(torch.zeros(1))
    rec = {call.path: call.record(False) for call in run.log}
    assert list(rec) == ["", "0", "1", "1.0", "1.1"]
    assert {p: r.mem_alloc for p, r in rec.items()} == {
        "": 35, "0": 10, "1": 25, "1.0": 20, "1.1": 5,
    }  # fmt: skip
    # Peaks are relative to what was allocated when the call started; the 500-byte scratch of
    # "0" is the model's peak even though "1" ran after it.
    assert {p: r.mem_peak for p, r in rec.items()} == {
        "": 510, "0": 510, "1": 70, "1.0": 70, "1.1": 5,
    }  # fmt: skip
    # One tick per event: a leaf spans 1 tick; "1" spans its two children's four events + 1.
    assert {p: r.time_ms for p, r in rec.items()} == {
        "": 9.0, "0": 1.0, "1": 5.0, "1.0": 1.0, "1.1": 1.0,
    }  # fmt: skip
    assert all(call.ev0 is None and call.ev1 is None for call in run.log)  # events let go
