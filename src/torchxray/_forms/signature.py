"""Stage 1 of a form (``forms.py`` runs the stages): what the constructor takes.

``constructor(module_or_class)`` names the class a form rebuilds (the user's class behind one
that ``torch.nn.utils.parametrize`` generated) and its constructor's signature, read by the one
resolver every part of torchxray uses (``torchxray._signature``: ``self`` dropped, through
``__wrapped__``, partials, decorators without ``functools.wraps``, a replaced ``__init__``, a
hand-set ``__signature__``, the class's own ``def __init__``), with per-class overrides for
torch's RNNs, whose ``__init__`` only forwards ``*args, **kwargs`` (``SIGNATURE_OVERRIDES``). It
refuses, in one sentence, what has no Python constructor to rebuild from, and a signature the
resolver cannot find.
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass

import torch
from torch import nn

from .._signature import resolve
from .._unwrap import original_class

__all__ = ["SIGNATURE_OVERRIDES", "Constructor", "constructor", "signature"]


@dataclass(frozen=True)
class Constructor:
    """What stage 1 hands down: the class a form rebuilds, its constructor's signature, and the
    live module the form reads (None for a class's form)."""

    cls: type
    signature: inspect.Signature
    module: nn.Module | None


def constructor(module_or_class: nn.Module | type) -> Constructor:
    """The ``Constructor`` of a module or an ``nn.Module`` subclass; ``TypeError`` naming what
    was wrong for anything else."""
    if isinstance(module_or_class, type):
        if not issubclass(module_or_class, nn.Module):
            raise TypeError(
                f"form() expects an nn.Module or an nn.Module subclass, "
                f"got the class {module_or_class.__qualname__}"
            )
        cls, module = module_or_class, None
    elif isinstance(module_or_class, torch.jit.ScriptModule):
        raise TypeError(
            "form() needs a Python nn.Module; a ScriptModule has no Python constructor to "
            "rebuild from (use the module you scripted)"
        )
    elif isinstance(module_or_class, nn.Module):
        cls, module = original_class(type(module_or_class)), module_or_class
    else:
        raise TypeError(
            f"form() expects an nn.Module or an nn.Module subclass, "
            f"got {type(module_or_class).__name__}"
        )
    try:
        sig = signature(cls)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"form() cannot read the constructor signature of {cls.__qualname__}: {e}"
        ) from e
    return Constructor(cls, sig, module)


def signature(cls: type) -> inspect.Signature:
    """Constructor signature without ``self``, through wrappers (``torchxray._signature``)."""
    init = cls.__init__  # type: ignore[misc]
    for klass in cls.__mro__:
        override = SIGNATURE_OVERRIDES.get(klass)
        if override is not None and init is klass.__init__:  # type: ignore[misc]
            return override()
    # Wrappers (kernels' ``new_init``, decorators without ``wraps``), partials, a hand-set
    # ``__signature__``, a subclass that hands everything to its parent: the shared resolver
    # sees through them or refuses in a sentence.
    return resolve(cls)


def _rnn_signature(nonlinearity: bool, proj_size: bool) -> inspect.Signature:
    base = signature(nn.RNNBase)
    drop = {"mode"} if proj_size else {"mode", "proj_size"}
    params = [p for p in base.parameters.values() if p.name not in drop]
    if nonlinearity:
        # nn.RNN's documented positional order puts nonlinearity after num_layers.
        nl = inspect.Parameter(
            "nonlinearity", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="tanh", annotation=str
        )
        params.insert(3, nl)
    return base.replace(parameters=params)


# RNN/LSTM/GRU declare ``(*args, **kwargs)`` and forward to RNNBase; show RNNBase's fields.
SIGNATURE_OVERRIDES: dict[type, typing.Callable[[], inspect.Signature]] = {
    nn.RNN: lambda: _rnn_signature(True, False),
    nn.LSTM: lambda: _rnn_signature(False, True),
    nn.GRU: lambda: _rnn_signature(False, False),
}
