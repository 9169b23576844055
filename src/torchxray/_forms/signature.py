"""Constructor signatures for forms: ``self`` dropped, ``__signature__``/``__wrapped__`` honoured,
and per-class overrides for classes whose ``__init__`` only forwards ``*args, **kwargs``.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from torch import nn

__all__ = ["SIGNATURE_OVERRIDES", "ann_text", "signature"]

_MISSING = inspect.Parameter.empty


def signature(cls: type) -> inspect.Signature:
    """Constructor signature without ``self``; honours ``__signature__`` and ``__wrapped__``."""
    init = cls.__init__  # type: ignore[misc]
    for klass in cls.__mro__:
        override = SIGNATURE_OVERRIDES.get(klass)
        if override is not None and init is klass.__init__:  # type: ignore[misc]
            return override()
    own = cls.__dict__.get("__signature__")
    if isinstance(own, inspect.Signature):
        return own
    try:
        sig = inspect.signature(init, eval_str=True)
    except Exception:  # noqa: BLE001 - unresolvable string annotations are kept as strings
        sig = inspect.signature(init)
    params = list(sig.parameters.values())
    if params and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        params = params[1:]
    return sig.replace(parameters=params)


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
