"""Model tensors written in place by a run, put back.

Real runs: `InplaceGuard`, a dispatch mode that backs up a parameter or buffer (by its storage,
so ``w.data.mul_`` is seen too) before the first op that writes it, as the op's schema says
(``w.mul_``, ``embedding_renorm_`` inside an Embedding with ``max_norm``, ``w[0] = 0``,
``out=w``); `Backups.restore` copies the values back. A dispatch mode rather than a function
mode, which costs half as much per call on small models but cannot see the ops inside a Python
function it hands on (``F.embedding`` renormalising its weight): what a person must trust is
every write. Buffers are also copied before a real run and put back by `_fake/state.py`.

Fake runs never run an in-place op on a real tensor: the probe's fake front turns the real
tensors an in-place op writes into their fakes (`_probe/flops.py`) and reports them here
(`written_args`), so a fake probe can no longer halve a real weight.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

__all__ = ["Backups", "InplaceGuard", "storage_key", "unsaid_writes", "written_args"]


def storage_key(t: Any) -> int | None:
    if not isinstance(t, torch.Tensor) or t.device.type == "meta":
        return None
    try:
        ptr = t.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - a wrapper subclass without a storage of its own
        return None
    return ptr or None


class Backups:
    """Each model tensor's values before its first in-place write (copy-on-write)."""

    def __init__(self, modules: list[nn.Module]) -> None:
        self.modules = modules
        self._owners: dict[int, list[tuple[nn.Module, str, torch.Tensor]]] | None = None
        # id(tensor) -> (module, name, tensor, copy of its values, its requires_grad)
        self.saved: dict[int, tuple[nn.Module, str, torch.Tensor, torch.Tensor, bool]] = {}

    def owners(self) -> dict[int, list[tuple[nn.Module, str, torch.Tensor]]]:
        """Storage pointer -> the parameters and buffers on it; made at the first in-place call
        of a run (one pass over the model's tensors), never for a run that makes none."""
        if self._owners is None:
            owners: dict[int, list[tuple[nn.Module, str, torch.Tensor]]] = {}
            for m in self.modules:
                for table in (m._parameters, m._buffers):
                    for name, t in table.items():
                        key = storage_key(t)
                        if key is not None and t is not None:
                            owners.setdefault(key, []).append((m, name, t))
            self._owners = owners
        return self._owners

    def before_write(self, target: Any) -> None:
        key = storage_key(target)
        if key is None:
            return
        for m, name, t in self.owners().get(key, ()):
            if id(t) not in self.saved:
                with _disable_current_modes():  # a real copy, also from inside a fake run's op
                    copy = t.detach().clone()
                self.saved[id(t)] = (m, name, t, copy, t.requires_grad)

    def restore(self) -> list[tuple[nn.Module, str, str]]:
        """(module, tensor name, detail) for each tensor written, its values put back."""
        out = []
        with torch.no_grad(), _disable_current_modes():
            for m, name, t, copy, grad in self.saved.values():
                same = (
                    t.shape == copy.shape and t.dtype == copy.dtype and bool(torch.equal(t, copy))
                )
                if t.shape == copy.shape and t.dtype == copy.dtype:
                    t.copy_(copy)
                else:
                    t.data = copy
                if t.requires_grad != grad and t.is_leaf:
                    t.requires_grad_(grad)
                out.append((m, name, "written in place" + (" (values unchanged)" if same else "")))
        self.saved.clear()
        return out


class InplaceGuard(TorchDispatchMode):
    """Backs up a model tensor before an op writes it (real runs): the op's schema says which
    arguments it writes (``Tensor(a!)``), so no name needs guessing."""

    def __init__(self, backups: Backups) -> None:
        super().__init__()
        self.backups = backups

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in torch._disable_dynamo, whose first call
        # imports torch._dynamo (1.5 s): a first real probe, or a form's check, would pay it.
        # The guard never runs under torch.compile (probes run eagerly).
        return False

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        _, positions, names, stats, training = _writes(func)
        if positions or names:
            before = self.backups.before_write
            for i in positions:
                if i < len(args):
                    _each(args[i], before)
            for name in names:
                if name in kwargs:
                    _each(kwargs[name], before)
        if stats and training < len(args) and args[training] is True:
            for i in stats:
                if i < len(args):
                    self.backups.before_write(args[i])
        return func(*args, **kwargs)


def _each(value: Any, call: Any) -> None:
    if isinstance(value, (tuple, list)):
        for v in value:
            call(v)
    else:
        call(value)


# func id -> (func, positions written, keyword names written, running statistics written
# unsaid, the ``training`` flag's position): read once per op from its schema.
_SCHEMA: dict[int, tuple[Any, tuple[int, ...], tuple[str, ...], tuple[int, ...], int]] = {}


def _writes(func: Any) -> tuple[Any, tuple[int, ...], tuple[str, ...], tuple[int, ...], int]:
    """The op's cached entry (see ``_SCHEMA``): one lookup per op in the guard's hot path."""
    got = _SCHEMA.get(id(func))
    if got is not None and got[0] is func:
        return got
    positions: list[int] = []
    names: list[str] = []
    schema = getattr(func, "_schema", None)
    arguments = list(getattr(schema, "arguments", ()))
    if schema is not None and schema.is_mutable:
        for i, arg in enumerate(arguments):
            info = arg.alias_info
            if info is not None and info.is_write:
                if arg.kwarg_only:
                    names.append(arg.name)
                else:
                    positions.append(i)
    arg_names = [a.name for a in arguments]
    training = arg_names.index("training") if "training" in arg_names else -1
    stats = tuple(
        i
        for i, a in enumerate(arguments)
        if training >= 0
        and a.name in ("running_mean", "running_var")
        and not (a.alias_info is not None and a.alias_info.is_write)
    )
    entry = (func, tuple(positions), tuple(names), stats, training)
    _SCHEMA[id(func)] = entry
    return entry


def unsaid_writes(func: Any) -> tuple[tuple[int, ...], int]:
    """The positions of the running statistics a batch norm updates in train mode without its
    schema saying so (``native_batch_norm``, ``cudnn_batch_norm``: ``Tensor? running_mean``),
    and the position of its ``training`` flag; ``((), -1)`` for any other op. BatchNorm's own
    buffers are copied before a real run anyway; a running statistic kept as a parameter (a
    meta-learner's ``vars_bn``) is backed up here."""
    got = _writes(func)
    return got[3], got[4]


def written_args(func: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The positions and keyword names of the arguments an aten op writes (its schema's
    ``Tensor(a!)``), e.g. ``((0,), ())`` for ``mul_``; empty for a functional op."""
    got = _writes(func)
    return got[1], got[2]
