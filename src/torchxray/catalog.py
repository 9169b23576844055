"""The classes offered by "replace with": torch.nn layers, the model's own classes, registered ones.

>>> import torch.nn as nn
>>> from torchxray.catalog import catalog, resolve
>>> [e.name for e in catalog("conv2")]
['Conv2d', 'LazyConv2d']
>>> resolve("torch.nn.Conv2d") is resolve("Conv2d") is nn.Conv2d
True
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import torch.nn as nn

from ._signature import resolve as resolve_signature
from ._text import closest

Group = Literal["model", "registered", "torch"]
_GROUP_ORDER: dict[str, int] = {"model": 0, "registered": 1, "torch": 2}

# torch.nn exports a few names that are not layers one would put into a model (and loss modules,
# checked by name below, which only crowd the list).
_NOT_LAYERS = frozenset({"Module", "Container"})

# qualname -> class. Module level on purpose: a registration is meant to last for the session, the
# way an import does, and every PatchLog / widget sees the same list.
_REGISTRY: dict[str, type[nn.Module]] = {}

T = TypeVar("T", bound=type)


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One class that can replace a module, as `catalog()` lists it.

    Attributes:
        name: The class's name, e.g. ``"Conv2d"``.
        qualname: Where it is defined (``"pkg.mod.Class"``); `resolve()` takes it back to the class.
        group: ``"model"`` (a class the model uses), ``"registered"`` (`register()`) or ``"torch"``.
        doc: The first line of the class's own docstring (``""`` when it has none).

    Examples:
        >>> entry = catalog("Conv2d")[0]
        >>> entry.name, entry.qualname, entry.group
        ('Conv2d', 'torch.nn.modules.conv.Conv2d', 'torch')
    """

    name: str
    qualname: str
    group: Group
    doc: str


def qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register(cls: T) -> T:
    """Offer ``cls`` (an ``nn.Module`` subclass) in the catalog. Returns it, so it works as a
    class decorator. Registering again (e.g. a re-run notebook cell) replaces the old entry.

    A registration lasts for the session, like an import: every `PatchLog` and explorer offers
    the class in "Replace with...".

    Args:
        cls: The `nn.Module` subclass to offer.

    Returns:
        `cls` itself.

    Raises:
        TypeError: `cls` is not an `nn.Module` subclass.

    Examples:
        >>> import torch.nn as nn
        >>> @register
        ... class Swish(nn.Module):
        ...     "x * sigmoid(x)."
        ...     def forward(self, x):
        ...         return x * x.sigmoid()
        >>> [(e.name, e.group, e.doc) for e in catalog("swish")][0]
        ('Swish', 'registered', 'x * sigmoid(x).')
        >>> unregister(Swish)
    """
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        what = f"the class {cls.__qualname__}" if isinstance(cls, type) else repr(cls)
        raise TypeError(f"register() takes an nn.Module subclass, got {what}")
    _REGISTRY[qualname(cls)] = cls
    return cls


def unregister(cls: type) -> None:
    """Remove a class `register()` added to the catalog.

    Args:
        cls: The class given to `register()`.

    Raises:
        KeyError: `cls` is not registered.

    Examples:
        >>> import torch.nn as nn
        >>> class Twice(nn.Module):
        ...     def forward(self, x):
        ...         return 2 * x
        >>> _ = register(Twice)
        >>> unregister(Twice)
        >>> catalog("Twice")
        ()
    """
    if _REGISTRY.get(qualname(cls)) is not cls:
        raise KeyError(f"{qualname(cls)} is not registered")
    del _REGISTRY[qualname(cls)]


@functools.lru_cache(maxsize=1)
def _torch_classes() -> tuple[type[nn.Module], ...]:
    out = []
    for name in nn.modules.__all__:
        obj = getattr(nn, name, None)
        if isinstance(obj, type) and issubclass(obj, nn.Module) and name not in _NOT_LAYERS:
            if name.endswith("Loss"):
                continue
            out.append(obj)
    return tuple(out)


def _model_classes(model: nn.Module) -> list[type[nn.Module]]:
    """The model's own (non-torch) classes, in first-seen order."""
    seen: dict[type, None] = {}
    for m in model.modules():
        cls = type(m)
        # Only torch's own modules are excluded: torchvision / torchaudio / torchxray classes are
        # the model's, though their module names also start with "torch".
        mod = cls.__module__
        if not (mod == "torch" or mod.startswith("torch.")):
            seen.setdefault(cls, None)
    return list(seen)


def _doc(cls: type) -> str:
    # The class's own docstring only: inherited ones would label every custom layer with
    # nn.Module's "Base class for all neural network modules."
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str):
        return ""
    return next((line.strip() for line in doc.strip().splitlines() if line.strip()), "")


def _entries(model: nn.Module | None) -> dict[str, tuple[type, CatalogEntry]]:
    found: dict[str, tuple[type, CatalogEntry]] = {}
    groups: list[tuple[Group, list[type[nn.Module]]]] = [
        ("model", _model_classes(model) if model is not None else []),
        ("registered", list(_REGISTRY.values())),
        ("torch", list(_torch_classes())),
    ]
    for group, classes in groups:
        for cls in classes:
            q = qualname(cls)
            if q not in found:  # first group wins: a registered model class shows as "model"
                found[q] = (cls, CatalogEntry(cls.__name__, q, group, _doc(cls)))
    return found


def _rank(entry: CatalogEntry, query: str) -> int | None:
    """0 exact name, 1 name prefix, 2 name substring, 3 qualname substring, None no match."""
    name = entry.name.lower()
    if name == query:
        return 0
    if name.startswith(query):
        return 1
    if query in name:
        return 2
    if query in entry.qualname.lower():
        return 3
    return None


# A class's role: what it is. A torch.nn file groups classes by topic, which mostly says what they
# are (conv.py: convolutions), but not always: activation.py also holds MultiheadAttention. So the
# file stands for the role only of the classes whose forward takes as many inputs as most of that
# file's classes (one for an activation; three, query, key and value, for MultiheadAttention);
# the others, and classes with no torch ancestor (a model's own RMSNorm or Attention subclasses
# nn.Module only), are known by the words in their name.
_ROLE_FILES = {
    "batchnorm": "norm",
    "instancenorm": "norm",
    "normalization": "norm",
    "sparse": "embed",
}
_ROLE_WORDS = (
    ("norm", "norm"),
    ("attn", "attention"),
    ("attention", "attention"),
    ("conv", "conv"),
    ("embed", "embed"),
    ("dropout", "dropout"),
    ("pool", "pooling"),
    ("mlp", "mlp"),
    ("feedforward", "mlp"),
    ("linear", "linear"),
    ("proj", "linear"),
)
_GENERIC = frozenset({"container", "module"})


def _torch_base(cls: type) -> type | None:
    for base in cls.__mro__:
        mod = base.__module__
        if mod.startswith("torch.nn.modules.") and mod.rsplit(".", 1)[-1] not in _GENERIC:
            return base
    return None


_INPUTS: dict[type, int | None] = {}  # per class: torch's and the models' seen, a few hundred


def _inputs(cls: Any) -> int | None:  # Any: a class (as `type`, mypy knows no forward on it)
    """How many inputs ``cls.forward`` requires (positional, no default); None when unknown."""
    if cls in _INPUTS:
        return _INPUTS[cls]
    n: int | None = None
    try:
        params = list(resolve_signature(cls.forward).parameters.values())[1:]  # self
    except (AttributeError, TypeError, ValueError):
        pass
    else:
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        n = sum(1 for p in params if p.default is p.empty and p.kind in positional)
    _INPUTS[cls] = n
    return n


@functools.lru_cache(maxsize=1)
def _usual_inputs() -> dict[str, int]:
    """Per torch.nn file, the number of inputs most of its classes' forwards take."""
    counts: dict[str, Counter[int]] = {}
    for cls in _torch_classes():
        base, n = _torch_base(cls), _inputs(cls)
        if base is not None and n is not None:
            counts.setdefault(base.__module__.rsplit(".", 1)[-1], Counter())[n] += 1
    return {file: c.most_common(1)[0][0] for file, c in counts.items()}


@functools.lru_cache(maxsize=1024)
def _role(cls: type) -> str | None:
    base = _torch_base(cls)
    file = None if base is None else base.__module__.rsplit(".", 1)[-1]
    n = _inputs(cls)
    if file is not None and (n is None or _usual_inputs().get(file, n) == n):
        return _ROLE_FILES.get(file, file)
    name = cls.__name__.lower()
    named = next((role for word, role in _ROLE_WORDS if word in name), None)
    if named is not None or file is None:
        return named
    # Nothing in the name: the file's classes that take as many inputs (transformer.py's
    # decoders, which take the memory too, apart from its encoders).
    return f"{_ROLE_FILES.get(file, file)}/{n}"


def _bases(cls: type) -> set[type]:
    return {b for b in cls.__mro__ if b not in (object, nn.Module) and b is not cls}


def _fit(cls: type, like: type | None) -> int:
    """0 the selected module's class, 1 a shared base class or a name ending the other (RMSNorm for
    a LlamaRMSNorm), 2 the same role, 3 anything else."""
    if like is None:
        return 0
    if cls is like:
        return 0
    if like in _bases(cls) or cls in _bases(like) or _bases(cls) & _bases(like):
        return 1
    a, b = cls.__name__.lower(), like.__name__.lower()
    if a.endswith(b) or b.endswith(a):
        return 1
    role = _role(like)
    return 2 if role is not None and _role(cls) == role else 3


def catalog(
    query: str | None = None, model: nn.Module | None = None, like: nn.Module | type | None = None
) -> tuple[CatalogEntry, ...]:
    """Replacement candidates. ``query`` filters by case-insensitive substring of the name or
    qualname, best matches first (exact name, then prefix, then substring; then, with ``like`` (the
    module to replace, or its class), classes that fit it: its own, those sharing a base class,
    those of the same role (a Linear: other linear layers; an RMSNorm: other norms); then the
    model's own classes, registered ones, torch's; then by name). Pass ``model`` to include its own
    classes.

    Args:
        query: Part of a class name or qualname, any case; None lists every class.
        model: A model whose own classes are offered too (group ``"model"``).
        like: The module to be replaced (or its class): classes that fit it rank first.

    Returns:
        The matching `CatalogEntry` records, best first.

    Raises:
        TypeError: `model` is not an `nn.Module`.

    Examples:
        >>> [e.name for e in catalog("conv2")]
        ['Conv2d', 'LazyConv2d']
        >>> import torch.nn as nn
        >>> [e.name for e in catalog("norm", like=nn.LayerNorm(8))][:2]
        ['LayerNorm', 'BatchNorm1d']
    """
    if model is not None and not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    target = like if isinstance(like, type) or like is None else type(like)
    q = (query or "").strip().lower()
    ranked = []
    for cls, e in _entries(model).values():
        rank = _rank(e, q) if q else 0
        if rank is not None:
            fit = _fit(cls, target)
            ranked.append((rank, fit, _GROUP_ORDER[e.group], e.name.lower(), e.qualname, e))
    ranked.sort(key=lambda r: r[:5])
    return tuple(r[-1] for r in ranked)


def resolve(name: str, model: nn.Module | None = None) -> type:
    """The class for a catalog ``qualname`` (or a public import path such as "torch.nn.Conv2d").
    Pass ``model`` to reach its classes that cannot be imported (defined inside a function).

    Args:
        name: A qualname from `catalog()`, an import path, or a class name that is unambiguous.
        model: A model whose own classes may be named.

    Returns:
        The `nn.Module` subclass.

    Raises:
        KeyError: No such class (the message names the closest known names).
        TypeError: `name` is not a string.

    Examples:
        >>> import torch.nn as nn
        >>> resolve("torch.nn.Conv2d") is resolve("Conv2d") is nn.Conv2d
        True
    """
    if not isinstance(name, str):
        raise TypeError(f"resolve() takes a qualname string, got {name!r}")
    known = _entries(model)
    if name in known:
        return known[name][0]
    by_name = [c for c, e in known.values() if e.name == name]
    if len(by_name) == 1:  # a bare class name is fine when it is unambiguous
        return by_name[0]
    cls = _import(name)
    if cls is not None:
        return cls
    candidates = list(known) + [e.name for _, e in known.values()]
    close = closest(name, candidates)
    if not close:
        short = name.rsplit(".", 1)[-1].lower()
        close = [q for q, (_, e) in known.items() if short and short in e.name.lower()][:3]
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise KeyError(
        f"no module class {name!r} in the catalog or importable{hint} "
        "(use the qualname from tx.catalog(), or tx.register(cls) first)"
    )


def _import(name: str) -> type | None:
    """``pkg.mod.Class`` (or ``pkg.mod.Outer.Inner``) by import, if it is an nn.Module class."""
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj if isinstance(obj, type) and issubclass(obj, nn.Module) else None
    return None


__all__ = ["CatalogEntry", "catalog", "register", "resolve", "unregister"]
