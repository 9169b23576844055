"""Constructor values no attribute holds, inferred from the live module and checked by building.

For each parameter a form could only guess (a default nothing confirms, or a required value it
could not find), candidates come from the module itself: same-named attributes of its children
(``layer_idx`` on ``self_attn``), known aliases (``variance_epsilon`` for ``eps``), the widths of
its layers and the shapes of its own parameters (``hidden_size`` of an RMSNorm from
``weight.shape``), the classes of its children (``act_layer``), and for a ``config`` the config of
a child or of the ``transformers`` model around it. A candidate set is accepted only when a build
on the meta device matches the live module exactly (``compare.mismatch``); the search is greedy,
one parameter at a time, scored by how much of the structure matches, and bounded in builds and
time so a form opens fast.
"""

from __future__ import annotations

import functools
import gc
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from .compare import structure
from .config import is_config
from .field import Field

__all__ = ["Inferred", "infer"]

MAX_BUILDS = 120
MIN_BUILDS = 12
MAX_SECONDS = 30.0  # a safety net only: the build count is what bounds the search
MODULE_BUILDS = 2000  # submodules built, summed over the search
MAX_MODULES = 1000
SMALL = 60  # modules this small also get their stored attributes re-checked  # bigger modules keep their guesses: one build is already costly
MAX_CANDIDATES = 10

# Parameter name -> attribute names that hold the same value in common libraries.
ALIASES: dict[str, tuple[str, ...]] = {
    "eps": ("variance_epsilon", "epsilon", "layer_norm_eps", "norm_eps"),
    "dim": ("hidden_size", "embed_dim", "num_features", "in_features", "in_channels", "channels"),
    "hidden_size": ("dim", "embed_dim", "num_features", "hidden_dim"),
    "in_chs": ("in_channels", "in_features", "dim", "in_dim"),
    "out_chs": ("out_channels", "out_features", "dim", "out_dim"),
    "in_channels": ("in_chs", "in_features", "dim"),
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


class Inferred:
    """Result of a search: values that made the build match (``values``), whether it matched
    (``exact``), and why not (``reason``)."""

    def __init__(self, values: dict[str, Any], exact: bool, reason: str) -> None:
        self.values = values
        self.exact = exact
        self.reason = reason


def guessed(f: Field) -> bool:
    if f.kind in ("varargs", "varkw") or f.name in ("device", "dtype"):
        return False
    return f.origin == "default" or (f.required and f.value is None)


def _descendants(module: nn.Module, depth: int = 3) -> Iterator[nn.Module]:
    """Children first, breadth first, ``depth`` levels down."""
    level = [module]
    for _ in range(depth):
        level = [c for m in level for c in m.children()]
        yield from level


def _attr(obj: Any, name: str) -> Any:
    try:
        return obj.__dict__.get(name, getattr(obj, name, None))
    except Exception:  # noqa: BLE001 - a property that raises
        return None


def _width(value: Any) -> Any:
    if isinstance(value, (tuple, list, torch.Size)) and len(value) >= 1:
        return value[0]
    return value


def _ints(module: nn.Module) -> list[int]:
    out: list[int] = []
    for t in [*module._parameters.values(), *module._buffers.values()]:
        if t is not None:
            out += list(t.shape)
    for v in vars(module).values():
        if type(v) is int:
            out.append(v)
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


def _stages(module: nn.Module) -> list[tuple[int, ...]]:
    """How many blocks each stage holds, as a tuple (ResNet's ``layers``)."""
    sizes = tuple(
        len(c._modules) for c in module.children() if isinstance(c, (nn.Sequential, nn.ModuleList))
    )
    return [sizes] if len(sizes) >= 2 else []


def _per_stage(module: nn.Module, n: int) -> list[tuple[int, ...]]:
    """For the first container of ``n`` stages: each stage's output width and its block count
    (ConvNeXt's ``dims`` and ``depths``)."""
    for c in _descendants(module, 2):
        if isinstance(c, (nn.Sequential, nn.ModuleList)) and len(c) == n:
            widths, depths = [], []
            for stage in c:
                outs = [
                    _width(v)
                    for m in stage.modules()
                    for a in ("out_channels", "out_features", "num_features", "normalized_shape")
                    if type(_width(v := m.__dict__.get(a))) is int
                ]
                inner = [
                    x for x in stage.children() if isinstance(x, (nn.Sequential, nn.ModuleList))
                ]
                widths.append(outs[-1] if outs else 0)
                depths.append(max(len(x) for x in inner) if inner else len(stage._modules))
            return [tuple(widths), tuple(depths)]
    return []


def _lengths(module: nn.Module) -> list[int]:
    """How many modules each container child holds (a stage's depth)."""
    return [
        len(c._modules)
        for c in _descendants(module, 2)
        if isinstance(c, (nn.Sequential, nn.ModuleList))
    ]


def _classes(module: nn.Module) -> list[type]:
    return [type(m) for m in module.modules() if m is not module]


# module -> configs of the models holding it, nearest first (filled by one scan of gc objects).
_holders: weakref.WeakKeyDictionary[nn.Module, list[Any]] = weakref.WeakKeyDictionary()


def _holding_configs(module: nn.Module) -> list[Any]:
    """Configs of the live modules that contain ``module`` (a transformers model holds its
    config; its layers are often given it without keeping it), smallest container first."""
    if module in _holders:
        return _holders[module]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isinstance on deprecated proxies (torch.distributed)
        holders = [
            o
            for o in gc.get_objects()
            if isinstance(o, nn.Module) and is_config(o.__dict__.get("config"))
        ]
    found: dict[nn.Module, list[tuple[int, Any]]] = {}
    for h in holders:
        subs = list(h.modules())
        for s in subs:
            found.setdefault(s, []).append((len(subs), h.__dict__["config"]))
    for s, pairs in found.items():
        _holders[s] = [c for _, c in sorted(pairs, key=lambda p: p[0])]
    return _holders.get(module, [])


def _uniq(values: list[Any], limit: int = MAX_CANDIDATES) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if not any(type(v) is type(o) and (v is o or _eq(v, o)) for o in out):
            out.append(v)
        if len(out) >= limit:
            break
    return out


def _units(row: tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    """A structure row cut into the pieces a score counts: a candidate that fixes one number of
    a layer's extra_repr (its stride, not yet its padding) scores higher than one that does not."""
    _, cls, extra, children, params, buffers = row
    return ((cls,), tuple(extra.split(", ")), children, params, buffers)


def _rank(f: Field, pools: dict[str, list[Any]]) -> tuple[bool, int]:
    """Per-stage tuples (ConvNeXt's dims, depths) shape the most: they go first; then the fields
    with the fewest candidates."""
    d = f.default
    stages = isinstance(d, tuple) and bool(d) and all(type(x) is int for x in d)
    return (not stages, len(pools[f.name]))


def _same(a: Any, b: Any) -> bool:
    return a is b or type(a) is type(b) and _eq(a, b)


def _eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return a is b


_WIDTH_WORDS = ("chs", "channels", "features", "dim", "size", "planes", "width", "classes")
_KERNEL_WORDS = ("kernel", "stride", "dilation", "padding", "patch", "img_size")


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


def _ratios(ints: list[int]) -> list[float]:
    widths = list(dict.fromkeys(i for i in ints if i > 1))[:6]
    out = []
    for a in widths:
        for b in widths:
            if a != b and (a / b) * 4 == int((a / b) * 4):
                out.append(a / b)
    return out


def candidates(module: nn.Module, f: Field, fits: Callable[[Any], bool]) -> list[Any]:
    """Plausible values for field ``f`` of ``module``, most likely first."""
    name = f.name
    low = name.lower()
    first: list[Any] = []
    own_names: set[str] = set()
    for m in [module, *_descendants(module)]:
        for a in (name, *ALIASES.get(name, ())):
            if m is module and a == name:
                continue  # the form already tried the module's own same-named attribute
            if a in m.__dict__ or (m is not module and hasattr(type(m), a)):
                first.append(_attr(m, a))
                if a == name and not first[:-1]:
                    own_names.add(a)
    pool: list[Any] = []
    numeric = f.kind in ("int", "int_or_tuple") or type(f.default) is int
    if f.kind == "literal" and not isinstance(f.value, (bool, float, str)):
        numeric = True
        if f.required:
            stages = _stages(module)
            classes = sorted(
                dict.fromkeys(_classes(module)), key=lambda c: c.__module__.startswith("torch.")
            )
            by_class = any(w in low for w in ("block", "layer", "cls", "fn", "type"))
            first += classes if by_class else stages
    if "drop" in low and f.kind != "bool":
        # Rates and probabilities: a width or a kernel size is never one; per-block rates are a
        # list as long as a stage.
        numeric = False
        if "rates" in low:
            pool = [[0.0] * n for n in dict.fromkeys(_lengths(module)) if n]
    if f.kind == "bool":
        pool = [f.value, not f.value] if isinstance(f.value, bool) else [True, False]
    elif numeric and any(w in low for w in _KERNEL_WORDS):
        pool = _sizes(module)
    elif numeric and any(w in low for w in ("depth", "layers", "blocks", "num_")):
        pool = [*_lengths(module), 0, 1, 2, 3, 4, *_ints(module)]
        if f.kind != "int":
            pool = [*_stages(module), *pool]
    elif numeric:
        ints = _ints(module)
        pool = list(reversed(ints)) if low.startswith("out") else ints
        if not any(w in low for w in _WIDTH_WORDS) and not f.required:
            pool = [0, 1, 2, *pool[:3]]
        if f.kind != "int":
            pool = [*_stages(module), *pool, *_sizes(module)]
    if isinstance(f.default, tuple) and f.default and all(type(x) is int for x in f.default):
        pool = [*_per_stage(module, len(f.default)), *pool]
    if f.kind == "float" or type(f.default) is float:
        pool = _floats(module)
        if "ratio" in low:
            pool = [*_ratios(_ints(module)), 0.0, *pool]
    elif f.kind in ("class", "callable"):
        pool = sorted(dict.fromkeys(_classes(module)), key=_class_rank(name))[:6]
    if f.kind == "literal" and (name == "config" or "config" in f.annotation.lower()):
        pool = [
            c
            for m in _descendants(module)
            if is_config(c := m.__dict__.get(name, m.__dict__.get("config")))
        ]
        pool += _holding_configs(module)
    elif f.kind == "str":
        pool = [""]
    if f.optional or f.default is None:
        pool.append(None)
    values = [v for v in [*first, *pool] if (v is not None or pool) and fits(v)]
    if not f.required or f.value is not None:
        # A child's attribute of the same name (patch_embed.img_size) beats the default.
        at = 1 if values and name in own_names and values[0] is not None else 0
        values.insert(at, f.value)
    return _uniq(values)


def infer(
    module: nn.Module,
    fields: list[Field],
    fits: Callable[[Field, Any], bool],
    make: Callable[[dict[str, Any]], nn.Module],
    also: frozenset[str] = frozenset(),
) -> Inferred:
    """Values for the guessed fields (and those named in ``also``) that rebuild ``module``
    exactly (see the module doc)."""
    searched = [f for f in fields if guessed(f) or f.name in also]
    if not searched:
        return Inferred({}, True, "")
    live = {r[0]: _units(r) for r in structure(module)}
    if also and len(live) > SMALL:
        return Inferred({}, False, "no candidate values rebuild it exactly")
    if len(live) > MAX_MODULES:
        return Inferred({}, False, f"too big to check ({len(live)} submodules)")
    best_total = sum(len(u) for units in live.values() for u in units)
    # Bounded in work, not time (the same form on any machine): fewer builds for bigger modules.
    max_builds = max(MIN_BUILDS, min(MAX_BUILDS, MODULE_BUILDS // len(live)))
    start = time.perf_counter()
    builds = 0
    last_error = ""

    def score(values: dict[str, Any]) -> int:
        nonlocal builds, last_error
        builds += 1
        try:
            with warnings.catch_warnings(), torch.device("meta"):
                warnings.simplefilter("ignore")
                built = make(values)
        except Exception as e:  # noqa: BLE001 - a candidate the class rejects scores lowest
            last_error = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
            return -1
        rows = structure(built)
        total = 0
        for r in rows:
            want = live.get(r[0])
            if want is not None:
                got = _units(r)
                total += sum(x == y for a, b in zip(want, got) for x, y in zip(a, b))
                total -= sum(abs(len(a) - len(b)) for a, b in zip(want, got))
        return total - abs(len(rows) - len(live))

    pools = {f.name: candidates(module, f, functools.partial(fits, f)) for f in searched}
    start_values = {f.name: (pools[f.name][0] if pools[f.name] else f.value) for f in searched}
    first_score = score(start_values)
    current, best = start_values, first_score
    out_of_time = False
    # Two orders from the same start: the options first (a ratio only scores once the widths it
    # multiplies hold their likely values), then the required values first.
    for required_last in (True, False):
        if best == best_total or out_of_time:
            break
        trial_best, trial_current = first_score, start_values
        order = sorted(searched, key=lambda f: (f.required == required_last, _rank(f, pools)))
        for _ in range(3):
            improved = False
            for f in order:
                for c in pools[f.name]:
                    if trial_best == best_total:
                        break
                    if _same(c, trial_current[f.name]):
                        continue
                    if builds >= max_builds or time.perf_counter() - start > MAX_SECONDS:
                        out_of_time = True
                        break
                    trial = {**trial_current, f.name: c}
                    s = score(trial)
                    if s > trial_best:
                        trial_best, trial_current, improved = s, trial, True
            if trial_best == best_total or not improved or out_of_time:
                break
        if trial_best > best:
            best, current = trial_best, trial_current
    if best == best_total:
        return Inferred(current, True, "")
    why = "no candidate values rebuild it exactly"
    if out_of_time:
        why = "no exact match was found within the search's budget"
    if best < 0 and last_error:
        why = f"building it on the meta device failed ({last_error})"
    return Inferred(current, False, why)
