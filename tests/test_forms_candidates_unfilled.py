"""``_forms/candidates/unfilled.py``: a failed build names the argument the constructor read in a
way no value found allows (iterated, a field read off it, a mapping, unpacked), from its uses;
and a form refused so says it in its sentence."""

from __future__ import annotations

import pytest
from torch import nn

import torchxray as tx
from torchxray._forms.candidates.unfilled import unfilled
from torchxray._forms.sources.usage import usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class Sizes(nn.Module):
    def __init__(self, sizes, d):
        super().__init__()
        self.fc = nn.Linear(sum(sizes) + d, d)  # no layer per size, nothing keeps them


class Opts(nn.Module):
    def __init__(self, opts):
        super().__init__()
        self.fc = nn.Linear(opts.width, 2)


class Specs(nn.Module):
    def __init__(self, kw):
        super().__init__()
        self.fc = nn.Linear(3, 3, **kw)


class Split(nn.Module):
    def __init__(self, d=8, heads=0):
        super().__init__()
        self.fc = nn.Linear(d // heads, d)


def _why(cls: type, name: str, value: object, error: str) -> str:
    return unfilled(error, {name: usage(cls, name)}, {name: value})


def test_each_use_is_named() -> None:
    assert "sizes is iterated" in _why(Sizes, "sizes", None, "'NoneType' object is not iterable")
    got = _why(Opts, "opts", None, "'NoneType' object has no attribute 'width'")
    assert "opts is read as an object with a field 'width'" in got
    got = _why(Specs, "kw", 3, "argument after ** must be a mapping, not int")
    assert "kw is read as a dict" in got
    assert "heads is divided by" in _why(Split, "heads", 0, "integer division by zero")
    # A value of the kind the use needs: not the argument the error was of.
    assert _why(Sizes, "sizes", [1, 2], "'NoneType' object is not iterable") == ""


def test_a_refused_form_names_the_argument() -> None:
    # Nothing on the module holds the sizes (only their sum): refused, naming the argument.
    f = tx.form(Sizes([2, 3], 4))
    assert "sizes is iterated" in f.inexact
