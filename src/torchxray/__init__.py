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

# The inspection and patch modules are imported eagerly: four of them (source, probe, catalog, summary)
# define a function with the module's own name, and a lazily imported submodule would otherwise
# shadow that function as a package attribute. Only the widget stack (anywidget, traitlets) is lazy.
from .attach import Job, attach
from .catalog import CatalogEntry, catalog, register, resolve, unregister
from .compile import CompileReport, ExportFailure, GraphBreak, compile_check
from .diff import ModelDiff, ParamChange, diff
from .export_check import Drift, ExportIssue, ExportReport, ModuleExport, TargetResult, export_check
from .forms import Field, Form, FormError, form, record_everything, record_init_args
from .memory import MemoryRecord, MemoryReport, memory
from .mro import ClassInfo, mro_class, mro_classes, mro_graph
from .patch import PatchEntry, PatchLog
from .probe import Edge, FlowEntry, ProbeReport, Site, Write, probe
from .ranks import Comm, RankMemory, RankRecord, RanksPlan, ranks
from .select import peft_targets, select
from .source import Source, source
from .stats import ParamStats, stats
from .summary import summary
from .tree import ModelTree, Node, walk
from .watch import Watch, watch

__version__ = "0.4.0"
"""The package's version, written only here: pyproject.toml reads it (hatch's dynamic version) and
CHANGELOG.md names each release by it."""

_LAZY: dict[str, str] = {"explore": "widget", "Explorer": "widget"}

__all__ = [
    "CatalogEntry",
    "Comm",
    "ClassInfo",
    "CompileReport",
    "Edge",
    "Explorer",
    "ExportFailure",
    "Field",
    "FlowEntry",
    "Form",
    "FormError",
    "GraphBreak",
    "Job",
    "MemoryRecord",
    "MemoryReport",
    "ModelDiff",
    "ModelTree",
    "Node",
    "PatchEntry",
    "ParamChange",
    "ParamStats",
    "PatchLog",
    "ProbeReport",
    "RankMemory",
    "RankRecord",
    "RanksPlan",
    "Site",
    "Source",
    "Watch",
    "Write",
    "__version__",
    "attach",
    "catalog",
    "compile_check",
    "diff",
    "explore",
    "form",
    "memory",
    "mro_class",
    "mro_classes",
    "mro_graph",
    "peft_targets",
    "probe",
    "ranks",
    "record_everything",
    "record_init_args",
    "register",
    "resolve",
    "select",
    "source",
    "stats",
    "summary",
    "unregister",
    "walk",
    "watch",
    # export readiness (issue 56)
    "Drift",
    "ExportIssue",
    "ExportReport",
    "ModuleExport",
    "TargetResult",
    "export_check",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .widget import Explorer, explore


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext torchxray``: record the constructor arguments of every module the notebook
    builds from now on, so that their forms are exact (``record_everything()``)."""
    record_everything()


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext torchxray``: stop recording (records made so far stay)."""
    record_everything(False)


def __getattr__(name: str) -> Any:
    try:
        module_name = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'torchxray' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module_name}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
