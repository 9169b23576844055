"""The products of arguments a constructor hands its layers (``_forms/sources/products.py``),
read off the AST into ``Usage.sums`` beside the linear sums: with their powers and whole-number
factor, through a local name; never inside a division or a call that computes a number."""

from __future__ import annotations

from test_forms_candidates_rule_factored import PatchCodec, PatchHead
from torch import nn

from torchxray._forms.sources.products import Product
from torchxray._forms.sources.usage import usage


class Grouped(nn.Module):
    def __init__(self, groups, per_group, cut=2, ratio=1.5):
        super().__init__()
        self.mix = nn.Linear(groups * per_group // cut, 3)  # a division: no product read
        self.up = nn.Linear(3, int(groups * ratio))  # a number computed: no product read
        self.fc = nn.Conv1d(4, 4 * groups * per_group, 1)


def test_products_are_read_off_the_ast_with_their_powers() -> None:
    got = [s for s in usage(PatchHead, "patch").sums if isinstance(s, Product)]
    assert got == [Product("proj", (("channels", 1), ("patch", 2)), 1)]
    # Through a local name assigned once.
    got = [s for s in usage(PatchCodec, "channels").sums if isinstance(s, Product)]
    assert got == [Product("head", (("channels", 1), ("patch", 2)), 1)]
    # A whole-number factor is kept; a division reads nothing.
    got = [s for s in usage(Grouped, "groups").sums if isinstance(s, Product)]
    assert got == [Product("fc", (("groups", 1), ("per_group", 1)), 4)]
