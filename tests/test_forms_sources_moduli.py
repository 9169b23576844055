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


class _Wide(nn.Module):
    """Wide-ResNet's stages (blind7's JEM): ``depth`` must be 6n+4, and n blocks a stage are made
    as ``[stride] + [1] * (n - 1)``: depth 4 (n=0) and 10 (n=1) each make one block."""

    def __init__(self, depth, d=4):
        super().__init__()
        assert (depth - 4) % 6 == 0, "depth should be 6n+4"
        n = (depth - 4) // 6
        self.stages = nn.ModuleList(
            nn.Sequential(*[nn.Conv2d(d, d, 3, s, 1) for s in [2] + [1] * (n - 1)])
            for _ in range(3)
        )


class _Deep(_Wide):
    """The same test where the layers tell the values apart (n blocks a stage)."""

    def __init__(self, depth, d=4):
        nn.Module.__init__(self)
        assert (depth - 4) % 6 == 0
        n = (depth - 4) // 6
        self.stages = nn.ModuleList(
            nn.Sequential(*[nn.Linear(d, d) for _ in range(n)]) for _ in range(3)
        )


def test_a_literal_period_names_its_number() -> None:
    assert moduli(_Wide) == (("depth", 6),)


def test_the_values_next_to_a_literal_period_flag_a_number_they_rebuild_alike() -> None:
    f = tx.form(_Wide(10))
    assert not f.inexact, f.inexact
    depth = f["depth"]
    assert depth.value == 10 and "a guess: 4 rebuilds it just as exactly" in depth.note


def test_a_depth_made_a_count_of_blocks_is_read_back_from_the_stacks() -> None:
    # ``(depth - 4) // 6`` blocks a stage (``_forms/sources/inverted.py``, ``counted_back``)
    for model, depth in ((_Wide(16), 16), (_Deep(16), 16), (_Deep(22), 22)):
        f = tx.form(model)
        assert not f.inexact, f.inexact
        assert f["depth"].value == depth and not f["depth"].note, f["depth"]
