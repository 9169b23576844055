"""Per-stage lists read off a whole model's stages (issue 40, item 4): a model built from
``depths=[4, 8, 4]`` and ``widths=[24, 48, 96, 192, 1024]`` keeps no such list, but its stages
do: each is a container of blocks (modules that hold layers of their own), laid out among the
model's children between a stem and a head made of plain layers. A stage's depth is how many
blocks it holds, its width the output width of its last layer; the list of widths may run from
the stem's output to the head's (one more item each side), as constructors build a chain of
convolutions from consecutive widths. The search (``_forms/candidates/infer.py``) tries each reading.
"""

from __future__ import annotations

from torch import nn

from .layout import width

__all__ = ["in_width", "is_stage", "stage_lists"]

_OUT = ("out_channels", "out_features", "num_features")
_IN = ("in_channels", "in_features", "num_features")


def _kept(m: nn.Module, names: tuple[str, ...]) -> list[int]:
    return [w for x in m.modules() for a in names if type(w := width(x.__dict__.get(a))) is int]


def _out_width(m: nn.Module) -> int | None:
    """The output width of the last layer of ``m`` that keeps one, or None."""
    found = _kept(m, _OUT)
    return found[-1] if found else None


def in_width(m: nn.Module) -> int | None:
    """The input width of the first layer of ``m`` that keeps one, or None."""
    found = _kept(m, _IN)
    return found[0] if found else None


def is_stage(c: nn.Module) -> bool:
    """A container of blocks: every item holds layers of its own (a stem's conv, norm and
    activation are layers, not blocks)."""
    items = list(c.children())
    return (
        isinstance(c, (nn.Sequential, nn.ModuleList))
        and bool(items)
        and all(bool(x._modules) for x in items)
    )


def stage_lists(module: nn.Module) -> list[list[int]]:
    """The depths of the module's stages (its direct children that are containers of blocks, in
    order), their output widths, and those widths between the stem's and the head's; [] with
    fewer than two stages."""
    kids = list(module.children())
    at = [i for i, c in enumerate(kids) if is_stage(c)]
    if len(at) < 2 or at != list(range(at[0], at[-1] + 1)):
        return []  # stages are consecutive children: others are heads or branches
    depths = [len(kids[i]._modules) for i in at]
    # A stage's width is what the next part reads: a block may join branches (a concatenation),
    # and then its last layer holds only part of its output.
    follow = [next((w for c in kids[i + 1 :] if (w := in_width(c)) is not None), None) for i in at]
    widths = [w if w is not None else _out_width(kids[i]) for i, w in zip(at, follow)]
    if any(w is None for w in widths):
        return [depths]
    out: list[list[int]] = [depths, list(widths)]  # type: ignore[arg-type]
    before = [w] if (w := in_width(kids[at[0]])) is not None else []
    after = [w for c in kids[at[-1] + 1 :] if (w := _out_width(c)) is not None]
    if before and after:
        out.append([before[-1], *widths, after[0]])  # type: ignore[list-item]
    if before:
        out.append([before[-1], *widths])  # type: ignore[list-item]
    return out
