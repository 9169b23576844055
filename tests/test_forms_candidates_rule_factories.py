"""The rule factories (``_forms/candidates/rules/factories.py``) alone, on a real library class: a norm made
with its own eps is proposed as a factory for the field that made it."""

from __future__ import annotations

import functools

import pytest
from fixtures.rules import child, proposed, rebuilds

from torchxray._forms.candidates.rules import factories

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_factory_field_takes_the_live_layer_again() -> None:
    layers = pytest.importorskip("timm.layers")
    live = dict(
        in_channels=4, out_channels=8, norm_layer=functools.partial(layers.BatchNormAct2d, eps=1e-3)
    )
    built = dict(in_channels=4, out_channels=8, norm_layer=layers.BatchNormAct2d)
    got = proposed(factories.propose, layers.ConvNormAct, live, built, child)
    first = got[0]["norm_layer"]
    assert isinstance(first, functools.partial) and first.func is layers.BatchNormAct2d
    assert first.keywords == {"eps": 1e-3}
    assert rebuilds(layers.ConvNormAct, live, {**built, **got[0]})


@pytest.mark.parametrize("name", ["replaced_head_factory", "replaced_stem_factory"])
def test_a_layer_its_parent_changes_still_gives_the_parent_its_factory(name: str) -> None:
    # The backbone's own form is not exact (its classifier or stem was replaced after it was
    # built); the values its search came nearest with make one factory, the parent's build
    # proves it.
    import torchxray as tx
    from tests.handwritten import CASES

    model = CASES[name].build()
    inner = next(m for n, m in model.named_children() if n in ("backbone", "encoder"))
    assert tx.form(inner).inexact
    f = tx.form(model)
    assert f.inexact == ""
    made = f.values.get("backbone", f.values.get("make_encoder"))
    assert isinstance(made, functools.partial) and made.func is type(inner)


def test_an_inexact_layer_form_gives_one_factory_only() -> None:
    import torchxray as tx
    from tests.handwritten import CASES
    from torchxray._forms.candidates.factories import factory

    model = CASES["replaced_head_factory"].build()
    made = factory(model.backbone, tx.form)
    assert len(made) == 1 and made[0].keywords == {"channels": (6, 12)}
