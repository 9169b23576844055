"""The Explorer's first probe in the background: in a kernel the tree is
usable before the probe ends, whatever changes the model waits for it, and the report it
installs is the synchronous one; ``probe=False`` skips it. ``background.in_kernel`` is patched
to True here: these tests run outside a kernel, where the probe runs synchronously."""

from __future__ import annotations

import json
import sys
import threading
import types
from typing import Any

import pytest
import torch
from fixtures.real import build
from fixtures.slow import Slow
from torch import nn

import torchxray as tx
from torchxray._view import background
from torchxray._view.session import Session
from torchxray.widget import Explorer, explore


def call(ex: Explorer, **msg: Any) -> dict[str, Any]:
    reply, _ = ex.rpc(msg, [])
    json.dumps(reply)
    return reply


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "in_kernel", lambda: True)


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_tree_and_panes_work_while_the_probe_runs(kernel: None, mode: str) -> None:
    model = Slow()
    ex = explore(model, torch.randn(3, 4), mode=mode)
    try:
        assert model.gate.entered.wait(30)
        # The tree is there, the report is not, and the view says why.
        assert [r["name"] for r in ex.tree_state["pages"][""]["items"]] == ["gate", "body"]
        assert ex.probing and ex._session is not None and ex._session.report is None
        assert ex.busy == "probe"
        assert ex.probe_summary["status"].startswith("probing") and ex.probe_summary["ok"] is None
        assert call(ex, kind="select", path="body.0")["path"] == "body.0"
        assert ex.selected == "body.0" and ex.overview["path"] == "body.0"
        for kind in ("source", "form", "mro", "children"):
            assert call(ex, kind=kind, path="body.0")["kind"] != "error", kind
        rev = call(ex, kind="form", path="body.2")["rev"]
        ex.select("body.2")  # the Python mirror too
    finally:
        model.gate.opened.set()
    report = ex.wait(30)
    assert report is not None and report.ok and not ex.probing and ex.busy == ""
    assert ex.probe_report is report
    assert report["body.2"].output_shapes == ((3, 2),)
    assert ex.probe_summary["status"].startswith("probe ok") and ex.selected == "body.2"
    # A form opened while the probe ran still applies: only a model change makes it stale.
    got = call(ex, kind="edit", path="body.2", changes={"out_features": "5"}, rev=rev)
    assert got["kind"] == "patched", got
    assert ex.probe_report is not None and ex.probe_report["body.2"].output_shapes == ((3, 5),)
    ex.close()


def test_apply_and_undo_wait_for_the_probe(kernel: None) -> None:
    model = Slow()
    ex = explore(model, torch.randn(3, 4))
    assert model.gate.entered.wait(30)
    # The Python mirror waits too: a notebook's next cell reads the report as before.
    reader = threading.Thread(target=lambda: ex.probe_report)
    reader.start()
    reader.join(0.2)
    assert reader.is_alive()
    done: list[dict[str, Any]] = []
    apply = threading.Thread(
        target=lambda: done.append(
            call(ex, kind="edit", path="body.0", changes={"out_features": "6"})
        )
    )
    apply.start()
    apply.join(0.3)
    # The gate is closed, so the probe cannot have ended, and Apply has not touched the model.
    assert apply.is_alive() and not done and model.body[0].out_features == 8
    model.gate.opened.set()
    apply.join(30)
    reader.join(30)
    assert not reader.is_alive()
    assert done and done[0]["kind"] == "patched" and model.body[0].out_features == 6
    # The Diff tab's base was taken in the background, before Apply changed the model.
    opened = ex._session.origin if ex._session is not None else None
    assert opened is not None and "out_features=8" in opened.modules["body.0"][1]
    # Applied after the probe, then re-probed: 6 features do not fit body.2.
    assert ex.probe_report is not None and ex.probe_summary["ok"] is False
    assert ex.probe_report.error is not None and ex.probe_report.error.path == "body.2"
    assert call(ex, kind="undo")["kind"] == "patched" and model.body[0].out_features == 8
    assert ex.probe_report is not None and ex.probe_report.ok
    ex.close()


def test_background_report_is_the_synchronous_one(kernel: None) -> None:
    model, args, kwargs = build("hf-gpt2")
    ex = explore(model, *args, **kwargs)
    report = ex.wait(120)
    assert report is not None
    sync = tx.probe(model, *args, **kwargs)
    assert report.ok == sync.ok and report.records.keys() == sync.records.keys()
    for path, rec in sync.records.items():
        assert report.records[path] == rec, path
    ex.close()


def test_a_failing_background_probe_is_reported(kernel: None) -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(5, 2))
    ex = explore(model, torch.randn(3, 4))
    report = ex.wait(30)
    assert report is not None and not report.ok and report.error is not None
    assert report.error.path == "1" and ex.probe_summary["ok"] is False and ex.busy == ""
    ex.close()


def test_probe_false_skips_it_and_run_probe_runs_it_later() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
    ex = explore(model, torch.randn(3, 4), probe=False)
    assert ex.probe_report is None and "probe=False" in ex.probe_summary["status"]
    assert [r["name"] for r in ex.tree_state["pages"][""]["items"]] == ["0", "1"]
    report = ex.run_probe()
    assert report is not None and report["0"].output_shapes == ((3, 8),)
    assert ex.probe_summary["status"].startswith("probe ok")


def test_outside_a_kernel_explore_returns_probed() -> None:
    assert not background.in_kernel()
    ex = explore(nn.Linear(4, 2), torch.randn(1, 4))
    assert not ex.probing and ex.probe_report is not None and ex.wait() is ex.probe_report
    assert not background.later(ex)  # a script: nothing shows a view before explore returns


def test_marimo_probes_later_only_where_its_comms_send_from_any_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The real marimo flow is tests/ui/test_marimo.py; here, which marimo takes which path.
    marimo = types.SimpleNamespace(running_in_notebook=lambda: True)
    monkeypatch.setitem(sys.modules, "marimo", marimo)
    bound = types.SimpleNamespace(comm=types.SimpleNamespace(_stream=object()))
    unbound = types.SimpleNamespace(comm=types.SimpleNamespace())  # an older marimo's comm
    assert background.later(bound) and not background.later(unbound)
    marimo.running_in_notebook = lambda: False  # run as a script (`python notebook.py`)
    assert not background.later(bound)
    marimo.running_in_notebook = lambda: True
    monkeypatch.setattr(sys, "platform", "emscripten")  # Pyodide: no threads
    assert not background.later(bound)


def test_close_during_the_probe_waits_and_drops_the_model(kernel: None) -> None:
    model = Slow()
    ex = explore(model, torch.randn(3, 4))
    assert model.gate.entered.wait(30)
    closer = threading.Thread(target=ex.close)
    closer.start()
    model.gate.opened.set()
    closer.join(30)
    assert not closer.is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        _ = ex.model
    # The probe put back everything it patched.
    assert "forward" not in model.gate.__dict__ and model.training


def test_a_forward_in_another_thread_is_not_recorded(kernel: None) -> None:
    # The user runs the model in a cell while the Explorer probes it in the background.
    model = Slow()
    ex = explore(model, torch.randn(3, 4))
    assert model.gate.entered.wait(30)
    try:
        out = model.body(torch.randn(5, 4))
    finally:
        model.gate.opened.set()
    assert out.shape == (5, 2) and not isinstance(out, torch._subclasses.FakeTensor)
    report = ex.wait(30)
    assert report is not None and report.ok
    assert report["body.0"].calls == 1 and report["body.0"].input_shapes == ((3, 4),)
    ex.close()


def test_the_first_probe_starts_when_the_view_has_drawn(kernel: None) -> None:
    # A probe started at once competes with the display for the interpreter: it waits for the
    # view's first request (or `first_probe_delay`, or anything that needs the report).
    model = Slow()
    model.gate.opened.set()
    ex = explore(model, torch.randn(3, 4))
    assert ex.probing and not model.gate.entered.wait(0.3)
    assert call(ex, kind="ping")["kind"] == "pong"
    assert model.gate.entered.wait(30)
    assert ex.wait(30) is not None
    ex.close()


def test_close_before_the_view_draws_never_starts_the_probe(kernel: None) -> None:
    model = Slow()
    ex = explore(model, torch.randn(3, 4))
    ex.close()
    assert not ex.probing and not model.gate.entered.is_set()


# -- in a kernel the view goes out before the walk (`_view/schedule.py`) ------------------------


def test_in_a_kernel_the_view_is_sent_before_the_model_is_walked(
    kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    ex = explore(model, probe=False)
    try:
        session = ex._session
        assert session is not None and session._tree is None  # explore() did not walk
        assert ex.tree_state == {} and ex.overview == {}  # not sent yet: no tree to send
        assert ex.probe_summary["status"].startswith("probe skipped")  # the cheap states are there
        walked_at: list[object] = []
        import IPython.display

        real = IPython.display.display

        def spy(*args: Any, **kwargs: Any) -> Any:
            walked_at.append(session._tree)  # what was walked when each output went out
            return real(*args, **kwargs)

        monkeypatch.setattr(IPython.display, "display", spy)
        with capture_output() as out:
            ex._ipython_display_()
        assert len(out.outputs) == 2  # the widget, then the read-only stand-in
        assert walked_at[0] is None and walked_at[1] is not None
        assert [r["name"] for r in ex.tree_state["pages"][""]["items"]] == ["0", "1", "2"]
        assert ex.overview["cls"] == "Sequential"
        ex._ipython_display_()  # shown again: nothing is walked twice
        assert session._tree is walked_at[1]
    finally:
        ex.close()


def test_a_view_drawn_without_display_gets_the_tree_with_its_first_request(kernel: None) -> None:
    ex = explore(nn.Sequential(nn.Linear(4, 8), nn.ReLU()), probe=False)
    try:
        assert ex.tree_state == {}
        assert call(ex, kind="ping")["kind"] == "pong"  # e.g. a view inside an ipywidgets VBox
        assert ex.tree_state["root"]["cls"] == "Sequential" and ex.overview["cls"] == "Sequential"
    finally:
        ex.close()


def test_python_calls_and_an_undisplayed_probe_send_the_tree(kernel: None) -> None:
    # Never shown: the background probe sends the tree before it starts (and waits for it).
    ex = explore(nn.Sequential(nn.Linear(4, 8), nn.ReLU()), torch.randn(2, 4))
    try:
        assert ex.wait(30) is not None and ex.tree_state["root"]["cls"] == "Sequential"
    finally:
        ex.close()
    ex = explore(nn.Sequential(nn.Linear(4, 8), nn.ReLU()), probe=False)
    try:
        assert "Sequential" in ex.to_html()  # the page's state has the tree
        assert ex.tree_state["root"]["cls"] == "Sequential"
    finally:
        ex.close()


def test_tree_after_view_false_sends_the_tree_with_the_view(
    kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Explorer, "tree_after_view", False)
    ex = explore(nn.Sequential(nn.Linear(4, 8)), probe=False)
    try:
        assert ex.tree_state["root"]["cls"] == "Sequential" and ex.overview["cls"] == "Sequential"
    finally:
        ex.close()


def test_an_interrupted_walk_sends_the_tree_with_the_next_request(
    kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchxray._view import session as session_mod

    ex = explore(nn.Sequential(nn.Linear(4, 8), nn.ReLU()), probe=False)
    try:
        real_walk = session_mod.walk

        def interrupted(model: nn.Module) -> Any:
            raise KeyboardInterrupt  # the user stops the kernel while a huge model is read

        monkeypatch.setattr(session_mod, "walk", interrupted)
        with pytest.raises(KeyboardInterrupt):
            ex._sync(frozenset())
        assert ex.tree_state == {}
        monkeypatch.setattr(session_mod, "walk", real_walk)
        assert call(ex, kind="ping")["kind"] == "pong"  # the view's next request: sent now
        assert ex.tree_state["root"]["cls"] == "Sequential"
    finally:
        ex.close()


def _shown_trees(ex: Explorer) -> list[tuple[dict[str, Any], bool]]:
    """Display ``ex`` as a kernel would; every tree state it sent, and whether the tree's tensors
    were still unread when it went out."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    sent: list[tuple[dict[str, Any], bool]] = []

    def seen(change: dict[str, Any]) -> None:
        assert ex._session is not None
        sent.append((dict(change["new"]), ex._session.tree._lazy.late is None))

    ex.observe(seen, names="tree_state")
    with capture_output():
        ex._ipython_display_()
    return sent


def test_a_big_model_sends_its_outline_before_its_tree(
    kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Explorer, "outline_from", 50)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(30)])
    ex = explore(model, probe=False)
    try:
        (outline, unread), (full, _) = _shown_trees(ex)
        assert unread and outline["outline"] is True  # out before any tensor was read
        assert "params" not in outline["root"] and full["root"]["params"] == 30 * 20
        assert "outline" not in full
        fold = {"fold": 30, "parent": "", "start": 0, "cls": "Sequential"}
        assert outline["pages"][""]["items"][0] == full["pages"][""]["items"][0]
        assert fold.items() <= outline["pages"][""]["items"][0].items()
        assert ex.overview["cls"] == "Sequential"  # the Overview came with the full tree
    finally:
        ex.close()


def test_a_model_below_outline_from_sends_its_tree_at_once(kernel: None) -> None:
    ex = explore(nn.Sequential(*[nn.Linear(4, 4) for _ in range(30)]), probe=False)
    try:
        ((state, _),) = _shown_trees(ex)
        assert "outline" not in state and state["root"]["params"] == 30 * 20
    finally:
        ex.close()


def test_outside_a_kernel_a_big_model_returns_its_outline_and_probes_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 55: in a script, a model of `probe_when_asked_from` modules or more (10,000) returns
    from explore with its outline; the full tree and the probe follow when first asked for, once
    (here with the thresholds lowered: a 13-module model stands for it)."""
    monkeypatch.setattr(Explorer, "probe_when_asked_from", 10)
    monkeypatch.setattr(Explorer, "outline_from", 10)
    probes: list[int] = []
    compute = Session.compute_probe

    def counted(self: Session) -> Any:
        probes.append(1)
        return compute(self)

    monkeypatch.setattr(Session, "compute_probe", counted)
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(12)])
    x = torch.randn(2, 4)
    ex = explore(model, x)
    assert ex._live().report is None and probes == [] and not ex.probing
    assert ex.tree_state.get("outline") is True  # the rows of the walk, counts to follow
    assert "when first asked" in ex.probe_summary["status"]
    report = ex.probe_report  # asked for: the full tree, then the probe
    assert report is not None and report["11"].output_shapes == ((2, 4),) and probes == [1]
    assert not ex.tree_state.get("outline") and ex.probe_summary["status"].startswith("probe ok")
    assert ex.probe_report is report and probes == [1]  # once
    ex.close()
    # The view's first request runs it too (a host that shows the view after the cell: the
    # deferred states go out with the request, then the probe); ex.run_probe() runs it once.
    ex = explore(model, x)
    assert call(ex, kind="select", path="3")["path"] == "3"
    assert ex._live().report is not None and probes == [1, 1]
    ex.close()
    ex = explore(model, x)
    assert ex.run_probe() is not None and probes == [1, 1, 1]
    ex.close()
