"""What a module's layers keep as shapes, part of the children's structure (``children.py``):
its descendants level by level, per-stage widths and depths, per-item widths of a container, the
int tuples its layers keep, per-block drop rates. ``read`` takes the ones a failed build's
message may ask for (``_forms/candidates/failed.py``) once, as a plain ``Layout``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

__all__ = [
    "Layout",
    "child_widths",
    "descendants",
    "drop_rates",
    "lengths",
    "per_item",
    "per_layer",
    "per_stage",
    "read",
    "resized",
    "runs",
    "stages",
    "tuples",
    "width",
]


def descendants(module: nn.Module, depth: int = 3) -> Iterator[nn.Module]:
    """Children first, breadth first, ``depth`` levels down."""
    level = [module]
    for _ in range(depth):
        level = [c for m in level for c in m.children()]
        yield from level


def _items(c: nn.Module) -> list[nn.Module]:
    """A container's layers: a slot may hold None (``nn.ModuleList([conv if down else None ...])``,
    which ``add_module`` accepts), and holds no layer then."""
    return [m for m in c._modules.values() if m is not None]


def width(value: Any) -> Any:
    if isinstance(value, (tuple, list, torch.Size)) and len(value) >= 1:
        return value[0]
    return value


def tuples(module: nn.Module) -> list[tuple[int, ...]]:
    """Tuples of ints the module and its layers keep under any name (a grid or a resolution a
    stage keeps as ``input_resolution``), nearest first, for a field that takes an int or a tuple."""
    out: dict[tuple[int, ...], None] = {}
    for m in [module, *descendants(module, 5)]:
        for v in m.__dict__.values():
            if type(v) is tuple and 1 < len(v) <= 4 and all(type(x) is int for x in v):
                out[v] = None
        if len(out) >= 4:
            break
    return list(out)[:4]


def per_item(module: nn.Module, across: bool = False) -> list[list[int]]:
    """For each container of two or more layers: the input width of each item, and its output
    width (a head made per feature map from ``in_channels=[672, 480, ...]``), and where they
    chain, the widths in order; with ``across``, chains read across weightless items too, last
    (for an argument nothing annotates that ``__init__`` iterates: ``mlp([obs] + hidden)``)."""
    out: list[list[int]] = []
    # Chains read across weightless items only when asked, after every other reading: such a
    # chain is in many blocks that no list made (a transformer's MLP: Linear, GELU, Dropout,
    # Linear), and offered to an annotated list it stood before the list the field was given
    # (torchvision's Swin block's ``window_size: List[int]`` was offered [96, 384, 96] first).
    late: list[list[int]] = []
    for c in [module, *descendants(module, 2)]:
        if not isinstance(c, (nn.Sequential, nn.ModuleList)) or len(c) < 2:
            continue
        ends: list[list[int]] = [[], []]
        wide = 0  # items with widths: an activation between two Linears has none
        for item in _items(c):
            found = [(a, v) for m in item.modules() for a, v in vars(m).items() if type(v) is int]
            ins = [v for a, v in found if a in ("in_channels", "in_features")]
            outs = [v for a, v in found if a in ("out_channels", "out_features")]
            # A recurrent cell's widths, where it keeps no other (input_size -> hidden_size).
            ins = ins or [v for a, v in found if a == "input_size"]
            outs = outs or [v for a, v in found if a == "hidden_size"]
            wide += bool(ins and outs) or not item._parameters and not list(item.parameters())
            ends[0] += ins[:1]
            ends[1] += outs[-1:]
        out += [e for e in ends if len(e) == len(c)]
        # Every item's widths, or only the wide items' where the others hold no weights
        # (``nn.Sequential(nn.Linear(17, 128), nn.ELU(), nn.Linear(128, 128), nn.ELU())``
        # made from ``[obs_dim] + list(hidden_sizes)``: the chain 17, 128, 128).
        whole = len(ends[0]) == len(ends[1]) == len(c) or wide == len(c) and len(ends[0]) >= 2
        if whole and len(ends[0]) == len(ends[1]) and ends[0][1:] == ends[1][:-1]:
            # A chain (each item reads its predecessor's width): every width once, in order
            # (``stem_chs=[3, 48, 48, 96]`` makes a conv from each to the next).
            chain = [*ends[0], ends[1][-1]]
            if len(ends[0]) < len(c):
                late += [chain, ends[1]]  # and the widths after the first, off another argument
            else:
                out.append(chain)
    return (out[:5] + late)[:5] if across else out[:5]


def stages(module: nn.Module) -> list[tuple[int, ...]]:
    """How many blocks each stage holds, as a tuple (ResNet's ``layers``)."""
    sizes = tuple(
        len(c._modules) for c in module.children() if isinstance(c, (nn.Sequential, nn.ModuleList))
    )
    return [sizes] if len(sizes) >= 2 else []


def per_stage(module: nn.Module, n: int) -> list[tuple[int, ...]]:
    """For the first container of ``n`` stages: each stage's output width and its block count
    (ConvNeXt's ``dims`` and ``depths``)."""
    for c in descendants(module, 2):
        if isinstance(c, (nn.Sequential, nn.ModuleList)) and len(c) == n:
            widths, depths = [], []
            for stage in _items(c):
                outs = [
                    width(v)
                    for m in stage.modules()
                    for a in ("out_channels", "out_features", "num_features", "normalized_shape")
                    if type(width(v := m.__dict__.get(a))) is int
                ]
                inner = [
                    x for x in stage.children() if isinstance(x, (nn.Sequential, nn.ModuleList))
                ]
                widths.append(outs[-1] if outs else 0)
                depths.append(max(len(x) for x in inner) if inner else len(stage._modules))
            return [tuple(widths), tuple(depths)]
    return []


def resized(module: nn.Module, value: tuple[Any, ...] | list[Any]) -> list[Any]:
    """``value`` stretched (last item repeated) or cut to the length of each stage container,
    and for numbers the stages' own widths at that length."""
    out: list[Any] = []
    for n in dict.fromkeys(lengths(module)):
        if n == len(value) or n < 1 or n > 16:
            continue
        items = [value[i] if i < len(value) else value[-1] for i in range(n)]
        out.append(type(value)(items))
        if all(type(x) is int for x in value):
            # A decoder's stages run from the widest: its widths may be listed either way.
            widths = per_stage(module, n)[:1]
            out += [type(value)(w) for w in widths] + [type(value)(w[::-1]) for w in widths]
    return out


def child_widths(module: nn.Module) -> list[tuple[int, ...]]:
    """The output width of each direct child, in order, for a tuple of per-layer widths (a
    stem's out_chs=(24, 32, 64))."""
    out = []
    for c in module.children():
        found = [
            width(v)
            for m in c.modules()
            for a in ("out_channels", "out_features")
            if type(width(v := m.__dict__.get(a))) is int
        ]
        if found:
            out.append(found[-1])
    return [tuple(out)] if len(out) >= 2 else []


def drop_rates(module: nn.Module, most: int | None = 2) -> list[list[float]]:
    """Per-block drop rates, read from the blocks of each container: the ``drop_prob`` (or, for a
    stochastic-depth layer, ``p``) of each block's first drop layer, 0.0 for a block without one
    (Swin's stages); of the first ``most`` containers (None: all)."""
    out = []
    for c in descendants(module, 2):
        if not isinstance(c, (nn.Sequential, nn.ModuleList)) or len(c) < 2:
            continue
        rates = []
        for block in _items(c):
            found = [
                v
                for m in block.modules()
                for a in ("drop_prob", "drop_path_rate", "p")
                if type(v := m.__dict__.get(a)) is float
                and (a != "p" or "Stochastic" in type(m).__name__)
            ]
            rates.append(found[0] if found else 0.0)
        if any(rates):
            out.append(rates)
    return out[:most]


def lengths(module: nn.Module) -> list[int]:
    """How many modules each container child holds (a stage's depth)."""
    return [
        len(c._modules)
        for c in descendants(module, 2)
        if isinstance(c, (nn.Sequential, nn.ModuleList))
    ]


def per_layer(module: nn.Module, attr: str) -> list[tuple[Any, ...]]:
    """The value each layer keeps under ``attr``, in order, for a plural parameter
    (``dilations`` from each conv's ``dilation``): over the items of each container that have
    it, then over all the module's layers; a single-valued tuple ((1,) for a 1d conv) as its
    int."""
    out: dict[tuple[Any, ...], None] = {}

    def kept(m: nn.Module) -> Any:
        v = m.__dict__.get(attr)
        return width(v) if _even(v) else v

    for c in [module, *descendants(module, 2)]:
        if isinstance(c, (nn.Sequential, nn.ModuleList)) and len(c) > 1:
            seq = [
                next((kept(m) for m in item.modules() if attr in m.__dict__), None)
                for item in _items(c)
            ]
            found = tuple(v for v in seq if v is not None)
            if len(found) > 1:
                out[found] = None
    every = tuple(kept(m) for m in module.modules() if attr in m.__dict__)
    if len(every) > 1:
        out[every] = None
    return list(out)[:4]


def _even(v: Any) -> bool:
    return isinstance(v, tuple) and len(v) >= 1 and all(x == v[0] for x in v)


def runs(module: nn.Module) -> list[tuple[int, ...]]:
    """Stages laid out flat in one container (a conv, then the blocks of a stage, then the next
    conv): for each class whose items come in two or more runs, the output width of the first
    item of each run and how many items each run holds (a flat encoder's
    ``block_out_channels=(16, 16)`` and ``num_blocks=(1, 1)``)."""
    out: list[tuple[int, ...]] = []
    for c in [module, *descendants(module, 1)]:
        if not isinstance(c, (nn.Sequential, nn.ModuleList)) or len(c) < 3:
            continue
        items = list(c)
        for cls in dict.fromkeys(type(m) for m in items):
            counts: list[int] = []
            widths: list[int] = []
            for i, m in enumerate(items):
                if type(m) is not cls:
                    continue
                if i and type(items[i - 1]) is cls:
                    counts[-1] += 1
                    continue
                counts.append(1)
                outs = [
                    width(v)
                    for x in m.modules()
                    for a in ("out_channels", "out_features")
                    if type(width(v := x.__dict__.get(a))) is int
                ]
                widths.append(outs[-1] if outs else 0)
            # Blocks (layers with layers inside), not the convs between them.
            if len(counts) > 1 and any(x._modules for x in items if type(x) is cls):
                out += [tuple(widths), tuple(counts)]  # as ``per_stage`` reads them
    return out[:4]


@dataclass(frozen=True)
class Layout:
    """The shapes of a module's layers that a failed build's message may ask for (a grid or
    per-block rates where a number was indexed, widths where a class was): read once by the
    sources (``read``) and handed to the search."""

    lengths: tuple[int, ...]
    tuples: tuple[tuple[int, ...], ...]
    child_widths: tuple[tuple[int, ...], ...]
    per_item: tuple[list[int], ...]
    stages: tuple[tuple[int, ...], ...]
    drop_rates: tuple[list[float], ...]


def read(module: nn.Module) -> Layout:
    """The module's ``Layout``."""
    return Layout(
        tuple(lengths(module)),
        tuple(tuples(module)),
        tuple(child_widths(module)),
        tuple(per_item(module)),
        tuple(stages(module)),
        tuple(drop_rates(module)),
    )
