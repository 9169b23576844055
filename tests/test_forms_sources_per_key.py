"""One value, or a dict of one per part read by its keys (``_forms/sources/per_key.py``), read back
off the layers each part went to; a list whose end item is never read is flagged (the zoo's
``tests/handwritten/styles6_r5a.py``)."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact

import torchxray as tx
from tests.handwritten.styles6_r5a import NormPerPartAE, TwoTowerScorer
from torchxray._forms.sources.per_key import per_key

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_dict_of_one_value_per_part_is_read_off_the_layers_of_each_part() -> None:
    m = NormPerPartAE(4, norm={"encoder": "instance", "decoder": "batch"})
    assert per_key(NormPerPartAE, m, "norm", tx.form) == {"encoder": "instance", "decoder": "batch"}
    assert _exact(m)["norm"].value == {"encoder": "instance", "decoder": "batch"}
    t = TwoTowerScorer([6, 16, 8], [9, 16, 8], act={"user": "Tanh", "item": "ReLU"})
    f = _exact(t)
    assert f["act"].value == {"user": "Tanh", "item": "ReLU"}
    # user_sizes[:-1] + [d]: its last item is never read, so the value shown is flagged
    assert f["user_sizes"].note.startswith("a guess") and not f["item_sizes"].note


def test_one_value_for_every_part_stays_the_plain_value() -> None:
    f = _exact(NormPerPartAE(4, norm="instance"))
    assert f["norm"].value == "instance"
    assert f["norm"].note.startswith("a guess")  # {"encoder": "instance", ...} rebuilds it too
