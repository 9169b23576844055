"""A list read in consecutive pairs by zipping slices of it (``_forms/sources/pairs.py``): each
slice's loop variable is an item at the slice's start, read back off the layers (``items.py``)."""

from __future__ import annotations

import ast

from torch import nn

import torchxray as tx
from torchxray._forms.sources.pairs import zipped
from torchxray._forms.sources.usage import Handed, usage


class Trunk(nn.Sequential):
    def __init__(self, sizes, act=nn.ReLU, dropout=0.0):
        layers = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), act()]
            if dropout:
                layers.append(nn.Dropout(dropout))
        super().__init__(*layers)


class Convs(nn.Module):
    def __init__(self, chs):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(i, o, 3) for i, o in zip(chs, chs[1:])])


class Mirror(nn.Module):
    def __init__(self, widths):
        super().__init__()
        self.enc = nn.ModuleList()
        for a, b in zip(widths[:-1], widths[1:]):
            self.enc.append(nn.Linear(a, b))
        self.dec = nn.ModuleList()
        for a, b in zip(widths[1:], widths[:-1]):  # the same names, the other way round
            self.dec.insert(0, nn.Linear(a, b))


def _slice(code: str) -> tuple[ast.Subscript, dict[ast.AST, ast.AST]]:
    tree = ast.parse(code)
    up = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    sub = next(n for n in ast.walk(tree) if isinstance(n, ast.Subscript))
    return sub, up


def test_a_zipped_slices_start_is_its_items_offset() -> None:
    for code, offset in [
        ("for a, b in zip(s[1:], t): pass", 1),
        ("for a, b in zip(s[:-1], t): pass", 0),
        ("[f(a) for a, b in zip(s[2:], t)]", 2),
    ]:
        sub, up = _slice(code)
        got = zipped(sub, up)
        assert got is not None and got[1] == offset and isinstance(got[0], ast.Name)
    for code in [
        "for a, b in zip(s[::2], t): pass",  # a step
        "for a, b in zip(s[-2:], t): pass",  # from the end
        "for a, b in zip(s[k:], t): pass",  # no number
        "x = zip(s[1:], t)",  # no loop
        "for a in zip(s[1:], t): pass",  # not unpacked
    ]:
        assert zipped(*_slice(code)) is None, code


def test_the_loop_variables_are_items_at_their_slices_start() -> None:
    lin = nn.Linear
    assert usage(Trunk, "sizes").items_handed == (
        Handed(lin, "in_features", "", -1, 0),
        Handed(lin, "out_features", "", -1, 1),
    )
    assert usage(Convs, "chs").items_handed == (
        Handed(nn.Conv1d, "in_channels", "convs", -1, 0),
        Handed(nn.Conv1d, "out_channels", "convs", -1, 1),
    )
    # Two loops naming their variables alike: each reads its own.
    assert usage(Mirror, "widths").items_handed == (
        Handed(lin, "in_features", "enc", -1, 0),
        Handed(lin, "out_features", "enc", -1, 1),
        Handed(lin, "in_features", "dec", -1, 1),
        Handed(lin, "out_features", "dec", -1, 0),
    )


def test_n_layers_read_back_as_n_plus_one_sizes() -> None:
    for sizes, dropout in [([7, 16, 8, 3], 0.1), ([5, 2], 0.0)]:
        f = tx.form(Trunk(sizes, dropout=dropout))
        assert not f.inexact, f.inexact
        assert f.values["sizes"] == sizes and f.values["dropout"] == dropout
    f = tx.form(Convs([2, 6, 6, 4]))
    assert not f.inexact and f.values["chs"] == [2, 6, 6, 4]
    # The decoder reads the list back to front; the encoder's layers read it alone.
    f = tx.form(Mirror([9, 6, 4, 2]))
    assert not f.inexact and f.values["widths"] == [9, 6, 4, 2]
