"""Python source that replays patch-log entries on a fresh instance of the model (``model``).

Only public torch APIs (and `torchxray.replay`'s helpers) appear in the output: ``get_submodule``, attribute / item assignment,
constructor calls, ``Module.to`` / ``train`` and ``Tensor.copy_``. Constructor arguments come from
the replacement's form values (``tx.form(module).values``); values that have no faithful source form
make the entry's code raise ``NotImplementedError`` at replay, naming what to write by hand, rather
than silently build something different.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import keyword
import math
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn

from .._forms.configs import config_items, is_config
from .._text import short_repr


class Unwritable(ValueError):
    """A value (or constructor) that cannot be written as Python source."""


# The helpers live in torchxray.replay (public), imported under private names so that running the
# script in a notebook does not shadow a user's own `config` or `place`.
HEADER = """\
# Replays torchxray patches. `model` must be a fresh instance of the patched model.
import torch
{imports}from torchxray.replay import carry as _carry, config as _config, place as _place

"""


def import_ref(obj: Any, imports: set[str]) -> str:
    """The shortest importable dotted name of a class or function (``torch.nn.Conv2d``, not
    ``torch.nn.modules.conv.Conv2d``); objects from ``__main__`` by bare name (notebook cells)."""
    mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not (isinstance(mod, str) and isinstance(qual, str)) or "<" in qual:
        raise Unwritable(f"{short_repr(obj)} is defined inside a function or has no import path")
    if mod == "__main__":
        return qual
    parts = mod.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        try:
            found: Any = importlib.import_module(prefix)
            for attr in qual.split("."):
                found = getattr(found, attr)
        except (ImportError, AttributeError):
            continue
        if found is obj:
            imports.add("torch" if prefix in ("torch", "torch.nn") else prefix)
            return f"{prefix}.{qual}"
    raise Unwritable(f"{mod}.{qual} cannot be imported by that name")


@dataclass
class Ctx:
    """What code generation needs across one entry. ``known`` maps ids of modules already in the
    model to their paths, replayed as ``model.get_submodule(path)`` so a wrapper is rebuilt around
    the model's own layer; ``imports`` collects modules to import; ``drop`` names constructor
    arguments left to ``_place`` (device and dtype, so replayed code follows the fresh model
    wherever it lives)."""

    known: Mapping[int, Sequence[str]]
    imports: set[str]
    drop: frozenset[str] = frozenset()
    # (expression, config object) for every config the model holds: a config argument is written
    # as a copy of the closest one with the differing fields set.
    configs: Iterable[tuple[str, Any]] = ()
    # How a module's form is opened: the log's (``PatchLog.form``: the replacement's form, opened
    # for the entry's labels, is not opened again); ``tx.form`` when None.
    forms: Callable[[nn.Module], Any] | None = None


def value_code(value: Any, ctx: Ctx) -> str:
    """Source text that evaluates to ``value``."""
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, torch.dtype):
        return str(value)  # "torch.float16"
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if isinstance(value, enum.Enum):
        return f"{import_ref(type(value), ctx.imports)}.{value.name}"
    if isinstance(value, type):
        return import_ref(value, ctx.imports)
    if is_config(value):
        return config_code(value, ctx)
    if isinstance(value, nn.Module):
        paths = ctx.known.get(id(value))
        if paths:
            return f"model.get_submodule({paths[0]!r})"
        return constructor(value, ctx)
    if isinstance(value, (tuple, list)):
        items = [value_code(v, ctx) for v in value]
        if isinstance(value, tuple):
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        return f"[{', '.join(items)}]"
    if isinstance(value, dict):
        pairs = [f"{value_code(k, ctx)}: {value_code(v, ctx)}" for k, v in value.items()]
        return "{" + ", ".join(pairs) + "}"
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        return import_ref(value, ctx.imports)
    raise Unwritable(f"no source form for {type(value).__name__} value {short_repr(value)}")


def config_code(value: Any, ctx: Ctx) -> str:
    """``_config(<a config of the model>, {changed fields})``, or a constructor call when the model
    holds no config of that class."""
    items = config_items(value)
    best: tuple[int, str, dict[str, Any]] | None = None
    for expr, base in ctx.configs:
        if type(base) is not type(value):
            continue
        have = config_items(base)
        diff = {k: v for k, v in items.items() if k not in have or not _same(have[k], v)}
        if any(k not in items for k in have):
            continue  # a field the copy lacks cannot be removed by setting others
        if best is None or len(diff) < best[0]:
            best = (len(diff), expr, diff)
    if best is not None:
        if not best[2] and any(b is value for _, b in ctx.configs):
            return best[1]  # the model's own config object, passed as it is
        return f"_config({best[1]}, {value_code(best[2], ctx)})"
    if isinstance(value, types.SimpleNamespace):
        ctx.imports.add("types")
        cls_text = "types.SimpleNamespace"
    else:
        cls_text = import_ref(type(value), ctx.imports)
    args = ", ".join(f"{k}={value_code(v, ctx)}" for k, v in items.items() if k.isidentifier())
    return f"{cls_text}({args})"


class ModelConfigs:
    """`model_configs(model)`, found when a config argument is first written (iterable, and
    found once): a walk of every module that most edits, with no config argument, never need
    (a tenth of a second on a 100,000-module model)."""

    def __init__(self, model: nn.Module) -> None:
        self._model: nn.Module | None = model
        self._found: list[tuple[str, Any]] = []

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        if self._model is not None:
            self._found, self._model = model_configs(self._model), None
        return iter(self._found)


def model_configs(model: nn.Module) -> list[tuple[str, Any]]:
    """(expression, config) for every config object a module of ``model`` keeps as ``config``."""
    out: list[tuple[str, Any]] = []
    seen: set[int] = set()
    for path, m in model.named_modules():
        cfg = m.__dict__.get("config")
        if cfg is not None and id(cfg) not in seen and is_config(cfg):
            seen.add(id(cfg))
            out.append((f"model.get_submodule({path!r}).config" if path else "model.config", cfg))
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, int) and isinstance(a, tuple) and a and all(_same(x, b) for x in a):
        return True  # stride=(1, 1) is what stride=1 became: leave it out like the default
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - tensors and odd objects have no truthy ==
        return a is b


def constructor(module: nn.Module, ctx: Ctx) -> str:
    """``pkg.Class(arg, key=value)`` rebuilding ``module`` from its form values; arguments equal to
    their defaults are left out so the call reads like hand-written code."""
    from ..forms import form

    cls = type(module)
    try:
        fm = (ctx.forms or form)(module)
        values = dict(fm.values)
        params = list(fm.signature.parameters.values())
    except Exception as exc:  # noqa: BLE001 - any failure here means "cannot describe it"
        raise Unwritable(f"the constructor of {cls.__name__} cannot be read ({exc})") from exc
    args: list[str] = []
    positional_ok = True
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            args += [value_code(v, ctx) for v in values.get(p.name) or ()]
            continue
        if p.kind is p.VAR_KEYWORD:
            for k, v in dict(values.get(p.name) or {}).items():
                if not (isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k)):
                    raise Unwritable(f"keyword argument {k!r} of {cls.__name__}")
                args.append(f"{k}={value_code(v, ctx)}")
            continue
        if p.name in ctx.drop and p.default is not p.empty:
            positional_ok = False
            continue
        if p.name not in values:
            if p.default is p.empty:
                raise Unwritable(f"required argument {p.name!r} of {cls.__name__} is unknown")
            positional_ok = False
            continue
        value = values[p.name]
        if p.default is not p.empty and _same(value, p.default):
            positional_ok = False
            continue
        text = value_code(value, ctx)
        if p.kind is p.POSITIONAL_ONLY or (
            positional_ok and p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD
        ):
            args.append(text)
        else:
            positional_ok = False
            args.append(f"{p.name}={text}")
    return f"{import_ref(cls, ctx.imports)}({', '.join(args)})"


def slot_target(parent_path: str, parent: nn.Module, key: str) -> str:
    """An assignable expression for ``parent._modules[key]`` using public APIs only."""
    base = f"model.get_submodule({parent_path!r})" if parent_path else "model"
    if isinstance(parent, (nn.Sequential, nn.ModuleList)) and key.isdigit():
        return f"{base}[{key}]"
    if isinstance(parent, nn.ModuleDict):
        return f"{base}[{key!r}]"
    if key.isidentifier() and not keyword.iskeyword(key):
        return f"{base}.{key}"
    return f"setattr({base}, {key!r}, {{new}})"  # filled in by assign()


def assign(target: str, var: str) -> str:
    if target.startswith("setattr("):
        return target.replace("{new}", var)
    return f"{target} = {var}"


@dataclass(frozen=True)
class Change:
    """One replacement object of an entry: built once, placed at every slot in ``targets``."""

    old_path: str  # a path reaching the replaced module before the swap
    new: nn.Module
    targets: tuple[str, ...]  # assignable expressions from slot_target()
    kept: tuple[str, ...] | None  # edit: names whose values are carried over; None for replace
    cast: bool = True  # False: the replacement sets its own dtype/device (an edit of those)


def entry_code(
    title: str,
    changes: Sequence[Change],
    known: Mapping[int, Sequence[str]],
    imports: set[str],
    configs: Iterable[tuple[str, Any]] = (),
    forms: Callable[[nn.Module], Any] | None = None,
) -> str:
    """The replay block of one entry: build every replacement first, then assign, so a wrapper
    referring to a model path reads it before any slot of this entry changes."""
    lines = [f"# {title}"]
    names = ["new"] if len(changes) == 1 else [f"new_{i}" for i in range(1, len(changes) + 1)]
    for var, ch in zip(names, changes):
        in_model = known.get(id(ch.new))
        if in_model:  # the replacement is another module of the model: share it, as the log did
            lines.append(f"{var} = model.get_submodule({in_model[0]!r})")
            continue
        try:
            drop = frozenset({"device", "dtype"}) if ch.cast else frozenset()
            built = constructor(ch.new, Ctx(known, imports, drop, configs, forms))
        except Exception as exc:  # noqa: BLE001 - Unwritable, or a hostile module's attributes
            message = f"torchxray cannot write code for the replacement at {ch.old_path!r}: {exc}"
            lines.append(f"raise NotImplementedError({message!r})")
            return "\n".join(lines) + "\n"
        cast = "" if ch.cast else ", cast=False"
        lines.append(f"{var} = _place({built}, model, {ch.old_path!r}{cast})")
        if ch.kept:
            old = f"model.get_submodule({ch.old_path!r})"
            lines.append(f"_carry({var}, {old}, {list(ch.kept)!r})")
    for var, ch in zip(names, changes):
        lines += [assign(t, var) for t in ch.targets]
    return "\n".join(lines) + "\n"


def header(imports: set[str]) -> str:
    extra = sorted(i for i in imports if i not in ("torch", "itertools"))
    return HEADER.format(imports="".join(f"import {i}\n" for i in extra))


def _class_names(modules: Any) -> str:
    return ", ".join(dict.fromkeys(type(m).__name__ for m in modules))


def title(
    entry_id: int,
    op: str,
    items: Sequence[Any],
    changes: dict[str, tuple[Any, Any]],
    kept: tuple[str, ...],
    fresh: tuple[str, ...],
    guessed: tuple[str, ...] = (),
) -> str:
    """The first line of an entry's code, also its label in the History."""
    paths = [p or "(the model)" for i in items for p in i.paths]
    where = ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")
    before, after = _class_names(i.old for i in items), _class_names(i.new for i in items)
    text = f"{entry_id}. {op} {where}: {before} -> {after}"
    if changes:
        text += "; " + ", ".join(f"{k}={short_repr(new, 40)}" for k, (_, new) in changes.items())
    if op == "edit":
        text += (
            f"; kept {', '.join(kept) or 'nothing'}; re-initialised {', '.join(fresh) or 'nothing'}"
        )
    if guessed:
        text += f"; guessed (defaults) {', '.join(guessed)}"
    return text.replace("\n", " ")
