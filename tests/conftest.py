"""Shared pytest setup: makes `fixtures.models` importable from every test file; the `mesh`
fixture of the FSDP2 / DTensor tests; `roomy_form_budget` for the form-rule tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# pytest's default "prepend" import mode already puts tests/ on sys.path for rootdir-less runs;
# do it explicitly so `from fixtures.models import ...` works however pytest is invoked.
_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


@pytest.fixture(scope="module")
def mesh() -> Iterator[Any]:
    """A 1-D device mesh of 4 ranks on a fake process group (CPU, one process): FSDP2 / DTensor
    models built in tests; torch's own fake backend, so no collective moves data."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this process")
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=4)
    try:
        yield init_device_mesh("cpu", (4,))
    finally:
        dist.destroy_process_group()


@pytest.fixture
def roomy_form_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """The form rules, not the budget: a rule's test shows the rule, not where the budget ends
    (the budget counts work, not seconds: the load of the machine changes nothing)."""
    from torchxray import forms as pipeline

    monkeypatch.setattr(pipeline, "SEARCH_WORK", 6 * pipeline.SEARCH_WORK)
