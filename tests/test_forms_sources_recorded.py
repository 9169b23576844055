"""The source ``recorded`` (``_forms/sources/recorded.py``): a module built while recording has
its constructor's arguments on record, every value is known as it was passed (the default where
none was), and the form needs no search."""

from __future__ import annotations

import inspect

from torch import nn

import torchxray as tx
from torchxray._forms.signature import signature
from torchxray._forms.sources import recorded


class Block(nn.Module):
    def __init__(self, dim: int, heads: int = 4, *extra: int, **options: str) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)


def test_a_recorded_call_gives_every_value_as_passed() -> None:
    with tx.record_init_args():
        m = Block(16, 2, 7, mode="fast")
    bound = recorded.read(m, signature(Block))
    assert bound is not None
    values = {p.name: recorded.draft(bound, p) for p in signature(Block).parameters.values()}
    assert values == {
        "dim": (16, "recorded"),
        "heads": (2, "recorded"),
        "extra": ((7,), "recorded"),
        "options": ({"mode": "fast"}, "recorded"),
    }


def test_a_default_not_passed_is_the_default_and_no_record_reads_nothing() -> None:
    with tx.record_init_args():
        m = Block(16)
    sig = signature(Block)
    bound = recorded.read(m, sig)
    assert bound is not None
    assert recorded.draft(bound, sig.parameters["heads"]) == (4, "recorded")
    assert recorded.draft(bound, sig.parameters["extra"]) == ((), "recorded")
    assert recorded.read(Block(16), sig) is None


def test_a_record_that_no_longer_fits_the_signature_reads_nothing() -> None:
    with tx.record_init_args():
        m = Block(16)
    other = inspect.Signature([inspect.Parameter("width", inspect.Parameter.KEYWORD_ONLY)])
    assert recorded.read(m, other) is None


def test_a_dict_whose_fields_are_its_items_is_copied_with_them() -> None:
    # ``self.__dict__ = self`` (an "AttrDict"): a deep copy sets its state before its items and
    # loses its fields; the search's copies of an argument keep them.
    import copy

    from tests.handwritten import CASES
    from tests.handwritten.dictconfigs import FieldDict
    from torchxray._forms.record import snapshot

    hp = FieldDict(n_mels=6, rates=[2, 2])
    (got,), _ = snapshot((hp,), {})
    assert got is not hp and got.n_mels == 6 and got.rates == [2, 2] and got.rates is not hp.rates
    got["n_mels"] = 7
    assert got.n_mels == 7 and hp.n_mels == 6  # its fields are its own items, as the original's
    assert not hasattr(copy.deepcopy(hp), "n_mels")
    f = tx.form(CASES["attrdict_kept"].build())
    assert not f.inexact
