"""The records of how a constructor uses one argument (``usage.py`` reads them): ``Usage``, and
``Handed``, a layer the argument (or one of its items) was handed to; ``fits``, whether a value
could be an argument used so."""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

import torch

from .products import Product
from .sums import Sum

__all__ = ["Handed", "Usage", "fits"]


@dataclass(frozen=True)
class Handed:
    """The argument handed to ``callee`` as its parameter ``param``; ``kept`` is the attribute
    whose layer holds the call's result (``self.conv1 = nn.Conv1d(...)``, or a container:
    ``self.net = nn.Sequential(nn.Linear(...))``), "" where none is."""

    callee: Any
    param: str
    kept: str = ""
    index: int = -1  # its place among the callee's *args (nn.Sequential(backbone, head): 0)
    offset: int = 0  # of an item: ``x[i + 1]`` is the item one after the loop's place


@dataclass(frozen=True)
class Usage:
    """How a constructor uses one argument (see the module doc). Empty: nothing is known."""

    kept: tuple[str, ...] = ()  # attributes assigned the argument itself
    number: bool = False  # range(x), math.f(x), int(x), x // k, x - k, x ** k, x < k
    sequence: bool = False  # iterated, len(x), enumerate/zip(x), x[a:b], *x, x.reverse()
    measured: bool = False  # len(x): its length is a number the module shows
    unpacked: int = 0  # names it is unpacked to (a, b = x; a, b = pair(x))
    fields: tuple[str, ...] = ()  # attributes read off it (args.n_embd)
    keys: tuple[str, ...] = ()  # string keys read off it (cfg["encoder"])
    table: tuple[Any, ...] = ()  # keys of the dict literal it is looked up in
    table_values: tuple[Any, ...] = ()  # the values at those keys (classes, where resolvable)
    called: bool = False  # x(...)
    tested: bool = False  # isinstance(x, ...): it takes more than one kind of value
    handed: tuple[Handed, ...] = field(default=())
    items_kept: tuple[str, ...] = ()  # attributes keeping each unpacked item, in order
    rebound: tuple[Any, ...] = ()  # literals it is set to in place of None (x = [False, False])
    # Its items handed to layers, one a loop's turn (``nn.Embedding(cards[i], d)`` in a loop,
    # ``for n in cards: nn.Embedding(n, d)``): ``items.py`` reads them back off those layers.
    items_handed: tuple[Handed, ...] = ()
    unpacks: bool = False  # a, b = x itself (not a helper's result): never a number
    # Linear sums and products of it and others handed to layers (``sums.py``, ``products.py``).
    sums: tuple[Sum | Product, ...] = ()
    # Kept inside what an attribute holds: (attribute, key) of a literal's entry (``self.fns =
    # {"hidden": act}``, ``self.acts = (act, out)``: the index), (attribute, ("cell", name)) of
    # a lambda that closes over it (``self.act = lambda x: act(x)``).
    within: tuple[tuple[str, Any], ...] = ()
    # The test of an ``if`` or a conditional expression, or under ``not``/``and``/``or``, here or
    # in a helper it is handed to: a flag that may choose which layers are made.
    condition: bool = False
    mapping: bool = False  # x.items(), x.keys(), x.values(), **x: a dict of keywords or entries
    # x * w, w * x with w no constant: a factor of a width (``int(round(w_in * se_ratio))``), so
    # a fraction where a pool offered 1 (``rules/whole_factor.py``).
    scales: bool = False
    # x[0], x[-1]: an item read by a constant index, so a sequence, never a number: a namespace's
    # field is offered sequences (``nested.py``). Not ``sequence``: a pair more often than a list
    # of sizes (the pools' sequence readings are not asked), and an argument's int is still
    # tried, whose failed build ("'int' object is not subscriptable") offers the grids the layers
    # keep (``candidates/failed.py``: DonutSwin's grid_size).
    indexed: bool = False
    # x.upper(), x.startswith("a"): a method only a string has, so a string (never rebound
    # first). A same-named attribute that holds what the string named (``self.rnn = getattr(nn,
    # rnn.upper())``) is then no value it takes (``looked_up.py`` reads the name back).
    text: bool = False
    # range(x - k): a loop's count; ``k`` each (``pools.py`` offers the containers' lengths + k).
    counts: tuple[int, ...] = ()

    @property
    def known(self) -> bool:
        # A truth test, a mapping's use or a product alone says nothing of the kind of value the pools
        # offer (``class_flag.py`` and ``unfilled.py`` read them directly). Field by field, not
        # a ``replace`` compared: ``fits`` asks it of every candidate value (tens of thousands).
        return any(getattr(self, n) != d for n, d in _DEFAULTS)


_DEFAULTS = tuple(
    (f.name, f.default if f.default is not MISSING else f.default_factory())  # type: ignore[misc,operator]
    for f in fields(Usage)
    if f.name not in ("condition", "mapping", "scales")
)


def _sequence(v: Any) -> bool:
    return isinstance(v, (tuple, list, str, torch.Size, range))


def fits(u: Usage, value: Any, annotated: bool = False) -> bool:
    """Whether ``value`` could be the argument a constructor uses as ``u`` says; None always
    could (a constructor often tests it first). Nothing is judged of an argument the
    constructor tests with ``isinstance`` (it takes several kinds), and the kind of value (a
    number, a sequence) only where nothing annotates it (an annotation says it better)."""
    if value is None or not u.known or u.tested:
        return True  # a tested one may be converted first (``CLIPTextCfg(**text_cfg)``)
    if annotated and (u.number or u.sequence or u.unpacked):
        u = dataclasses.replace(u, number=False, sequence=False, unpacked=0)
    if u.number and not u.sequence and not u.unpacked:
        if _sequence(value) or isinstance(value, (type, dict)):
            return False
    if u.sequence and not u.number:
        if isinstance(value, (bool, int, float, type)):
            return False
    if u.indexed and isinstance(value, type) and not hasattr(value, "__class_getitem__"):
        return False  # sizes[0]: a class is indexed only as a generic (list[int])
    if u.text and not isinstance(value, str):
        return False
    if u.unpacks and isinstance(value, (bool, int, float)):
        return False  # c, h, w = obs_shape: a number cannot be unpacked
    if u.unpacked and _sequence(value) and not isinstance(value, str):
        if len(value) != u.unpacked:
            return False
    if u.fields and isinstance(value, (bool, int, float, str, tuple, list, dict, type)):
        # A plain value has none of the fields read off it (a field read in one branch only
        # may be missing from the object given: ``config.pooling`` in a raise).
        if not all(_has(value, a) for a in u.fields):
            return False
    if u.keys and not (hasattr(value, "keys") and hasattr(value, "__getitem__")):
        return False
    if u.table and not isinstance(value, (str, int, bool)) and value not in u.table:
        return False
    return not (u.called and not callable(value))


def _has(value: Any, name: str) -> bool:
    try:
        return hasattr(value, name)
    except Exception:  # noqa: BLE001 - a property that raises
        return False
