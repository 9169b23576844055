"""The forms' safety ceiling: a build that loops in plain Python (registering no submodule,
nothing the search's work budget can count) is stopped at the ceiling (``CEILING_SECONDS`` of
CPU, lowered here to keep the tests short), the form says it could not check, and an edit checks
in full; stopping a build leaves nothing behind in the thread. Under the ceiling, a slow
constructor is built and checked in full (no cut on the clock decides a form)."""

from __future__ import annotations

import sys
import time
import warnings

import pytest
import torch
from fixtures.forms import Spins
from torch import nn

import torchxray as tx
from torchxray import forms as pipeline
from torchxray._forms.budget import CEILING_NOTE, TOO_SLOW
from torchxray._forms.rebuild.meta import PastDeadline, meta_build

warnings.filterwarnings("ignore")


@pytest.fixture
def low_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "CEILING_SECONDS", 0.3)


def test_a_slow_constructor_is_stopped_at_the_ceiling_and_the_edit_checks_in_full(
    low_ceiling: None,
) -> None:
    model = nn.Sequential(Spins(channels=16))
    start = time.thread_time()
    f = tx.form(model[0])
    assert time.thread_time() - start < 0.6
    assert f.inexact == TOO_SLOW and f.check.cut and CEILING_NOTE in f.hint
    assert f["channels"].value == 16
    # The edit's gate is not bound by the form's limit: the unchanged build is checked in full,
    # so the edit changes only what it names.
    entry = tx.PatchLog(model).edit("0", dropout=0.1)
    assert entry.effects == (
        "drop: Dropout(p=0.0, inplace=False) -> Dropout(p=0.1, inplace=False)",
    )
    assert model[0].proj.in_features == 16


def test_a_fast_constructor_is_checked_as_before() -> None:
    f = tx.form(Spins(channels=16, seconds=0.0))
    assert f.inexact == "" and not f.check.cut


def test_a_stopped_build_leaves_nothing_pending_and_torch_modes_as_they_were() -> None:
    # Deadlines at the edge of many short builds: the stop lands inside a build or not at all,
    # never in the code that runs after it.
    stopped = 0
    for i in range(150):
        try:
            with meta_build(deadline=time.thread_time() + 0.005):
                torch.set_grad_enabled(False)
                x = 0
                for j in range((i % 7) * 60000):
                    x += j
        except PastDeadline:
            stopped += 1
        y = 0
        for j in range(2000):
            y += j
        assert torch.is_grad_enabled()
    assert 0 < stopped < 150


def test_a_table_built_number_by_number_is_checked_in_full_under_the_ceiling() -> None:
    transformers = pytest.importorskip("transformers")
    # VideoMAE's embeddings compute their sinusoid table with one numpy call per number
    # (1568 positions x 768 features: over a second of CPU for each build). Once cut at the
    # form's second ("not checked"), on a loaded machine sooner than on an idle one: now built
    # in full, the same form on every call.
    emb = transformers.models.videomae.modeling_videomae.VideoMAEEmbeddings(
        transformers.VideoMAEConfig()
    )
    f = tx.form(emb)
    assert f.inexact == "" and not f.check.cut and CEILING_NOTE not in f.hint


def test_a_build_is_stopped_under_a_profiler_too() -> None:
    # A profiler or a debugger's trace function runs Python code at every call: the stop must
    # land in the build all the same, and leave the thread able to run on.
    old = sys.getprofile()
    sys.setprofile(lambda *args: None)
    try:
        start = time.thread_time()
        with pytest.raises(PastDeadline):
            with meta_build(deadline=time.thread_time() + 0.05):
                x = 0
                for j in range(10**9):
                    x += j
        assert time.thread_time() - start < 1.0
    finally:
        sys.setprofile(old)
    assert torch.is_grad_enabled()


class Swallows(nn.Module):
    """A constructor that tries a costly layer and falls back on any error (``except
    Exception``), then computes in plain Python again."""

    def __init__(self, channels: int = 8, seconds: float = 1.5) -> None:
        super().__init__()
        try:
            end = time.thread_time() + seconds
            while time.thread_time() < end:
                pass
        except Exception:  # noqa: BLE001 - the model's own fallback, as some constructors have
            pass
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass
        self.channels = channels
        self.proj = nn.Linear(channels, channels)


def test_a_constructor_that_swallows_the_stop_is_stopped_all_the_same(low_ceiling: None) -> None:
    start = time.thread_time()
    with pytest.raises(PastDeadline):
        with meta_build(deadline=time.thread_time() + 0.05):
            Swallows()
    assert time.thread_time() - start < 0.5
    live = Swallows(seconds=0.6)
    start = time.thread_time()
    f = tx.form(live)
    assert time.thread_time() - start < 0.6
    assert f.inexact == TOO_SLOW and f.check.cut and CEILING_NOTE in f.hint
