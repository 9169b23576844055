"""Candidate values for a constructor parameter, read from a live module: same-named attributes of
its children, known aliases, the widths of its layers and the shapes of its parameters, kernel
sizes, per-stage widths and depths, the classes of its children, and for a ``config`` the config
of a child or of the ``transformers`` model around it. ``infer.py`` tries them by building.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from .._unwrap import original_class
from .blocklists import described
from .config import is_config
from .field import Field
from .gathered import gathered
from .layout import (
    child_widths as _child_widths,
)
from .layout import (
    descendants as _descendants,
)
from .layout import (
    drop_rates as _drop_rates,
)
from .layout import (
    lengths as _lengths,
)
from .layout import (
    per_item as _per_item,
)
from .layout import (
    per_layer as _per_layer,
)
from .layout import (
    per_stage as _per_stage,
)
from .layout import (
    resized as _resized,
)
from .layout import (
    runs as _runs,
)
from .layout import (
    stages as _stages,
)
from .layout import (
    tuples as _tuples,
)
from .layout import (
    width as _width,
)
from .literals import compared_strings
from .position import config_items, index_like, ordinals
from .scan import LIVE
from .shipped import shipped
from .stagelists import stage_lists
from .tuning import MAX_CANDIDATES

__all__ = ["ALIASES", "candidates", "same_value"]


# Parameter name -> attribute names that hold the same value in common libraries.
ALIASES: dict[str, tuple[str, ...]] = {
    "eps": ("variance_epsilon", "epsilon", "layer_norm_eps", "norm_eps"),
    "dim": ("hidden_size", "embed_dim", "num_features", "in_features", "in_channels", "channels"),
    "hidden_size": ("dim", "embed_dim", "num_features", "hidden_dim"),
    "in_chs": ("in_channels", "in_features", "dim", "in_dim"),
    "out_chs": ("out_channels", "out_features", "dim", "out_dim"),
    "in_channels": ("in_chs", "in_features", "dim"),
    "input_channels": ("in_channels", "in_chs", "in_features"),
    "output_channels": ("out_channels", "out_chs", "out_features"),
    "out_channels": ("out_chs", "out_features", "dim"),
    "in_features": ("in_chs", "in_channels", "dim"),
    "out_features": ("out_chs", "out_channels"),
    "num_heads": ("heads", "n_head", "num_attention_heads"),
    "drop_path": ("drop_prob", "drop_path_rate"),
    "drop_prob": ("drop_path",),
    "num_classes": ("out_features",),
    "init_values": ("init_value",),
}

_WIDTH_ATTRS = (
    "in_channels",
    "out_channels",
    "in_features",
    "out_features",
    "num_features",
    "num_channels",
    "embedding_dim",
    "num_embeddings",
    "num_heads",
    "hidden_size",
    "dim",
    "groups",
)
_SIZE_ATTRS = ("kernel_size", "stride", "padding", "dilation", "img_size", "patch_size")
_FLOAT_ATTRS = ("eps", "p", "drop_prob", "variance_epsilon", "negative_slope", "momentum")


def _attr(obj: Any, name: str) -> Any:
    try:
        return obj.__dict__.get(name, getattr(obj, name, None))
    except Exception:  # noqa: BLE001 - a property that raises
        return None


def _ints(module: nn.Module) -> list[int]:
    out: list[int] = []
    for t in [*module._parameters.values(), *module._buffers.values()]:
        if t is not None:
            out += list(t.shape)
    for v in vars(module).values():
        if type(v) is int:
            out.append(v)
        elif isinstance(v, tuple) and 0 < len(v) <= 4 and all(type(x) is int for x in v):
            out += list(v)  # a width kept as a shape (normalized_shape = (hidden_size,))
    for m in module.modules():
        for t in m._parameters.values():
            if t is not None and m is not module:
                out += list(t.shape)
        for a in _WIDTH_ATTRS:
            v = _width(_attr(m, a)) if a in m.__dict__ or hasattr(type(m), a) else None
            if type(v) is int:
                out.append(v)
    return out


def _sizes(module: nn.Module) -> list[Any]:
    out: list[Any] = []
    for m in module.modules():
        for a in _SIZE_ATTRS:
            v = m.__dict__.get(a)
            if isinstance(v, (int, tuple)) and not isinstance(v, bool):
                out += [v, _width(v)] if isinstance(v, tuple) else [v]
    return out


def _floats(module: nn.Module) -> list[float]:
    out = [v for v in vars(module).values() if type(v) is float]
    for m in module.modules():
        for a in _FLOAT_ATTRS:
            v = m.__dict__.get(a)
            if type(v) is float:
                out.append(v)
    return out


def _classes(module: nn.Module) -> list[type]:
    return [type(m) for m in module.modules() if m is not module]


def _uniq(values: list[Any], limit: int = MAX_CANDIDATES) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if not any(type(v) is type(o) and (v is o or _eq(v, o)) for o in out):
            out.append(v)
        if len(out) >= limit:
            break
    return out


def same_value(a: Any, b: Any) -> bool:
    return a is b or type(a) is type(b) and _eq(a, b)


def _eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return a is b


_WIDTH_WORDS = ("chs", "channels", "features", "dim", "size", "planes", "width", "classes")
_KERNEL_WORDS = ("kernel", "stride", "dilation", "padding", "patch", "img_size")
# A whole network handed to a constructor that keeps its layers (``gathered.py``).
_NETWORK_WORDS = ("model", "backbone", "net", "body", "trunk", "encoder", "features")

# A count of blocks or layers: a depth (``block_per_stage``, ``layer_per_block`` count too).
_DEPTH_WORDS = ("depth", "layers", "blocks", "num_", "_per_")


def _dropping(low: str) -> bool:  # a rate by its name (drop_path_rate, stochastic_depth_prob)
    return "drop" in low or "stochastic_depth" in low


def _class_rank(name: str) -> Callable[[type], int]:
    stem = name.removesuffix("_layer").removesuffix("_fn").lower()

    def rank(c: type) -> int:
        low = c.__name__.lower()
        if stem and stem in low or stem == "se" and "excite" in low:
            return 0
        if "act" in stem.split("_") and c.__module__ == "torch.nn.modules.activation":
            return 0
        return 1

    return rank


def _even(v: Any) -> bool:
    return type(v) is tuple and len(v) > 1 and all(type(x) is int and x == v[0] for x in v)


def _ratios(ints: list[int]) -> list[float]:
    widths = list(dict.fromkeys(i for i in ints if i > 1))[:6]
    out = []
    for a in widths:
        for b in widths:
            if a != b and (a / b) * 4 == int((a / b) * 4):
                out.append(a / b)
    return out


def _same_named(module: nn.Module, f: Field, name: str) -> tuple[list[Any], set[str]]:
    """The values of attributes named like the field (or an alias) on the module and its
    layers, and the names the module's nearest layer holds itself."""
    low = name.lower()
    first: list[Any] = []
    own_names: set[str] = set()
    for m in [module, *_descendants(module)]:
        for a in (name, *ALIASES.get(name, ())):
            if m is module and a == f.name:
                continue  # the form already tried the module's own same-named attribute
            if a in m.__dict__ or (m is not module and hasattr(type(m), a)):
                first.append(_attr(m, a))
                if _even(first[-1]) and f.kind == "int":
                    first.append(first[-1][0])  # a conv's stride (2, 2) for an int stride
                if a == name and not first[:-1]:
                    own_names.add(a)
    if low.startswith("out"):
        first.reverse()  # an output width is the last layer's
    return first, own_names


def _shape_pool(
    module: nn.Module, f: Field, name: str, first: list[Any]
) -> tuple[list[Any], list[Any]]:
    """Numbers by the field's kind and name: widths, kernel sizes, depths, per-stage tuples, per-
    block rates, flags; and ``first`` with what goes before them (classes, stages, per-item
    widths)."""
    low = name.lower()
    pool: list[Any] = []
    numeric = f.kind in ("int", "int_or_tuple") or type(f.default) is int
    # A width annotated as a tensor (``mask_feature_size: torch.Tensor`` given an int).
    numeric = numeric or f.kind == "tensor" and any(w in low for w in _WIDTH_WORDS)
    # Per-stage tuples for a plural name (layers, depths) first; one number for a singular one
    # (d_model, nhead) that nothing annotates: a tuple there fails the first comparison.
    plural = low.split("_")[-1].endswith("s") and not low.endswith("ss")
    plural = plural or isinstance(f.default, (tuple, list)) or isinstance(f.value, (tuple, list))
    if f.kind == "literal" and not isinstance(f.value, (bool, float, str)):
        numeric = True
        if f.required:
            stages = _stages(module)
            classes = sorted(
                dict.fromkeys(_classes(module)), key=lambda c: c.__module__.startswith("torch.")
            )
            by_class = any(w in low for w in ("block", "layer", "cls", "fn", "type"))
            # A width's name (inplanes, hidden_size) with no annotation is a number first.
            wide = any(w in low for w in _WIDTH_WORDS) and not by_class
            first += classes if by_class else [] if wide or not plural else stages
    if _dropping(low) and f.kind != "bool":
        # Rates and probabilities: a width or a kernel size is never one; per-block rates are a
        # list as long as a stage.
        numeric = False
        if "rates" in low:
            pool = [[0.0] * n for n in dict.fromkeys(_lengths(module)) if n]
    if f.kind == "bool":
        pool = [f.value, not f.value] if isinstance(f.value, bool) else [True, False]
    elif numeric and any(w in low for w in _KERNEL_WORDS):
        # A size no layer keeps may still be read from the shapes of the tensors (eye(k)).
        pool = _sizes(module) or _ints(module) or [d for t in module.buffers() for d in t.shape]
    elif numeric and any(w in low for w in _DEPTH_WORDS):
        pool = [*_lengths(module), 0, 1, 2, 3, 4, *_ints(module)]
        if f.kind != "int":
            pool = [*_stages(module), *pool]
    elif numeric:
        ints = _ints(module)
        pool = list(reversed(ints)) if low.startswith("out") else ints
        if not any(w in low for w in _WIDTH_WORDS) and not f.required:
            pool = [0, 1, 2, *pool[:3]]
        if f.kind == "literal" and f.required and any(w in low for w in _WIDTH_WORDS):
            pool = [*pool, *_stages(module), *_child_widths(module), *_sizes(module)]
        elif f.kind == "literal" and not plural:
            pool = [*pool, *_stages(module), *_child_widths(module), *_sizes(module)]
        elif f.kind != "int":
            pool = [*_stages(module), *_child_widths(module), *pool, *_sizes(module)]
        if f.kind == "int_or_tuple":
            pool = [*pool[:2], *_tuples(module), *pool[2:]]
            if any(w in f.annotation.lower() for w in ("list", "sequence")):
                # A list of widths: one per item of a container, before any single width.
                # Either way round: a pyramid's layers are made from the list reversed.
                items = _per_item(module)
                first = [*items, *(w[::-1] for w in items if w != w[::-1]), *first]
    if isinstance(f.default, tuple) and f.default and all(type(x) is int for x in f.default):
        pool = [*_per_stage(module, len(f.default)), *pool]
    elif f.required and f.value is None and f.kind == "int_or_tuple":
        # A per-stage tuple with no default to tell its length: each stage container's widths
        # and depths (a cfg's depths=(2, 2, 2, 2), channels=(256, 512, 1024, 2048)).
        lens = [n for n in dict.fromkeys(_lengths(module)) if n > 1]
        readings = [*_runs(module), *(r for n in lens for r in _per_stage(module, n))]
        deep = any(w in low for w in _DEPTH_WORDS)
        readings = readings[1::2] + readings[::2] if deep else readings
        pool = [*_stages(module), *readings, *pool] if deep else [*readings, *pool]
    if f.required and f.value is None and f.kind == "int_or_tuple" and plural:
        # A whole model's per-stage lists (``stagelists.py``): depths first, or widths first
        lists = stage_lists(module)  # for a width's name
        wide = any(w in low for w in _WIDTH_WORDS)
        first = [*(lists[1:] + lists[:1] if wide else lists), *first]
    if isinstance(f.value, (tuple, list)) and f.value:
        # Per-stage values (block types, widths) as long as a stage container of the module.
        pool = [*_resized(module, f.value), *pool]
    return pool, first


def _kind_pool(module: nn.Module, f: Field, name: str, pool: list[Any]) -> list[Any]:
    """``pool`` replaced or extended by the field's kind: floats, classes, configs, strings, drop
    rates, a layer held under the parameter's name, one value per layer, config items,
    ordinals, None."""
    low = name.lower()
    if f.kind == "float" or type(f.default) is float:
        pool = _floats(module)
        if "ratio" in low:
            pool = [*_ratios(_ints(module)), 0.0, *pool]
        if f.required:
            pool = [1.0, *pool]  # a multiplier or a ratio that leaves widths as they are
    elif f.kind in ("class", "callable"):
        # A layer a factory makes is mostly one without children (a norm, not a conv-norm block).
        leaves = {type(m) for m in module.modules() if not m._modules}
        rank = _class_rank(name)
        pool = sorted(dict.fromkeys(_classes(module)), key=lambda c: (rank(c), c not in leaves))
        pool = pool[:6]
    if f.kind == "literal" and (name == "config" or "config" in f.annotation.lower()):
        pool = [
            c
            for m in _descendants(module)
            if is_config(c := m.__dict__.get(name, m.__dict__.get("config")))
        ]
        pool += LIVE.holding_configs(module)
    elif f.kind == "str" or f.kind == "literal" and isinstance(f.default, str):
        # the strings its constructor compares it with, if known (an annotation that names no
        # type, with a string default, is a string too)
        pool = [
            *dict.fromkeys([*f.choices, *compared_strings(original_class(type(module)), name)]),
            "",
        ]
    if _dropping(low) and f.kind != "bool":
        pool = [*_drop_rates(module), *pool]
        if f.kind == "literal":
            # A rate nothing annotates: the rates its layers keep (a Dropout's p), or none.
            pool = [*pool, *_floats(module), 0.0]
        if "rate" in low or "depth_prob" in low:
            # Per-block rates rise to the given rate: the last block's, 0.1 read as 0.0999...9.
            top = max((r for rs in _drop_rates(module, None) for r in rs), default=0.0)
            top = top if f.kind == "float" or type(f.default) is float else 0.0
            pool = [*dict.fromkeys([float(f"{top:.12g}"), top]), *pool] if top else pool
    if isinstance(f.value, nn.Module):
        # A layer kept under the parameter's name was often made from what was passed: its class,
        # or the name a registry maps to it ("gelu" for GELUActivation).
        word = type(f.value).__name__.lower().removesuffix("activation")
        pool = [type(f.value), *([word] if word else []), *pool]
    if f.kind in ("int_or_tuple", "literal") and name.endswith("s") and not name.endswith("ss"):
        # One value per layer (dilations from each conv's dilation).
        pool = [*_per_layer(module, name[:-1]), *pool]
    if f.required and f.value is None:
        pool = [*config_items(module, name), *pool]  # hidden_sizes=config.hidden_sizes[idx]
    if f.kind in ("int", "literal") and index_like(name) and not f.choices:
        pool = [*ordinals(module), *pool]  # a stage given its own number (stage_idx)
    if f.optional or f.default is None:
        pool.append(None)
    return pool


def candidates(module: nn.Module, f: Field, fits: Callable[[Any], bool]) -> list[Any]:
    """Plausible values for field ``f`` of ``module``, most likely first."""
    name = f.name.rpartition(".")[2]  # a config's field is named as its class names it
    low = name.lower()
    first, own_names = _same_named(module, f, name)
    pool, first = _shape_pool(module, f, name, first)
    pool = _kind_pool(module, f, name, pool)
    first = [*shipped(module, name), *first] if "." not in f.name else first  # shipped.py
    if f.required and f.value is None and "." not in f.name:
        first = [*described(module, name), *first]  # blocks' descriptions (blocklists.py)
        if any(w in low for w in _NETWORK_WORDS):  # a network (gathered.py), not one layer
            first = [*gathered(module, name), *first]
    # None for a required field only where the annotation allows it: ``fits`` lets the guide
    # propose it (``_forms/rules/unset_width.py``), an attribute that holds None is no candidate.
    unset = bool(pool) and (f.optional or not f.required)
    values = [v for v in [*first, *pool] if (v is not None or unset) and fits(v)]
    if f.kind == "int":
        # ``fits`` lets an int field try a tuple the guide reads off its layers; kernel sizes
        # and strides kept as tuples are not worth a build each.
        values = [v for v in values if not isinstance(v, tuple)]
    if not f.required or f.value is not None:
        # A child's attribute of the same name (patch_embed.img_size) beats the default.
        at = 1 if values and name in own_names and values[0] is not None else 0
        values.insert(at, f.value)
    return _uniq(values)
