"""What the export check changes in torch, put back: `Untouched`, around every target.

torch.export, the ONNX exporter and ExecuTorch's lowering set and reset settings of their own
(``torch.fx.experimental._config.backed_size_oblivious`` around the ONNX decomposition, fx's
stack-trace switch around the engine's export, inductor's around AOTInductor): each is a context
manager of theirs that restores what it changed. This guard is the check's own proof of it: it
copies the public settings of dynamo, export, functorch, fx and inductor on entry, and on leaving
sets back any that differ, so that a target that forgot one (or an exception that skipped a
restore) leaves nothing changed.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["CONFIGS", "Untouched"]

CONFIGS = (
    "torch._dynamo.config",
    "torch._export.config",
    "torch._functorch.config",
    "torch.fx.config",
    "torch.fx.experimental._config",
    "torch._inductor.config",
)


def snapshot() -> dict[str, dict[str, Any]]:
    """Every setting of `CONFIGS`, by module (those a torch lacks are left out)."""
    out: dict[str, dict[str, Any]] = {}
    for name in CONFIGS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        copy = getattr(module, "get_config_copy", None)
        if copy is not None:
            out[name] = copy()
    return out


class Untouched:
    def __enter__(self) -> Untouched:
        self._before = snapshot()
        return self

    def __exit__(self, *exc: object) -> None:
        for name, before in self._before.items():
            module = importlib.import_module(name)
            now = module.get_config_copy()
            for key, value in before.items():
                if key in now and now[key] != value:
                    try:
                        setattr(module, key, value)
                    except Exception:  # noqa: BLE001 - a read-only setting: nothing to undo
                        pass
