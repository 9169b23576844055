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


def test_a_dict_handed_whole_to_blocks_of_two_classes_starts_from_both() -> None:
    # Each tower reads keys of its own: the users' sizes, the items' list of widths.
    f = tx.form(CASES["config_two_towers"].build())
    assert not f.inexact
    assert f["cfg"].value == {"n_users": 20, "user_dim": 6, "n_items": 30, "item_dim": 10,
                              "item_hidden": [12, 8], "out": 5}  # fmt: skip


def test_a_dict_handed_to_an_encoder_and_a_decoder_is_found_whole() -> None:
    f = tx.form(CASES["config_encoder_decoder"].build())
    assert not f.inexact
    assert f["hp"].value["dec_widths"] == [16, 12, 8, 6] and f["hp"].value["mels"] == 8
