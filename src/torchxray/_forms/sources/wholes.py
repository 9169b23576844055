"""A dict config handed whole to a layer of the user's (``QFormerLayer(cfg, i)`` in a loop): the
search starts its keys from the dict that layer's own exact form holds.

A constructor that reads a few keys itself and hands the whole dict on to its blocks keeps none
of it; the blocks keep what they read. Searched key by key from nothing (``nested.py``), the
keys are many and the blocks show each only together with the others (a block's width, its
heads and its hidden size all in one attention layer), so the search spends its budget before
it meets them. A block's own form reads them in a search of its own, smaller; its values start
the parent's search as guesses still (a key one block does not read, or reads only in a test,
``layer_idx % cfg["freq"] == 0``, is a guess there): the parent's rebuild proves them or moves
them. Keys only the parent reads keep their own start.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from torch import nn

from ..field import Child, Field, guessed
from ..values import to_text
from .nested import Group

__all__ = ["started"]

MAX_LAYERS = 4  # layers whose forms are opened, first first: one exact form is enough


def _layers(module: nn.Module, cls: type) -> Iterator[nn.Module]:
    n = 0
    for m in module.modules():
        if type(m) is cls and m is not module:
            yield m
            n += 1
            if n >= MAX_LAYERS:
                return


def _held(module: nn.Module, g: Group, child: Child) -> dict[str, Any]:
    """The dict the first layer whose form is exact holds, of each class it is handed to, the
    keys of all together: blocks of several classes each read a few keys of one config
    (``self.gmf = GMF(cfg)`` reads the sizes, ``self.mlp = Tower(cfg)`` the list of widths);
    where two read a key, the first class's value is kept."""
    out: dict[str, Any] = {}
    for cls, param in g.handed:
        for layer in _layers(module, cls):
            try:
                f = child(layer)
            except Exception:  # noqa: BLE001 - a layer without a readable form tells nothing
                continue
            if f.inexact:
                continue
            value = next((x.value for x in f.fields if x.name == param), None)
            if isinstance(value, SimpleNamespace):
                value = vars(value)
            if isinstance(value, dict) and value:
                out = {**value, **out}
                break
    return out


def started(
    module: nn.Module, groups: list[Group], fields: list[Field], child: Child
) -> list[Field]:
    """``fields`` with each guessed key of a dict handed whole to a layer of the user's started
    from what that layer's form holds (see the module doc)."""
    starts: dict[str, Any] = {}
    for g in groups:
        if g.cls is not dict or not g.handed:
            continue
        held = _held(module, g, child)
        starts.update({s: held[k] for s in g.subs if (k := s.rpartition(".")[2]) in held})
    return [
        dataclasses.replace(f, value=starts[f.name], text=to_text(f.kind, starts[f.name]))
        if f.name in starts and guessed(f)
        else f
        for f in fields
    ]
