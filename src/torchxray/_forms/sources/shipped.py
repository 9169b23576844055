"""Configs a library ships, read as a whole model's config arguments (issue 40, item 4).

A model built from a named config (``open_clip.create_model("RN50")`` is ``CLIP(**json)``, the
JSON one of the package's ``model_configs``; timm's ``ByobNet(cfg=model_cfgs["gernet_s"])``) keeps
neither the name nor the config, and a config of dozens of members is too wide to search member
by member within the form's second. But the config is one of a few the library ships as data:
the JSON objects of the files under the class's top-level package whose keys are mostly the
class's parameters. Each one's value at a parameter is a reading for it.

Dozens of them may apply (open_clip ships 144): they are ranked, before any build, by how well
the numbers and strings each holds match what the live module shows (every integer above 1 it
holds, as a width, a shape or a count, is one the module's layers keep; a string it holds is a
name the module keeps, weighing more), and only the best few (``MAX_SHIPPED``) go to the search, which builds
them (``_forms/candidates/infer.py``): a model built from an edited config is refused by the gate, by name.
(timm's ``model_cfgs`` instances are not read here: a dataclass argument is searched member by
member, ``_forms/sources/nested.py``.)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import sys
from pathlib import Path
from typing import Any

from torch import nn

from ..._signature import resolve
from ..._unwrap import original_class
from .children import dims
from .installed import installed

__all__ = ["MAX_SHIPPED", "evidence", "score", "shipped"]

MAX_SHIPPED = 3  # readings per parameter, the best-matching first
MAX_FILES = 400  # a package with more data files than this is not scanned (none of its configs)
MAX_BYTES = 64_000  # a config file is small
_DEPTH = 4
_NAME = 4  # a name the module keeps (a timm model's architecture) outweighs small numbers


@functools.lru_cache(maxsize=32)
def _packaged(package: str) -> tuple[dict[str, Any], ...]:
    """The JSON objects of an installed package's data files (and those one level inside them).
    Not a single-file module's directory, nor the person's own code (``_forms/sources/installed.py``):
    that is their project. Cached for the process: an installed package's files do not change
    under it."""
    mod = sys.modules.get(package)
    where = getattr(mod, "__file__", None)
    if where is None or not hasattr(mod, "__path__") or not installed(where):
        return ()
    files: list[Path] = []
    for path in Path(where).parent.rglob("*.json"):
        files.append(path)
        if len(files) > MAX_FILES:  # stopped at once: the walk itself is not bounded otherwise
            return ()
    files.sort()
    out: list[dict[str, Any]] = []
    for path in files:
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out += [data, *(v for v in data.values() if isinstance(v, dict))]
    return tuple(out)


def _params(cls: type) -> dict[str, inspect.Parameter]:
    try:
        return dict(resolve(cls).parameters)
    except Exception:  # noqa: BLE001 - no signature found: no config class named
        return {}


def _arguments(cls: type, params: dict[str, inspect.Parameter]) -> list[dict[str, Any]]:
    """The packaged objects that read as keyword arguments of ``cls``: at least two keys, most
    of them its parameters."""
    package = cls.__module__.partition(".")[0]
    out = []
    for d in _packaged(package):
        hits = sum(k in params for k in d)
        if hits >= 2 and 2 * hits >= len(d):
            out.append(d)
    return out


def _leaves(v: Any, depth: int = 0) -> list[Any]:
    if depth > _DEPTH:
        return []
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        v = {f.name: getattr(v, f.name, None) for f in dataclasses.fields(v)}
    if isinstance(v, dict):
        return [x for k in v.values() for x in _leaves(k, depth + 1)]
    if isinstance(v, (list, tuple)):
        return [x for k in v for x in _leaves(k, depth + 1)]
    return [v]


def evidence(module: nn.Module) -> tuple[frozenset[int], frozenset[str]]:
    """The integers the module shows (tensor shapes, integer attributes, container lengths) and
    the strings it keeps (attributes, and the values of its dict attributes)."""
    ints: set[int] = set()
    strs: set[str] = set()
    for m in module.modules():
        for t in [*m._parameters.values(), *m._buffers.values()]:
            ints.update(dims(t))
        if isinstance(m, (nn.Sequential, nn.ModuleList)):
            ints.add(len(m))
        for v in m.__dict__.values():
            for x in v.values() if isinstance(v, dict) else _leaves(v, _DEPTH - 1):
                if type(x) is int:
                    ints.add(x)
                elif isinstance(x, str):
                    strs.add(x)
    return frozenset(ints), frozenset(strs)


def score(value: Any, seen: tuple[frozenset[int], frozenset[str]]) -> int:
    """How well ``value`` matches the live module (``evidence``): +1 for each integer above 1 it
    holds that the module shows, -1 for each it does not; ``_NAME`` for each string (of four
    letters or more) the module keeps: a name says more than a small number."""
    ints, strs = seen
    out = 0
    for x in _leaves(value):
        if type(x) is int and x > 1:
            out += 1 if x in ints else -1
        elif isinstance(x, str) and len(x) > 3 and x in strs:
            out += _NAME
    return out


def _readings(module: nn.Module, name: str) -> list[tuple[Any, Any]]:
    """(value, what it is ranked by) for parameter ``name``: a packaged object's value at the
    parameter, ranked by the whole object (its values for the class's parameters)."""
    cls = original_class(type(module))
    params = _params(cls)
    if name not in params:
        return []
    return [
        (d[name], {k: v for k, v in d.items() if k in params})
        for d in _arguments(cls, params)
        if name in d
    ]


def shipped(module: nn.Module, name: str) -> list[Any]:
    """Readings for parameter ``name`` of ``module`` (see the module doc), the best-matching
    first, at most ``MAX_SHIPPED``; [] where the library ships no config that applies."""
    found = _readings(module, name)
    if not found:
        return []
    seen = evidence(module)
    ranked = sorted(found, key=lambda x: -score(x[1], seen))  # stable: the library's order
    out: list[Any] = []
    for value, _ in ranked:
        if not any(type(value) is type(o) and value == o for o in out):
            out.append(value)
        if len(out) >= MAX_SHIPPED:
            break
    return out
