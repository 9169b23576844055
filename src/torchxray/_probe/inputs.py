"""What a probe does before the forward: a batch passed as one mapping opened into keyword
arguments, the model's device, refusing models that hold uninitialised tensors, and the example inputs turned
into fake views (fake mode) on the model's device (never the model)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_origin

import torch
from torch import nn
from torch.utils import _pytree as pytree

from .._signature import resolve
from .._uninitialised import uninitialised, uninitialised_message
from .records import ProbeError
from .run import ProbeRun

__all__ = ["first_lazy", "model_device", "prepare_inputs", "unpack_batch"]


def unpack_batch(
    model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``probe(model, batch)`` as ``probe(model, **batch)`` when that is what the forward takes.

    A tokenizer's output (``BatchEncoding``) or a dict of tensors passed as the only input is
    opened into keyword arguments when its keys are all names of the forward's parameters, or
    the forward takes ``**kwargs`` and its first parameter's name is a key; never when that
    first parameter is annotated as a mapping (a forward written to take the batch itself)."""
    if len(args) != 1 or kwargs or not isinstance(args[0], Mapping):
        return args, kwargs
    batch = args[0]
    keys = list(batch.keys())
    if not keys or not all(isinstance(k, str) for k in keys):
        return args, kwargs
    try:
        params = list(resolve(model.forward).parameters.values())  # through wrappers
    except (TypeError, ValueError):  # no signature to read: call it as it was given
        return args, kwargs
    named = {
        p.name: p
        for p in params
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.POSITIONAL_ONLY)
    }
    first = next(
        (p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)), None
    )
    if first is not None and _takes_mapping(first.annotation):
        return args, kwargs
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    keyword = {n for n, p in named.items() if p.kind is not p.POSITIONAL_ONLY}
    if all(k in keyword for k in keys) or (var_kw and first is not None and first.name in keys):
        return (), dict(batch)
    return args, kwargs


def _takes_mapping(annotation: Any) -> bool:
    if isinstance(annotation, str):  # postponed annotations: read the text
        return any(word in annotation for word in ("dict", "Dict", "Mapping", "BatchEncoding"))
    origin = get_origin(annotation) or annotation
    return isinstance(origin, type) and issubclass(origin, Mapping)


def model_device(model: nn.Module) -> torch.device:
    """The device of the first parameter (else buffer); CPU for a model without tensors."""
    for param in model.parameters():
        return param.device
    for buffer in model.buffers():
        return buffer.device
    return torch.device("cpu")


def first_lazy(run: ProbeRun) -> ProbeError | None:
    """Uninitialised tensors (a lazy module's, or an ``UninitializedParameter`` set on any
    module) have no shape; a lazy module initialises its own on its first forward, which would
    change the model (and, under fake tensors, give it fake parameters): refuse instead, naming
    every such tensor. The walk found the first module holding one (`ProbeRun.lazy`); the
    others are looked for only then."""
    path = run.lazy
    if path is None:
        return None
    named = zip(
        [run.paths[id(m)] for m in run.modules], run.modules
    )  # each module object once, at its first path
    paths = uninitialised(named)
    message, hint = uninitialised_message(run.model, paths, "a probe")
    return ProbeError(
        path=path,
        cls=run.names[path],
        exc_type="ValueError",
        message=message,
        input_shapes=(),
        hint=hint,
    )


def prepare_inputs(
    run: ProbeRun, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    leaves, spec = pytree.tree_flatten((args, kwargs))
    if not any(isinstance(leaf, torch.Tensor) for leaf in leaves):
        return args, kwargs
    device = run.device
    moved: list[Any] = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            tensor: torch.Tensor = leaf
            if run.fake_mode is not None:
                # A fake view of the input (meta inputs included): no copy, whatever its size.
                fakes = run.fake_mode.fakes
                plain = fakes is not None and type(tensor) in (torch.Tensor, nn.Parameter)
                tensor = fakes(tensor) if plain else run.fake_mode.from_tensor(tensor)
            if tensor.device != device:
                tensor = tensor.to(device)
            leaf = tensor
        moved.append(leaf)
    return pytree.tree_unflatten(moved, spec)  # type: ignore[no-any-return]
