"""A subclass of the user's own class that hands its arguments up (``super().__init__(depth,
width, norm=norm)``, ``Base.__init__(self, ...)``): the base's constructor runs on the same
``self``, so what it does with each parameter is what the subclass does with the argument
(``_forms/sources/helpers.py``, ``base_method``). And a field at its default that the constructor
handed to a layer it keeps starts the search at what that layer's form found
(``_forms/sources/passed.py``, ``handed_starts``; ``candidates/held.py``): paper code's
energy-model wrappers (``CCF(F)`` around a Wide-ResNet) were refused, their default depth building
another model until the budget ran out."""

from __future__ import annotations

import torch
from fixtures.forms import exact as _exact
from torch import nn
from torch.nn.utils import parametrizations
from torch.utils._python_dispatch import TorchDispatchMode

import torchxray as tx
from torchxray._forms import sources
from torchxray._forms.rebuild.meta import meta_build
from torchxray._forms.signature import constructor
from torchxray._forms.sources.passed import handed_starts
from torchxray._forms.sources.usage import Handed, usage


def norm_of(width, kind):
    if kind is None:
        return nn.BatchNorm2d(width)
    if kind == "group":
        return nn.GroupNorm(2, width)
    return nn.Identity()


class Unit(nn.Module):
    def __init__(self, c_in, c_out, norm=None):
        super().__init__()
        self.norm = norm_of(c_in, norm)
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1)

    def forward(self, x):
        return self.conv(torch.relu(self.norm(x)))


class Tower(nn.Module):
    """A depth that must be 6n+4, n units per stage: its default 28 is a model three times
    larger than the one of depth 10."""

    def __init__(self, depth, widen, norm=None, base=4):
        super().__init__()
        assert (depth - 4) % 6 == 0
        n = (depth - 4) // 6
        self.norm = norm
        widths = [base, base * widen, 2 * base * widen]
        self.stem = nn.Conv2d(3, base, 3, padding=1)
        self.stages = nn.Sequential(
            *[
                nn.Sequential(*[Unit(widths[i] if j == 0 else widths[i + 1], widths[i + 1], norm)
                                for j in range(max(n, 1))])
                for i in range(2)
            ]
        )  # fmt: skip
        self.last = widths[-1]

    def forward(self, x):
        return self.stages(self.stem(x)).mean((2, 3))


class Energy(nn.Module):
    def __init__(self, depth=28, width=2, norm=None, n_classes=10, spectral=False):
        super().__init__()
        self.f = Tower(depth, width, norm=norm)
        self.head = nn.Linear(self.f.last, n_classes)
        if spectral:
            for m in list(self.f.modules()):
                if isinstance(m, nn.Conv2d):
                    parametrizations.spectral_norm(m)

    def forward(self, x):
        return self.head(self.f(x))


class Conditional(Energy):
    def __init__(self, depth=28, width=2, norm=None, n_classes=10, spectral=False, steps=5):
        super().__init__(depth, width, norm=norm, n_classes=n_classes, spectral=spectral)
        self.steps = steps


class Named(Energy):
    def __init__(self, d=28, normalization=None, classes=10):
        super(Named, self).__init__(d, 2, norm=normalization, n_classes=classes)  # noqa: UP008 - the old spelling, as paper code writes it


class Explicit(Energy):
    def __init__(self, d, normalization=None, classes=10):
        Energy.__init__(self, d, 2, norm=normalization, n_classes=classes)


class OwnLinear(nn.Linear):
    def __init__(self, a, b):
        super().__init__(a, b, bias=False)


class Aliased(Energy):
    __init__ = Energy.__init__  # its super() is Energy's: nn.Module's, not followed


_TWO_FILES = {
    "tx_lib_twin": """
from torch import nn

class Root(nn.Module):
    def __init__(self, units, scale=1):
        super().__init__()
        self.proj = nn.Linear(units, 8)

class Net(Root):
    def __init__(self, hidden=16, classes=10):
        super(Net, self).__init__(classes)
        self.fc = nn.Linear(hidden, classes)
""",
    "tx_user_twin": """
import tx_lib_twin

class Net(tx_lib_twin.Net):
    def __init__(self, hidden=16, classes=10):
        super(Net, self).__init__(hidden, classes)
""",
}


def test_an_argument_handed_up_is_used_as_the_base_uses_it() -> None:
    tower = Handed(Tower, "norm", "f")
    assert tower in usage(Conditional, "norm").handed
    assert Handed(Tower, "depth", "f") in usage(Conditional, "depth").handed
    assert Handed(nn.Linear, "out_features", "head") in usage(Conditional, "n_classes").handed
    assert usage(Conditional, "spectral").condition
    # super(C, self) and Base.__init__(self, ...) name the same base
    assert tower in usage(Named, "normalization").handed
    assert tower in usage(Explicit, "normalization").handed
    assert Handed(Tower, "depth", "f") in usage(Explicit, "d").handed
    # its own argument, not handed up, is read as before (kept)
    assert usage(Conditional, "steps").kept == ("steps",)
    # an __init__ taken from the base is the base's own reading
    assert Handed(Tower, "depth", "f") in usage(Aliased, "depth").handed


def test_super_starts_after_the_class_python_would(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    # two classes named Net in two files: each super(Net, self) is its own file's Net
    for name, text in _TWO_FILES.items():
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    import tx_user_twin  # noqa: PLC0415

    got = usage(tx_user_twin.Net, "classes").handed
    assert Handed(nn.Linear, "out_features", "fc") in got
    assert Handed(nn.Linear, "in_features", "proj") in got  # the lib Net's super: Root's
    assert Handed(nn.Linear, "in_features", "fc") not in got


def test_a_torch_base_is_not_followed() -> None:
    # torch's own constructors keep what they were given (their attributes say it): followed,
    # nn.Linear's would read ``a`` as kept under ``in_features``
    u = usage(OwnLinear, "a")
    assert u.handed == () and u.kept == ()


def test_a_subclass_handing_everything_up_gets_an_exact_form() -> None:
    torch.manual_seed(0)
    f = _exact(Conditional(depth=10, width=2, norm="group", n_classes=3, steps=7))
    assert (f["norm"].value, f["n_classes"].value, f["steps"].value) == ("group", 3, 7)
    # depth 4 and 10 make the same blocks: the one shown is flagged, its rival named
    assert f["depth"].value in (4, 10) and f["depth"].note.startswith("a guess")
    assert set(f["depth"].rivals) | {f["depth"].value} == {4, 10}
    f = _exact(Named(10, "group", 4))
    assert (f["normalization"].value, f["classes"].value) == ("group", 4)
    f = _exact(Explicit(16, None, 5))  # 16: two units a stage, no other depth makes them
    assert (f["d"].value, f["normalization"].value, f["classes"].value) == (16, None, 5)
    assert not f["d"].note


def test_a_default_handed_to_a_kept_layer_starts_at_that_layers_value() -> None:
    torch.manual_seed(0)
    m = Energy(depth=16, width=2, norm="group")
    d = sources.draft(constructor(m))
    uses = {f.name: usage(Energy, f.name) for f in d.fields}
    # norm's default is None, which may stand for another argument: it stays
    assert handed_starts(m, d.fields, uses, tx.form) == {"depth": 16}
    # spectral_norm's power iteration makes every build slow: a search from depth 28 spent
    # the budget before it tried 16
    f = _exact(Energy(depth=16, width=2, norm="group", spectral=True))
    assert (f["depth"].value, f["norm"].value, f["spectral"].value) == (16, "group", True)
    f = _exact(Conditional(depth=16, width=2, norm="group", spectral=True, steps=3))
    assert (f["depth"].value, f["norm"].value) == (16, "group")


class _Ops(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def test_values_written_into_an_out_tensor_are_skipped_on_meta() -> None:
    with meta_build():
        held, ones = torch.empty(4), torch.ones(4)
        with _Ops() as seen:
            got = torch.mul(ones, 2.0, out=held)
        assert got is held and held.is_meta and held.shape == (4,)
        assert not any("mul" in op for op in seen.ops)  # nothing ran
        # an out the op may size (empty, or shaped unlike its inputs) runs, as it would for real
        for out in (torch.empty(0), torch.empty(4)):
            with _Ops() as seen:
                sized = torch.mul(torch.ones(3), 2.0, out=out)
            assert sized.shape == (3,) and any("mul" in op for op in seen.ops)
        with _Ops() as seen:  # a cast into another dtype runs (and may raise)
            torch.add(torch.ones(4), 1, out=torch.empty(4, dtype=torch.float64))
        assert any("add" in op for op in seen.ops)
