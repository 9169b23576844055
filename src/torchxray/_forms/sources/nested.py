"""Config arguments searched field by field: a parameter that takes an instance of a plain class
(a dataclass, or an object made from a few named values: torchvision's ``cnf``, timm's cfg
dataclasses) is replaced, for the search, by one field per argument of that class's constructor
(``cnf.kernel``, ``cnf.stride``, ...); each build makes the instance from them. The module keeps
no such object, but its layers keep what the constructor read from it, so the sub-fields are found
like any other argument: from the children's attributes and the differences of each build.

A namespace nothing annotates is searched the same way, by the fields the constructor reads off
it (``usage.py``: ``cfg.kernel``, ``cfg.model.encoder.channels``, and what a class of the user's
it is handed to whole reads): one field per field read, a ``SimpleNamespace`` made again for
each build (``namespace``, ``_space``); and a plain dict read by constant string keys
(``cfg["stem_w"]``, ``cfg.get("block", "x")``, ``cfg["enc"]["dim"]``: ``keyed.py`` reads them
and says what each key stands for), one field per key, a ``dict`` made again (``_dict_space``).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..._signature import resolve
from ..._unwrap import torch_own
from ..configs import is_config
from ..field import Field
from ..kinds import KindInfo, ann_text, kind_of
from ..values import to_text
from .annotated import bag, dict_annotation, looked_up
from .keyed import Keys, keys_of, reads_at, table_keys
from .literals import compared_strings
from .usage import usage

__all__ = ["Group", "Nested", "config_class", "namespace", "nest"]

MAX_ARGS = 24  # a class with more arguments than this is no small config: left whole
MAX_DEPTH = 2  # a config inside a config is expanded too, once
_MISSING = inspect.Parameter.empty


@dataclass
class Group:
    name: str  # the dotted name of the argument the instance is passed as ("cfg.stem")
    cls: type
    subs: list[str] = field(default_factory=list)  # dotted names, constructor order
    # Of a dict read by keys: the keys its constructor tests (``"k" in cfg``), left out of the
    # dict made where their value is None (``keyed.py``).
    optional: frozenset[str] = frozenset()
    # Of a dict read by keys: the classes of the user's it is handed to whole, with the
    # parameter that takes it (``QFormerLayer(cfg, i)``): their layers' forms hold it
    # (``wholes.py``).
    handed: tuple[tuple[type, str], ...] = ()


@dataclass
class Nested:
    """The search's fields (config arguments replaced by their sub-fields), their kinds, and the
    config arguments to make again from the sub-fields' values (``groups``, innermost last: the
    search assembles them in reverse, ``_forms/candidates/__init__.py``)."""

    fields: list[Field]
    infos: dict[str, KindInfo]
    groups: list[Group]

    @property
    def names(self) -> set[str]:
        """The config arguments of the module itself (not a config's own sub-configs)."""
        return {g.name for g in self.groups if "." not in g.name}


def _resolved(ann: Any) -> Any:
    union = typing.get_origin(ann) in (typing.Union, types.UnionType)
    args = typing.get_args(ann) if union else ()
    rest = [a for a in args if a is not type(None)]
    return rest[0] if len(rest) == 1 else ann


def _params(c: type) -> list[inspect.Parameter] | None:
    try:
        sig = resolve(c)
    except Exception:  # noqa: BLE001 - no signature found: not a config class to expand
        return None
    ps = list(sig.parameters.values())
    if not ps or len(ps) > MAX_ARGS or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in ps):
        return None
    return ps


def config_class(p: inspect.Parameter, value: Any) -> type | None:
    """The plain class an argument takes an instance of: the class of a dataclass default, or a
    class annotation that is no module, no builtin and no big library config (those come whole
    from the model around the module, ``_forms/sources/pools.py``)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        c: Any = type(value)
    elif value is None:
        c = _resolved(p.annotation)
    else:
        return None
    if not isinstance(c, type) or c.__module__ in ("builtins", "typing", "collections.abc"):
        return None
    if issubclass(c, (nn.Module, torch.Tensor, BaseException)) or c.__module__ == "torch":
        return None
    if c.__module__.startswith("torch."):
        return None
    if hasattr(c, "to_dict") or getattr(c, "_is_protocol", False):
        return None
    if not dataclasses.is_dataclass(c) and "__init__" not in vars(c):
        return None  # an object made from nothing it was told
    return c if _params(c) is not None else None


def _sub(owner: type, p: inspect.Parameter, prefix: str, value: Any) -> tuple[Field, KindInfo]:
    default = None if p.default is _MISSING else p.default
    info = kind_of(owner, p.name, p.annotation, p.default, value)
    if value is None and p.default is not _MISSING:
        info = dataclasses.replace(info, optional=True)
    choices = info.choices
    if info.kind == "str":
        choices = compared_strings(owner, p.name)
    f = Field(
        name=f"{prefix}.{p.name}",
        kind=info.kind,
        value=value,
        default=default,
        required=p.default is _MISSING,
        choices=choices,
        origin="default",
        annotation=ann_text(p.annotation),
        text=to_text(info.kind, value),
        optional=info.optional,
        param_kind="KEYWORD_ONLY",
    )
    return f, info


def _expand(
    f: Field, c: type, instance: Any, depth: int, groups: list[Group]
) -> Iterator[tuple[Field, KindInfo]]:
    g = Group(f.name, c)
    groups.append(g)
    made = {x.name: x for x in dataclasses.fields(c)} if dataclasses.is_dataclass(c) else {}
    for p in _params(c) or []:
        if made and (p.name not in made or not made[p.name].init):
            continue
        factory = made[p.name].default_factory if p.name in made else dataclasses.MISSING
        if factory is not dataclasses.MISSING:
            # A field made by a factory shows the factory as its default: a fresh value instead.
            p = p.replace(default=factory())
        value = getattr(instance, p.name, None) if instance is not None else None
        if instance is None or not hasattr(instance, p.name):
            value = None if p.default is _MISSING else p.default
        sub, info = _sub(c, p, f.name, value)
        inner = config_class(p, value) if depth < MAX_DEPTH else None
        if inner is not None:
            yield from _expand(sub, inner, value, depth + 1, groups)
        else:
            yield sub, info
        g.subs.append(sub.name)


# A namespace read field by field (``cfg.model.dropout``): a reader is the class, its parameter
# and the path of fields read off it.
_Reader = tuple[type, str, tuple[str, ...]]
MAX_FIELDS = 16  # fields of one namespace (more: no small namespace, left whole)
MAX_READERS = 4  # classes one dict is read by: the constructor and those it hands it to whole


def _reads(readers: list[_Reader]) -> list[str]:
    """The fields the readers read off their namespace, first read first."""
    out: dict[str, None] = {}
    for r in readers:
        out.update(dict.fromkeys(usage(*r).fields))
    return list(out)


def _below(readers: list[_Reader], name: str) -> list[_Reader]:
    """The readers of the field ``name`` of the readers' namespace: the same classes one field
    deeper, and a class of the user's the field is handed to whole, reading its parameter
    (``Encoder1D(cfg.model.encoder)``: Encoder1D's ``cfg``)."""
    out: list[_Reader] = []
    for owner, param, path in readers:
        here: _Reader = (owner, param, (*path, name))
        u = usage(*here)
        out.append(here)
        for h in u.handed:
            callee = h.callee
            if h.index < 0 and isinstance(callee, type) and not torch_own(callee):
                if usage(callee, h.param).fields or usage(callee, h.param).keys:
                    out.append((callee, h.param, ()))
    return out


def _leaf(
    readers: list[_Reader], prefix: str, name: str, default: Any = _MISSING
) -> tuple[Field, KindInfo]:
    """A field of a namespace that is read as a value: its kind from the layer it is handed to
    (``nn.Dropout(cfg.dropout)``: a float), narrowed by how it is used (``cfg.kernel // 2``
    takes a number where ``Conv1d``'s ``kernel_size`` takes a tuple too; ``*cfg.channels`` a
    sequence)."""
    uses = [u for u in (usage(*r) for r in readers) if u.known and not u.tested]
    handed: Any = _MISSING
    modes: tuple[str, ...] = ()  # the strings the layer it is handed to compares it with
    for h in (h for u in uses for h in u.handed if h.index < 0):
        try:
            p = resolve(h.callee).parameters[h.param]
        except (TypeError, ValueError, KeyError):
            continue
        modes = compared_strings(h.callee, h.param) if not torch_own(h.callee) else ()
        handed = p.annotation
        if handed is _MISSING and type(p.default) in (int, float, str, bool):
            # Cross(d, num_layers=3): a whole number, as its default; Block(act="elu"): a name
            handed = type(p.default)
        break
    number = any(u.number for u in uses)
    sequence = any(u.sequence or u.indexed for u in uses)
    ann = handed
    if any(u.mapping for u in uses) and not number:
        ann = dict  # cfg["cards"].items(): a dict (``mapped.py`` reads it back)
    elif sequence and not number:
        ann = list[int]
    elif number and not sequence and handed not in (int, float):
        ann = int
    param = inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
    sub, info = _sub(readers[0][0], param, prefix, None if default is _MISSING else default)
    keys = next((u.table for u in uses if u.table), ()) or looked_up(readers)
    if keys and all(isinstance(k, str) for k in keys) and sub.kind in ("literal", "str"):
        # {"tanh": nn.Tanh, ...}[args.activation]: one of the table's keys (a str)
        sub = dataclasses.replace(sub, kind="str", choices=tuple(keys))
        info = dataclasses.replace(info, kind="str", choices=tuple(keys))
    elif modes and sub.kind == "str" and not sub.choices:
        # Block(c, activation=opt.activation) where Block reads ``acts[activation]``: the
        # names that layer knows (``literals.py``), each proven or dropped by a build.
        sub = dataclasses.replace(sub, choices=modes)
        info = dataclasses.replace(info, choices=modes)
    return sub, info


def _space(
    readers: list[_Reader], prefix: str, depth: int, groups: list[Group]
) -> Iterator[tuple[Field, KindInfo]]:
    g = Group(prefix, types.SimpleNamespace)
    groups.append(g)
    for name in _reads(readers):
        below = _below(readers, name)
        if depth < MAX_DEPTH + 1 and _reads(below) and len(_reads(below)) <= MAX_FIELDS:
            yield from _space(below, f"{prefix}.{name}", depth + 1, groups)
        else:
            yield _leaf(below, prefix, name)
        g.subs.append(f"{prefix}.{name}")


def _keys(readers: list[_Reader]) -> Keys | None:
    """The keys the readers read off their dict (``keyed.py``); None unless every reader that
    reads it reads constant string keys only, at most ``MAX_FIELDS``. A class of the user's
    the dict is handed to whole (``QFormerLayer(cfg, i)``) is one of its readers too, its keys
    read after the constructor's own (``_dict_readers``)."""
    got = _dict_readers(readers)
    return got[1] if got is not None else None


def _dict_readers(readers: list[_Reader]) -> tuple[list[_Reader], Keys] | None:
    """``readers`` and the classes the dict is handed to whole, with the keys they all read;
    None as ``_keys``."""
    readers, out = list(readers), Keys()
    for r in readers:
        at = reads_at(*r)
        if at is None or not at[1]:
            continue
        k = keys_of(*at)
        if k.other:
            return None
        for callee, param in k.handed:
            if (callee, param, ()) not in readers and len(readers) < MAX_READERS:
                readers.append((callee, param, ()))
        out.names += [n for n in k.names if n not in out.names]
        out.defaults = {**k.defaults, **out.defaults}
        out.optional |= k.optional
        out.spread = {**k.spread, **out.spread}
    return (readers, out) if 0 < len(out.names) <= MAX_FIELDS else None


def _dict_space(
    readers: list[_Reader], keys: Keys, prefix: str, depth: int, groups: list[Group]
) -> Iterator[tuple[Field, KindInfo]]:
    optional = frozenset(f"{prefix}.{n}" for n in keys.optional)
    whole = tuple((c, p) for c, p, path in readers[1:] if not path)
    g = Group(prefix, dict, optional=optional, handed=whole)
    groups.append(g)
    for name in keys.names:
        below = _below(readers, name)
        if name in keys.spread:  # Encoder(n, **cfg["encoder"]): the class reads the key
            below.append((*keys.spread[name], ()))
        inner = _dict_readers(below) if depth < MAX_DEPTH + 1 else None
        if inner is not None:
            yield from _dict_space(*inner, f"{prefix}.{name}", depth + 1, groups)
        else:
            default = keys.defaults.get(name, None if name in keys.optional else _MISSING)
            sub, info = _leaf(below, prefix, name, default)
            at = reads_at(*readers[0])
            choices = table_keys(at[0], [*_reads_of(at, name)]) if at is not None else ()
            if choices and sub.kind == "str":  # BLOCKS[cfg.get("block", "x")]: BLOCKS' keys
                sub, info = (
                    dataclasses.replace(sub, choices=choices),
                    dataclasses.replace(info, choices=choices),
                )
            yield sub, info
        g.subs.append(f"{prefix}.{name}")


def _reads_of(at: tuple[Any, list[Any]], name: str) -> list[Any]:
    from .keyed import step

    return step(at[0], at[1], name)


def namespace(cls: type, f: Field) -> bool:
    """Whether the argument is a namespace the constructor reads field by field (``cfg.kernel``,
    ``args.n_embd``) and keeps nowhere: nothing annotates it as a class, no value is known, and
    it is used for nothing but its fields (no number, sequence, key or call, not tested)."""
    u = usage(cls, f.name)
    if f.value is None and dict_annotation(f.annotation):
        # ``cfg: dict``: annotated a plain dict, read by its keys only (``keyed.py``).
        return _keys([(cls, f.name, ())]) is not None
    if f.value is not None or (
        f.annotation not in ("", "Any", "typing.Any", "object") and not bag(cls, f.name)
    ):
        return False
    if not u.fields:
        return _keys([(cls, f.name, ())]) is not None  # a dict read by keys only (keyed.py)
    if len(u.fields) > MAX_FIELDS:
        return False
    return not u.handed and not dataclasses.replace(u, fields=()).known


def _handed_config(cls: type, name: str) -> type | None:
    """The config class of the user's layer the argument is handed to whole annotates
    (``LoRAAttention(dim, heads, lora)`` with ``lora: LoRAConfig``): what an argument nothing
    annotates holds, where its constructor uses it for nothing else."""
    u = usage(cls, name)
    if dataclasses.replace(u, handed=()).known:
        return None
    for h in u.handed:
        if h.index >= 0 or torch_own(h.callee):
            continue
        try:
            p = resolve(h.callee).parameters[h.param]
        except (TypeError, ValueError, KeyError):
            continue
        c = config_class(p, None)
        if c is not None:
            return c
    return None


def nest(
    cls: type,
    sig: inspect.Signature,
    fields: list[Field],
    infos: dict[str, KindInfo],
    searched: set[str],
    spaces: frozenset[str] | set[str] = frozenset(),
) -> Nested:
    """The fields for the search: each searched field whose value must be a config instance
    replaced by its sub-fields, and each of ``spaces`` (a namespace read field by field,
    ``namespace``, with nothing around holding what is read off it) by its fields; a searched
    ``str`` field offers the strings its constructor compares it with (as ``choices``)."""
    params = sig.parameters
    out: list[Field] = []
    out_infos: dict[str, KindInfo] = {}
    groups: list[Group] = []
    for f in fields:
        p = params.get(f.name)
        c = config_class(p, f.value) if p is not None and f.name in searched else None
        if (
            c is None
            and p is not None
            and f.name in searched
            and f.value is None
            and not f.annotation
        ):
            c = _handed_config(cls, f.name)  # Block(d, cfg) where Block annotates it
        if c is None and p is not None and f.name in spaces:
            # A namespace read field by field: one sub-field per field read (nested ones too),
            # made a SimpleNamespace again for each build.
            top: list[_Reader] = [(cls, f.name, ())]
            keyed = _dict_readers(top)
            made = (
                _dict_space(*keyed, f.name, 1, groups) if keyed else _space(top, f.name, 1, groups)
            )
            for sub, info in made:
                out.append(sub)
                out_infos[sub.name] = info
            continue
        if c is None or is_config(f.value) and not dataclasses.is_dataclass(f.value):
            if p is not None and f.kind == "str" and f.name in searched and not f.choices:
                f = dataclasses.replace(f, choices=compared_strings(cls, f.name))
            out.append(f)
            out_infos[f.name] = infos[f.name]
            continue
        instance = f.value if dataclasses.is_dataclass(f.value) else None
        for sub, info in _expand(f, c, instance, 1, groups):
            out.append(sub)
            out_infos[sub.name] = info
    return Nested(out, out_infos, groups)
