"""Source: torch.nn's own attributes. torch.nn classes keep some arguments in another form than
they were given (``bias`` as a tensor or None, ``nonlinearity`` inside ``mode``, a stack's layer
as its first layer), and every module's tensors tell its ``device`` and ``dtype``.

``RECOVERERS`` maps a class to a function returning ``{param: value}`` for the parameters that
are not stored under their own name (derived values). It is searched along ``type(m).__mro__``;
a function returns ``NotImplemented`` to let a base class's entry answer instead. Parameters that
no entry derives fall back to the next source (``_forms/sources/__init__.py``): a same-name
attribute (``attributes.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn.modules.batchnorm import _NormBase
from torch.nn.modules.conv import _ConvNd
from torch.nn.modules.loss import _Loss
from torch.nn.parameter import is_lazy

__all__ = [
    "RECOVERERS",
    "derived_values",
    "draft",
    "register_recoverer",
    "tensor_device_dtype",
]

Recoverer = Callable[[Any], Any]
RECOVERERS: dict[type, Recoverer] = {}


def register_recoverer(cls: type) -> Callable[[Recoverer], Recoverer]:
    def deco(fn: Recoverer) -> Recoverer:
        RECOVERERS[cls] = fn
        return fn

    return deco


def derived_values(module: nn.Module) -> dict[str, Any]:
    for klass in type(module).__mro__:
        fn = RECOVERERS.get(klass)
        if fn is None:
            continue
        out = fn(module)
        if out is not NotImplemented:
            return dict(out)
    return {}


def draft(
    module: nn.Module, param: inspect.Parameter, derived: dict[str, Any]
) -> tuple[Any, str] | None:
    """The parameter's derived value (``derived``: ``derived_values(module)``), or the module's
    device or floating dtype for ``device`` / ``dtype``; None for any other."""
    if param.name in derived:
        return derived[param.name], "derived"
    if param.name in ("device", "dtype"):
        if _kept_as_given(module, param.name):
            return None  # the attribute (``attributes.py``) holds it as it was written
        device, dtype = tensor_device_dtype(module)
        return (device if param.name == "device" else dtype), "derived"
    return None


def _kept_as_given(module: nn.Module, name: str) -> bool:
    """Whether the module keeps its ``device`` or ``dtype`` argument under the same name as a
    value of that kind (``self.device = device``, often the string ``"cpu"``): the argument as
    it was written, which the tensors' ``torch.device`` would rebuild unlike (a kept ``"cpu"``
    is no ``torch.device("cpu")``); a module moved after its build still keeps what it was
    given."""
    held = vars(module).get(name)
    if name == "dtype":
        return isinstance(held, torch.dtype)
    if isinstance(held, torch.device):
        return True
    if not isinstance(held, str):
        return False
    try:
        torch.device(held)
    except (RuntimeError, ValueError):
        return False
    return True


def tensor_device_dtype(module: nn.Module) -> tuple[torch.device | None, torch.dtype | None]:
    """Device and floating dtype of the module's own tensors (first found)."""
    device = dtype = None
    for t in [*module.parameters(), *module.buffers()]:
        if is_lazy(t):
            device = device or t.device
            dtype = dtype or (t.dtype if t.dtype.is_floating_point else None)
            continue
        device = device or t.device
        if dtype is None and t.is_floating_point():
            dtype = t.dtype
        if device is not None and dtype is not None:
            break
    return device, dtype


@register_recoverer(_ConvNd)
def _conv(m: _ConvNd) -> dict[str, Any]:
    return {"bias": m.bias is not None}


@register_recoverer(_NormBase)
def _norm(m: _NormBase) -> dict[str, Any]:
    # Without affine there is no bias parameter to look at; bias=True is the default then.
    return {"bias": m.bias is not None if m.affine else True}


@register_recoverer(nn.GroupNorm)
def _group_norm(m: nn.GroupNorm) -> dict[str, Any]:
    return {"bias": m.bias is not None if m.affine else True}


@register_recoverer(nn.LayerNorm)
def _layer_norm(m: nn.LayerNorm) -> dict[str, Any]:
    return {"bias": m.bias is not None if m.elementwise_affine else True}


@register_recoverer(nn.RNNBase)
def _rnn(m: nn.RNNBase) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if m.mode in ("RNN_TANH", "RNN_RELU"):
        out["nonlinearity"] = "tanh" if m.mode == "RNN_TANH" else "relu"
    return out


@register_recoverer(nn.RNNCellBase)
def _rnn_cell(m: nn.RNNCellBase) -> dict[str, Any]:
    return {"num_chunks": m.weight_ih.shape[0] // m.hidden_size}


@register_recoverer(nn.MultiheadAttention)
def _mha(m: nn.MultiheadAttention) -> dict[str, Any]:
    return {
        "bias": m.in_proj_bias is not None,
        "add_bias_kv": m.bias_k is not None,
        "kdim": None if m.kdim == m.embed_dim else m.kdim,
        "vdim": None if m.vdim == m.embed_dim else m.vdim,
    }


def _transformer_layer(m: Any) -> dict[str, Any]:
    return {
        "d_model": m.self_attn.embed_dim,
        "nhead": m.self_attn.num_heads,
        "dim_feedforward": m.linear1.out_features,
        "dropout": m.dropout.p,
        "activation": m.activation,
        "layer_norm_eps": m.norm1.eps,
        "batch_first": m.self_attn.batch_first,
        "bias": m.linear1.bias is not None,
    }


RECOVERERS[nn.TransformerEncoderLayer] = _transformer_layer
RECOVERERS[nn.TransformerDecoderLayer] = _transformer_layer


def _stack(m: Any, layer_param: str) -> dict[str, Any]:
    return {layer_param: m.layers[0], "num_layers": len(m.layers)}


RECOVERERS[nn.TransformerEncoder] = lambda m: _stack(m, "encoder_layer")
RECOVERERS[nn.TransformerDecoder] = lambda m: _stack(m, "decoder_layer")


@register_recoverer(nn.Transformer)
def _transformer(m: nn.Transformer) -> dict[str, Any]:
    enc, dec = m.encoder, m.decoder
    out: dict[str, Any] = {"custom_encoder": None, "custom_decoder": None}
    std_enc = type(enc) is nn.TransformerEncoder and isinstance(
        enc.layers[0], nn.TransformerEncoderLayer
    )
    std_dec = type(dec) is nn.TransformerDecoder and isinstance(
        dec.layers[0], nn.TransformerDecoderLayer
    )
    if std_enc:
        layer = enc.layers[0]
        out.update(_transformer_layer(layer))
        out["num_encoder_layers"] = len(enc.layers)
        out["norm_first"] = layer.norm_first
    else:
        out["custom_encoder"] = enc
    if std_dec:
        out["num_decoder_layers"] = len(dec.layers)
        if not std_enc:
            out.update(_transformer_layer(dec.layers[0]))
            out["norm_first"] = dec.layers[0].norm_first
    else:
        out["custom_decoder"] = dec
    return out


@register_recoverer(nn.Embedding)
def _embedding(m: nn.Embedding) -> dict[str, Any]:
    # A fresh module gets fresh weights; the old weight tensor is not handed over.
    return {"_weight": None, "_freeze": not m.weight.requires_grad}


@register_recoverer(nn.EmbeddingBag)
def _embedding_bag(m: nn.EmbeddingBag) -> dict[str, Any]:
    return {"_weight": None}


@register_recoverer(_Loss)
def _loss(m: _Loss) -> dict[str, Any]:
    # Deprecated flags are folded into `reduction` by the constructor.
    return {"size_average": None, "reduce": None}


@register_recoverer(nn.Hardtanh)
def _hardtanh(m: nn.Hardtanh) -> dict[str, Any]:
    return {"min_value": None, "max_value": None}


@register_recoverer(nn.PairwiseDistance)
def _pairwise(m: nn.PairwiseDistance) -> dict[str, Any]:
    return {"p": m.norm}


@register_recoverer(nn.AdaptiveLogSoftmaxWithLoss)
def _adaptive_lsm(m: nn.AdaptiveLogSoftmaxWithLoss) -> dict[str, Any]:
    return {"cutoffs": list(m.cutoffs[:-1]), "head_bias": m.head.bias is not None}


def _linear_ce(m: Any) -> dict[str, Any]:
    return {
        "in_features": m.linear.in_features,
        "bias": m.linear.bias is not None,
        "size_average": None,
        "reduce": None,
    }


# New in torch 2.13: older releases that pyproject allows (torch>=2.4) have no such class.
if hasattr(nn, "LinearCrossEntropyLoss"):
    register_recoverer(nn.LinearCrossEntropyLoss)(_linear_ce)


@register_recoverer(nn.Sequential)
def _sequential(m: nn.Sequential) -> dict[str, Any]:
    from collections import OrderedDict

    names = list(m._modules.keys())
    if all(n.isdigit() for n in names):
        return {"args": tuple(m._modules.values())}
    return {"args": (OrderedDict(m._modules),)}


@register_recoverer(nn.ModuleList)
def _module_list(m: nn.ModuleList) -> dict[str, Any]:
    return {"modules": list(m) or None}


@register_recoverer(nn.ModuleDict)
def _module_dict(m: nn.ModuleDict) -> dict[str, Any]:
    return {"modules": dict(m.items()) or None}


@register_recoverer(nn.ParameterList)
def _param_list(m: nn.ParameterList) -> dict[str, Any]:
    return {"values": list(m) or None}


@register_recoverer(nn.ParameterDict)
def _param_dict(m: nn.ParameterDict) -> dict[str, Any]:
    # An OrderedDict: ParameterDict.update sorts a plain dict's keys, and keeps this one's order.
    from collections import OrderedDict

    return {"parameters": OrderedDict(m.items()) or None}


@register_recoverer(nn.Container)
def _container(m: nn.Container) -> dict[str, Any]:
    return {"kwargs": dict(m._modules)}


@register_recoverer(nn.DataParallel)
def _data_parallel(m: nn.DataParallel) -> dict[str, Any]:
    ids = list(m.device_ids)
    return {
        "module": m.module,
        "device_ids": ids or None,
        "output_device": getattr(m, "output_device", None),
        "dim": getattr(m, "dim", 0),
    }


@register_recoverer(nn.Module)
def _module(m: nn.Module) -> Any:
    return NotImplemented
