"""`Trace`: one run's watch over everything it may write, put back at its end and said as data.

A run (a probe, a memory step) enters a `Trace` once its own set-up is done, and leaves it
before the set-up is undone:

- on entering: torch's global flags (`_trace/flags.py`), the global module hooks, the next hook
  handle id, and the file audit (`_trace/outside.py`);
- at a module's first call (`touch`, called by the run's recorder): the containers the module
  and its children hold (`_trace/held.py`: ``_modules``, hook dicts, ``self.seen``,
  ``self.memo``, a config's attributes) and the registries its class's forward reads from its
  Python module's globals. Only code that runs can write, so a memoised block that is replayed
  costs nothing, and the cost follows the forward, not the model's size;
- in-place writes to parameters and buffers: `_trace/tensors.py` (copy-on-write in a real run,
  recorded by the fake front in a fake run); their data swapped (``w.data = ...``, fake or
  real): `_trace/data.py`;
- every module's attributes, by identity, from the snapshot the run took already
  (`_fake/state.py`): one C comparison when nothing changed.

`finish()` puts each of those back and returns the `Write`s; a hook registered during the run
(its handle id is past the one read on entering) is removed wherever it sits, module or tensor.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from .._fake.state import State, unchanged
from .data import Swaps
from .flags import Flags, globals_held
from .held import MAX_DEPTH, Held
from .modules import attributes, merged, new_hooks
from .outside import Files
from .tensors import Backups, InplaceGuard
from .writes import (
    CONTAINER,
    FILE,
    GLOBAL,
    HOOK,
    INPLACE,
    SUBMODULE,
    TENSOR,
    Write,
)

__all__ = ["Trace"]

_CONTAINER_TYPES = (list, dict, set)
_SILENT = frozenset({"_non_persistent_buffers_set"})  # follows `_buffers`, said there


def _kind_of(attr: str) -> str:
    if attr == "_modules":
        return SUBMODULE
    if attr in ("_parameters", "_buffers"):
        return TENSOR
    if attr.endswith("hooks") or "hooks[" in attr or "hooks_" in attr:
        return HOOK
    return CONTAINER


class Trace:
    """See the module docstring. `modules`: the run's modules, each once; `paths`: id(module) ->
    path; `state`: the run's `snapshot_state(modules)`; `real`: a real run (in-place writes are
    backed up by `guard()`)."""

    def __init__(
        self,
        modules: list[nn.Module],
        paths: dict[int, str],
        state: list[State],
        real: bool,
    ) -> None:
        self.modules = modules
        self.paths = paths
        self.state = state
        self.real = real
        self.held = Held()
        self.touched: set[int] = set()
        self.stubbed: set[int] = set()  # modules a memo stubs (`_probe/memo.py`, `_memory/memo.py`)
        self.taken: set[int] = set()  # modules whose containers `held` has
        self.grads: list[tuple[nn.Module, list[tuple[str, Any, bool]]]] = []
        self.classes: set[type] = set()
        self.backups = Backups(modules)
        self.swaps = Swaps(modules)
        self.fake_written: dict[int, torch.Tensor] = {}
        self.writes: list[Write] = []
        self.limits: list[str] = []  # what torchxray itself could not watch, one sentence each
        self._files = Files()
        self._flags: Flags | None = None
        self._next_hook = 0
        self._done = False
        self.attributes_checked = False  # every module's attributes compared and put back

    # -- during the run ------------------------------------------------------------------------
    def __enter__(self) -> Trace:
        self._flags = Flags()
        self._next_hook = RemovableHandle.next_id
        self.held.take(globals_held(), "torch.nn.modules.module")
        self.swaps.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def guard(self) -> InplaceGuard:
        """The real run's in-place guard (a function mode to enter around the forward)."""
        return InplaceGuard(self.backups)

    def touch(self, m: nn.Module) -> None:
        """`m` is about to run for the first time: what it and its children hold, copied."""
        key = id(m)
        if key in self.touched:
            return
        if not self.touched:
            # Files are watched from the first module call on: the run's own set-up (importing
            # torch._dynamo for a first fake mode) is not the forward's doing.
            self._files.__enter__()
        self.touched.add(key)
        try:
            self._take(m, key)
        except Exception as exc:  # noqa: BLE001 - our own failure never stops the forward
            where = self.paths.get(key, "?") or "(root)"
            self.limits.append(f"torchxray could not copy what {where} holds: {exc!r}")

    def _take(self, m: nn.Module, key: int) -> None:
        paths, taken, take = self.paths, self.taken, self.held.take_module
        if key not in taken:
            taken.add(key)
            take(m, paths.get(key, "?"))
            self._flags_of(m)
        if key in self.stubbed:
            # A memo's stub: its first call runs the children, which are then taken at their own
            # calls, and a replay runs no code of the block's at all.
            return
        # A forward may write into a child before calling it (``self.lin.register_forward_hook``)
        # or without calling it: the children are taken with their parent.
        for child in m._modules.values():
            if child is not None and (ck := id(child)) not in taken:
                taken.add(ck)
                take(child, paths.get(ck, "?"))
                self._flags_of(child)

    def _flags_of(self, m: nn.Module) -> None:
        """Its parameters' ``requires_grad`` (a forward may freeze one: ``requires_grad_``)."""
        params = m._parameters
        if params:
            self.grads.append(
                (m, [(n, p, p.requires_grad) for n, p in params.items() if p is not None])
            )
        cls = type(m)
        if cls not in self.classes:
            self.classes.add(cls)
            self._registries(cls)

    def _registries(self, cls: type) -> None:
        """Containers in the Python module of `cls` that its forward names (a cache or registry
        a forward fills): taken one level deep."""
        # Read statically: a class's `forward` may be a descriptor (TorchScript's).
        forward = inspect.getattr_static(cls, "forward", None)
        forward = inspect.getattr_static(forward, "__func__", forward)
        code = (
            getattr(forward, "__code__", None) if isinstance(forward, types.FunctionType) else None
        )
        space = getattr(forward, "__globals__", None)
        if code is None or not isinstance(space, dict):
            return
        names = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names.update(const.co_names)
        where = space.get("__name__", "?")
        found = [
            (f"{where}.{n}", space[n]) for n in names if isinstance(space.get(n), _CONTAINER_TYPES)
        ]
        if found:
            self.held.take(found, _GLOBALS, depth=MAX_DEPTH - 1)

    def buffer_write(self, t: torch.Tensor) -> None:
        """A real run changed buffer `t`'s values (told after `finish`, by `_fake/state.py`,
        which then puts them back): a write like any other."""
        for m in self.modules:
            for name, b in m._buffers.items():
                if b is t:
                    self.writes.append(
                        Write(self.paths.get(id(m), "?"), name, INPLACE, "written in place")
                    )
                    self.writes[:] = merged(self.writes)
                    return

    def attributes_done(self) -> bool:
        """Whether `finish` compared every module's attributes and put them back."""
        return self.attributes_checked

    def fake_write(self, t: torch.Tensor) -> None:
        """A fake run's in-place op targeted the real tensor `t` (it ran on `t`'s fake)."""
        if id(t) not in self.fake_written:
            self.fake_written[id(t)] = t
            if t.numel() <= 1:
                # FakeTensorMode computes one-element tensors for real (constants): backed up
                # now, before the op writes it, and put back at the end.
                self.backups.before_write(t)

    # -- after the run -------------------------------------------------------------------------
    def finish(self) -> list[Write]:
        """Put back everything the run wrote; the writes, also kept in `writes`."""
        if self._done:
            return self.writes
        self._done = True
        out = self.writes
        owners: dict[int, str] = self.paths
        self._files.__exit__()
        try:
            # Data swapped back first: a write in place then went to the data held before.
            for m, name in self.swaps.restore():
                out.append(Write(owners.get(id(m), "?"), name, TENSOR, "its .data replaced"))
            for m, name, detail in self.backups.restore():
                out.append(Write(owners.get(id(m), "?"), name, INPLACE, detail))
            if self.fake_written:
                out.extend(self._fake_writes())
            for item in self.held.changed():
                self._restored_container(item)
            for m, flags in self.grads:
                for name, p, flag in flags:
                    if p.requires_grad != flag:
                        detail = f"requires_grad {flag} -> {p.requires_grad}"
                        p.requires_grad_(flag)
                        out.append(Write(owners.get(id(m), "?"), name, TENSOR, detail))
            if not unchanged(self.state):
                out.extend(attributes(self.state, self.paths))
            self.attributes_checked = True
            if RemovableHandle.next_id > self._next_hook:
                out.extend(new_hooks(self.modules, self.paths, self._next_hook))
        finally:
            if not self.real:
                # Autocast keeps each weight's cast in a cache until its context exits: cast in a
                # fake run (autocast on around the probe, or switched on by the forward), the
                # cached cast is a fake, and the next real forward would compute with it.
                torch.clear_autocast_cache()
            if self._flags is not None:
                for name, detail, done in self._flags.restore():
                    out.append(Write("torch", name, GLOBAL, detail, done))
            for seen in self._files.seen:
                out.append(Write("file", _file_of(seen), FILE, seen, restored=False))
        return merged(out)

    def _fake_writes(self) -> list[Write]:
        """The model tensors a fake run's in-place ops targeted, by identity (a weight on meta
        has no storage to match)."""
        found: list[Write] = []
        wanted = self.fake_written
        for m in self.modules:
            for table in (m._parameters, m._buffers):
                for name, t in table.items():
                    if t is not None and id(t) in wanted:
                        path = self.paths.get(id(m), "?")
                        found.append(Write(path, name, INPLACE, "written in place"))
        return found

    def _restored_container(self, item: tuple[Any, int, Any, str, str]) -> None:
        _, _, _, path, attr = item
        detail = Held.difference(item)
        Held.restore(item)
        if attr in _SILENT:
            return
        if path == _GLOBALS:  # a registry in a Python module's globals: "pkg.mod.NAME"
            module = attr.split("[", 1)[0].rsplit(".", 1)[0]
            self.writes.append(Write(module, attr, GLOBAL, detail))
            return
        kind = HOOK if path == "torch.nn.modules.module" else _kind_of(attr)
        if kind == HOOK:  # "1 entry added (7)" names a handle id: say it as hooks
            grew = detail.split(" ", 1)[0]
            detail = f"{grew} registered" if "added" in detail else detail
        if path == "torch.nn.modules.module":
            self.writes.append(Write("torch", f"torch.nn.modules.module.{attr}", HOOK, detail))
            return
        self.writes.append(Write(path, _public(attr, detail), kind, detail))


def _file_of(seen: str) -> str:
    """The file's path in what `_trace.outside` saw: "opened PATH for writing", "remove PATH"."""
    verb, _, rest = seen.partition(" ")
    return rest.removesuffix(" for writing") if verb == "opened" else rest


_GLOBALS = "<globals>"  # the owner of registries taken from a forward's Python module


def _public(attr: str, detail: str) -> str:
    """The attribute as the user wrote it: ``_modules['proj']`` reads as ``proj``."""
    for private in ("_modules", "_parameters", "_buffers"):
        if attr == private:
            key = detail.split("(", 1)[-1].rstrip(")") if "(" in detail else ""
            return key.strip("'\"") or private
    return attr
