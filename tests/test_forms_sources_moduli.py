"""A remainder test ``i % k`` (``_forms/sources/moduli.py``): its two sides, whose rivals the
settling tries (``_forms/candidates/ambiguous.py``): a block's place and period that another
pair rebuilds alike are flagged guesses, never shown as proven."""

from __future__ import annotations

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
