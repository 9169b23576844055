"""The Explorer's compile check (issue 41): ``ex.compile_check()`` mirrors ``tx.compile_check`` on
the explored model and inputs, the Compile tab's state (``_view/compile_view.py``), the rows'
"break" marks and the tree folded to them, the re-check after every patch once it was asked for,
and the summary's line."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray import demo
from torchxray._view.compile_view import compile_state, source_class
from torchxray._view.session import Session


def _marks(session: Session) -> dict[str, list[str]]:
    rows = session.rows()
    return {n.path: rows.row(n).get("marks", []) for n in session.tree.nodes}


def _breaking(session: Session) -> list[str]:
    return [p for p, marks in _marks(session).items() if "break" in marks]


def test_ex_compile_check_mirrors_tx_compile_check_and_shows_it() -> None:
    model = demo.compile_net()
    ex = tx.explore(model, demo.tokens())
    try:
        # Not free: nothing runs until asked for.
        assert ex.compile["status"] == "none" and not ex.compile["on"]
        rep = ex.compile_check()
        alone = tx.compile_check(model, demo.tokens())
        assert [(b.path, b.kind, b.line) for b in rep.breaks] == [
            (b.path, b.kind, b.line) for b in alone.breaks
        ]
        assert [b.path for b in rep.breaks] == ["mlp", "mlp.act"]
        state = ex.compile
        json.dumps(state)  # plain JSON for the traitlet
        assert state["status"] == "breaks" and state["on"] and state["mode"] == "fake"
        act = state["breaks"][1]
        assert act["cls"] == "LoggedGELU" and act["src_cls"] == "torchxray.demo.LoggedGELU"
        assert act["url"].startswith("https://") and act["file"].endswith("demo.py")
        assert "_log.debug" in act["source"] and act["line"] > 0
        assert [f["path"] for f in state["export"]] == ["mlp"] and not state["export_ok"]
        # The rows whose own forward breaks carry the mark, and no other row does.
        assert _breaking(ex._session) == ["mlp", "mlp.act"]
        assert ex.compile["rev"] >= ex._session.model_rev  # made after the last patch
    finally:
        ex.close()


def test_the_check_runs_again_after_every_patch_once_asked_for() -> None:
    ex = tx.explore(demo.compile_net(), demo.tokens())
    try:
        ex.edit("mlp", check_finite=False)
        assert ex.compile["status"] == "none"  # never asked for: not run
        assert ex._session.compile_report is None
        ex.undo()
        ex.compile_check()
        ex.edit("mlp", check_finite=False)  # the hyperparameter that selects the .item() branch
        assert [b["path"] for b in ex.compile["breaks"]] == ["mlp.act"]
        assert _breaking(ex._session) == ["mlp.act"]
        ex.replace("mlp.act", nn.GELU())  # the same function, without the logging call
        assert ex.compile["status"] == "ok" and ex.compile["breaks"] == []
        assert _breaking(ex._session) == []
        assert ex.compile["rev"] >= ex._session.model_rev  # made after the last patch
        ex.undo()
        assert [b["path"] for b in ex.compile["breaks"]] == ["mlp.act"]
        ex.redo()
        assert ex.compile["status"] == "ok"
        assert "compile: one graph, no graph break (fake inputs)" in ex.summary()
    finally:
        ex.close()


def test_the_view_asks_for_the_check_and_folds_the_tree_to_breaking_rows() -> None:
    session = Session(demo.compile_net(), (demo.tokens(),))
    reply, changed = session.handle({"kind": "filter", "query": "", "breaks": True})
    assert reply["kind"] == "filter" and reply["count"] == 0  # no check yet: nothing breaks
    reply, changed = session.handle({"kind": "compile"})
    assert reply["kind"] == "compile" and reply["status"] == "breaks"
    assert changed == {"compile", "tree_state"}
    assert session.compile_on
    reply, _ = session.handle({"kind": "filter", "query": "", "breaks": True})
    assert reply["kind"] == "filter" and reply["count"] == 2
    assert [(r["path"], r["match"]) for r in reply["rows"]] == [
        ("", False),
        ("mlp", True),
        ("mlp.act", True),
    ]
    # A patch from the view re-checks: Replace with... of the logging layer.
    reply, changed = session.handle(
        {"kind": "replace", "path": "mlp.act", "cls": "torch.nn.GELU", "rev": session.rev}
    )
    assert reply["kind"] == "patched", reply
    assert "compile" in changed
    assert [b["path"] for b in session.compile_state()["breaks"]] == ["mlp"]


def test_a_check_that_cannot_run_is_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    # No example inputs: refused with what to do, in the view and in Python.
    session = Session(demo.compile_net())
    reply, _ = session.handle({"kind": "compile"})
    assert reply["kind"] == "error" and "needs example inputs" in reply["message"]
    ex = tx.explore(demo.compile_net())
    try:
        with pytest.raises(ValueError, match="needs example inputs"):
            ex.compile_check()
    finally:
        ex.close()
    # A forward that fails on its inputs, and a torch without error_on_graph_break: the state's
    # error is one line, never a traceback.
    wrong = Session(nn.Sequential(nn.Linear(4, 4)), (torch.randn(2, 5),))
    reply, _ = wrong.handle({"kind": "compile"})
    assert reply["kind"] == "compile" and reply["status"] == "error"
    assert "forward fails on these inputs" in reply["error"]
    assert "Traceback" not in reply["error"] and "\n" not in reply["error"]
    assert wrong.compile_state()["breaks"] == [] and _breaking(wrong) == []
    monkeypatch.delattr(torch._dynamo, "error_on_graph_break")
    old = Session(nn.Sequential(nn.Linear(4, 4)), (torch.randn(2, 4),))
    reply, _ = old.handle({"kind": "compile"})
    assert reply["status"] == "error" and "error_on_graph_break" in reply["error"]


def test_the_check_follows_the_probe_mode_and_takes_options() -> None:
    ex = tx.explore(demo.compile_net(), demo.tokens(), mode="real")
    try:
        rep = ex.compile_check()
        assert rep.mode == "real" and ex.compile["mode"] == "real"
        assert [b.path for b in rep.breaks] == ["mlp", "mlp.act"]
        rep = ex.compile_check(options={"mode": "fake", "export": False})
        assert rep.mode == "fake" and not rep.export_checked
        with pytest.raises(TypeError, match="no option"):
            ex.compile_check(options={"mdoe": "real"})
    finally:
        ex.close()


class _Helper(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _log_shape(x)


def _log_shape(x: torch.Tensor) -> torch.Tensor:
    torch._dynamo.graph_break()
    return x


def test_a_break_line_outside_the_modules_classes_has_no_source_class() -> None:
    rep = tx.compile_check(nn.Sequential(_Helper()), torch.randn(2, 3))
    (b,) = rep.breaks
    assert b.path == "0"
    module = nn.Sequential(_Helper())[0]
    # The line is in a helper function, not in a class of the module's MRO.
    assert source_class(module, b.file, b.line) is None
    fwd_line = _Helper.forward.__code__.co_firstlineno + 1
    assert source_class(module, __file__, fwd_line) == f"{__name__}._Helper"
    assert source_class(None, b.file, b.line) is None
    empty = compile_state(None, None, on=False, rev=3)
    assert empty["status"] == "none" and empty["rev"] == 3
    failed = compile_state(None, None, on=True, rev=1, note="could not run")
    assert failed["status"] == "error" and failed["error"] == "could not run"


def test_summary_notes_the_break_count() -> None:
    text = tx.summary(demo.compile_net(), demo.tokens(), compile=True)
    assert (
        text.splitlines()[1] == "compile: 2 graph breaks, in mlp (CheckedMLP), mlp.act (LoggedGELU)"
    )
    assert "compile:" not in tx.summary(demo.compile_net(), demo.tokens())
    with pytest.raises(ValueError, match="needs example inputs"):
        tx.summary(demo.compile_net(), compile=True)
    with pytest.raises(TypeError, match="True or False"):
        tx.summary(demo.compile_net(), demo.tokens(), compile="yes")  # type: ignore[arg-type]


def test_the_source_request_marks_a_break_line_as_such() -> None:
    session = Session(demo.compile_net(), (demo.tokens(),))
    session.handle({"kind": "compile"})
    b = session.compile_state()["breaks"][1]
    req = {"kind": "source", "path": b["path"], "cls": b["src_cls"], "line": b["line"]}
    reply, _ = session.handle({**req, "what": "break"})
    assert reply["kind"] == "source"
    assert reply["note"] == f"line {b['line']} (the graph break) is marked"
    assert 'class="hll"' in reply["html"] and "_log" in reply["html"]
    reply, _ = session.handle(req)  # a call site's line, as before
    assert reply["note"] == f"line {b['line']} (the call) is marked"


def test_in_a_kernel_the_re_check_follows_the_background_probe() -> None:
    # A patch from the view in a kernel: the answer does not wait for the check, which runs
    # after the probe the widget starts in a thread (`Session.compute_probe`).
    session = Session(demo.compile_net(), (demo.tokens(),))
    session.handle({"kind": "compile"})
    with session.schedule.answering(True):
        reply, changed = session.handle(
            {"kind": "replace", "path": "mlp.act", "cls": "torch.nn.GELU", "rev": session.rev}
        )
    assert reply["kind"] == "patched" and session.schedule.take_pending()
    state = session.compile_state()
    assert state["status"] == "running" and state["breaks"] == [] and state["error"] == ""
    assert _breaking(session) == []  # no stale badges meanwhile
    session.install(session.compute_probe())
    state = session.compile_state()
    assert state["status"] == "breaks" and [b["path"] for b in state["breaks"]] == ["mlp"]
    assert _breaking(session) == ["mlp"]


def test_a_cancelled_background_probe_leaves_the_re_check_undone_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torchxray._probe.cancel import ProbeCancelled
    from torchxray._view import session as session_module

    session = Session(demo.compile_net(), (demo.tokens(),))
    session.handle({"kind": "compile"})
    with session.schedule.answering(True):
        session.handle({"kind": "edit", "path": "mlp", "changes": {"check_finite": "False"}})
    assert session.compile_state()["status"] == "running"

    def cancelled(*args: object, **kwargs: object) -> None:
        raise ProbeCancelled("probe cancelled")

    monkeypatch.setattr(session_module, "probe", cancelled)
    with pytest.raises(ProbeCancelled):
        session.compute_probe()
    state = session.compile_state()
    assert state["status"] == "error" and "Check runs it" in state["error"]
