"""What a check changes in torch, put back: `Quiet`, one context manager around all tracing.

Tracing goes through dynamo's global machinery, so the check must leave it as the user had it:
- ``torch._dynamo.error_on_graph_break(True)`` (the check's own setting) and the compiler stance
  "default" (a stance of ``force_eager`` set by the user would run the forward instead of
  tracing it) are context managers that restore the previous value;
- ``torch._dynamo.utils.counters`` (what ``explain`` and tests read) is copied and put back;
- dynamo's automatic-dynamic record of the shapes each code object saw (``pgo._CODE_STATE``) is
  copied and put back: left in place, the check's example shapes would make the user's next
  compile of the same forward dynamic instead of static;
- torch's loggers (dynamo prints a graph-break warning per break) are switched off, and Python
  warnings are ignored, so the user's cell shows nothing of the check;
- whether ``torch.distributions`` validate their arguments: dynamo's first compile in a process
  turns it off for good (``Distribution.set_default_validate_args(False)`` in its one-time patch
  of torch), after which a ``Normal(mu, -1.0)`` of the user's no longer raises, and a fake probe
  of a model that builds distributions saw no ``.item()``. It is put back. (The patch's other
  changes wrap tracers in ``disable``, which eager code cannot tell.)
"""

from __future__ import annotations

import contextlib
import copy
import logging
import warnings
from types import TracebackType
from typing import Any

import torch

__all__ = ["Quiet", "unavailable"]

_QUIET = logging.CRITICAL + 1


def unavailable() -> str | None:
    """Why this torch cannot run the check, or None."""
    try:
        import torch._dynamo as dynamo
    except Exception as exc:  # noqa: BLE001 - a broken install: say so, never a traceback
        return f"torch._dynamo cannot be imported ({type(exc).__name__}: {exc})"
    if not hasattr(dynamo, "error_on_graph_break"):
        return (
            f"torch {torch.__version__} has no torch._dynamo.error_on_graph_break, which the check "
            "traces with; it needs torch >= 2.9"
        )
    if getattr(dynamo.config, "disable", False):
        return "torch._dynamo is disabled (TORCHDYNAMO_DISABLE or torch._dynamo.config.disable)"
    return None


class Quiet:
    """Enter before tracing, leave after: see the module docstring for what it puts back."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._counters: Any = None
        self._loggers: list[tuple[logging.Logger, bool]] = []
        self._level = logging.NOTSET
        self._pgo: Any = None
        self._code_state: Any = None
        self._validate = torch.distributions.Distribution._validate_args

    def __enter__(self) -> Quiet:
        import torch._dynamo as dynamo
        from torch._dynamo import utils

        stack = self._stack
        self._counters = copy.deepcopy(utils.counters)
        self._validate = torch.distributions.Distribution._validate_args
        self._save_code_state()
        # torch's loggers that exist now are switched off; those made while tracing (a module
        # imported for the first time) inherit the "torch" logger's level, raised past CRITICAL.
        for name, logger in list(logging.root.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger) and name.startswith("torch"):
                self._loggers.append((logger, logger.disabled))
                logger.disabled = True
        top = logging.getLogger("torch")
        self._level = top.level
        top.setLevel(_QUIET)
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        stack.enter_context(dynamo.error_on_graph_break(True))
        set_stance = getattr(torch.compiler, "set_stance", None)
        if set_stance is not None:
            stack.enter_context(set_stance("default"))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        from torch._dynamo import utils

        try:
            self._stack.close()
        finally:
            for logger, disabled in self._loggers:
                logger.disabled = disabled
            logging.getLogger("torch").setLevel(self._level)
            utils.counters.clear()
            utils.counters.update(self._counters)
            torch.distributions.Distribution.set_default_validate_args(self._validate)
            self._restore_code_state()

    def _save_code_state(self) -> None:
        try:
            from torch._dynamo import pgo
        except ImportError:  # an older torch keeps no such record
            return
        self._pgo = pgo
        state = getattr(pgo, "_CODE_STATE", None)
        self._code_state = (state, copy.copy(state) if state is not None else None)

    def _restore_code_state(self) -> None:
        pgo = self._pgo
        if pgo is None or self._code_state is None:
            return
        state, saved = self._code_state
        if state is None:
            pgo._CODE_STATE = None
            return
        # Entries the check added go; entries the user had keep their own objects (a code's
        # state is replaced, not changed in place, when dynamo updates it).
        state.clear()
        state.update(saved)
        pgo._CODE_STATE = state
