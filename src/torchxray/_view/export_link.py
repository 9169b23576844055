"""The Export tab's last check, for one Explorer (``ExportLink``): slow (it exports, and an ONNX
model runs), so it runs when asked only; a patch marks it stale, and the next check says what
changed since the one before (``export_view.changes``)."""

from __future__ import annotations

from typing import Any

from torch import nn

from .export_types import ExportState
from .export_view import export_state

__all__ = ["ExportLink"]


class ExportLink:
    """The last ``ExportReport`` shown, the one before it, and the options asked."""

    def __init__(self) -> None:
        self.report: Any = None
        self.previous: Any = None
        self.options: dict[str, Any] = {}
        self.note = ""
        self.rev = 0  # the explorer's revision the check was made at
        self.model_rev = -1  # the model revision it checked

    def state(self, model: nn.Module | None, model_rev: int) -> ExportState:
        stale = self.report is not None and model_rev != self.model_rev
        return export_state(
            self.report,
            self.previous,
            model,
            rev=self.rev,
            stale=stale,
            note=self.note,
            asked=list(self.options.get("targets", ())),
        )

    def run(
        self,
        model: nn.Module,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        mode: str,
        options: dict[str, Any] | None,
        revs: tuple[int, int],
    ) -> Any:
        """``tx.export_check`` on ``model`` and its example inputs, in the probe's ``mode`` unless
        ``options`` says otherwise; ``options`` merged over the last check's (Check again keeps
        the targets); ``revs`` is (the explorer's revision, the model's)."""
        from ..export_check import export_check

        opts = {**self.options, **(options or {})}
        # In the probe's mode unless told otherwise, as the Compile tab: a fake explorer
        # computes nothing (no drift then; the tab's notes say so), a real one measures drift.
        run = {"mode": mode, **opts}
        report = export_check(model, *args, options=run, **kwargs)
        self.options = opts
        self.previous, self.report = self.report, report
        self.note, (self.rev, self.model_rev) = "", revs
        return report

    def close(self) -> None:
        self.report = self.previous = None
