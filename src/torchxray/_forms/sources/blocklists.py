"""A list of block descriptions read back from the blocks' own forms (issue 40, item 4).

A whole model is often built from a list of small config objects, one per block or one per stage
(``inverted_residual_setting: list[InvertedResidualConfig]``), that its blocks are then built
from (``InvertedResidual(cnf: InvertedResidualConfig, ...)``). The model keeps no list, but each
block's own form finds the object it was built from (``_forms/sources/nested.py``: a config argument
searched member by member). So the list is read back in the blocks' order:

- blocks laid out flat in one container: one description per block;
- blocks grouped in stage containers: one per stage, the first block's description, with each
  integer member that the block's own class never reads (a stage's block count, read only by
  the model that repeats the block) set to the stage's length.

The element classes come from the parameter's annotation (``list[C]``, ``Sequence[C1 | C2]``);
a block's form that is not exact gives no reading. The blocks' forms share the parent form's
work budget (``_forms/budget.py``), so this costs no more than the form's second.
"""

from __future__ import annotations

import collections.abc
import copy
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from torch import nn

from ..._signature import resolve
from ..._unwrap import original_class
from ..field import Child
from .nested import config_class
from .stageconfigs import patch_sizes, stage_classes, stage_configs, stage_values

__all__ = ["block_lists", "described", "element_classes"]

_SEQUENCES = (list, tuple, collections.abc.Sequence, collections.abc.Iterable)
MAX_FORMS = 24  # a model with more blocks than this is read per stage, or not at all


def _params(cls: type) -> dict[str, inspect.Parameter]:
    try:
        return dict(resolve(cls).parameters)
    except Exception:  # noqa: BLE001 - annotations that do not resolve name no element class
        return {}


def _members(ann: Any) -> list[Any]:
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        return [a for a in typing.get_args(ann) if a is not type(None)]
    return [ann]


def element_classes(cls: type, name: str) -> tuple[type, ...]:
    """The config classes a sequence parameter's annotation names as its items (``list[C]``,
    ``Sequence[C1 | C2]``); () when it names none."""
    p = _params(cls).get(name)
    if p is None:
        return ()
    out: list[type] = []
    for seq in _members(p.annotation):
        if typing.get_origin(seq) not in _SEQUENCES or not typing.get_args(seq):
            continue
        for item in _members(typing.get_args(seq)[0]):
            one = inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=item)
            if isinstance(item, type) and config_class(one, None) is item:
                out.append(item)
    return tuple(out)


def _taking(m: nn.Module, classes: tuple[type, ...]) -> str | None:
    """The name of the parameter of ``m``'s constructor annotated with one of ``classes``."""
    for p in _params(original_class(type(m))).values():
        if any(a in classes for a in _members(p.annotation)):
            return p.name
    return None


def _blocks(module: nn.Module, classes: tuple[type, ...]) -> list[tuple[nn.Module, nn.Module, str]]:
    """(parent, block, parameter) for each descendant built from one of ``classes``, in order;
    not looking inside such a block."""
    out: list[tuple[nn.Module, nn.Module, str]] = []

    def walk(m: nn.Module) -> None:
        for c in m.children():
            name = _taking(c, classes)
            if name is not None:
                out.append((m, c, name))
            else:
                walk(c)

    walk(module)
    return out


def _description(block: nn.Module, name: str, form: Callable[[nn.Module], Any]) -> Any:
    """The object ``block`` was built from, by its own exact form; None if not exact."""
    try:
        f = form(block)
    except Exception:  # noqa: BLE001 - a block without a readable form gives no reading
        return None
    if f.inexact:
        return None
    unread = [x.name.rpartition(".")[2] for x in f.fields if x.group == name and x.read is False]
    value = f[name].value
    return None if value is None else (value, unread)


def block_lists(module: nn.Module, name: str, form: Child) -> list[list[Any]]:
    """Readings for parameter ``name`` of ``module`` (see the module doc); [] when its annotation
    names no config class or no block was built from one."""
    classes = element_classes(original_class(type(module)), name)
    found = _blocks(module, classes) if classes else []
    if not found:
        # No block takes one: one per stage, read from the stages (``stageconfigs.py``).
        return stage_configs(module, classes) if classes else []
    groups: dict[int, list[tuple[nn.Module, str]]] = {}
    for parent, block, pname in found:
        groups.setdefault(id(parent), []).append((block, pname))
    if len(groups) == 1:
        if len(found) > MAX_FORMS:
            return []
        read = [_description(b, p, form) for _, b, p in found]
        return [] if any(r is None for r in read) else [[r[0] for r in read]]
    return _per_stage(list(groups.values()), form)


def _per_stage(
    groups: list[list[tuple[nn.Module, str]]], form: Callable[[nn.Module], Any]
) -> list[list[Any]]:
    stages = []
    for members in groups:
        got = _description(*members[0], form)
        if got is None:
            return []
        value, unread = got
        value = copy.copy(value)
        for member in unread:
            if type(getattr(value, member, None)) is int:
                setattr(value, member, len(members))
        stages.append(value)
    return [stages]


def described(module: nn.Module, name: str, child: Child | None) -> list[list[Any]]:
    """`block_lists` with the blocks' own forms (``child``; None: no reading), then a sequence
    of classes read per stage (``stage_classes``)."""
    read = block_lists(module, name, child) if child is not None else []
    # A sequence of classes, one per stage (``stageconfigs.py``).
    classes = stage_classes(module, original_class(type(module)), name)
    return [*read, *classes, *stage_values(module, name), *patch_sizes(module, name)]
