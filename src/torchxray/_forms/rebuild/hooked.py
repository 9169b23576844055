"""The legacy hook-based ``torch.nn.utils.weight_norm`` / ``spectral_norm`` a layer was wrapped
in after it was made, read off its forward pre-hooks (``NormHook``), and put back on a rebuild.

The newer ``nn.utils.parametrizations`` keep the wrapping in a ``parametrizations`` child;
the old functions, which HiFi-GAN's and MelGAN's code still call (``weight_norm(Conv1d(...))``),
replace the layer's ``weight`` parameter with ``weight_g`` and ``weight_v`` (spectral norm:
``weight_orig`` and the buffers ``weight_u``, ``weight_v``) and recompute a plain ``weight``
tensor before each forward in a ``WeightNorm`` / ``SpectralNorm`` hook that keeps the name and
the dim. The constructor made a plain layer, so its form is a plain layer's: as with a
parametrization (``parts.py``'s logical view), the wrapped tensor is one tensor of its
logical shape (the originals and the recomputed attribute are not listed), and an edit puts the
wrapping back (``_patch/placement.py``: ``rewrap``). The wrapping is named in the tensor's text
everywhere below the module a form is asked of (``kinds=True`` names it there too): a
constructor that wraps its layers itself, choosing ``weight_norm`` or ``spectral_norm`` by a flag
(HiFi-GAN's ``DiscriminatorP``), shows its choice; the module itself was wrapped after its
constructor ran (its parent's ``weight_norm(CausalConv1d(...))``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils import spectral_norm as _spectral
from torch.nn.utils import weight_norm as _weight
from torch.nn.utils.spectral_norm import SpectralNorm
from torch.nn.utils.weight_norm import WeightNorm

__all__ = ["NormHook", "norm_hooks", "rewrap"]


@dataclass(frozen=True)
class NormHook:
    """One legacy wrapping: ``spectral`` or not, the tensor's name, and the hook's settings."""

    spectral: bool
    name: str
    dim: int
    n_power_iterations: int = 1
    eps: float = 1e-12

    @property
    def original(self) -> str:
        """The parameter that holds the tensor's shape (``weight_v``, ``weight_orig``)."""
        return f"{self.name}_orig" if self.spectral else f"{self.name}_v"

    @property
    def params(self) -> tuple[str, ...]:
        return (self.original,) if self.spectral else (f"{self.name}_g", f"{self.name}_v")

    @property
    def buffers(self) -> tuple[str, ...]:
        return (f"{self.name}_u", f"{self.name}_v") if self.spectral else ()

    @property
    def text(self) -> str:
        if self.spectral:
            return (
                f"SpectralNorm(dim={self.dim}, n_power_iterations={self.n_power_iterations}, "
                f"eps={self.eps})"
            )
        return f"WeightNorm(dim={self.dim})"


def norm_hooks(m: nn.Module) -> list[NormHook]:
    """The legacy wrappings on ``m``, in the order they were applied."""
    out: list[NormHook] = []
    for hook in m._forward_pre_hooks.values():
        if isinstance(hook, WeightNorm):
            out.append(NormHook(False, hook.name, hook.dim))
        elif isinstance(hook, SpectralNorm):
            out.append(NormHook(True, hook.name, hook.dim, hook.n_power_iterations, hook.eps))
    return [h for h in out if h.original in m._parameters]


def rewrap(target: nn.Module, old: nn.Module) -> None:
    """Wrap ``target`` as ``old`` was, where it holds a plain parameter of the wrapped one's
    name and no wrapping of its own (a class that weight-norms its layers itself). Which of
    ``old``'s wrappings its constructor made is not known here: the caller leaves those out
    (``_patch/placement.py``'s ``reparametrize``, given the old module built again unchanged).
    The old functions compute their tensors from the new weight, so a new width is wrapped too
    (the weights that still fit are copied after: ``carry``)."""
    have = {h.name for h in norm_hooks(target)}
    for h in norm_hooks(old):
        if h.name in have or not isinstance(target._parameters.get(h.name), torch.Tensor):
            continue
        with warnings.catch_warnings():  # torch deprecates the old functions; the user chose them
            warnings.simplefilter("ignore")
            if h.spectral:
                _spectral(target, h.name, h.n_power_iterations, h.eps, h.dim)
            else:
                _weight(target, h.name, h.dim)
