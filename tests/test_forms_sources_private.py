"""An argument kept under its name made private (``self._use_skip = use_skip``), read as the
argument by the attributes source (``_forms/sources/attributes.py``); the zoo's
``tests/handwritten/styles8_r7b.py``."""

from __future__ import annotations

import inspect

import pytest
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.styles8_r7b import SkipDenoiser, TopKRouter
from torchxray._forms.sources.attributes import draft

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _param(cls: type, name: str) -> inspect.Parameter:
    return inspect.signature(cls).parameters[name]


def test_a_private_plain_value_is_the_argument() -> None:
    m = SkipDenoiser(6, 10, use_skip=True, skip_sizes=[12, 8])
    assert draft(m, _param(SkipDenoiser, "use_skip")) == (True, "attribute")
    r = TopKRouter(16, 6, k=2, temperature=0.5)
    assert draft(r, _param(TopKRouter, "k")) == (2, "attribute")


def test_a_private_layer_or_unset_value_is_not() -> None:
    m = SkipDenoiser(6, 10, use_skip=True, skip_sizes=[12, 8])
    assert draft(m, _param(SkipDenoiser, "skip_sizes")) is None
    holder = nn.Module()
    holder._mask = None  # type: ignore[assignment]
    assert draft(holder, inspect.Parameter("mask", inspect.Parameter.KEYWORD_ONLY)) is None


def test_a_flag_kept_private_chooses_its_layer() -> None:
    f = _exact(SkipDenoiser(6, 10, use_skip=True, skip_sizes=[12, 8]))
    assert f["use_skip"].value is True and list(f["skip_sizes"].value)[-1] == 8
