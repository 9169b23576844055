"""Tracing one module call without running it: `trace(module, args, kwargs) -> Outcome`.

The call is compiled with a backend that raises as soon as dynamo hands it a graph, under
``torch._dynamo.error_on_graph_break(True)`` (`guard.Quiet`): dynamo either reaches the end of the
forward and hands over the graph (no break: the backend's own exception stops it before anything
runs), or raises ``Unsupported`` at the first break, with the break type, the user's frames, the
hints and the graph-break page. Not ``fullgraph=True``: it traces ``.item()`` and ``nonzero`` as
unbacked symbols where a plain ``torch.compile`` breaks, so it would hide the very breaks asked for.

Each trace compiles a fresh function of its own (a new code object, named per trace) that calls
the module: dynamo keeps caches and automatic-dynamic shape records per code object, so the
check's traces share nothing with each other or with the user's compiled functions (compiling
``nn.Module.__call__``'s own code would add entries to a code object every module shares).
"""

from __future__ import annotations

import itertools
import types
from dataclasses import dataclass
from typing import Any

from torch import nn

__all__ = ["OWN_FILE", "Outcome", "trace", "trace_each"]

_COUNT = itertools.count()


class Traced(Exception):  # noqa: N818 - a signal, not an error
    """Raised by the check's backend: dynamo traced the forward into one graph."""


def _backend(gm: Any, example_inputs: Any) -> Any:
    raise Traced


@dataclass(frozen=True)
class Outcome:
    """One trace: `clean` (one graph, or no tensor work at all), or the `Unsupported` it raised
    (`exc`), or another exception that stopped dynamo (`error`)."""

    clean: bool
    exc: BaseException | None = None
    error: BaseException | None = None


def _call(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return module(*args, **kwargs)


def _call_each(calls: list[tuple[nn.Module, tuple[Any, ...], dict[str, Any]]]) -> None:
    for module, args, kwargs in calls:
        module(*args, **kwargs)


OWN_FILE = _call.__code__.co_filename  # a break's frame in this file is the check's own call


def _fresh(fn: Any) -> types.FunctionType:
    code = fn.__code__.replace(co_name=f"_torchxray_compile_check_{next(_COUNT)}")
    return types.FunctionType(code, fn.__globals__, code.co_name)


def trace(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
    """Trace ``module(*args, **kwargs)`` under the check's backend; call it inside `Quiet`."""
    return _traced(_fresh(_call), (module, args, kwargs))


def trace_each(calls: list[tuple[nn.Module, tuple[Any, ...], dict[str, Any]]]) -> Outcome:
    """Trace several module calls, one after another, in one function (a module's children,
    each on its recorded arguments): one trace where they do not break."""
    return _traced(_fresh(_call_each), (calls,))


def _traced(fn: types.FunctionType, args: tuple[Any, ...]) -> Outcome:
    import torch
    from torch._dynamo import exc as dexc

    compiled = torch.compile(fn, backend=_backend)
    try:
        compiled(*args)
    except dexc.Unsupported as exc:
        return Outcome(clean=False, exc=exc)
    except dexc.BackendCompilerFailed as exc:
        if isinstance(exc.inner_exception, Traced):
            return Outcome(clean=True)
        return Outcome(clean=False, error=exc)
    except Traced:
        return Outcome(clean=True)
    except Exception as exc:  # noqa: BLE001 - anything else stopped tracing: reported, not raised
        if isinstance(exc.__cause__, Traced):
            return Outcome(clean=True)
        return Outcome(clean=False, error=exc)
    return Outcome(clean=True)
