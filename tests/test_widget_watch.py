"""The Explorer's training lens (ex.watch): the `training` state sent while the loop runs, the
Training tab's requests, edits between steps (the optimizer follows, or a clear refusal), the
probe held off while the loop runs, and the view's requests answered between steps by the pump
(copied in the kernel's shell channel thread, answered once)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._view import training as link_module
from torchxray._view.session import TRAINING_NOTE


@pytest.fixture(autouse=True)
def _every_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(link_module, "PUSH_EVERY", 0.0)  # a state per step: the test reads them


def _model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 1))


def _steps(model: nn.Module, opt: torch.optim.Optimizer, w: tx.Watch, n: int) -> None:
    for _ in range(n):
        opt.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        w.step(loss)


def test_the_training_state_follows_the_loop_and_the_tab_reads_the_watch() -> None:
    model = _model()
    ex = tx.explore(model, torch.randn(2, 4))
    assert ex.training == {} or not ex.training.get("watching")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    w = ex.watch(opt, every=2)
    assert ex.training["watching"] and ex.training["step"] == 0
    _steps(model, opt, w, 5)
    state = ex.training
    assert state["step"] == 5 and [s for s, _ in state["loss"]] == [1, 2, 3, 4, 5]
    assert state["optimizer"] == "AdamW" and state["nonfinite"] is None
    session = ex._live()
    reply, _ = session.handle({"kind": "train_series", "path": "0"})
    assert [s for s, _ in reply["series"]["grad_norm"]] == [1, 3, 5] and reply["cls"] == "Linear"
    assert reply["latest"]["grad_norm"] > 0 and reply["series"]["update_ratio"]
    reply, _ = session.handle({"kind": "train_figures", "figure": "act_zeros", "paths": ["1", "9"]})
    assert 0 <= reply["values"]["1"] <= 1 and reply["values"]["9"] is None and reply["total"] == 1.0
    reply, _ = session.handle({"kind": "train_control", "action": "pause"})
    assert reply["paused"] and w.paused and "after step 5" in reply["message"]
    reply, _ = session.handle({"kind": "train_control", "action": "resume"})
    assert not reply["paused"] and not w.paused
    ex.close()
    assert w.closed and not any(m._forward_hooks for m in model.modules())
    assert not opt._optimizer_step_pre_hooks


def test_edits_between_steps_keep_the_optimizer_true_or_are_refused() -> None:
    model = _model()
    ex = tx.explore(model, torch.randn(2, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    w = ex.watch(opt, every=1)
    _steps(model, opt, w, 2)
    session = ex._live()
    reply, _ = session.handle({"kind": "edit", "path": "2", "changes": {"p": "0.3"}})
    assert reply["kind"] == "patched" and model[2].p == 0.3
    first = model[0]
    reply, _ = session.handle({"kind": "edit", "path": "0", "changes": {"out_features": "8"}})
    assert reply["kind"] == "error" and "refused while training" in reply["message"]
    assert "0.weight" in reply["message"] and model[0] is first
    held = {id(p) for g in opt.param_groups for p in g["params"]}
    assert {id(p) for p in model.parameters()} == held
    session.training_now = True  # as when answered between two steps of a running loop
    reply, _ = session.handle({"kind": "replace", "path": "1", "cls": "torch.nn.GELU"})
    session.training_now = False
    assert reply["kind"] == "patched" and session.probe_note == TRAINING_NOTE
    _steps(model, opt, w, 2)
    assert w["1"].act_std[-1][0] == 4  # the new module is watched
    ex.close()


def test_the_pump_answers_between_steps_while_paused_and_only_once() -> None:
    model = _model()
    ex = tx.explore(model, torch.randn(2, 4))
    comm = ex.comm
    # As ipykernel's comm (7.4+): the kernel's shell channel thread asks it where a message goes.
    comm._reply_subshell_for = lambda data, default: default
    sent: list[dict[str, Any]] = []
    ex.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = ex.watch(opt, every=1)
    assert ex.training["pausable"] and ex._training is not None

    def request(mid: str, msg: dict[str, Any]) -> dict[str, Any]:
        content = {"kind": "anywidget-command", "name": "rpc", "id": mid, "msg": msg}
        # The kernel's shell channel thread asks the comm where the message goes.
        t = threading.Thread(
            target=comm._reply_subshell_for, args=({"method": "custom", "content": content}, None)
        )
        t.start()
        t.join()
        return content

    w.pause()
    loop = threading.Thread(target=_steps, args=(model, opt, w, 3))  # the loop's thread
    loop.start()
    deadline = time.monotonic() + 20
    while ex.training.get("step") != 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ex.training["paused"] and ex.training["step"] == 1  # held at the end of step 1
    content = request("a1", {"kind": "train_series", "path": "0"})
    while not sent and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sent[0]["id"] == "a1" and sent[0]["response"]["kind"] == "train_series"
    request("a2", {"kind": "train_control", "action": "resume"})
    loop.join(20)
    assert not loop.is_alive() and w.steps == 3 and not w.paused
    # The messages come again the usual way once the cell ends: dropped, answered already.
    calls = []
    ex.rpc = lambda msg, buffers: calls.append(msg)  # type: ignore[method-assign]
    ex._handle_custom_msg(content, [])
    assert calls == []
    ex.close()
    assert "_reply_subshell_for" not in vars(comm)


def _hooked(ex: tx.Explorer) -> list[str]:
    state = ex.tree_state
    rows = [state["root"], *(r for page in state["pages"].values() for r in page["items"])]
    return [r["path"] for r in rows if "hooks" in r.get("marks", [])]


def test_a_closed_watch_leaves_no_hook_badges_and_no_pause() -> None:
    model = _model()
    ex = tx.explore(model, torch.randn(2, 4))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    w = ex.watch(opt, every=1)
    assert _hooked(ex) == ["", "0", "1", "2", "3"]  # the tree read again: the watch's hooks
    _steps(model, opt, w, 3)
    w.close()
    assert _hooked(ex) == [] and ex._training is None
    state = ex.training
    assert not state["watching"] and state["step"] == 3 and "closed" in state["note"]
    reply, _ = ex._live().handle({"kind": "train_series", "path": "0"})
    assert len(reply["series"]["act_std"]) == 3  # the history stays readable
    reply, _ = ex._live().handle({"kind": "train_control", "action": "pause"})
    assert not reply["paused"]
    # A watch the Explorer did not open (tx.watch): its close is followed too.
    other = tx.watch(model)
    ex._live().reread()
    ex._sync(frozenset({"tree_state"}))
    assert _hooked(ex)
    other.close()
    assert _hooked(ex) == []
    ex.close()
