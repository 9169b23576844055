"""The tensors `diff` compares against: another model's, a state_dict's or a checkpoint file's.

Each source lists names with their shape and dtype up front and hands out one tensor at a time
(`TensorSource.load`), so that a comparison holds at most one tensor of a checkpoint in memory.
``.safetensors`` files are opened with ``safe_open`` and read tensor by tensor; other files go
through ``torch.load(weights_only=True, mmap=True)``, whose tensors stay in the file's pages until
read (a file in the old, non-zip format cannot be mapped and is read whole). Nothing but tensors and
plain containers is ever unpickled.
"""

from __future__ import annotations

import os
import pickle
import re
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn as nn

# safetensors' dtype names (``get_slice(name).get_dtype()``), read without loading the tensor.
_ST_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E5M2": torch.float8_e5m2,
}

Meta = tuple[tuple[int, ...], torch.dtype | None]


class TensorSource:
    """Names in order, ``meta[name] = (shape, dtype)``, and ``load(name)`` giving the tensor."""

    kind = "state_dict"

    def __init__(self, tensors: Mapping[str, torch.Tensor], label: str) -> None:
        self._tensors = tensors
        self.label = label
        self.meta: dict[str, Meta] = {
            k: (tuple(int(s) for s in t.shape), t.dtype) for k, t in tensors.items()
        }

    def load(self, name: str) -> torch.Tensor:
        return self._tensors[name]

    def close(self) -> None:
        self._tensors = {}

    def __enter__(self) -> TensorSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SafetensorsSource(TensorSource):
    kind = "checkpoint"

    def __init__(self, path: str) -> None:
        from safetensors import SafetensorError, safe_open

        try:
            self._file: Any = safe_open(path, framework="pt", device="cpu")
        except SafetensorError as exc:
            raise ValueError(
                f"{path!r} is not a readable safetensors file ({exc}); it may be truncated or "
                "another format - check the file, or save it again with safetensors.torch.save_file"
            ) from exc
        self.label = path
        self.meta = {}
        for name in self._file.keys():
            piece = self._file.get_slice(name)
            self.meta[name] = (tuple(piece.get_shape()), _ST_DTYPES.get(piece.get_dtype()))

    def load(self, name: str) -> torch.Tensor:
        return self._file.get_tensor(name)

    def close(self) -> None:
        self._file = None


def open_source(b: Any) -> TensorSource:
    """A `TensorSource` for a model, a state_dict or a checkpoint path; errors name the fix."""
    if isinstance(b, nn.Module):
        source = TensorSource(_tensors_of(b), f"model {type(b).__name__}")
        source.kind = "model"
        return source
    if isinstance(b, Mapping):
        return TensorSource(_only_tensors(b, "the state_dict"), "state_dict")
    if isinstance(b, (str, os.PathLike)):
        path = os.fspath(b)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no checkpoint file at {path!r}")
        if path.endswith(".safetensors"):
            return SafetensorsSource(path)
        source = TensorSource(_only_tensors(_torch_load(path), repr(path)), path)
        source.kind = "checkpoint"
        return source
    raise TypeError(
        "diff(a, b): b must be a model, a state_dict (a mapping of names to tensors) or a "
        f"checkpoint path (.safetensors, .pt, .bin), got {type(b).__name__}"
    )


def _tensors_of(model: nn.Module) -> dict[str, torch.Tensor]:
    # keep_vars: the parameters themselves, no detached copies; quantized layers' packed
    # parameters (tuples in the state_dict) have no name-for-name counterpart and are left out.
    state = model.state_dict(keep_vars=True)
    return {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}


def _torch_load(path: str) -> Any:
    try:
        try:
            return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as exc:
            if "mmap can only be used" not in str(exc):
                raise
            # The legacy (non-zip) format cannot be mapped: read it whole, still weights only.
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        text = str(exc)
        found = re.search(r"Unsupported global: GLOBAL (\S+)", text)
        if found:
            raise ValueError(
                f"{path!r} holds Python objects ({found.group(1)}) that "
                "torch.load(weights_only=True) refuses to unpickle, and torchxray never unpickles "
                "arbitrary objects; if you trust the file, load it yourself and pass its "
                "state_dict, or save the weights with torch.save(model.state_dict(), path) or "
                "safetensors"
            ) from None
        detail = re.search(r"WeightsUnpickler error:\s*(.+)", text)
        why = detail.group(1).strip() if detail else text.splitlines()[0]
        raise ValueError(f"{path!r} is not a torch checkpoint ({why})") from None
    except (RuntimeError, EOFError, OSError) as exc:
        raise ValueError(
            f"{path!r} could not be read as a torch checkpoint ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}); it may be truncated or corrupt"
        ) from None


def _only_tensors(obj: Any, what: str) -> dict[str, torch.Tensor]:
    """The mapping itself when every key is a string and every value a tensor; otherwise an error
    that says where the weights probably are (a training checkpoint nests them)."""
    if not isinstance(obj, Mapping):
        raise ValueError(
            f"{what} holds a {type(obj).__name__}, not a mapping of names to tensors; pass a "
            "state_dict (model.state_dict())"
        )
    other = {k: v for k, v in obj.items() if not (isinstance(k, str) and torch.is_tensor(v))}
    if not other:
        return dict(obj)
    nested = [repr(k) for k, v in other.items() if isinstance(v, Mapping)]
    listed = ", ".join(f"{k!r} ({type(v).__name__})" for k, v in list(other.items())[:6])
    hint = (
        f"; the weights are probably under {' or '.join(nested)}: pass "
        f"torch.load(path, weights_only=True)[{nested[0]}]"
        if nested
        else ""
    )
    raise ValueError(
        f"{what} holds other keys than tensor names: {listed}{hint}; diff compares a mapping of "
        "names to tensors"
    )
