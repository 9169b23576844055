"""A remainder test ``i % k`` (``_forms/sources/moduli.py``): its two sides, whose rivals the
settling tries (``_forms/candidates/ambiguous.py``): a block's place and period that another
pair rebuilds alike are flagged guesses, never shown as proven."""

from __future__ import annotations

from torch import nn

import torchxray as tx
from tests.handwritten import CASES
from tests.handwritten.dictconfigs import MemoryBlock
from torchxray._forms.sources.moduli import moduli


def test_a_remainder_test_names_its_two_sides() -> None:
    assert moduli(MemoryBlock) == (("index", "opts.memory_every"),)


def test_a_blocks_place_and_period_are_guesses_where_another_pair_builds_alike() -> None:
    f = tx.form(CASES["dict_whole_to_blocks"].build().blocks[3])  # 3 % 3 == 0, as 0 % k, 3 % 1
    assert not f.inexact
    assert f["index"].origin == "default" and f["index"].note
    assert f["opts"].origin == "default"


class _Every(nn.Module):
    """Every ``every``-th block of ``depth`` is a layer, the others identities: with 3 blocks,
    any ``every`` of 3 or more rebuilds the same (only block 0 is a layer)."""

    def __init__(self, depth, every, d=8):
        super().__init__()
        self.blocks = nn.ModuleList()
        for i in range(depth):
            self.blocks.append(nn.Linear(d, d) if i % every == 0 else nn.Identity())


def test_a_whole_number_read_only_through_a_test_is_a_guess_not_proven() -> None:
    f = tx.form(_Every(3, 5))
    assert not f.inexact, f.inexact
    by = {x.name: x for x in f.fields}
    assert by["depth"].value == 3 and "guess" not in by["depth"].note
    assert by["every"].value >= 3 and "a guess" in by["every"].note, by["every"]
