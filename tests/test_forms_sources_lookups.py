"""Arguments hidden behind a lookup or a local name (round 4 of the hand-written rules): a name
looked up with ``getattr`` on a module (``_forms/sources/looked_up.py``), a function defined inside
``__init__`` and a local name called (``local_names.py``), a sum at the head of a list of sizes
(``sums.py``) solved where the others overshoot (``rules/linear_sum.py``), a container's widths
across weightless items (``layout.per_item``), names that choose which layers are another kind
(``chosen.py``), a config member handed on whole (``members_handed.py``) and keywords handed to a
torch base's ``__init__`` (``base_init.py``). The models are the zoo's
(``tests/handwritten/lookups.py``) and small ones written here."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed
from torch import nn

import torchxray as tx
from tests.handwritten.lookups import (
    AdaptCfg,
    AdaptedAttention,
    AdaptedEncoder,
    GoalCritic,
    GoalPolicy,
    NamedActMLP,
    TaggedEmbedding,
    TwoHeads,
)
from torchxray._forms.candidates.rules import linear_sum
from torchxray._forms.rebuild.compare import differences
from torchxray._forms.rebuild.parts import parts
from torchxray._forms.sources import layout
from torchxray._forms.sources.base_init import base_kwargs
from torchxray._forms.sources.chosen import chosen
from torchxray._forms.sources.looked_up import looked_up
from torchxray._forms.sources.sums import Sum
from torchxray._forms.sources.usage import usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _exact(m: nn.Module) -> tx.Form:
    f = tx.form(m)
    assert f.inexact == ""
    assert not differences(parts(m), parts(f.build()))
    return f


def test_a_name_looked_up_on_a_module_is_read_back_off_what_it_found() -> None:
    m = NamedActMLP([12, 24, 4], act="silu", out_act="Tanh")
    assert looked_up(NamedActMLP, m, "act") == ["silu"]
    assert looked_up(NamedActMLP, m, "out_act") == ["Tanh"]  # getattr(nn, name)(): its class
    assert looked_up(NamedActMLP, m, "widths") == []
    f = _exact(m)
    assert (f["act"].value, f["out_act"].value) == ("silu", "Tanh")


class Looked(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.fn = getattr(nn.functional, act)


def test_a_name_whose_lookup_is_not_what_the_module_keeps_is_not_offered() -> None:
    m = Looked("relu")
    m.fn = lambda x: x  # replaced after construction: no name of the owner's holds it
    assert looked_up(Looked, m, "act") == []


def test_a_function_defined_in_init_is_read_as_the_constructors_own_code() -> None:
    u = usage(TwoHeads, "mean_norm")
    assert u.table == ("none", "layer", "batch")
    assert usage(TwoHeads, "scale_norm").table == u.table  # handed by keyword
    f = _exact(TwoHeads(6, hidden=20, mean_norm="batch", scale_norm="none"))
    assert (f["mean_norm"].value, f["scale_norm"].value) == ("batch", "none")


def test_an_argument_called_under_a_local_name_in_a_helper_is_a_factory() -> None:
    assert usage(GoalPolicy, "act").called  # make = act if ... else last; make()
    f = _exact(GoalPolicy(12, 4, (40, 40), nn.SiLU))
    assert f["act"].value is nn.SiLU and list(f["hidden"].value) == [40, 40]


def test_widths_read_across_weightless_items() -> None:
    net = nn.Sequential(nn.Linear(17, 8), nn.ELU(), nn.Linear(8, 8), nn.ELU())
    assert [17, 8, 8] in layout.per_item(nn.Sequential(net))
    normed = nn.Sequential(nn.Linear(17, 8), nn.LayerNorm(8), nn.Linear(8, 8))
    assert [17, 8, 8] not in layout.per_item(nn.Sequential(normed))  # a norm has weights


def test_a_sum_heading_a_list_of_sizes_is_read_and_solved_where_the_others_overshoot() -> None:
    assert usage(GoalCritic, "state_dim").sums == (
        Sum("v", (("goal_dim", 1), ("state_dim", 1)), 0),
    )
    live, built = dict(state_dim=9, goal_dim=3), dict(state_dim=40, goal_dim=40)
    got = proposed(linear_sum.propose, GoalCritic, live, built)
    assert {"state_dim": 11, "goal_dim": 1} in got and {"state_dim": 1, "goal_dim": 11} in got
    f = _exact(GoalCritic(9, 3, hidden=(24, 24)))
    assert f["state_dim"].value + f["goal_dim"].value == 12
    assert f["state_dim"].note.startswith("a guess") and f["goal_dim"].note.startswith("a guess")


def test_names_that_choose_which_layers_are_adapted_are_read_off_their_classes() -> None:
    cfg = AdaptCfg(rank=3, scale=0.5, adapt=("query", "value", "out"))
    attn = AdaptedAttention(16, 2, cfg)
    assert chosen(AdaptedAttention, attn, "cfg.adapt", ("query",)) == [("query", "value", "out")]
    assert chosen(AdaptedAttention, attn, "cfg.adapt", ["query"]) == [["query", "value", "out"]]
    assert chosen(AdaptedAttention, attn, "heads") == []
    f = _exact(attn)
    assert f["cfg"].value == cfg


def test_a_config_member_handed_on_whole_is_read_off_the_layers_form() -> None:
    cfg = AdaptCfg(rank=3, scale=0.5, adapt=("key", "out"))
    f = _exact(AdaptedEncoder(60, cfg=cfg))
    assert f["cfg"].value == cfg


def test_keywords_handed_to_a_torch_base_are_read_off_the_module() -> None:
    emb = TaggedEmbedding(30, 8, tag_scale=0.5, padding_idx=1, max_norm=2.0)
    assert base_kwargs(TaggedEmbedding, emb, "kwargs") == {"padding_idx": 1, "max_norm": 2.0}
    assert base_kwargs(TaggedEmbedding, TaggedEmbedding(30, 8), "kwargs") == {}
    assert _exact(emb)["kwargs"].value == {"padding_idx": 1, "max_norm": 2.0}


class Freezing(nn.Embedding):
    def __init__(self, n, d, **kw):
        super().__init__(n, d, **kw)
        self.weight.requires_grad = False  # what _freeze would say: never read as a keyword


def test_a_private_base_parameter_is_never_read_as_a_keyword() -> None:
    assert base_kwargs(Freezing, Freezing(10, 4, sparse=True), "kw") == {"sparse": True}


class OrEmpty(nn.Module):
    def __init__(self, d, shared=None):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(d, d) for _ in shared or [])


def test_a_sequence_defaulted_with_or_empty_is_read_as_the_sequence() -> None:
    assert usage(OrEmpty, "shared").sequence


def default(val, d):  # type: ignore[no-untyped-def]
    return val if val is not None else (d() if callable(d) else d)


class Defaulted(nn.Module):
    def __init__(self, dim, inner=None):
        super().__init__()
        self.fc = nn.Linear(dim, default(inner, dim))


def test_a_helper_that_calls_its_parameter_only_where_callable_makes_no_factory() -> None:
    assert not usage(Defaulted, "dim").called  # an int is as good (lucidrains' ``default``)
