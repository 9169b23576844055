"""torchxray: an X-ray for live PyTorch models in Jupyter.

Explore an ``nn.Module`` (tree, source, constructor forms, MRO graphs), change it through a
transactional patch log, and probe what every layer receives and returns.

    >>> import torch.nn as nn, torchxray as tx
    >>> tree = tx.walk(nn.Sequential(nn.Linear(4, 8), nn.ReLU()))
    >>> tree["0"].cls
    'Linear'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> submodule that defines it. Imported lazily (PEP 562) so `import torchxray` stays
# cheap and each part of the package can be used without importing the widget stack.
_EXPORTS: dict[str, str] = {
    "walk": "tree",
    "ModelTree": "tree",
    "Node": "tree",
    "source": "source",
    "Source": "source",
    "form": "forms",
    "Form": "forms",
    "Field": "forms",
    "FormError": "forms",
    "record_init_args": "forms",
    "mro_graph": "mro",
    "PatchLog": "patch",
    "probe": "probe",
    "ProbeReport": "probe",
    "register": "catalog",
    "catalog": "catalog",
    "explore": "widget",
    "Explorer": "widget",
}

__all__ = sorted(_EXPORTS) + ["__version__"]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .catalog import catalog, register
    from .forms import Field, Form, FormError, form, record_init_args
    from .mro import mro_graph
    from .patch import PatchLog
    from .probe import ProbeReport, probe
    from .source import Source, source
    from .tree import ModelTree, Node, walk
    from .widget import Explorer, explore


def __getattr__(name: str) -> Any:
    try:
        module_name = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'torchxray' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module_name}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
