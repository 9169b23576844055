"""A whole model's arguments that no block or child keeps, read from its stages (issue 40, item 4).

A whole model may be built from one small config object per stage (torchvision's
``ConvNeXt(block_setting: list[CNBlockConfig])``, ``CNBlockConfig(input_channels, out_channels,
num_layers)``) that only the model reads: it makes ``num_layers`` blocks of ``input_channels``
(``CNBlock(dim, ...)``, no config), then a layer from ``input_channels`` to ``out_channels``. The
blocks' forms cannot give the objects back (``_forms/sources/blocklists.py``), but the stages show every
member: a stage is a container of blocks of one class, and for each stage, in order, each
member of the config class is read by its name:

- a count (``num_layers``, ``depth``, ``repeats``): how many blocks the stage holds;
- an input width (``input_channels``, ``in_chs``): the input width of the stage's first layer;
- an output width (``out_channels``): what the next stage reads; after the last stage, None where
  the annotation allows it (no layer made), else what the next part reads;
- any other member: its default (no default: no reading).

The same for a sequence of classes, one per stage (torchvision's ``VideoResNet(conv_makers:
Sequence[type[Conv3DSimple | Conv2Plus1D | ...]])``): per stage, the class of the first layer in it
that is one of the classes the annotation names.

And per-stage lists for a model whose stages sit among other parts (Swin's ``features`` holds
patch merges between them, so ``_forms/sources/stagelists.py`` does not read them): a count
(``depths``) is each stage's length, another plural name (``num_heads``) the attribute of that
name the stage's first block keeps, a singular one (``window_size``) that attribute where every
stage's first block keeps it alike; and a ``patch_size`` no layer keeps under its name: the
kernel of the first convolution whose stride is its kernel (a patch embedding).

One reading each, checked by the build like any other candidate.
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from typing import Any

from torch import nn

from ..._signature import resolve
from .stagelists import in_width, is_stage

__all__ = ["patch_sizes", "stage_classes", "stage_configs", "stage_values"]

_SEQUENCES = (list, tuple, collections.abc.Sequence, collections.abc.Iterable)
_COUNT = ("num_layers", "depth", "repeats", "num_blocks", "n_layers", "layers", "blocks")


def _stage(c: nn.Module) -> bool:
    """A container of blocks of one class (a container of containers is a level above)."""
    kinds = {type(x) for x in c.children()}
    return is_stage(c) and len(kinds) == 1 and not kinds & {nn.Sequential, nn.ModuleList}


def _stages(module: nn.Module) -> list[tuple[nn.Module, list[nn.Module]]]:
    """Each stage (a container of blocks) met walking the module in order, not looking inside
    one, with the parts met after it."""
    order: list[nn.Module] = []
    stages: list[int] = []

    def walk(m: nn.Module) -> None:
        for c in m.children():
            if _stage(c):
                stages.append(len(order))
                order.append(c)
            elif c._modules:
                walk(c)
            else:
                order.append(c)

    walk(module)
    return [(order[i], order[i + 1 :]) for i in stages]


def _optional(p: inspect.Parameter) -> bool:
    return any(w in str(p.annotation) for w in ("Optional", "None"))


def _member(p: inspect.Parameter, stage: nn.Module, after: list[nn.Module], last: bool) -> Any:
    name = p.name.lower()
    if name in _COUNT or name.startswith(("num_", "n_")) and "layer" in name:
        return len(stage._modules)
    if name.startswith(("in", "input")) and any(w in name for w in ("chan", "chs", "dim", "feat")):
        return in_width(stage)
    if name.startswith(("out", "output")):
        if last and _optional(p):
            return None
        parts = after if last else [c for c in after if _stage(c)]
        return next((w for c in parts if (w := in_width(c)) is not None), None)
    return p.default


def stage_configs(module: nn.Module, classes: tuple[type, ...]) -> list[list[Any]]:
    """One reading per config class of ``classes``: a list of instances, one per stage of
    ``module`` (see the module doc); none for a class a member of which cannot be read."""
    stages = _stages(module)
    if len(stages) < 2:
        return []
    out: list[list[Any]] = []
    for c in classes:
        try:
            params = list(resolve(c).parameters.values())
        except (TypeError, ValueError):
            continue
        made: list[Any] = []
        for i, (stage, after) in enumerate(stages):
            values = [_member(p, stage, after, i == len(stages) - 1) for p in params]
            if any(v is p.empty or v is None and not _optional(p) for p, v in zip(params, values)):
                break
            try:
                made.append(c(**{p.name: v for p, v in zip(params, values)}))
            except Exception:  # noqa: BLE001 - a config that rejects the values gives no reading
                break
        else:
            out.append(made)
    return out


def _union(ann: Any) -> list[Any]:
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        return [a for a in typing.get_args(ann) if a is not type(None)]
    return [ann]


def _item_classes(cls: type, name: str) -> tuple[type, ...]:
    """The module classes a sequence parameter's annotation names as its items' classes
    (``Sequence[type[A | B]]``); () when it names none."""
    try:
        p = resolve(cls).parameters.get(name)
    except Exception:  # noqa: BLE001 - annotations that do not resolve name no class
        return ()
    seq = p.annotation if p is not None else None
    args = typing.get_args(seq) if typing.get_origin(seq) in _SEQUENCES else ()
    if len(args) != 1 or typing.get_origin(args[0]) is not type:
        return ()
    found = [c for a in typing.get_args(args[0]) for c in _union(a)]
    return tuple(c for c in found if isinstance(c, type) and issubclass(c, nn.Module))


def stage_classes(module: nn.Module, cls: type, name: str) -> list[list[type]]:
    """A sequence-of-classes parameter ``name`` of ``cls`` read per stage of ``module`` (see the
    module doc); [] where a stage holds none of the classes its annotation names."""
    classes = _item_classes(cls, name)
    stages = _stages(module) if classes else []
    out: list[type] = []
    for stage, _ in stages:
        kinds = [type(m) for m in stage.modules() if type(m) in classes]
        if not kinds:
            return []
        out.append(kinds[0])
    return [out] if len(out) >= 2 else []


def _kept(block: nn.Module, names: tuple[str, ...]) -> Any:
    for m in block.modules():
        for a in names:
            if a in m.__dict__ and not isinstance(m.__dict__[a], (nn.Module, dict)):
                return m.__dict__[a]
    return None


def stage_values(module: nn.Module, name: str) -> list[Any]:
    """Per-stage lists (or a value alike in every stage) for parameter ``name``, read from the
    stages met walking the module (see the module doc); [] where they are not all read."""
    stages = _stages(module)
    low = name.lower()
    if len(stages) < 2 or any(s is c for s, _ in stages for c in module.children()):
        return []  # stages that are the module's own children: ``stagelists.py`` reads them
    if low.rstrip("s") in ("depth", "layer", "num_layer", "num_block"):
        return [[len(s._modules) for s, _ in stages]]
    names = (name, name[:-1]) if low.endswith("s") else (name,)
    read = [_kept(next(iter(s.children())), names) for s, _ in stages]
    if any(v is None for v in read):
        return []
    if not low.endswith("s"):
        return [read[0]] if all(v == read[0] for v in read) else []
    return [read]


def patch_sizes(module: nn.Module, name: str) -> list[Any]:
    """For a ``patch_size`` parameter: the kernel of the first convolution of ``module`` whose
    stride is its kernel, as a list; [] for another name or none such."""
    if "patch" not in name.lower():
        return []
    for m in module.modules():
        k, st = m.__dict__.get("kernel_size"), m.__dict__.get("stride")
        if not isinstance(m, nn.modules.conv._ConvNd) or not isinstance(k, tuple):
            continue
        if k == st and max(k) > 1:
            return [list(k)]
    return []
