"""tx.compile_check: planted graph breaks owned by the right module and line, a clean model is ok,
the user's compiled functions keep their caches, the model is left as found, and a real model
agrees with ``torch._dynamo.explain``."""

from __future__ import annotations

import copy
import inspect

import pytest
import torch
from torch import nn

import torchxray as tx

pytest.importorskip("torch._dynamo")


def line_of(marker: str) -> int:
    """The line of this file that holds `marker` (a comment beside a planted break)."""
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()  # type: ignore[arg-type]
    hits = [i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(marker)]
    assert len(hits) == 1, marker
    return hits[0]


class Printing(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        print("shape", tuple(y.shape))  # BREAK-print
        return y


class ItemBranch(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum().item() > 0:  # BREAK-item
            return x * 2
        return x - 1


class ToNumpy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        data = x.detach().numpy().tobytes()  # BREAK-numpy
        return x + len(data)


class Explicit(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x + 1
        torch._dynamo.graph_break()  # BREAK-explicit
        return y * 2


class Deep(nn.Module):  # three levels: Outer -> Middle -> Deep, the break in the innermost
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch._dynamo.graph_break()  # BREAK-deep
        return self.fc(x)


class Middle(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.deep = Deep()
        self.norm = nn.LayerNorm(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.deep(x)) + x


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.middle = Middle()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.middle(x).relu()


class Planted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.printing = Printing()
        self.numpy = ToNumpy()
        self.explicit = Explicit()
        self.outer = Outer()
        self.item = ItemBranch()
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.printing(x)
        x = self.numpy(x)
        x = self.explicit(x)
        x = self.outer(x)
        x = self.item(x)
        return self.head(x)


class Clean(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*(nn.Sequential(nn.Linear(8, 8), nn.GELU()) for _ in range(3)))
        self.norm = nn.LayerNorm(8)

    def forward(self, x: torch.Tensor, mode: str = "sum") -> torch.Tensor:
        y = self.norm(self.blocks(x))
        return y.sum(-1) if mode == "sum" else y.mean(-1)


def x4() -> torch.Tensor:
    return torch.randn(2, 4)


def test_planted_breaks_owned_by_the_innermost_module_with_their_line() -> None:
    rep = tx.compile_check(Planted(), x4(), options={"mode": "real"})
    assert not rep.ok and rep.error is None
    got = [(b.path, b.cls, b.line) for b in rep.breaks]
    assert got == [
        ("printing", "Printing", line_of("# BREAK-print")),
        ("numpy", "ToNumpy", line_of("# BREAK-numpy")),
        ("explicit", "Explicit", line_of("# BREAK-explicit")),
        ("outer.middle.deep", "Deep", line_of("# BREAK-deep")),
        ("item", "ItemBranch", line_of("# BREAK-item")),
    ]
    assert all(b.file == __file__ for b in rep.breaks)
    by = {b.path: b for b in rep.breaks}
    assert by["printing"].kind == "Failed to trace builtin operator"
    assert "print" in by["printing"].reason
    assert "item()" in by["item"].kind and "capture_scalar_outputs" in by["item"].hint
    assert by["explicit"].kind == "Call to `torch._dynamo.graph_break()`"
    assert by["item"].url.startswith("https://")
    assert "print(" in by["printing"].source
    # rep[path]: the breaks of that subtree
    assert [b.path for b in rep["outer"]] == ["outer.middle.deep"]
    assert rep["head"] == () and len(rep[""]) == 5
    # torch.export: .item() and .numpy() fail it, print and graph_break() do not
    assert {(f.path, f.line) for f in rep.export} == {
        ("numpy", line_of("# BREAK-numpy")),
        ("item", line_of("# BREAK-item")),
    }
    assert torch.fx.config.do_not_emit_stack_traces is False  # put back after failed exports


def test_fake_mode_finds_the_breaks_up_to_a_value_dependent_op() -> None:
    # Fake tensors hold no values: the fake probe stops at .numpy(), so what the forward calls
    # after it is traced only inside the root, which stops at that same break; the notes say so.
    rep = tx.compile_check(Planted(), x4())
    assert rep.mode == "fake" and not rep.ok
    assert [(b.path, b.line) for b in rep.breaks] == [
        ("printing", line_of("# BREAK-print")),
        ("numpy", line_of("# BREAK-numpy")),
    ]
    assert any("numpy" in n and "'real'" in n for n in rep.notes)


def test_fake_mode_owns_breaks_that_need_no_values() -> None:
    model = nn.Sequential(Printing(), Explicit(), Outer(), ItemBranch(), nn.Linear(4, 2))
    rep = tx.compile_check(model, x4())
    assert [(b.path, b.cls, b.line) for b in rep.breaks] == [
        ("0", "Printing", line_of("# BREAK-print")),
        ("1", "Explicit", line_of("# BREAK-explicit")),
        ("2.middle.deep", "Deep", line_of("# BREAK-deep")),
        ("3", "ItemBranch", line_of("# BREAK-item")),
    ]


def test_a_clean_model_is_ok_and_the_forward_keeps_its_mode_keyword() -> None:
    model = Clean()
    rep = tx.compile_check(model, torch.randn(3, 8), mode="mean")
    assert rep.ok and rep.breaks == () and rep.export == () and rep.export_ok
    assert rep.checked < rep.modules  # the three identical blocks are traced once
    assert "one graph" in str(rep)


def test_identical_blocks_each_get_their_break() -> None:
    model = nn.Sequential(*(Explicit() for _ in range(4)))
    rep = tx.compile_check(model, x4())
    assert [b.path for b in rep.breaks] == ["0", "1", "2", "3"]
    assert rep.checked == 2  # one block, then the Sequential with its blocks stubbed


def test_the_users_compiled_functions_keep_their_caches() -> None:
    compiled: list[int] = []

    def counting(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> object:
        compiled.append(1)
        return gm.forward

    fn = torch.compile(lambda t: t.sin() + 1, backend=counting)
    model = Planted()
    cmodel = torch.compile(model, backend=counting)
    x = x4()
    fn(x)
    with torch.no_grad():
        cmodel(x)
    before = len(compiled)
    from torch._dynamo.utils import counters

    seen = copy.deepcopy(counters)
    rep = tx.compile_check(model, x)
    assert not rep.ok
    assert counters == seen  # explain-style counters as the user had them
    fn(x)
    with torch.no_grad():
        cmodel(x)
    assert len(compiled) == before  # no recompilation of the user's functions


def test_the_model_is_left_as_found_and_nothing_is_printed(
    capfd: pytest.CaptureFixture[str],
) -> None:
    model = Clean()
    model.blocks[1].eval()
    model.norm.weight.requires_grad_(False)
    calls: list[str] = []
    h1 = model.blocks[0].register_forward_hook(lambda m, a, o: calls.append("hook"))
    h2 = model.register_forward_pre_hook(lambda m, a: None)
    flags = [
        (m.training, dict(m._forward_hooks), dict(m._forward_pre_hooks)) for m in model.modules()
    ]
    grads = [p.requires_grad for p in model.parameters()]
    config = torch._dynamo.config.get_config_copy()
    capfd.readouterr()
    rep = tx.compile_check(model, torch.randn(3, 8))
    out, err = capfd.readouterr()
    assert rep.ok and out == "" and err == ""
    assert flags == [
        (m.training, dict(m._forward_hooks), dict(m._forward_pre_hooks)) for m in model.modules()
    ]
    assert grads == [p.requires_grad for p in model.parameters()]
    assert all("forward" not in vars(m) for m in model.modules())
    assert torch._dynamo.config.get_config_copy() == config
    assert torch.fx.config.do_not_emit_stack_traces is False  # the exports' setting put back
    h1.remove()
    h2.remove()


def test_bad_input_is_a_sentence_not_a_traceback() -> None:
    with pytest.raises(TypeError, match="needs a torch.nn.Module"):
        tx.compile_check(torch.zeros(1), x4())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="no option 'mdoe'"):
        tx.compile_check(Clean(), x4(), options={"mdoe": "real"})
    with pytest.raises(ValueError, match="takes one of"):
        tx.compile_check(Clean(), x4(), options={"mode": "slow"})
    rep = tx.compile_check(Clean(), torch.randn(3, 5))  # wrong width: the forward fails
    assert not rep.ok and rep.error is not None and "Traceback" not in rep.error


def test_a_real_library_model_agrees_with_explain() -> None:
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    model = transformers.LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 128, (1, 8))
    rep = tx.compile_check(model, ids, use_cache=False)
    assert rep.error is None, rep.error
    assert rep.checked < rep.modules  # the two decoder layers are traced once
    explained = torch._dynamo.explain(model)(ids, use_cache=False)  # it resets dynamo: after
    assert (explained.graph_break_count == 0) == rep.ok


def test_a_torch_without_error_on_graph_break_is_a_sentence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torchxray._compile.guard import unavailable

    assert unavailable() is None  # the installed torch has it (checked on 2.14)
    monkeypatch.delattr(torch._dynamo, "error_on_graph_break")
    rep = tx.compile_check(Clean(), torch.randn(3, 8))
    assert not rep.ok and rep.error is not None and rep.breaks == ()
    assert "has no torch._dynamo.error_on_graph_break" in rep.error and "torch >= 2.9" in rep.error
    assert rep.error.count(". ") == 0 and "Traceback" not in rep.error  # one sentence
    assert str(rep) == f"compile check: {rep.error}"


def test_buffers_of_a_training_model_are_left_as_found() -> None:
    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU()).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for mode in ("fake", "real"):
        rep = tx.compile_check(model, torch.randn(4, 8), options={"mode": mode})
        assert rep.ok and rep.export_ok, rep
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(m.training for m in model.modules())


class Act(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.relu()


class SharedAct(nn.Module):
    """One activation reused at two widths (as torchvision's Bottleneck does its ReLU): its
    first output cannot stand in for its second call, so it is traced through in its parent."""

    def __init__(self) -> None:
        super().__init__()
        self.wide = nn.Linear(4, 16)
        self.narrow = nn.Linear(16, 4)
        self.act = Act()
        self.out = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(x + self.act(self.narrow(self.act(self.wide(x)))))


def test_a_module_called_at_two_shapes_is_not_stood_in_for() -> None:
    rep = tx.compile_check(nn.Sequential(SharedAct(), Explicit()), x4())
    assert rep.error is None and not any("could not trace" in n for n in rep.notes), rep
    assert [b.path for b in rep.breaks] == ["1"]


def test_a_module_without_source_still_gets_its_break() -> None:
    scope: dict[str, object] = {}
    code = (
        "import torch, torch.nn as nn\n"
        "class NoSource(nn.Module):\n"
        "    def forward(self, x):\n"
        "        torch._dynamo.graph_break()\n"
        "        return x + 1\n"
    )
    exec(compile(code, "<generated>", "exec"), scope)  # noqa: S102 - a class with no source file
    model = nn.Sequential(nn.Linear(4, 4), scope["NoSource"]())  # type: ignore[arg-type]
    rep = tx.compile_check(model, x4())
    assert [(b.path, b.cls, b.file, b.line) for b in rep.breaks] == [
        ("1", "NoSource", "<generated>", 4)
    ]
    assert "<generated>:4" in str(rep)


def test_the_checks_mode_as_a_keyword_points_at_options() -> None:
    # Planted's forward takes no `mode`: a clear sentence, not the forward's own TypeError.
    with pytest.raises(TypeError, match=r"takes no keyword 'mode'.*options=\{'mode': 'real'\}"):
        tx.compile_check(Planted(), x4(), mode="real")
    with pytest.raises(TypeError, match=r"options=\{'export': False\}"):
        tx.compile_check(Planted(), x4(), export=False)

    class Loose(nn.Module):  # takes **kwargs: the keyword is the forward's, and a note says so
        def forward(self, x: torch.Tensor, **kwargs: object) -> torch.Tensor:
            return x + 1

    rep = tx.compile_check(Loose(), x4(), mode="real")
    assert rep.ok and rep.mode == "fake"
    assert any("**kwargs" in n and "options={'mode': 'real'}" in n for n in rep.notes)
    # a forward that names `mode` keeps it (test_a_clean_model_is_ok_and_the_forward_keeps...)
    assert tx.compile_check(Clean(), torch.randn(3, 8), mode="real").ok


class Announcing(nn.Module):
    """Breaks before any of its children runs: they are checked after the break is found."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(4, 8)
        self.down = nn.Linear(8, 4)
        self.gate = Explicit()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        print(end="")  # BREAK-announce
        return self.gate(self.down(self.up(x).relu()))


def test_a_breaking_blocks_children_are_checked_together_once() -> None:
    rep = tx.compile_check(nn.Sequential(*(Announcing() for _ in range(3))), x4())
    assert [(b.path, b.line) for b in rep.breaks] == [
        (p, line_of(marker))
        for i in range(3)
        for p, marker in ((f"{i}", "# BREAK-announce"), (f"{i}.gate", "# BREAK-explicit"))
    ]
    # the model; block 0's children together (up down gate: gate breaks); up and down again;
    # the model with the blocks stood in for
    assert rep.checked == 4


class _LeakThroughRepeats(nn.Module):
    """A tensor made to require grad inside the forward reaches the output through a layer that
    stands in for itself (a repeat of the one before) during the whole-model trace."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.detach().clone().requires_grad_()
        return self.a(x) + self.b(t * 2)


def test_a_stand_in_keeps_what_its_output_is_derived_from() -> None:
    # An empty stand-in cut the chain from `t` to the output, so the break that torch.compile
    # hits (the tensor leaks out of the compiled region) went unseen (transformers Mra, Yoso).
    model = _LeakThroughRepeats()
    x = torch.randn(2, 4)
    rep = tx.compile_check(model, x, options={"export": False})
    assert [(b.path, "requires_grad_()" in b.kind) for b in rep.breaks] == [("", True)]
    explained = torch._dynamo.explain(model)(x)
    assert explained.graph_break_count > 0 or explained.break_reasons
    with torch.no_grad():  # no grad, no leak: the stand-ins add nothing then
        assert tx.compile_check(model, x, options={"export": False}).ok


def test_the_check_leaves_distributions_validating_their_arguments() -> None:
    # dynamo's first compile in a process turns argument validation off for good
    # (``TorchPatcher.patch``); the check puts it back (``_compile/guard.py``). The patch runs
    # once per process: its cache is cleared so that this check is its first run.
    from torch._dynamo.eval_frame import TorchPatcher

    dist = torch.distributions.Distribution
    was = dist._validate_args
    dist.set_default_validate_args(True)
    try:
        TorchPatcher.patch.cache_clear()
        tx.compile_check(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), torch.randn(2, 4))
        assert dist._validate_args is True
        with pytest.raises(ValueError):
            torch.distributions.Normal(torch.zeros(2), -torch.ones(2))
    finally:
        dist.set_default_validate_args(was)
