"""Stage 2 of a form (``forms.py`` runs the stages): where each argument's value can come from.

A registry of sources, one file each, tried in the order of ``SOURCES`` for each parameter's
draft value (the first that answers gives the value and its origin):

1. ``recorded.py``, the recorded call: a module built while recording, or rebuilt by a form,
   has every argument on record. First: it is what was passed, and the form then needs no
   search.
2. ``recoverers.py``, torch.nn's own attributes: torch.nn classes keep some arguments in another
   form (``bias`` as a tensor or None, ``nonlinearity`` inside ``mode``), read by a function per
   class; and ``device`` / ``dtype`` from the module's tensors. Before the attributes: an
   attribute of the same name may hold the transformed value.
3. ``defaults.spread``: ``*args`` and ``**kwargs`` start empty (known for a torch.nn class,
   which takes them only to ignore or reject them).
4. ``arrays.py``: a numpy array the constructor converts itself (``torch.from_numpy(A.astype(
   ...))``), kept as a tensor under its name: that tensor as an array.
5. ``attributes.py``, the module's attributes: the same-named attribute, or a rate kept by the
   layer under the parameter's name.
6. ``defaults.py``, the default: a guess the view flags (origin "default").

For a form whose values are not all known (no record, not a torch class), ``leads`` reads what
the search (stage 3) starts from, by the sources that read the module's surroundings:

- ``factory.py``, the call that made it: the installed library's function the model is named
  after, called again on meta up to the class's constructor (a whole model's arguments; never
  a person's own code, ``installed.py``);
- ``nested.py``, a config object: a parameter that takes a small config instance is searched
  member by member (a plain dict read by string keys too, ``keyed.py``; one annotated ``dict``
  or a keywords-only class such as ``argparse.Namespace``, ``annotated.py``; a dict handed whole
  to a block of the user's starts from that block's form, ``wholes.py``); ``shipped.py``:
  configs the library ships as data;
- ``handed.py`` and ``literals.py``, how ``__init__`` uses an argument in its source: a
  ``**kwargs`` handed on to a layer, the strings a parameter is compared with; ``called.py``, a
  factory it calls (the module's functions named like it);
- ``usage.py``, how ``__init__`` uses each argument (its AST: kept under another name,
  unpacked, iterated, measured, a number, read by its fields or keys, a table's key, handed to
  a layer; the source read once, and each expression's questions, in ``code.py``; its records
  in ``uses.py``; the class's own helper methods it is handed to read as its own code,
  ``helpers.py``; a list zipped in slices read item by item, ``pairs.py``), which tells the kind of value to offer and which candidates could not be it,
  ``passed.py``, the values those uses lead to (the form of the layer it was handed to, the
  namespace the modules around keep, the table's key of the class made, what an attribute
  holds it inside), ``items.py``, a list made one layer per item read back off those layers,
  ``indexed_kept.py``, a list read only at constant places and by its length, put back
  together from the attributes and layers keeping each reading,
  ``sums.py``, the linear sums of arguments handed to layers (the rebuild search solves
  them), ``products.py``, the products of arguments handed to layers (``patch ** 2 *
  channels``: solved for their factors, the factorizations the layers cannot tell apart
  flagged), ``floored.py``, the widths handed to layers through floor divisions of arguments
  (``d * ((n_mels - 1) // 2 // 2)``: solved by evaluating them, a neighbour that makes the
  same width flagged), ``expressions.py``, those three read once per constructor, ``handed_kind.py``, an argument's kind from the blocks it is handed to, ``specs.py``, a dict of keyword dicts read back off the layers made one per entry,
  ``mapped.py``, a dict of sizes read back off the container made one layer per key,
  ``running.py``, a list of sizes an integer buffer keeps as running sums, ``shapes.py``, a
  list of sizes a buffer was made in (a sampling grid), ``inverted.py``, a number kept only
  through one step with a constant (``1.0 / x``) and the whole numbers it is compared with,
  ``keyword_dicts.py``, a value in a local dict of keywords spread into calls, ``fills.py``, a
  number a tensor is filled with, ``moduli.py``, the two sides of a remainder test ``i % k``
  (the rivals the search's settling tries), and ``branches.py``, the layers made only under a
  truth test of an argument (a search's rule moves the flag with their widths); read through
  a name of the constructor's own (``local_names.py``: a function defined inside it, a local
  name then called, ``x or []``), a name looked up with ``getattr`` (``looked_up.py``, its case
  changed first too), two arguments checked equal (``asserted.py``: the search moves them
  together), one value or a dict of one per part read back off each part's layer
  (``per_key.py``), names that choose which layers are another kind (``chosen.py``), a config member handed on whole
  (``members_handed.py``), a ``**kwargs`` handed to a torch base (``base_init.py``), keys
  popped out of a ``**kwargs`` and handed to a layer (``popped.py``), a ``**kwargs`` handed
  whole as one dict to a block's parameter (``kwargs_whole.py``) and a width started at one
  argument that an optional one is added to where given (``accumulated.py``: a search's rule
  moves both) and a layer registered under a name written beside it (``named.py``:
  ``OrderedDict([("body", net)])`` handed to a container base, ``add_module("dec", dec)``);
- ``periods.py``, the period of a stack whose every k-th item holds other children;
- ``children.py`` and the readers beside it, the children's structure: widths, kernel sizes,
  per-stage lists, block descriptions, a network's layers, the module's place;
- ``pools.py`` puts every field's readings in the order the search tries them.

Stage 2 hands down plain records: ``Draft`` (every field's value, kind and origin) and
``Leads`` (the search's fields, candidates and readings). It never builds the class: that is the
search's (stage 3) and the gate's (stage 4).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..field import Child, Field, guessed, make_field
from ..kinds import KindInfo
from ..rebuild.compare import floating_dtype
from ..rebuild.parts import Parts, parts
from ..signature import Constructor
from ..validate import check_type, may_try
from ..values import to_text
from . import arrays, attributes, defaults, recorded, recoverers
from .asserted import equal_pairs
from .branches import tested
from .called import file_factories
from .factory import started_from
from .handed import handed, kept_whole, spread_bare, spread_calls
from .handed_kind import takes_floats
from .kwargs_whole import handed_whole
from .layout import Layout
from .layout import read as read_layout
from .literals import compared_strings
from .looked_up import spellings
from .moduli import moduli
from .nested import Group, namespace, nest
from .passed import handed_rivals, handed_starts, holders, memoized
from .per_key import alike as per_key_alike
from .pools import candidates
from .popped import popped
from .scan import LIVE
from .usage import Usage, usage
from .usage import fits as uses_fit
from .wholes import started

__all__ = ["SOURCES", "Draft", "Leads", "Source", "draft", "leads", "searched"]


@dataclass(frozen=True)
class Ask:
    """What a source is asked: one parameter of a live module's constructor, with what the
    sources before it read once for all parameters (the record, torch.nn's derived values)."""

    module: nn.Module
    param: inspect.Parameter
    recorded: inspect.BoundArguments | None
    derived: dict[str, Any]
    torch_class: bool


@dataclass(frozen=True)
class Source:
    """A source in the registry: its name, what it reads (``read(ask) -> (value, origin)`` or
    None to pass), and why it stands where it does."""

    name: str
    read: Callable[[Ask], tuple[Any, str] | None]
    why: str


def _recorded(a: Ask) -> tuple[Any, str] | None:
    return recorded.draft(a.recorded, a.param) if a.recorded is not None else None


def _derived(a: Ask) -> tuple[Any, str] | None:
    return recoverers.draft(a.module, a.param, a.derived)


def _spread(a: Ask) -> tuple[Any, str] | None:
    return defaults.spread(a.param, a.torch_class)


def _array(a: Ask) -> tuple[Any, str] | None:
    return arrays.draft(a.module, a.param)


def _attribute(a: Ask) -> tuple[Any, str] | None:
    return attributes.draft(a.module, a.param)


def _default(a: Ask) -> tuple[Any, str] | None:
    return defaults.draft(a.param)


SOURCES: tuple[Source, ...] = (
    Source("recorded", _recorded, "what was passed; with a record every value is known"),
    Source("recoverers", _derived, "torch.nn keeps some arguments transformed under their name"),
    Source("spread", _spread, "*args / **kwargs hold nothing under a name of their own"),
    Source("arrays", _array, "a numpy array the constructor converts is kept as a tensor"),
    Source("attributes", _attribute, "a constructor keeps most arguments under their own name"),
    Source("defaults", _default, "nothing read: the default, as a guess"),
)


@dataclass
class Draft:
    """What stage 2 hands down for every form: one field per parameter with its draft value,
    kind (``infos``) and origin; ``notes`` says why a recorded value is the live object."""

    constructor: Constructor
    fields: list[Field]
    infos: dict[str, KindInfo]
    recorded: bool = False
    notes: dict[str, str] = field(default_factory=dict)


@dataclass
class Leads:
    """What the search (stage 3) starts from: its ``fields`` (the form's, holding the values of
    the function the model is named after, config arguments replaced by their members) and their
    kinds; the config arguments made again from those members (``groups``; ``configs``: the
    module's own); a ``**kwargs`` handed on to a layer (``spread``) and the keywords it most
    likely held (``kept``); each movable field's candidates (``pools``), the strings each string
    field is compared with (``modes``), the module's shapes (``layout``), its parts (``live``),
    its floating dtype and how the constructor uses each field (``uses``, ``usage.py``)."""

    fields: list[Field]
    infos: dict[str, KindInfo]
    groups: list[Group]
    configs: set[str]
    spread: str | None
    kept: dict[str, Any] | None
    pools: dict[str, list[Any]]
    modes: dict[str, tuple[str, ...]]
    layout: Layout
    live: Parts
    dtype: torch.dtype | None
    uses: dict[str, Usage] = field(default_factory=dict)
    # A factory each called field may be (``called.py``): another that rebuilds as exactly as the
    # one found leaves it a flagged guess (``candidates/ambiguous.py``).
    alike: dict[str, list[Any]] = field(default_factory=dict)
    # Pairs read only as ``i % k`` (``moduli.py``): rivals the settling tries.
    remainders: tuple[tuple[str, str | int], ...] = ()
    # Parameters read only inside an ``if``'s or a ``while``'s test (``branches.py``): a number
    # the search found there is tried one above and below by the settling.
    tested: frozenset[str] = frozenset()
    # Pairs of arguments the constructor checks are equal (``asserted.py``): moved together.
    ties: tuple[tuple[str, str], ...] = ()
    # Where the search starts a field at its default that was handed to a layer the module
    # keeps: the value that layer's own form found (``passed.handed_starts``).
    starts: dict[str, Any] = field(default_factory=dict)


def draft(ctor: Constructor) -> Draft:
    """Every parameter's draft value, from the first source in ``SOURCES`` that reads it."""
    cls, sig, module = ctor.cls, ctor.signature, ctor.module
    fields: list[Field] = []
    infos: dict[str, KindInfo] = {}
    if module is None:
        for p in sig.parameters.values():
            value: Any = defaults.spread(p, False) or defaults.draft(p)
            f, infos[p.name] = _field_of(cls, p, value[0], "default")
            fields.append(f)
        return Draft(ctor, fields, infos)
    rec = recorded.read(module, sig)
    derived: dict[str, Any] = {}
    if rec is None:
        try:
            derived = recoverers.derived_values(module)
        except Exception:  # noqa: BLE001 - a subclass without the attributes torch sets
            derived = {}
    torch_class = type(module).__module__.startswith("torch.nn")
    for p in sig.parameters.values():
        ask = Ask(module, p, rec, derived, torch_class)
        value, origin = next(got for s in SOURCES if (got := s.read(ask)) is not None)
        f, info = _field_of(cls, p, value, origin)
        if origin == "attribute" and (
            check_type(f, info, value) is not None
            or not uses_fit(usage(cls, p.name), value, bool(f.annotation))
            or attributes.set_apart(cls, p.name)
        ):
            # A same-name attribute that does not fit the parameter (a submodule where a class
            # is expected, the layer made from a key looked up in a table: ``usage.py``), or that
            # the constructor sets apart from it (``self.mlp_dim = 1024``), is not the
            # constructor value; show the default as a guess.
            f, info = _field_of(cls, p, *defaults.draft(p))
        if info.kind == "class" and not f.annotation and _counts(usage(cls, p.name)):
            # Named like a layer factory (``n_layer``), but the constructor counts with it
            # (``range(n_layer)``): a number, offered the numbers a layer factory is not.
            info = KindInfo("literal", optional=info.optional)
            f = dataclasses.replace(f, kind="literal", choices=(), text=to_text("literal", f.value))
        fields.append(f)
        infos[p.name] = info
    notes = recorded.notes(module) if rec is not None else {}
    return Draft(ctor, fields, infos, rec is not None, notes)


def _field_of(cls: type, p: inspect.Parameter, value: Any, origin: str) -> tuple[Field, KindInfo]:
    """``make_field``, where an argument whose default says int (``dropout=0``) but which the
    constructor hands on to a float (``handed_kind.takes_floats``: ``nn.Dropout(dropout)``) is a
    float field: an int field would refuse the 0.1 a person types. (The draft's kind stays the
    field's when the search finds its value: ``_forms/exact/``.)"""
    f, info = make_field(cls, p, value, origin)
    if info.kind == "int" and not f.annotation and takes_floats(usage(cls, p.name)):
        info = dataclasses.replace(info, kind="float")
        f = dataclasses.replace(f, kind="float")
    return f, info


def _counts(u: Usage) -> bool:
    """A number by its uses (``range(x)``, ``x - 1``), never called nor iterated."""
    return u.number and not u.called and not u.sequence and not u.tested


def _spread_start(
    cls: type, module: nn.Module, f: Field, child: Child, alike: dict[str, list[Any]] | None = None
) -> Field:
    """``f`` started from the keywords the layer its ``**f`` made holds (``handed.py``); where
    those rebuild no better than others, ``alike`` gets them (``ambiguous.py`` flags the field)."""
    if f.kind == "varkw" or "." in f.name or f.value is not None or not guessed(f):
        return f
    if len(spread_calls(cls, f.name)) != 1:
        # Spread into several calls (timm's ``conv_kwargs`` into every ConvNormAct), each
        # passing other keywords itself: which layer a call made is not known, and a layer
        # another call made would start the search from the keywords that call passes.
        return f
    kept = handed(cls, module, f.name, child)
    if kept == {} and spread_bare(cls, f.name) and alike is not None:
        # ``Layer(d, **fourier)`` made (under ``if fourier is not None``): not None, though its
        # layer shows every keyword at its default; which of them were given is not known, so
        # the layer's every keyword rebuilds as exactly (``ambiguous.py`` flags the field).
        alike[f.name] = [kept, handed(cls, module, f.name, child, every=True)]
    elif not kept:
        return f
    return dataclasses.replace(f, value=kept, text=to_text(f.kind, kept))


def searched(d: Draft) -> bool:
    """Whether the form's values must be searched: a live module of a class that is not
    torch's (whose values its attributes give exactly), with no record."""
    ctor = d.constructor
    return (
        ctor.module is not None and not d.recorded and not ctor.cls.__module__.startswith("torch.")
    )


def _movable(f: Field) -> bool:
    """A field the search may move: a guess, or a value read from an attribute or derived (it
    may hold what the constructor transformed, or what a later argument overrides)."""
    if guessed(f):
        return True
    plain = f.kind not in ("varargs", "varkw", "config") and f.name not in ("device", "dtype")
    return plain and f.origin in ("attribute", "derived")


def _called(cls: type, name: str) -> bool:
    return "." not in name and usage(cls, name).called


def _named(
    cls: type, sig: inspect.Signature, module: nn.Module, fields: list[Field]
) -> dict[str, list[Any]]:
    """The strings a name is compared with where the module keeps the object it names under
    its name (``attributes.named_object``): two names of one function rebuild alike, so the one
    found is flagged where another does."""
    out: dict[str, list[Any]] = {}
    for f in fields:
        p = sig.parameters.get(f.name)
        # ``attr``: a property that raises holds nothing
        if p is not None and attributes.named_object(p, attributes.attr(module, f.name)):
            words = list(compared_strings(cls, f.name))
            if len(words) > 1:
                out[f.name] = words
    return out


def _cased(cls: type, module: nn.Module, fields: list[Field]) -> dict[str, list[Any]]:
    """The spellings of a name the constructor changes the case of before it looks it up
    (``looked_up.spellings``), or hands to a layer of its own that does (``Listener(rnn)``
    making ``pBLSTM(rnn)``: the layer's own lookup): each rebuilds alike, so the one found is
    flagged."""
    out: dict[str, list[Any]] = {}
    for f in fields:
        if "." in f.name:
            continue
        words = spellings(cls, module, f.name)
        for h in usage(cls, f.name).handed if not words else ():
            layer = getattr(module, h.kept, None) if h.kept else None
            if (
                isinstance(layer, nn.Module)
                and isinstance(h.callee, type)
                and isinstance(layer, h.callee)
            ):
                words = words or spellings(h.callee, layer, h.param)
        if words:
            out[f.name] = words
    return out


def _parts_alike(
    cls: type, module: nn.Module, fields: list[Field], form: Child
) -> dict[str, list[Any]]:
    """One value, or a dict of it per part, where every part holds the same (``per_key.py``):
    both rebuild alike, so the one found is flagged."""
    out: dict[str, list[Any]] = {}
    for f in fields:
        u = usage(cls, f.name) if "." not in f.name else Usage()
        if u.tested and u.keys and (both := per_key_alike(cls, module, f.name, form)):
            out[f.name] = both
    return out


def leads(d: Draft, ceiling: float, child: Child) -> Leads:
    """What the search starts from (see ``Leads``); ``ceiling`` is the form's safety ceiling
    (the thread's CPU time), ``child`` opens a layer's own form (the pipeline's ``form``)."""
    ctor = d.constructor
    cls, sig, module = ctor.cls, ctor.signature, ctor.module
    assert module is not None
    # A whole model's guessed values start from the function it is named after (``factory.py``).
    start, named = started_from(module, cls, sig, d.fields, guessed, ceiling)
    # Config arguments are searched member by member (``nested.py``); a namespace read field by
    # field too, where no object around holds those fields (a library's config, a namespace the
    # model's root keeps: those are candidates whole, ``pools.py``).
    searched = {f.name for f in start if guessed(f)}
    spaces = {f.name for f in start if f.name in searched and namespace(cls, f)}
    if spaces and not LIVE.holding_configs(module):  # the scan only where a namespace is read
        spaces = {n for n in spaces if not holders(module, usage(cls, n))}
    else:
        spaces = set()
    nested = nest(cls, sig, start, d.infos, searched, spaces)
    # A dict of keywords spread into a layer's call (``partial(Block, **(cfg or {}))``) starts,
    # as a ``**kwargs`` does below, from what that layer's form holds beyond what the call
    # passes (``handed.py``); still a guess the search may move.
    opened: dict[str, list[Any]] = {}
    nested.fields = [_spread_start(cls, module, f, child, opened) for f in nested.fields]
    # A dict handed whole to a block of the user's starts from that block's form (``wholes.py``).
    nested.fields = started(module, nested.groups, nested.fields, child)
    infos = {**d.infos, **nested.infos}
    # A **kwargs handed on to a layer starts from what that layer holds (``handed.py``).
    spread = next(
        (f for f in nested.fields if f.kind == "varkw" and f.origin == "default" and not f.value),
        None,
    )
    kept = None
    if spread is not None:
        kept = named.get(spread.name) or handed(cls, module, spread.name, child)
        kept = kept or kept_whole(module, usage(cls, spread.name))  # self.kwargs = kwargs
        # Handed whole, as one dict, to a block's parameter (``kwargs_whole.py``).
        kept = kept or handed_whole(cls, module, spread.name, child)
        # Keys popped out of it and handed to a layer of their own (``popped.py``).
        kept = {**popped(cls, module, spread.name, child), **(kept or {})} or kept
    once = memoized(child)  # a layer's form read once for every argument handed to it
    pools = {
        f.name: candidates(module, f, functools.partial(may_try, infos, f), child, once)
        for f in nested.fields
        if _movable(f)
    }
    modes = {f.name: compared_strings(cls, f.name) for f in nested.fields if f.kind == "str"}
    uses = {f.name: usage(cls, f.name) for f in nested.fields if "." not in f.name}
    return Leads(
        nested.fields,
        infos,
        nested.groups,
        nested.names,
        spread.name if spread is not None else None,
        kept,
        pools,
        modes,
        read_layout(module),
        parts(module),
        floating_dtype(module),
        uses,
        {f.name: file_factories(cls, f.name) for f in nested.fields if _called(cls, f.name)}
        | opened
        | _cased(cls, module, nested.fields)
        | _named(cls, sig, module, nested.fields)
        | _parts_alike(cls, module, nested.fields, once)
        | handed_rivals(module, nested.fields, uses, once),
        moduli(cls),
        tested(cls),
        equal_pairs(cls),
        handed_starts(module, nested.fields, uses, once),
    )
