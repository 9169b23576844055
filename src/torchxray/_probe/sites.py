"""Call sites: the line of the caller's source that called a module (``x = self.layer1(x)``).

The recorder (`_probe.calls`) keeps, per call, only the caller's code object and line number: one
``sys._getframe`` per call, no frame held (a frame would keep the caller's tensors alive). Here
they become `Site`s when a record is read, the source line read once per (code, line) through
``linecache``. Where no Python line exists the site says why instead (`Site.reason`).
"""

from __future__ import annotations

import linecache
import types
from dataclasses import dataclass
from typing import Any

from torch import nn

_CALL_IMPL_CODES = (nn.Module._call_impl.__code__, nn.Module._wrapped_call_impl.__code__)


@dataclass(frozen=True, slots=True)
class Site:
    """One place a module was called from, and how many of its calls came from there.

    `ModuleRecord.sites` lists them for each module, in order of first use.

    Attributes:
        file: The caller's file.
        line: The line number in it.
        function: The caller's qualified name, e.g. ``"ResNet.forward"``.
        text: The source line, stripped; ``""`` when there is none (see `reason`).
        count: How many of the module's calls came from this line.
        reason: Why there is no source line (the root: called by the probe...); else ``""``.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> class Net(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(4, 4)
        ...     def forward(self, x):
        ...         return self.fc(self.fc(x))
        >>> site = tx.probe(Net(), torch.randn(1, 4))["fc"].sites[0]
        >>> site.function, site.text, site.count
        ('Net.forward', 'return self.fc(self.fc(x))', 2)
    """

    file: str
    line: int
    function: str  # the caller's qualified name: "ResNet.forward"
    text: str  # the source line, stripped; "" when there is none (see `reason`)
    count: int = 1
    reason: str = ""  # why there is no source line: "the root: called by the probe", ...

    def __str__(self) -> str:
        if self.reason:
            return f"{self.function or '?'}: {self.reason}"
        return f"called from {self.function}, line {self.line}: {self.text}"


_ROOT = "the root module: called by the probe itself, not by a forward"


def _reason(code: types.CodeType, text: str) -> str:
    file = code.co_filename.replace("\\", "/")
    if "/torch/_dynamo/" in file or "/torch/_inductor/" in file:
        return "called from compiled code (torch.compile), which has no line of its own"
    if "/torch/jit/" in file:
        return "called from TorchScript, which has no Python line"
    if file.startswith("<") and not text:
        return f"called from generated code ({file}), which has no source file"
    if not text:
        return f"the source of {file} cannot be read"
    return ""


_CACHE: dict[tuple[int, int], tuple[Any, Site]] = {}


def site_of(code: types.CodeType | None, line: int, root: bool = False) -> Site:
    """The `Site` of one call whose caller ran `code` at `line` (count 1). `root`: the call the
    probe itself made. ``code`` None: the caller was not Python (C++)."""
    if root:
        return Site("", 0, "torchxray.probe", "", reason=_ROOT)
    if code is None:
        return Site("", 0, "", "", reason="called from C++ code, which has no Python line")
    key = (id(code), line)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is code:
        return hit[1]
    text = linecache.getline(code.co_filename, line).strip()
    name = getattr(code, "co_qualname", code.co_name)
    site = Site(code.co_filename, line, name, text, reason=_reason(code, text))
    _CACHE[key] = (code, site)  # the code object is held so that its id is not reused
    return site


def sites_of(calls: list[Any], root_path: str = "") -> tuple[Site, ...]:
    """The distinct sites of `calls` (objects with ``code``, ``line`` and ``path``), each with its
    count, in order of first use."""
    counts: dict[tuple[int, int], list[Any]] = {}
    for call in calls:
        key = (id(call.code), call.line)
        seen = counts.get(key)
        if seen is None:
            root = call.path == root_path and call.parent is None
            counts[key] = [site_of(call.code, call.line, root), 1]
        else:
            seen[1] += 1
    out = []
    for site, n in counts.values():
        if n != 1:
            site = Site(site.file, site.line, site.function, site.text, n, site.reason)
        out.append(site)
    return tuple(out)


def skipped_codes() -> set[int]:
    """Ids of the code objects between a module call and its caller: torch's ``__call__``
    machinery (the functions it defines inside, such as the ``inner`` that runs hooks, included)
    and the probe's recording functions (whose codes `_probe.calls` adds)."""
    todo, out = list(_CALL_IMPL_CODES), set()
    while todo:
        code = todo.pop()
        out.add(id(code))
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return out
