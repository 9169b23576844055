"""Factories that make a live layer again, read from the layer's own exact form (a child form,
a route of its own through the pipeline): the rule ``rules/factories.py`` proposes them for a
field that makes such a layer (``norm_layer=partial(BatchNorm2d, eps=1e-3)``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

from torch import nn

from ..field import found
from ..values import same

__all__ = ["factory"]

_NOT_PASSED = ("device", "dtype")


def _keywords(
    layer: nn.Module, form: Callable[[nn.Module], Any]
) -> tuple[dict[str, Any], dict[str, Any], bool] | None:
    """(required, keyword values that are not the defaults, whether exact) of ``layer``'s form
    (where it is not exact, the values its search came nearest with); None when it has none. ``form`` opens the
    layer's own form (the pipeline's ``form``)."""
    try:
        f = form(layer)
    except Exception:  # noqa: BLE001 - a layer without a readable form gives no factory
        return None
    plain = [x for x in f.fields if not x.group and x.kind not in ("varargs", "varkw")]
    kw = {
        x.name: x.value
        for x in plain
        if not x.required
        and x.name not in _NOT_PASSED
        and (found(x) or not exact(f))
        and not same(x.value, x.default)
    }
    return {x.name: x.value for x in plain if x.required}, kw, exact(f)


def exact(f: Any) -> bool:
    """Whether a layer's form is exact, or as good: its values are right where only its weights'
    types differ (a quantized weight)."""
    return not f.inexact or f.check.typed


def factory(layer: nn.Module, form: Callable[[nn.Module], Any]) -> list[Any]:
    """Factories that make ``layer`` again: its class with the keyword values its own exact form
    found that are not the defaults (``partial(BatchNorm2d, eps=0.001)``), the same with its
    required values but the first (the width a parent passes: ``partial(SpatialGatingUnit,
    seq_len=196)``) or, by place, but the last (``partial(GroupNorm, 2)``), then those keywords
    alone and in pairs; only the first where its form is not exact (``_keywords``)."""
    got = _keywords(layer, form)
    if got is None:
        return []
    required, kw, is_exact = got
    cls = type(layer)
    out: list[Any] = [functools.partial(cls, **kw) if kw else cls]
    if not is_exact:
        # A layer whose own form is not exact, as one its parent changes after building it
        # (``self.enc.fc = nn.Sequential(..., self.enc.fc)``: no call of its class makes it
        # again): the values its search came nearest with make one factory, which only the
        # parent's build proves (MoCo's ``base_encoder(num_classes=dim)``, its ``fc`` then
        # wrapped in a projection).
        return out if kw else []
    if len(required) > 1:
        rest = dict(list(required.items())[1:])
        out.append(functools.partial(cls, **rest, **kw))
    if required:
        # A parent that passes what it knows by keyword overrides those of the factory:
        # every required value held (rel_pos_cls=partial(RelPosBias, window_size=(7, 7), ...)).
        out.append(functools.partial(cls, **required, **kw))
    if len(kw) > 1:
        # Which keywords the factory holds and which the parent passes per call is not known:
        # each keyword alone, then each pair (the most a factory of this kind holds, mostly).
        items = list(kw.items())[:6]
        out += [functools.partial(cls, **dict([kv])) for kv in items]
        if len(items) > 2:
            out += [functools.partial(cls, **dict(p)) for p in itertools.combinations(items, 2)]
    if len(required) == 2:
        # The width passed last, the factory holding the one value before it, by place:
        # norm_layer=partial(GroupNorm, 2) makes GroupNorm(2, width). Last, as the rarest.
        out.append(functools.partial(cls, next(iter(required.values())), **kw))
    return out
