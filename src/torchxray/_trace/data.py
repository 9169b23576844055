"""Model tensors whose ``.data`` a run replaces, put back.

``self.weight.data *= self.mask`` (PixelCNN's masked convolution), ``w.data = w.data.half()`` or
``p.data = new`` keep the Parameter object and swap what it holds. In a fake run the new data is
a fake tensor, and the live weight was left on meta: the next real forward failed with "two
devices, meta and cpu" (issue 58). No dispatch op sees the swap (``Tensor.data``'s setter calls
no operator) and no identity comparison does (the object is the same), so while a run is traced
``torch.Tensor.data`` is shadowed by a property (`Swaps`) that keeps, before the first swap of
a model tensor, the data it held (a view: no copy), and `Swaps.restore` puts that back. Only
the setter's path changes; a forward reading ``.data`` pays one Python call, and a run that
never swaps pays nothing else. A tensor that is not the model's is swapped as ever.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import _disable_current_modes

__all__ = ["Swaps"]

_DATA: Any = torch._C.TensorBase.data  # the C descriptor, which the property hands on to
_ACTIVE: list[Swaps] = []


def _get(self: torch.Tensor) -> torch.Tensor:
    return _DATA.__get__(self)


def _set(self: torch.Tensor, value: torch.Tensor) -> None:
    for swaps in _ACTIVE:
        swaps.before_swap(self)
    _DATA.__set__(self, value)
    for swaps in _ACTIVE:
        if swaps.after_swap is not None and id(self) in swaps.saved:
            swaps.after_swap(self, value)


_PROPERTY = property(_get, _set, doc=_DATA.__doc__)


class Swaps:
    """The model tensors a run swapped the data of, with their data before (see module doc)."""

    def __init__(self, modules: list[nn.Module]) -> None:
        self.modules = modules
        self._owners: dict[int, tuple[nn.Module, str]] | None = None
        self.saved: dict[int, tuple[torch.Tensor, torch.Tensor, nn.Module, str]] = {}
        # A fake run's: the run's fake of the tensor is now the data it was given
        # (`_fake.convert.Fakes.swapped`), so the ops after the swap compute with it.
        self.after_swap: Callable[[torch.Tensor, torch.Tensor], None] | None = None

    def __enter__(self) -> Swaps:
        if not _ACTIVE:
            torch.Tensor.data = _PROPERTY  # type: ignore[method-assign, assignment]
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        if not _ACTIVE and torch.Tensor.__dict__.get("data") is _PROPERTY:
            del torch.Tensor.data

    def owners(self) -> dict[int, tuple[nn.Module, str]]:
        """id(tensor) -> (module, name) of every parameter and buffer; made at the first swap."""
        if self._owners is None:
            self._owners = {
                id(t): (m, name)
                for m in self.modules
                for table in (m._parameters, m._buffers)
                for name, t in table.items()
                if t is not None
            }
        return self._owners

    def before_swap(self, t: torch.Tensor) -> None:
        key = id(t)
        if key in self.saved:
            return
        owner = self.owners().get(key)
        if owner is not None:
            # Read outside the run's modes: under the fake mode ``.data`` is a fake view.
            with _disable_current_modes():
                self.saved[key] = (t, _DATA.__get__(t), *owner)

    def restore(self) -> list[tuple[nn.Module, str]]:
        """(module, tensor name) of each tensor whose data was swapped, put back."""
        self.__exit__()
        out = []
        with torch.no_grad(), _disable_current_modes():
            for t, before, m, name in self.saved.values():
                _DATA.__set__(t, before)
                out.append((m, name))
        self.saved.clear()
        return out
