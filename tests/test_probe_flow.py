"""Execution flow: call sites per module, the nested flow of calls, and dataflow edges."""

from __future__ import annotations

import inspect

import pytest
import torch
from fixtures.real import ENTRIES, build
from torch import nn

from torchxray.probe import run_probe


class Looped(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 4)
        self.shared = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.out.weight.new_zeros(()) + x  # no module here
        for _ in range(3):
            x = self.shared(x)
        x = self.shared(self.inp(x))
        return self.out(x)


def _line(fn: object, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_sites_list_every_distinct_caller_line_with_its_count(mode: str) -> None:
    rep = run_probe(Looped(), (torch.randn(2, 4),), {}, mode=mode)
    sites = rep["shared"].sites
    assert [(s.line, s.count) for s in sites] == [
        (_line(Looped.forward, "x = self.shared(x)"), 3),
        (_line(Looped.forward, "self.shared(self.inp(x))"), 1),
    ]
    assert sites[0].function == "Looped.forward"
    assert sites[0].text == "x = self.shared(x)"
    assert sites[0].file == __file__
    assert str(sites[0]).startswith("called from Looped.forward, line ")
    (root,) = rep[""].sites
    assert root.reason and not root.text  # the probe called it: no caller line, a reason


def test_a_module_with_its_own_hook_still_names_its_callers_line() -> None:
    # Hooks send the module through torch's _call_impl and the instance recorder (`_probe.wrap`):
    # those frames are skipped, the caller is the line in Sequential.forward.
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    handle = model[0].register_forward_hook(lambda m, i, o: None)
    try:
        rep = run_probe(model, (torch.randn(2, 4),), {})
    finally:
        handle.remove()
    (site,) = rep["0"].sites
    assert site.function == "Sequential.forward"
    assert "module(input)" in site.text
    assert rep["1"].sites[0].line == site.line


def test_flow_is_the_real_call_stack_with_loops_and_out_of_order_calls() -> None:
    rep = run_probe(Looped(), (torch.randn(2, 4),), {})
    got = [(e.path, e.index, e.depth, e.parent) for e in rep.flow]
    assert got == [
        ("", 0, 0, -1),
        ("shared", 0, 1, 0),
        ("shared", 1, 1, 0),
        ("shared", 2, 1, 0),
        ("inp", 0, 1, 0),  # declared first, called fourth
        ("shared", 3, 1, 0),
        ("out", 0, 1, 0),
    ]
    assert rep.flow.children(0) == (1, 2, 3, 4, 5, 6)
    assert "  shared #3" in rep.flow.text()


def test_flow_nests_and_reenters() -> None:
    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.block(self.block(x))

    rep = run_probe(Outer(), (torch.randn(1, 4),), {})
    got = [(e.path, e.index, e.depth, e.parent) for e in rep.flow]
    assert got == [
        ("", 0, 0, -1),
        ("block", 0, 1, 0),
        ("block.0", 0, 2, 1),
        ("block.1", 0, 2, 1),
        ("block", 1, 1, 0),
        ("block.0", 1, 2, 4),
        ("block.1", 1, 2, 4),
    ]


@pytest.mark.parametrize("name", ["hf-llama", "hf-gpt2", "timm-resnet18", "timm-vit_tiny"])
def test_memoised_blocks_give_the_same_sites_and_flow_as_a_full_probe(name: str) -> None:
    model, args, kwargs = build(name)
    fast = run_probe(model, args, kwargs)
    full = run_probe(model, args, kwargs, memoise=False)
    assert fast.ok and full.ok
    if name.startswith("hf-"):
        assert fast.memoised  # the comparison means something: blocks were replayed
    assert list(fast.flow) == list(full.flow)
    assert list(fast) == list(full)
    for path in full:
        assert fast[path].sites == full[path].sites, path


def test_zoo_call_sites_resolve_to_a_source_line_for_99_percent_of_calls() -> None:
    total = resolved = 0
    unresolved: list[str] = []
    for name in ENTRIES:
        model, args, kwargs = build(name)
        rep = run_probe(model, args, kwargs)
        assert rep.ok, (name, rep.error)
        for path in rep:
            for site in rep[path].sites:
                total += site.count
                if site.text and not site.reason:
                    resolved += site.count
                    assert site.line > 0 and site.function
                else:
                    assert site.reason, (name, path, site)
                    if path:
                        unresolved.append(f"{name}:{path}: {site.reason}")
        assert sum(s.count for p in rep for s in rep[p].sites) == len(rep.flow)
    assert resolved / total >= 0.99, (resolved, total, unresolved[:10])
    assert not unresolved  # only each model's root (called by the probe) has no caller line


def _input_shapes(rep: object, path: str, index: int) -> set[tuple[int, ...]]:
    call = rep[path].call_records[index]  # type: ignore[index]
    return {leaf.shape for leaf in call.inputs if not isinstance(leaf, str)}


def test_a_residual_block_has_its_skip_edge() -> None:
    torchvision = pytest.importorskip("torchvision")
    block = torchvision.models.resnet.BasicBlock(8, 8)
    rep = run_probe(nn.Sequential(nn.Conv2d(3, 8, 1), block), (torch.randn(1, 3, 6, 6),), {})
    edges = {(e.src, e.dst): e for e in rep.edges}
    assert ("0", "1.conv1") in edges  # into the block's first layer
    skip = edges[("0", "1.relu")]  # the identity, added to bn2's output, reaches the last ReLU
    assert skip.ops == ("add_",) and skip.shape == (1, 8, 6, 6)
    assert ("1.bn2", "1.relu") in edges
    assert "0#0 -> 1.relu#" in str(skip)


def test_edges_of_a_loop_and_a_functional_op() -> None:
    rep = run_probe(Looped(), (torch.randn(2, 4),), {})
    got = [(e.src, e.src_index, e.dst, e.dst_index, e.ops) for e in rep.edges]
    assert got == [
        ("shared", 0, "shared", 1, ()),
        ("shared", 1, "shared", 2, ()),
        ("shared", 2, "inp", 0, ()),
        ("inp", 0, "shared", 3, ()),
        ("shared", 3, "out", 0, ()),
    ]
    assert run_probe(Looped(), (torch.randn(2, 4),), {}, mode="real").edges == ()


@pytest.mark.parametrize("name", ["timm-resnet50", "hf-gpt2", "hf-llama"])
def test_every_edge_has_the_shape_its_consumer_received(name: str) -> None:
    if name == "timm-resnet50":
        timm = pytest.importorskip("timm")
        model = timm.create_model("resnet50", pretrained=False, num_classes=10).eval()
        args, kwargs = (torch.randn(1, 3, 64, 64),), {}
    else:
        model, args, kwargs = build(name)
    rep = run_probe(model, args, kwargs)
    full = run_probe(model, args, kwargs, memoise=False)
    assert len(rep.edges) > len(rep) / 2
    for edge in rep.edges:
        assert edge.shape in _input_shapes(rep, edge.dst, edge.dst_index), edge
        assert edge.src in rep and edge.src_index < rep[edge.src].calls
    assert rep.edges == full.edges  # memoised blocks give the edges a full run gives
    if name == "timm-resnet50":  # each bottleneck's skip: its input, added after bn3
        skips = [e for e in rep.edges if e.dst.endswith(".act3") and "add_" in e.ops]
        assert len(skips) == 2 * 16


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.proj(self.norm(x))


@pytest.mark.parametrize("name", [None, *ENTRIES])
def test_memoised_edges_equal_a_full_probes(name: str | None) -> None:
    # The first block takes the model's input (no producer), the replayed ones a block's output:
    # a replay must give the edges from whatever produced its own inputs.
    if name is None:
        model, args, kwargs = nn.Sequential(*(Block() for _ in range(4))), (torch.randn(2, 8),), {}
    else:
        model, args, kwargs = build(name)
    fast = run_probe(model, args, kwargs)
    full = run_probe(model, args, kwargs, memoise=False)
    assert fast.ok and full.ok
    assert list(fast.edges) == list(full.edges)
    assert list(fast.returns) == list(full.returns)  # what each block returned came from
    if name is None:
        assert fast.memoised
        assert ("2", "3.norm") in {(e.src, e.dst) for e in fast.edges}
    # The memo's replays hand out fresh fake tensors (`_fake.mode.fresh`), made past the
    # dispatch modes: they are fake tensors of the run's mode, and nothing counted them as ops.
    assert fast.total_flops == full.total_flops


def test_the_bench_switch_turns_sites_and_edges_off_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # bench/flow_cost.py prices sites and edges by probing with `_TRACE_FLOW` off: that arm
    # must do the same probe otherwise (same records but for sites, no edges).
    from torchxray._probe import calls

    model = nn.Sequential(*(Block() for _ in range(4)))
    on = run_probe(model, (torch.randn(2, 8),), {})
    monkeypatch.setattr(calls, "_TRACE_FLOW", False)
    off = run_probe(model, (torch.randn(2, 8),), {})
    assert len(on.edges) > 0 and len(off.edges) == 0
    assert on.records.keys() == off.records.keys() and on.total_flops == off.total_flops
    for path, rec in on.records.items():
        assert rec.output_shapes == off.records[path].output_shapes, path
        if path:  # the root's site is the probe itself, with or without
            assert rec.sites[0].text and not off.records[path].sites[0].text, path


class _Two(nn.Module):
    """One module called by two parents, and by the root itself."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = nn.Linear(4, 4)
        self.a, self.b = Looped(), Looped()
        self.a.shared = self.b.shared = self.shared  # registered at the root first: "shared"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(self.shared(x)) + self.b(x)


def test_callers_read_from_the_calls_match_the_flow_entries() -> None:
    from torchxray._probe.flow import callers_of

    rep = run_probe(_Two(), (torch.randn(2, 4),), {})
    paths = list(rep.records)
    fresh = {p: rep.flow.callers(p) for p in paths}  # before the entries are made
    entries = tuple(rep.flow)
    assert {p: callers_of(entries, p) for p in paths} == fresh
    assert fresh["shared"] == ["", "a", "b"]
    assert fresh["a.inp"] == ["a"] and fresh[""] == []
