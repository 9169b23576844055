"""The source ``defaults`` (``_forms/sources/defaults.py``): what no other source reads stands at
the parameter's default, a guess; ``*args`` and ``**kwargs`` start empty, known for a torch.nn
class (which takes them only to ignore or reject them)."""

from __future__ import annotations

import inspect

from torch import nn

import torchxray as tx
from torchxray._forms.sources import defaults


def _params(fn: object) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(fn).parameters)  # type: ignore[arg-type]


def test_a_default_is_a_guess_and_a_required_value_stays_empty() -> None:
    def init(width: int, scale: float = 0.5, *args: int, **kwargs: int) -> None: ...

    p = _params(init)
    assert defaults.draft(p["scale"]) == (0.5, "default")
    assert defaults.draft(p["width"]) == (None, "default")
    assert defaults.spread(p["args"], torch_class=False) == ((), "default")
    assert defaults.spread(p["kwargs"], torch_class=True) == ({}, "derived")
    assert defaults.spread(p["width"], torch_class=True) is None


def test_a_torch_class_that_ignores_its_arguments_has_them_known() -> None:
    f = tx.form(nn.Identity())
    assert {x.name: x.origin for x in f.fields} == {"args": "derived", "kwargs": "derived"}
