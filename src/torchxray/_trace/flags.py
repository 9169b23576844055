"""torch's global state a forward may change and a run must leave as found: default dtype and
device, grad mode, deterministic algorithms, autocast, the backends' flags, intra-op threads,
anomaly mode. One table of (name, read, write); a name this torch release lacks is skipped.

The global module hooks (``register_module_forward_hook`` and friends) are containers in
``torch.nn.modules.module``: `globals_held` hands them to `_trace/held.py` as "hook" writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.nn.modules import module as nn_module

__all__ = ["FLAGS", "GLOBAL_HOOKS", "Flags"]


def _autocast(device: str) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    def read() -> Any:
        return (torch.is_autocast_enabled(device), torch.get_autocast_dtype(device))

    def write(v: Any) -> None:
        torch.set_autocast_enabled(device, v[0])
        torch.set_autocast_dtype(device, v[1])

    return read, write


def _default_device() -> Any:
    # The context object itself: `get_default_device()` reads "cpu" both when none was set and
    # when "cpu" was, and setting "cpu" back would push a mode that was not there.
    return getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)


def _set_default_device(ctx: Any) -> None:
    torch.set_default_device(None)
    if ctx is not None:
        torch.set_default_device(ctx.device)


def _deterministic() -> Any:
    return (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )


def _backend(module: Any, name: str) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    return (lambda: getattr(module, name)), (lambda v: setattr(module, name, v))


def _table() -> list[tuple[str, Callable[[], Any], Callable[[Any], None]]]:
    table: list[tuple[str, Callable[[], Any], Callable[[Any], None]]] = [
        ("torch.get_default_dtype()", torch.get_default_dtype, torch.set_default_dtype),
        ("torch.is_grad_enabled()", torch.is_grad_enabled, torch._C._set_grad_enabled),
        (
            "torch.are_deterministic_algorithms_enabled()",
            _deterministic,
            lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1]),
        ),
        ("torch.is_anomaly_enabled()", torch.is_anomaly_enabled, torch.set_anomaly_enabled),
        ("torch.get_num_threads()", torch.get_num_threads, torch.set_num_threads),
        (
            "torch.get_float32_matmul_precision()",
            torch.get_float32_matmul_precision,
            torch.set_float32_matmul_precision,
        ),
    ]
    if hasattr(torch, "_GLOBAL_DEVICE_CONTEXT"):
        table.append(("torch.set_default_device(...)", _default_device, _set_default_device))
    if hasattr(torch, "get_autocast_dtype"):
        for device in ("cpu", "cuda"):
            table.append((f"torch.autocast({device!r})", *_autocast(device)))
    backends = torch.backends
    for module, names in (
        (backends.cudnn, ("enabled", "benchmark", "deterministic", "allow_tf32")),
        (backends.cuda.matmul, ("allow_tf32", "allow_fp16_reduced_precision_reduction")),
        (backends.mkldnn, ("enabled",)),
    ):
        for name in names:
            try:
                getattr(module, name)
            except Exception:  # noqa: BLE001 - not in this release
                continue
            label = f"{module.__name__}.{name}" if hasattr(module, "__name__") else name
            table.append((label, *_backend(module, name)))
    return table


FLAGS = _table()
GLOBAL_HOOKS = tuple(
    name
    for name in (
        "_global_forward_hooks",
        "_global_forward_pre_hooks",
        "_global_backward_hooks",
        "_global_backward_pre_hooks",
        "_global_forward_hooks_always_called",
        "_global_forward_hooks_with_kwargs",
        "_global_parameter_registration_hooks",
        "_global_buffer_registration_hooks",
        "_global_module_registration_hooks",
    )
    if hasattr(nn_module, name)
)


class Flags:
    """The table's values when made; `restore()` puts back the changed ones and names them."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        for _, read, _ in FLAGS:
            try:
                self.values.append(read())
            except Exception:  # noqa: BLE001 - unreadable here (no CUDA build): left alone
                self.values.append(_UNREAD)

    def restore(self) -> list[tuple[str, str, bool]]:
        """(name, "before -> now", put back) for each flag that changed."""
        out = []
        for (name, read, write), before in zip(FLAGS, self.values):
            if before is _UNREAD:
                continue
            try:
                now = read()
            except Exception:  # noqa: BLE001
                continue
            if now is before or now == before:
                continue
            try:
                write(before)
                done = True
            except Exception:  # noqa: BLE001 - said in the write, never raised into the cell
                done = False
            out.append((name, f"{_show(before)} -> {_show(now)}", done))
        return out


_UNREAD = object()


def _show(v: Any) -> str:
    device = getattr(v, "device", None)
    if device is not None and not isinstance(v, torch.Tensor):
        return str(device)
    return "none" if v is None else str(v)


def globals_held() -> list[tuple[str, Any]]:
    """The global module hook dicts, named as `_trace/held.py` takes them."""
    return [(name, getattr(nn_module, name)) for name in GLOBAL_HOOKS]
