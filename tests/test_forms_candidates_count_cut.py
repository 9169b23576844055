"""A loop's count (``range(n_blocks)``) whose build was cut for its size is not tried larger
(``_forms/candidates/loop.py``'s ``candidate``): the pools offer a count the module's widths,
and each cut build costs as much as the parts it made before it. The zoo's
``tests/handwritten/styles7_r6a.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact

from tests.handwritten.styles7_r6a import StridedSensorNet
from torchxray._forms.candidates import loop
from torchxray._forms.rebuild.meta import TooBig


def test_a_count_cut_for_its_size_is_not_tried_larger(monkeypatch: pytest.MonkeyPatch) -> None:
    cut: list[object] = []
    build = loop.Search.build

    def counting(self: loop.Search, values: dict) -> object:
        got = build(self, values)
        if got is None and self.reached == -1 and type(self.module) is StridedSensorNet:
            cut.append(values.get("n_blocks"))
        return got

    monkeypatch.setattr(loop.Search, "build", counting)
    f = _exact(StridedSensorNet(5, n_channels=30, d=36, n_blocks=2, expansion=3, kernel=3))
    assert (f["n_blocks"].value, f["d"].value) == (2, 36)
    assert len(cut) <= 1, cut
    assert TooBig is not None
