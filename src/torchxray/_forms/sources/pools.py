"""The order of each field's candidates: the readings of the sources (this package's rule files)
put in the order the search (``_forms/candidates/``) tries them, most likely first, at most
``MAX_CANDIDATES`` (each costs a build).

The order, and why (``candidates``):

0. what the constructor's uses of the argument lead to (``usage.py`` reads them, ``passed.py``
   follows them): the attribute it was kept under, a table's key, a namespace read by its
   fields, the value of the layer it was handed to, and for a sequence it iterates or measures
   the widths its layers come in; first where nothing annotates the argument (code written by
   hand, where they are the best reading there is), last where an annotation does (the order
   below was tuned on annotated library code). A candidate no use allows (an int for an
   argument it iterates) is not offered at all;
1. the field's own draft value (first, or second after the module's nearest layer's attribute
   of the same name: a child's ``patch_embed.img_size`` beats a default);
2. a network's layers gathered (``gathered.py``) and block descriptions read back from the
   blocks' own forms, per-stage config objects, classes and lists (``blocklists.py``,
   ``stageconfigs.py``), for a required value nothing holds: they rebuild a whole model at once;
3. configs the installed library ships (``shipped.py``): a whole model's arguments by name;
4. per-stage lists off the model's stages (``stagelists.py``) and per-item widths of a
   container (``layout.py``), for a required plural number;
5. same-named attributes of the module's layers (``attributes.py``), a list kept as a tensor
   of another shape as the lists it may have been (``tensor_lists.py``), then the classes or
   stages of its children for a required value that names a layer or a count;
6. the field's pool by its kind and name (``_shape_pool``, ``_kind_pool``): widths, kernel sizes,
   depths and per-stage tuples from the children's structure (``children.py``, ``layout.py``),
   floats and ratios, layer classes ranked by the parameter's name, configs of the layers and
   of the models around the module (``scan.py``), the strings the constructor compares the
   parameter with (``literals.py``), drop rates, the class of a layer kept under the
   parameter's name, one value per layer for a plural name, a config's per-stage list at the
   module's place and the module's place itself (``position.py``), and None where allowed.

Each step's readings come from one source; the order between them is the search's experience
(the forms sweep, ``bench/forms_sweep.py``): measure it there before changing it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from ..._signature import resolve
from ..._unwrap import original_class
from ..configs import is_config
from ..field import Child, Field, guessed
from ..values import same_value
from . import children, layout
from .attributes import attr, same_named
from .blocklists import described
from .called import called_factories
from .chosen import chosen
from .fills import filled
from .gathered import gathered
from .indexed_kept import indexed_kept
from .inverted import compared_ints, counted_back, inverted
from .items import items_of
from .literals import compared_strings
from .looked_up import looked_up
from .mapped import mapped as read_mapped
from .members_handed import handed_member
from .named import registered
from .nested import config_class
from .passed import handed, holders, kept, keys
from .per_key import offered, per_key
from .periods import periods
from .position import config_items, index_like, ordinals
from .running import running
from .scan import LIVE
from .shapes import shapes
from .shipped import shipped
from .specs import specs
from .stagelists import stage_lists
from .tensor_lists import as_lists
from .usage import Usage, usage
from .usage import fits as uses_fit

__all__ = ["MAX_CANDIDATES", "candidates"]

# Candidate values per field, likeliest first: the search tries them one build each when the
# rules' proposals are spent (``_forms/candidates/loop.py``), so a long list spends the budget
# on unlikely values. Set on the forms sweep with the search's other constants
# (``_forms/candidates/tuning.py``).
MAX_CANDIDATES = 10


def _uniq(values: list[Any], limit: int = MAX_CANDIDATES) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if not any(same_value(v, o) for o in out):
            out.append(v)
        if len(out) >= limit:
            break
    return out


_WIDTH_WORDS = ("chs", "channels", "features", "dim", "size", "planes", "width", "classes")
_KERNEL_WORDS = ("kernel", "stride", "dilation", "padding", "patch", "img_size")
# A whole network handed to a constructor that keeps its layers (``gathered.py``).
_NETWORK_WORDS = ("model", "backbone", "net", "body", "trunk", "encoder", "features")

# A count of blocks or layers: a depth (``block_per_stage``, ``layer_per_block`` count too).
_DEPTH_WORDS = ("depth", "layers", "blocks", "num_", "_per_")


def _dropping(low: str) -> bool:  # a rate by its name (drop_path_rate, stochastic_depth_prob)
    return "drop" in low or "stochastic_depth" in low


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
            stages = layout.stages(module)
            classes = sorted(
                dict.fromkeys(children.classes(module)),
                key=lambda c: c.__module__.startswith("torch."),
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
            pool = [[0.0] * n for n in dict.fromkeys(layout.lengths(module)) if n]
    if f.kind == "bool":
        pool = [f.value, not f.value] if isinstance(f.value, bool) else [True, False]
    elif numeric and any(w in low for w in _KERNEL_WORDS):
        # A size no layer keeps may still be read from the shapes of the tensors (eye(k)).
        pool = (
            children.sizes(module)
            or children.ints(module)
            or [d for t in module.buffers() for d in children.dims(t)]
        )
    elif numeric and any(w in low for w in _DEPTH_WORDS):
        pool = [*layout.lengths(module), 0, 1, 2, 3, 4, *children.ints(module)]
        if f.kind != "int":
            pool = [*layout.stages(module), *pool]
    elif numeric:
        ints = children.ints(module)
        pool = list(reversed(ints)) if low.startswith("out") else ints
        if not any(w in low for w in _WIDTH_WORDS) and not f.required:
            pool = [0, 1, 2, *pool[:3]]
        if not any(w in low for w in _WIDTH_WORDS):
            pool = [*periods(module), *pool]  # every k-th layer made otherwise (periods.py)
        if f.kind == "literal" and f.required and any(w in low for w in _WIDTH_WORDS):
            pool = [
                *pool,
                *layout.stages(module),
                *layout.child_widths(module),
                *children.sizes(module),
            ]
        elif f.kind == "literal" and not plural:
            pool = [
                *pool,
                *layout.stages(module),
                *layout.child_widths(module),
                *children.sizes(module),
            ]
        elif f.kind != "int":
            pool = [
                *layout.stages(module),
                *layout.child_widths(module),
                *pool,
                *children.sizes(module),
            ]
        if f.kind == "int_or_tuple":
            pool = [*pool[:2], *layout.tuples(module), *pool[2:]]
            if any(w in f.annotation.lower() for w in ("list", "sequence")):
                # A list of widths: one per item of a container, before any single width.
                # Either way round: a pyramid's layers are made from the list reversed.
                items = layout.per_item(module)
                first = [*items, *(w[::-1] for w in items if w != w[::-1]), *first]
    if isinstance(f.default, tuple) and f.default and all(type(x) is int for x in f.default):
        pool = [*layout.per_stage(module, len(f.default)), *pool]
    elif f.required and f.value is None and f.kind == "int_or_tuple":
        # A per-stage tuple with no default to tell its length: each stage container's widths
        # and depths (a cfg's depths=(2, 2, 2, 2), channels=(256, 512, 1024, 2048)).
        lens = [n for n in dict.fromkeys(layout.lengths(module)) if n > 1]
        readings = [*layout.runs(module), *(r for n in lens for r in layout.per_stage(module, n))]
        deep = any(w in low for w in _DEPTH_WORDS)
        readings = readings[1::2] + readings[::2] if deep else readings
        pool = [*layout.stages(module), *readings, *pool] if deep else [*readings, *pool]
    if f.required and f.value is None and f.kind == "int_or_tuple" and plural:
        # A whole model's per-stage lists (``stagelists.py``): depths first, or widths first
        lists = stage_lists(module)  # for a width's name
        wide = any(w in low for w in _WIDTH_WORDS)
        first = [*(lists[1:] + lists[:1] if wide else lists), *first]
    if isinstance(f.value, (tuple, list)) and f.value:
        # Per-stage values (block types, widths) as long as a stage container of the module.
        pool = [*layout.resized(module, f.value), *pool]
    return pool, first


def _classes(module: nn.Module, f: Field, name: str, needs: tuple[str, ...] = ()) -> list[Any]:
    """The classes of the module's layers, the likeliest for a layer factory ``name`` first;
    with ``needs``, those with every attribute the constructor reads off it (``block.expansion``,
    in a helper method too: the others are no candidates, ``usage.fits``)."""
    # A layer a factory makes is mostly one without children (a norm, not a conv-norm block).
    leaves = {type(m) for m in module.modules() if not m._modules}
    rank = children.class_rank(name)
    named = children.annotated(f.annotation)
    found = children.classes(module)
    pool = sorted(
        dict.fromkeys(c for c in found if all(hasattr(c, a) for a in needs)),
        key=lambda c: (not named(c), rank(c), c not in leaves),
    )
    return pool[:6]


def _kind_pool(
    module: nn.Module, f: Field, name: str, pool: list[Any], needs: tuple[str, ...] = ()
) -> list[Any]:
    """``pool`` replaced or extended by the field's kind: floats, classes, configs, strings, drop
    rates, a layer held under the parameter's name, one value per layer, config items,
    ordinals, None."""
    low = name.lower()
    if f.kind == "float" or type(f.default) is float:
        pool = children.floats(module)
        if "ratio" in low:
            pool = [*children.ratios(children.ints(module)), 0.0, *pool]
        if f.required:
            pool = [1.0, *pool]  # a multiplier or a ratio that leaves widths as they are
    elif f.kind in ("class", "callable"):
        pool = _classes(module, f, name, needs)
    if f.kind == "literal" and (name == "config" or "config" in f.annotation.lower()):
        pool = [
            c
            for m in layout.descendants(module)
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
    elif f.kind == "literal" and not f.annotation:
        # Nothing says its kind (no annotation, no string default: ``padding_type`` given by
        # every caller), but the constructor compares it with strings (``if activate ==
        # "relu"``): those strings, before the widths the module's layers show.
        pool = [*compared_strings(original_class(type(module)), name), *pool]
    if _dropping(low) and f.kind != "bool":
        pool = [*layout.drop_rates(module), *pool]
        if f.kind == "literal":
            # A rate nothing annotates: the rates its layers keep (a Dropout's p), or none.
            pool = [*pool, *children.floats(module), 0.0]
        if "rate" in low or "depth_prob" in low:
            # Per-block rates rise to the given rate: the last block's, 0.1 read as 0.0999...9.
            top = max((r for rs in layout.drop_rates(module, None) for r in rs), default=0.0)
            top = top if f.kind == "float" or type(f.default) is float else 0.0
            pool = [*dict.fromkeys([float(f"{top:.12g}"), top]), *pool] if top else pool
    if isinstance(f.value, nn.Module):
        # A layer kept under the parameter's name was often made from what was passed: its class,
        # or the name a registry maps to it ("gelu" for GELUActivation).
        word = type(f.value).__name__.lower().removesuffix("activation")
        pool = [type(f.value), *([word] if word else []), *pool]
    if f.kind in ("int_or_tuple", "literal") and name.endswith("s") and not name.endswith("ss"):
        # One value per layer (dilations from each conv's dilation).
        pool = [*layout.per_layer(module, name[:-1]), *pool]
    if f.required and f.value is None:
        pool = [*config_items(module, name), *pool]  # hidden_sizes=config.hidden_sizes[idx]
    if f.kind in ("int", "literal") and index_like(name) and not f.choices:
        pool = [*ordinals(module), *pool]  # a stage given its own number (stage_idx)
    if f.optional or f.default is None:
        pool.append(None)
    return pool


def _keyed_use(module: nn.Module, f: Field) -> Usage:
    """How the constructor uses a key of a dict it reads by keys (``cfg["units"]``: iterated,
    handed to a layer), or a field of a namespace (``args.hidden_sizes``), as it would the
    argument itself; nothing for a config class's member (its readings are tuned apart)."""
    cls = original_class(type(module))
    param, *path = f.name.split(".")
    whole = usage(cls, param)
    if not whole.keys and not (whole.fields and _unclassed(cls, param)):
        return Usage()
    return usage(cls, param, tuple(path))


def _unclassed(cls: type, param: str) -> bool:
    """Whether the parameter takes no config class (``nested.config_class``): a namespace."""
    try:
        p = resolve(cls).parameters[param]
    except (TypeError, ValueError, KeyError):
        return False
    return config_class(p, p.default if p.default is not p.empty else None) is None


def candidates(
    module: nn.Module,
    f: Field,
    fits: Callable[[Any], bool],
    child: Child | None = None,
    handed_to: Child | None = None,
) -> list[Any]:
    """Plausible values for field ``f`` of ``module``, most likely first; ``child(layer)`` opens
    a layer's own form (the pipeline's ``form``), for a block's description; ``handed_to``
    opens the form of a layer an argument was handed to (``passed.memoized``: once a layer,
    within its share of the budget)."""
    name = f.name.rpartition(".")[2]  # a config's field is named as its class names it
    low = name.lower()
    # How the constructor uses the argument (``usage.py``): what it leads to first
    # (``passed.py``), and only the values it could take.
    use = usage(original_class(type(module)), name) if "." not in f.name else _keyed_use(module, f)
    # A dict's key is annotated by the reading (``nested._leaf``), not by a person.
    noted = bool(f.annotation) and not ("." in f.name and use.known)
    read: list[Any] = []
    sure: list[Any] = []  # the argument itself, kept as it was given: first, annotated or not
    if use.known:
        sure = kept(module, use)
        # A list made one layer per item (``nn.Embedding(cards[i], d)``): its items off those
        # layers (``items.py``), as a tuple where its default or value is one; where nothing
        # annotates it (an annotated one's failed builds say more: ``failed.py``).
        tupled = isinstance(f.default, tuple) or isinstance(f.value, tuple)
        found = items_of(module, use) if not noted else []
        listed_items = [tuple(v) if tupled else v for v in found]
        read = [*listed_items, *keys(module, name, use), *holders(module, use)]
        if use.counts and f.value is None and not noted and f.kind in ("int", "literal"):
            # The count of a loop ``range(x - k)`` nothing keeps: a container's length plus k
            # (``range(layer_size - 1)`` filling ``blocks``: its length 0 says 1), before the
            # widths a number is otherwise offered (a count too large builds too much).
            lens = dict.fromkeys(layout.lengths(module))
            read += [n + k for k in use.counts for n in lens if n + k > 0]
        if f.value is None and guessed(f) and not noted:
            # A factory it calls (``called.py``: conv=default_conv): what the author wrote,
            # before a torch class that makes the same layers.
            read += called_factories(module, original_class(type(module)), name, use)
        if use.called and f.kind == "literal" and not noted:
            # Called (``norm(ch)``, in a helper method too) and nothing says what it takes: a
            # layer factory, the classes of its layers.
            read += _classes(module, f, name, use.fields)
        if guessed(f) and not noted:
            # A layer's form costs builds: read where nothing annotates the argument.
            read += handed(module, use, handed_to or child)
        listed = isinstance(f.default, (tuple, list)) or isinstance(f.value, (tuple, list))
        if use.sequence and not use.number and not listed and not use.tested and not noted:
            # A sequence it iterates or measures, which neither its default nor its value
            # says (the pools below then offer numbers): the widths or lengths its layers
            # come in.
            items = layout.per_item(module, across=True)
            read += [*items, *(w[::-1] for w in items), *layout.stages(module)]
            read += [*layout.child_widths(module), *layout.tuples(module)]
            read += running(module)  # sizes kept as running sums (``running.py``)
            read += shapes(module)  # sizes a tensor it keeps was made in (``shapes.py``)
    first, own_names = same_named(module, f, name)
    first = [*first, *as_lists([attr(module, name), *first], use)]  # tensor_lists.py
    pool, first = _shape_pool(module, f, name, first)
    pool = _kind_pool(module, f, name, pool, use.fields)
    first = [*shipped(module, name), *first] if "." not in f.name else first  # shipped.py
    if f.required and f.value is None and "." not in f.name:
        first = [*described(module, name, child), *first]  # blocks' descriptions (blocklists.py)
        if any(w in low for w in _NETWORK_WORDS):  # a network (gathered.py), not one layer
            first = [*gathered(module, name), *first]
    # None for a required field only where the annotation allows it: ``fits`` lets the guide
    # propose it (``_forms/candidates/rules/unset_width.py``), an attribute that holds None is no candidate.
    # The uses' readings lead where nothing annotates the argument (code written by hand); an
    # annotated one keeps the order the readings above were tuned in, its uses' readings last.
    first, pool = ([*read, *first], pool) if not noted else (first, [*pool, *read])
    first = [*sure, *first]
    first = [*first, *indexed_kept(original_class(type(module)), module, name, f.default)]
    if "." not in f.name:  # a layer registered under a name written beside it (named.py)
        first = [*registered(original_class(type(module)), module, name), *first]
    if "." not in f.name and f.value is None and f.kind in ("int", "float", "literal"):
        # A number kept only through a step with a constant (``self.factor = 1.0 / x``), then
        # the whole numbers it is compared with (``if ndims == 3``): ``inverted.py``.
        cls = original_class(type(module))
        first = [*inverted(cls, module, name), *first, *compared_ints(cls, name)]
        # A depth made a count of blocks (``(depth - 4) // 6``), from the stacks' lengths.
        first = [*first, *counted_back(cls, module, name)]
    if "." not in f.name:  # the name a getattr(torch, act) looked up (``looked_up.py``)
        first = [*looked_up(original_class(type(module)), module, name), *first]
    like = f.value if f.value is not None else f.default  # names that chose layers: chosen.py
    first = [*chosen(original_class(type(module)), module, f.name, like), *first]
    if "." in f.name and guessed(f):  # a member of a config handed on whole (members_handed.py)
        # (through ``handed_to``: a child's form within its budget share, its failure caught)
        first = [
            *handed_member(module, original_class(type(module)), f.name, handed_to or child),
            *first,
        ]
    if not noted and "." not in f.name:
        # A dict of keyword dicts, one layer made per entry (``specs.py``): read off those
        # layers, it comes before the blocks a required argument's description reads.
        mapped = specs(original_class(type(module)), module, name, handed_to or child)
        first = [mapped, *first] if mapped else first
    if use.tested and use.keys and "." not in f.name and not noted:
        # One value, or a dict of one per part read by its keys (``per_key.py``): the dict off
        # the layers each part went to, first (the plain value is the draft already).
        parts = offered(per_key(original_class(type(module)), module, name, handed_to or child))
        first = [parts, *first] if parts is not None else first
    # A dict iterated to make one layer per key (``mapped.py``): read back off those layers.
    first = [*read_mapped(original_class(type(module)), module, f.name), *first]
    if f.kind in ("float", "literal"):  # a tensor filled with it (``fills.py``)
        first = [*filled(original_class(type(module)), module, f.name), *first]
    unset = bool(pool) and (f.optional or not f.required)
    values = [
        v
        for v in [*first, *pool]
        if (v is not None or unset) and fits(v) and uses_fit(use, v, noted)
    ]
    if f.kind == "int":
        # ``fits`` lets an int field try a tuple the guide reads off its layers; kernel sizes
        # and strides kept as tuples are not worth a build each.
        values = [v for v in values if not isinstance(v, tuple)]
    if (not f.required or f.value is not None) and uses_fit(use, f.value, noted):
        # A child's attribute of the same name (patch_embed.img_size) beats the default.
        at = 1 if values and name in own_names and values[0] is not None and not read else 0
        values.insert(at, f.value)
    return _uniq(values)
