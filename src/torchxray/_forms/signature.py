"""Constructor signatures for forms: ``self`` dropped, ``__signature__``/``__wrapped__`` honoured,
and per-class overrides for classes whose ``__init__`` only forwards ``*args, **kwargs``.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from torch import nn

from .._signature import resolve

__all__ = ["SIGNATURE_OVERRIDES", "ann_text", "signature"]

_MISSING = inspect.Parameter.empty


def signature(cls: type) -> inspect.Signature:
    """Constructor signature without ``self``, through wrappers (`torchxray._signature`)."""
    init = cls.__init__  # type: ignore[misc]
    for klass in cls.__mro__:
        override = SIGNATURE_OVERRIDES.get(klass)
        if override is not None and init is klass.__init__:  # type: ignore[misc]
            return override()
    # Wrappers (kernels' ``new_init``, decorators without ``wraps``), partials, a hand-set
    # ``__signature__``: the shared resolver sees through them or refuses in a sentence.
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


def ann_text(ann: Any) -> str:
    if ann is _MISSING:
        return ""
    if isinstance(ann, type):
        return (
            ann.__qualname__
            if ann.__module__ == "builtins"
            else f"{ann.__module__}.{ann.__qualname__}"
        )
    return str(ann).replace("typing.", "")
