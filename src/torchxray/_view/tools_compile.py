"""The Compile tab's request (listed in ``_view/handlers.py``): ``compile`` runs
``tx.compile_check`` on the explorer's model and example inputs (the session's probe mode), and
from then on the session runs it again after every patch (``Session.changed``). Its answer is
the tab's state; the rows of the modules that break get their mark (``serialize.RowMaker``), and
the tree folds to them through the ``filter`` request (``breaks``)."""

from __future__ import annotations

from .compile_types import CompileReply, CompileRequest
from .host import COMPILE, Host, States

__all__ = ["on_compile"]


def on_compile(host: Host, req: CompileRequest) -> tuple[CompileReply, States]:
    host.run_compile()
    return {"kind": "compile", **host.compile_state()}, COMPILE
