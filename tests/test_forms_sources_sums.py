"""The linear sums of arguments a constructor hands its layers (``_forms/sources/sums.py``), read
off the AST into ``Usage.sums``: through a local name, inside a container, with coefficients;
never a product of two arguments, a division or a call."""

from __future__ import annotations

from test_forms_candidates_rule_linear_sum import Attention, Decoder, Product
from torch import nn

from torchxray._forms.sources.sums import Sum
from torchxray._forms.sources.usage import usage


class Scaled(nn.Module):
    def __init__(self, d, k):
        super().__init__()
        self.fc = nn.Linear(d // 2, -d + 3 * k - 1)  # a division is none; the other is
        self.same = nn.Linear(d, d)  # the argument itself is no sum
        self.cut = nn.Linear(int(d * 1.5), d)  # a call is none


def test_the_sums_are_read_off_the_ast_with_their_coefficients() -> None:
    assert usage(Attention, "enc_hid").sums == (Sum("attn", (("dec_hid", 1), ("enc_hid", 2)), 0),)
    got = usage(Decoder, "emb").sums  # through the local name, and inside a Sequential
    assert Sum("rnn", (("emb", 1), ("enc_hid", 2)), 0) in got
    assert Sum("fc_out", (("dec_hid", 1), ("emb", 1), ("enc_hid", 2)), 0) in got
    # A product of two arguments is no sum: it is read as a product (``products.py``).
    assert not [s for s in usage(Product, "a").sums if isinstance(s, Sum)]
    assert usage(Attention, "dec_hid").sums[0].value({"enc_hid": 3, "dec_hid": 4}) == 10


def test_a_sum_keeps_its_signs_and_constant_and_skips_what_is_not_linear() -> None:
    def linear(name: str) -> list[object]:  # ``d // 2`` is read by ``floored.py``, not here
        return [s for s in usage(Scaled, name).sums if isinstance(s, Sum)]

    assert linear("k") == [Sum("fc", (("d", -1), ("k", 3)), -1)]
    assert linear("d") == linear("k")


def test_a_sum_heading_a_list_of_sizes_handed_to_a_helper_is_read() -> None:
    from tests.handwritten.lookups import GoalCritic  # mlp([s + g] + list(hidden) + [1], act)

    assert usage(GoalCritic, "state_dim").sums == (
        Sum("v", (("goal_dim", 1), ("state_dim", 1)), 0),
    )
