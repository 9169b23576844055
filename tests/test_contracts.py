# ruff: noqa: F722  (jaxtyping shape strings are not forward references)
"""Annotation contracts: a forward's annotations checked against what the probe saw."""

from __future__ import annotations

import pytest
import torch
from fixtures.real import ENTRIES, build
from torch import nn

from torchxray.probe import run_probe

jaxtyping = pytest.importorskip("jaxtyping")
Float = jaxtyping.Float
Tensor = torch.Tensor


class Pool(nn.Module):
    def forward(self, x: Float[Tensor, "b c h w"]) -> Float[Tensor, "b c"]:
        return x.mean(dim=(2, 3))


class WrongPool(nn.Module):
    """Says it keeps the batch and channels, but forgot to pool the width."""

    def forward(self, x: Float[Tensor, "b c h w"]) -> Float[Tensor, "b c"]:
        return x.mean(dim=2)


class Swapped(nn.Module):
    def forward(self, x: Float[Tensor, "b n"]) -> Float[Tensor, "b n"]:
        return x.t()


class Plain(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> tuple:
        return x if mask is None else (x, mask)  # a tensor when there is no mask: not a tuple


def test_correct_shape_annotations_give_no_messages() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 1), Pool())
    rep = run_probe(model, (torch.randn(2, 3, 5, 5),), {})
    assert rep["1"].contract == ()
    assert rep["0"].contract == ()  # torch's own forwards: no annotation this checks


def test_a_wrong_output_annotation_is_flagged() -> None:
    rep = run_probe(nn.Sequential(nn.Conv2d(3, 4, 1), WrongPool()), (torch.randn(2, 3, 5, 6),), {})
    (message,) = rep["1"].contract
    assert message == "return value: forward says 'b c' but got 3 dims (2, 4, 6)"


def test_dimension_names_are_bound_across_inputs_and_output() -> None:
    rep = run_probe(Swapped(), (torch.randn(2, 3),), {})
    assert rep[""].contract == (
        "return value: 'b' is 2 elsewhere in this call but 3 here",
        "return value: 'n' is 3 elsewhere in this call but 2 here",
    )


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_plain_types_and_optional(mode: str) -> None:
    ok = run_probe(Plain(), (torch.randn(2),), {"mask": torch.ones(2)}, mode=mode)
    assert ok[""].contract == ()
    bad = run_probe(Plain(), (torch.randn(2),), {}, mode=mode)
    assert bad[""].contract == ("return value: forward says tuple, got Tensor[2]",)


def test_a_contract_in_a_replayed_block_is_reported_as_a_full_probe_reports_it() -> None:
    model = nn.Sequential(*(nn.Sequential(nn.Conv2d(3, 3, 1), WrongPool()) for _ in range(1)))
    blocks = nn.ModuleList(nn.Sequential(nn.Identity(), WrongPool()) for _ in range(3))

    class Many(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = blocks

        def forward(self, x: torch.Tensor) -> list:
            return [b(x) for b in self.blocks]

    x = torch.randn(1, 3, 4, 5)
    fast, full = run_probe(Many(), (x,), {}), run_probe(Many(), (x,), {}, memoise=False)
    assert fast.memoised
    for i in range(3):
        assert fast[f"blocks.{i}.1"].contract == full[f"blocks.{i}.1"].contract != ()
    assert run_probe(model, (x,), {})["0.1"].contract


# Real mistakes in the zoo's own annotations, not false positives: transformers' GPT2Block
# annotates ``hidden_states: Optional[tuple[torch.FloatTensor]]`` and is given a tensor.
KNOWN = {
    (
        "hf-gpt2",
        "argument 'hidden_states': Tensor[2, 8, 64] fits none of tuple[torch.Tensor] | None",
    )
}


def test_no_false_positives_on_the_zoo() -> None:
    found = set()
    for name in ENTRIES:
        model, args, kwargs = build(name)
        rep = run_probe(model, args, kwargs)
        found |= {(name, m) for p in rep for m in rep[p].contract}
    assert found == KNOWN


def test_the_view_shows_a_violation_as_a_warning_not_a_failure() -> None:
    from torchxray._view.session import Session

    model = nn.Sequential(nn.Conv2d(3, 4, 1), WrongPool(), nn.Flatten())
    s = Session(model, (torch.randn(2, 3, 5, 6),))
    s.run_probe()
    assert s.report is not None and s.report.ok  # the probe went through: nothing failed
    rows = {r["path"]: r for r in s.tree_state()["pages"][""]["items"] if "path" in r}
    assert "contract" in rows["1"]["marks"] and "error" not in rows["1"].get("marks", [])
    assert "contract" not in rows["0"].get("marks", []) and "contract" not in rows["2"].get(
        "marks", []
    )
    s.select("1")
    probe = s.overview()["probe"]
    assert probe is not None
    assert probe["contract"] == ["return value: forward says 'b c' but got 3 dims (2, 4, 6)"]


def _forwards() -> list[object]:
    t = torch.Tensor

    def one(self, x: t) -> t: ...
    def two(self, x: t, mask: t | None = None) -> t: ...
    def only(self, x: t, /, y: t) -> t: ...
    def star(self, x: t, *rest: t) -> t: ...
    def keyword(self, x: t, *, scale: float = 1.0) -> t: ...
    def needs_keyword(self, x: t, *, scale: float) -> t: ...
    def kw(self, x: t, **extra: object) -> t: ...

    return [one, two, only, star, keyword, needs_keyword, kw]


@pytest.mark.parametrize("forward", _forwards(), ids=lambda f: f.__name__)
def test_the_quick_binding_of_positional_calls_is_what_signature_bind_gives(forward) -> None:
    """`Contract` binds a positional call without `Signature.bind` where it can (a probe calls it
    at every module call); for every count of arguments it gives what bind gives, or refuses
    the same calls."""
    import inspect

    from torchxray._probe.contracts import Contract

    contract = Contract(forward, {}, None)
    sig = inspect.signature(forward)
    for n in range(5):
        args = tuple(torch.zeros(1) for _ in range(n))
        for kwargs in ({}, {"mask": None}, {"scale": 2.0}):
            try:
                want = dict(sig.bind("module", *args, **kwargs).arguments)
            except TypeError:
                want = None
            assert contract._bound("module", args, kwargs) == want, (n, kwargs)
