"""A device argument kept as the string it was written as (``self.device = device`` given
``"cpu"``): the form keeps the string (``_forms/sources/recoverers.py``) and the comparison reads
it as a device, as a meta build stands for any (``_forms/rebuild/parts.py``); the zoo's
``tests/handwritten/styles8_r7b.py``."""

from __future__ import annotations

import pytest
import torch
from fixtures.forms import exact as _exact

from tests.handwritten.styles8_r7b import ReservoirCell, TrajectoryGRU
from torchxray._forms.rebuild.parts import parts

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_device_kept_as_text_is_read_as_written() -> None:
    f = _exact(TrajectoryGRU(2, 16, layers=2))
    assert f["device"].value == "cpu" and f["layers"].value == 2


def test_a_device_kept_as_text_under_another_name_compares_as_a_device() -> None:
    f = _exact(ReservoirCell(4, 12, leak=0.5))
    assert f["device"].value in ("cpu:0", torch.device("cpu"))
    assert f["leak"].value == 0.5


def test_only_device_names_are_read_as_devices() -> None:
    a, b = torch.nn.Module(), torch.nn.Module()
    a.where, b.where = "cpu", "meta"  # type: ignore[assignment]
    assert parts(a).items == parts(b).items
    a.where, b.where = "cpus", "metal"  # type: ignore[assignment]
    assert parts(a).items != parts(b).items
