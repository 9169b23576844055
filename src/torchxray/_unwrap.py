"""The class a user wrote, behind the classes torch generates around it. ``torch.nn.utils.parametrize``
swaps a parametrized module's class for a generated ``Parametrized<Name>`` subclass without source;
``torch.compile`` wraps a module in an ``OptimizedModule`` holding it as ``_orig_mod``. The tree,
forms and source views show the original (TorchScript keeps no Python class: ``source`` reads its
``original_name``).

    >>> import torch.nn as nn
    >>> from torch.nn.utils.parametrizations import weight_norm
    >>> layer = weight_norm(nn.Linear(2, 3))
    >>> type(layer).__name__, original_class(type(layer)).__name__
    ('ParametrizedLinear', 'Linear')
    >>> compiled_inner(layer) is None
    True
"""

from __future__ import annotations

from torch import nn

__all__ = ["compiled_inner", "is_parametrized_class", "original_class", "torch_own"]


def torch_own(obj: object) -> bool:
    """Whether ``obj`` (a class or function, or a module's name) is torch's own code: ``torch`` or
    a module under it, not torchvision's, torchaudio's or a user's ``torch_utils``."""
    name = obj if isinstance(obj, str) else getattr(obj, "__module__", None) or ""
    return name == "torch" or name.startswith("torch.")


def is_parametrized_class(cls: type) -> bool:
    """Whether ``cls`` is the subclass ``torch.nn.utils.parametrize`` generated for an instance."""
    return cls.__module__ == "torch.nn.utils.parametrize" and cls.__name__.startswith(
        "Parametrized"
    )


def original_class(cls: type) -> type:
    """``cls``, or for a parametrized module's generated class the user's class (its only base)."""
    return cls.__bases__[0] if is_parametrized_class(cls) and cls.__bases__ else cls


def compiled_inner(module: nn.Module) -> nn.Module | None:
    """The module ``torch.compile`` wrapped, when ``module`` is its ``OptimizedModule``; else None."""
    if type(module).__name__ != "OptimizedModule":
        return None
    inner = module._modules.get("_orig_mod", module.__dict__.get("_orig_mod"))
    return inner if isinstance(inner, nn.Module) else None
