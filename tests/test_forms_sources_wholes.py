"""A dict config handed whole to a block of the user's (``_forms/sources/wholes.py``): its keys
start from that block's own form, and the stack's rebuild proves them (the period too)."""

from __future__ import annotations

import torchxray as tx
from tests.handwritten import CASES


def test_a_dict_handed_whole_to_each_block_is_found_and_proven() -> None:
    f = tx.form(CASES["dict_whole_to_blocks"].build())
    assert not f.inexact
    assert f["opts"].origin == "inferred"  # every 3rd block reads the memory: 0 and 3 of 5
    assert f["opts"].value == dict(in_dim=5, d=12, depth=5, hidden=20, memory_every=3, memory_dim=7)
