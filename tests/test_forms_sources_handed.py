"""A ``**kwargs`` handed on to a layer (stage 2, ``_forms/sources/handed.py``): the keywords of the
layer the call made, on real library classes (random init, nothing downloaded); the form of a
module built without recording is exact, and its unchanged build has the live parts."""

from __future__ import annotations

import dataclasses
import functools
import warnings

import pytest
import torch
from fixtures.forms import exact
from torch import nn

import torchxray as tx

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_dict_of_keywords_handed_on_takes_the_layers_own_keywords() -> None:
    sk = pytest.importorskip("timm.models.sknet")
    block = sk.SelectiveKernelBasic(64, 64, sk_kwargs=dict(rd_ratio=1 / 8, rd_divisor=16))
    f = exact(block)
    assert f["sk_kwargs"].value  # the reduction width, however the dict names it


def test_keywords_handed_through_a_block_factory_read_off_the_blocks_it_made() -> None:
    timm = pytest.importorskip("timm")
    stage = timm.create_model("darknet17", pretrained=False).stages[0]
    f = exact(stage)
    kw = f["block_kwargs"].value
    assert kw["norm_layer"] is not None and kw["act_layer"] is not None


class _Mixer(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: float = 4.0, bias: bool = True) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, bias=bias, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, int(dim * mlp_ratio)), nn.GELU())


class _Stack(nn.Module):
    """A hand-written stack that hands its ``**kwargs`` to blocks made in a comprehension."""

    def __init__(self, dim=32, depth=2, heads=4, **kwargs):  # noqa: ANN001, ANN003
        super().__init__()
        self.blocks = nn.ModuleList([_Mixer(dim, heads, **kwargs) for _ in range(depth)])


def test_keywords_handed_to_blocks_kept_in_a_container_read_off_those_blocks() -> None:
    f = exact(_Stack(mlp_ratio=2.0, bias=False))
    assert f["kwargs"].value == {"mlp_ratio": 2.0, "bias": False}


class _Scan(nn.Module):
    def __init__(self, d_model: int, d_state: int = 16, expand: int = 2) -> None:
        super().__init__()
        self.proj = nn.Linear(d_model, d_model * expand)
        self.A = nn.Parameter(torch.zeros(d_model * expand, d_state))


class _Residual(nn.Module):
    def __init__(self, d_model, mixer_cls):  # noqa: ANN001
        super().__init__()
        self.mixer = mixer_cls(d_model)


class _ScanLM(nn.Module):
    """A dict of keywords spread into a partial a deeper block calls with the positional ones."""

    def __init__(self, d_model=16, n_layer=2, mixer_cfg=None):  # noqa: ANN001
        super().__init__()
        mixer = functools.partial(_Scan, **(mixer_cfg or {}))
        self.layers = nn.ModuleList([_Residual(d_model, mixer) for _ in range(n_layer)])


def test_a_dict_spread_into_a_partial_is_read_off_the_layers_the_partial_made() -> None:
    f = exact(_ScanLM(mixer_cfg={"d_state": 4, "expand": 3}))
    assert f["mixer_cfg"].value == {"d_state": 4, "expand": 3}
    assert exact(_ScanLM(mixer_cfg={"expand": 2}))["mixer_cfg"].value in (None, {})


class _TwoSpreads(nn.Module):
    """One dict of keywords spread into two calls that pass other keywords themselves."""

    def __init__(self, c=8, conv_kwargs=None):  # noqa: ANN001
        super().__init__()
        first = nn.Conv2d(c, c, 3, padding=1, **(conv_kwargs or {}))
        self.b = nn.Conv2d(c, c, 1, groups=c, **(conv_kwargs or {}))  # held first
        self.a = first


def test_a_dict_spread_into_several_calls_does_not_start_from_one_layers_keywords() -> None:
    from torchxray._forms.sources import _spread_start

    m = _TwoSpreads()
    field = next(f for f in tx.form(m).fields if f.name == "conv_kwargs")
    unset = dataclasses.replace(field, value=None, origin="default")
    # The first call's layer would be taken for the one held first, b: {"groups": 8}, which
    # the second call passes itself.
    assert _spread_start(_TwoSpreads, m, unset, tx.form).value is None
    assert exact(m)["conv_kwargs"].value in (None, {})


def test_a_kwargs_kept_whole_is_that_attribute() -> None:
    # ``self.opts = opts``: the dict kept is what was passed (a copy, never the module's own).
    from tests.handwritten import CASES

    layer = CASES["kwargs_kept_whole"].build()[1]
    f = tx.form(layer)
    assert not f.inexact and f["opts"].value == {"damping": 0.25, "tol": 1e-4}
    assert f["opts"].value is not layer.opts


def test_keywords_spread_into_a_class_looked_up_in_a_table_are_read_off_the_attribute() -> None:
    # ``self.pool = POOLS[pool](width, **pool_kw)``: the call names no class; the layer it
    # made is the one kept under the attribute it is assigned to.
    from tests.handwritten import CASES

    f = exact(CASES["table_class_kwargs"].build())
    assert (f["pool"].value, f["pool_kw"].value) == ("gem", {"p": 4.0})


def test_keywords_spread_into_a_class_fetched_with_get_are_read_off_the_attribute() -> None:
    from tests.handwritten import CASES

    f = exact(CASES["table_get_class_kwargs"].build())
    assert f["encoder_options"].value == {"layers": 2, "bidirectional": True}


def test_spread_calls_name_the_attribute_each_call_is_kept_under() -> None:
    from tests.handwritten.styles6_r5b import RetrievalNet
    from torchxray._forms.sources.handed import spread_calls

    assert spread_calls(RetrievalNet, "pool_kw") == (("", 1, frozenset(), "pool"),)
