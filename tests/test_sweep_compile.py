"""The sweep's compile column (`bench.sweep.compile_col`): torch's verdict comes from
``dynamo.explain`` run in a forked child (the sweep's own dynamo state untouched), a break before
any op counts through dynamo's graph-break counter, and the rule judges verdicts, not counts."""

from __future__ import annotations

import torch
from torch import nn

from bench.sweep.compile_col import compile_column, explain_in_child, judge


class PrintFirst(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print(end="")  # before any op: explain's graph_break_count reads 0
        return x + 1


class Clean(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.relu() * 2


def test_explain_runs_in_a_child_and_counts_a_break_before_any_op() -> None:
    from torch._dynamo.utils import counters

    fn = torch.compile(lambda t: t.sin(), backend="eager")
    fn(torch.randn(3))
    before = dict(counters["stats"])
    got = explain_in_child(PrintFirst(), (torch.randn(2),), {})
    assert got["graph_breaks"] == 0 and got["counted"] == 1, got
    assert dict(counters["stats"]) == before  # explain's reset happened in the child only
    assert explain_in_child(Clean(), (torch.randn(2),), {})["counted"] == 0


def test_the_column_agrees_on_a_break_explain_reads_as_zero() -> None:
    def guarded(check: str, fn: object) -> object:
        return fn()  # type: ignore[operator]

    for model, status in ((PrintFirst(), "ok"), (Clean(), "ok")):
        cell, details = compile_column("timm", True, model, (torch.randn(2),), {}, guarded)
        assert cell[0] == status, cell
        assert details is not None and details["ours"]["ok"] is isinstance(model, Clean)
    cell, _ = compile_column("torchvision", True, Clean(), (torch.randn(2),), {}, guarded)
    assert cell[0] == "n/a"
    cell, _ = compile_column("timm", False, Clean(), (torch.randn(2),), {}, guarded)
    assert cell == ("n/a", "meta: explain needs real tensors")


def test_the_rule_judges_verdicts_and_lists_places() -> None:
    clean = {"graph_breaks": 0, "graphs": 1, "reasons": [], "lines": [], "counted": 0,
             "counted_kinds": []}  # fmt: skip
    ours_clean = {"ok": True, "error": None, "breaks": [], "lines": []}
    ours_two = {"ok": False, "error": None, "breaks": ["0: print", "1: print"],
                "lines": ["m.py:3"]}  # fmt: skip
    theirs_one = dict(clean, graph_breaks=1, reasons=["print"], lines=["m.py:3", "m.py:9"],
                      counted=2)  # fmt: skip
    assert judge(ours_clean, clean)[0] == "ok"
    status, text, places = judge(ours_two, theirs_one)  # 2 blocks, one shared frame: agree
    assert status == "ok" and places == "ours within torch's" and "ours: 2 break(s)" in text
    assert judge(ours_clean, theirs_one)[0] == "fail"
    assert judge(dict(ours_clean, error="dynamo cannot trace"), clean)[0] == "fail"
    assert judge(ours_clean, {"error": "RuntimeError: boom"})[0] == "n/a"


class GRUFirst(nn.Module):
    """A forward whose first op is an nn.GRU call: dynamo skips the frame ("Attempted to wrap
    RNN, GRU, or LSTM", its "unimplemented" counter), so explain's count and its graph-break
    counter both read 0 though the GRU runs outside any graph (issue 58's FiLM model)."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(3, 4, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return out.relu()


def test_a_frame_dynamo_cannot_trace_counts_as_a_break() -> None:
    got = explain_in_child(GRUFirst(), (torch.randn(1, 2, 3),), {})
    assert got["graph_breaks"] <= 0 and got["counted"] == 0 and got["unimplemented"] >= 1, got
    ours = {"ok": False, "error": None, "breaks": ["rnn: GRU"], "lines": []}
    assert judge(ours, got)[0] == "ok"
    assert judge(dict(ours, ok=True, breaks=[]), got)[0] == "fail"
