"""The widths a constructor hands its layers through floor divisions (stage 2,
``_forms/sources/floored.py``): read off the AST, local names read through, evaluated by
walking the expression; what is no such expression is not read."""

from __future__ import annotations

from torch import nn

from torchxray._forms.sources.code import code_of
from torchxray._forms.sources.floored import Floored, floored


def _read(cls: type) -> tuple[Floored, ...]:
    init = cls.__init__  # type: ignore[misc]
    code = code_of(init)
    assert code is not None
    params = frozenset(init.__code__.co_varnames[1 : init.__code__.co_argcount])
    return floored(params, code)


class _Subsampled(nn.Module):
    def __init__(self, n_mels=80, d=16):
        super().__init__()
        sub = d * (((n_mels - 1) // 2 - 1) // 2)  # two convs of kernel 3, stride 2
        self.proj = nn.Sequential(nn.Linear(sub, d), nn.Dropout(0.1))


def test_an_expression_through_floor_divisions_is_read_through_its_local_name() -> None:
    (f,) = _read(_Subsampled)
    assert (f.kept, f.names) == ("proj", ("d", "n_mels"))
    assert f.value({"n_mels": 40, "d": 48}) == 432
    assert f.value({"n_mels": 80, "d": 48}) == 912
    assert f.value({"n_mels": None, "d": 48}) is None


class _Plain(nn.Module):
    def __init__(self, a=4, b=2, r=0.5):
        super().__init__()
        self.sum = nn.Linear(a + b, a)  # no floor division: sums.py reads it
        self.ratio = nn.Linear(int(a * r), a)  # a call: nothing is read
        self.true = nn.Linear(a, int(a / b))


def test_sums_calls_and_true_divisions_are_not_read() -> None:
    assert _read(_Plain) == ()


def test_a_zero_divisor_reads_as_no_value() -> None:
    assert Floored("x", ("a", "b"), "a // b").value({"a": 4, "b": 0}) is None
