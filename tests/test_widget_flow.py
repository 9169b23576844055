"""The execution flow in the Explorer's kernel side, through `Session.handle`: the Overview's
call sites with the caller whose source holds the line, the source request that marks a line,
the Probe tab's call tree ("flow": folds, paging) and the Graph tab's DOT ("graph": one level,
input/output, the skip edge, folded blocks, escaped names)."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest
import torch
from torch import nn

from torchxray import demo
from torchxray._view.session import Session


class Looped(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 4)
        self.shared = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(3):
            x = self.shared(x)
        return self.shared(self.inp(x))


def _session(model: nn.Module, *args: Any, probe: bool = True, **kwargs: Any) -> Session:
    s = Session(model, args, kwargs)
    if probe:
        s.run_probe()
    return s


def _ok(reply: Any) -> dict[str, Any]:
    assert reply["kind"] != "error", reply
    return dict(reply)


def _line(fn: object, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    return start + next(i for i, line in enumerate(lines) if text in line)


def _marked(html: str) -> list[str]:
    """The text of each marked (``hll``) line of highlighted source."""
    chunks = html.split('<span class="hll">')[1:]
    return [re.sub(r"<[^>]+>", "", c.split("\n", 1)[0]) for c in chunks]


def _resnet() -> Session:
    return _session(demo.resnet_ish(), demo.images())


# -- call sites in the Overview -----------------------------------------------------------------


def test_the_overview_names_the_callers_line_and_the_class_that_holds_it() -> None:
    s = _resnet()
    s.select("layer1")
    (site,) = s.overview()["sites"]
    assert site["function"] == "ResNetIsh.forward"
    assert site["line"] == _line(demo.ResNetIsh.forward, "self.layer1(x)")
    assert site["text"] == "x = self.layer2(self.layer1(x))"
    assert (site["caller"], site["cls"]) == ("", "torchxray.demo.ResNetIsh")
    assert site["count"] == 1 and site["reason"] == ""
    s.select("layer1.1.conv2")
    (site,) = s.overview()["sites"]
    assert (site["caller"], site["cls"]) == ("layer1.1", "torchxray.demo.BasicBlock")


def test_a_shared_module_lists_each_line_with_its_count_and_the_root_a_reason() -> None:
    s = _session(Looped(), torch.randn(2, 4))
    s.select("shared")
    sites = s.overview()["sites"]
    assert [(x["line"], x["count"]) for x in sites] == [
        (_line(Looped.forward, "x = self.shared(x)"), 3),
        (_line(Looped.forward, "self.shared(self.inp(x))"), 1),
    ]
    assert {x["caller"] for x in sites} == {""}
    s.select("")
    (root,) = s.overview()["sites"]
    assert root["reason"] and root["caller"] is None and root["line"] == 0


def test_no_probe_no_sites() -> None:
    s = _session(demo.resnet_ish(), probe=False)
    s.select("layer1")
    assert s.overview()["sites"] == []


def test_a_sequential_child_is_called_from_torchs_container_code() -> None:
    s = _session(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), torch.randn(2, 4))
    s.select("1")
    (site,) = s.overview()["sites"]
    assert site["function"] == "Sequential.forward" and site["caller"] == ""
    assert site["cls"] == "torch.nn.modules.container.Sequential"
    reply = _ok(
        s.handle({"kind": "source", "path": "", "cls": site["cls"], "line": site["line"]})[0]
    )
    (marked,) = _marked(reply["html"])
    assert "module(input)" in marked


# -- the source request marks a line ------------------------------------------------------------


def test_source_marks_the_asked_line_instead_of_forward() -> None:
    s = _resnet()
    line = _line(demo.ResNetIsh.forward, "self.layer1(x)")
    reply = _ok(s.handle({"kind": "source", "path": "", "line": line})[0])
    (marked,) = _marked(reply["html"])
    assert marked.strip() == f"{line}        x = self.layer2(self.layer1(x))".strip()
    assert reply["note"] == f"line {line} (the call) is marked"
    plain = _ok(s.handle({"kind": "source", "path": ""})[0])
    assert plain["html"].count('class="hll"') > 1  # forward's lines, as before


def test_a_line_outside_the_source_says_so_and_keeps_forward_marked() -> None:
    s = _resnet()
    reply = _ok(s.handle({"kind": "source", "path": "layer1.0", "line": 1})[0])
    assert "line 1 is not in this source" in reply["note"]
    assert reply["html"].count('class="hll"') > 1


# -- the call tree ------------------------------------------------------------------------------


def test_the_call_tree_lists_calls_with_depth_and_index() -> None:
    s = _session(Looped(), torch.randn(2, 4))
    reply = _ok(s.handle({"kind": "flow"})[0])
    got = [(x["path"], x["index"], x["calls"], x["depth"], x["count"]) for x in reply["lines"]]
    assert got == [
        ("", 0, 1, 0, 0),
        ("shared", 0, 4, 1, 0),
        ("shared", 1, 4, 1, 0),
        ("shared", 2, 4, 1, 0),
        ("inp", 0, 1, 1, 0),
        ("shared", 3, 4, 1, 0),
    ]
    assert reply["calls"] == reply["total"] == 6
    assert [x["cls"] for x in reply["lines"][:2]] == ["Looped", "Linear"]


def test_identical_blocks_fold_and_open_and_the_tree_pages() -> None:
    s = _session(demo.tiny_transformer(depth=4), torch.randint(0, 100, (1, 8)))
    reply = _ok(s.handle({"kind": "flow"})[0])
    folds = [x for x in reply["lines"] if x["count"]]
    assert [(x["path"], x["count"], x["last"], x["open"]) for x in folds] == [
        ("blocks.0", 4, "blocks.3", False)
    ]
    assert not any(x["path"].startswith("blocks.1") for x in reply["lines"])
    key = folds[0]["key"]
    opened = _ok(s.handle({"kind": "flow", "open": [key]})[0])
    assert opened["total"] > reply["total"]
    assert any(x["path"] == "blocks.3.mlp.0" and x["depth"] == 3 for x in opened["lines"])
    assert opened["calls"] == reply["calls"]
    page = _ok(s.handle({"kind": "flow", "open": [key], "offset": 3, "limit": 2})[0])
    assert page["offset"] == 3 and page["lines"] == opened["lines"][3:5]


def test_the_call_tree_without_a_probe_says_why() -> None:
    s = _session(nn.Linear(2, 2), probe=False)
    reply = _ok(s.handle({"kind": "flow"})[0])
    assert reply["lines"] == [] and "no probe" in reply["note"]


# -- the dataflow graph -------------------------------------------------------------------------


def _edges(dot: str) -> dict[tuple[str, str], str]:
    """(tail, head) -> the edge's attributes, from the DOT text."""
    return {
        (m.group(1), m.group(2)): m.group(3)
        for m in re.finditer(r"^\t(\w+) -> (\w+) \[(.*)\]$", dot, re.M)
    }


def test_a_residual_blocks_graph_has_its_skip_edge() -> None:
    s = _resnet()
    reply = _ok(s.handle({"kind": "graph", "path": "layer1.1"})[0])
    ids = {n["path"].rsplit(".", 1)[-1] or n["kind"]: n["id"] for n in reply["nodes"]}
    assert set(ids) == {"conv1", "bn1", "relu", "conv2", "bn2", "input", "output"}
    edges = _edges(reply["dot"])
    skip = edges[(ids["input"], ids["relu"])]  # the block's input, added to bn2's output
    assert "via add" in skip and 'label="2×16×32×32"' in skip and "dashed" not in skip
    assert (ids["bn2"], ids["relu"]) in edges and (ids["input"], ids["conv1"]) in edges
    assert "dashed" not in edges[(ids["relu"], ids["output"])]  # returned: report.returns says
    assert reply["edges"] == len(edges) and reply["note"] == ""


def test_the_models_graph_is_one_level_deep_and_its_input_inferred() -> None:
    s = _resnet()
    reply = _ok(s.handle({"kind": "graph", "path": ""})[0])
    paths = [n["path"] for n in reply["nodes"] if n["kind"] == "module"]
    assert paths == ["conv1", "bn1", "relu", "layer1", "layer2", "avgpool", "fc"]
    edges = _edges(reply["dot"])
    ids = {n["path"] or n["kind"]: n["id"] for n in reply["nodes"]}
    assert (ids["relu"], ids["layer1"]) in edges and (ids["layer1"], ids["layer2"]) in edges
    assert "dashed" in edges[(ids["input"], ids["conv1"])]
    assert "via view" in edges[(ids["avgpool"], ids["fc"])]  # torch.flatten, named on hover
    assert next(n for n in reply["nodes"] if n["path"] == "layer1")["nkids"] == 2


def test_identical_blocks_are_one_node_until_expanded() -> None:
    s = _session(demo.tiny_transformer(depth=4), torch.randint(0, 100, (1, 8)))
    reply = _ok(s.handle({"kind": "graph", "path": "blocks"})[0])
    (group,) = reply["nodes"][:1]
    assert (group["kind"], group["count"], group["key"]) == ("group", 4, "blocks.0")
    assert 'label="×4 Block\\n0 – 3"' in reply["dot"]
    edges = _edges(reply["dot"])
    assert set(edges) == {("input", group["id"]), (group["id"], "output")}  # from tok+pos, to ln_f
    opened = _ok(s.handle({"kind": "graph", "path": "blocks", "open": ["blocks.0"]})[0])
    kinds = [n["kind"] for n in opened["nodes"]]
    assert kinds.count("module") == 4 and "group" not in kinds
    chain = _edges(opened["dot"])
    ids = [n["id"] for n in opened["nodes"] if n["kind"] == "module"]
    assert all((a, b) in chain for a, b in zip(ids, ids[1:], strict=False))


def test_names_are_escaped_in_the_dot() -> None:
    evil = type("<b>Evil</b>", (nn.Module,), {"forward": lambda self, x: x * 2})
    model = nn.Sequential()
    model.add_module("<script>", nn.Linear(2, 2))
    model.add_module('a"b\\n', evil())
    s = _session(model, torch.randn(1, 2))
    dot = _ok(s.handle({"kind": "graph", "path": ""})[0])["dot"]
    assert 'label="<script>\\nLinear"' in dot  # a quoted string: text, never an HTML label
    assert 'label="a\\"b\\\\n\\n<b>Evil</b>"' in dot
    assert "label=<" not in dot and "tooltip=<" not in dot


def test_a_real_probe_has_no_dataflow_and_says_so() -> None:
    s = _resnet()
    s.run_probe("real")
    reply = _ok(s.handle({"kind": "graph", "path": "layer1.0"})[0])
    assert "real probe records no dataflow" in reply["note"] and reply["edges"] == 0
    assert len(reply["nodes"]) == 5  # the children are drawn still
    err = s.handle({"kind": "graph", "path": "layer9"})[0]
    assert err["kind"] == "error" and "layer9" in err["message"]


def test_a_leaf_has_no_graph_and_says_so() -> None:
    reply = _ok(_resnet().handle({"kind": "graph", "path": "layer1.0.conv1"})[0])
    assert reply["nodes"] == [] and reply["edges"] == 0
    assert reply["note"].startswith("layer1.0.conv1 has no child modules")


@pytest.mark.parametrize("path", ["", "layer2.0"])
def test_every_node_id_in_the_reply_is_in_the_dot(path: str) -> None:
    reply = _ok(_resnet().handle({"kind": "graph", "path": path})[0])
    for n in reply["nodes"]:
        assert re.search(rf"^\t{n['id']} \[", reply["dot"], re.M), n


def test_a_returned_residual_sum_is_an_edge_from_input_to_output() -> None:
    # timm's EfficientNet blocks end in `x = self.drop_path(x) + shortcut`: no child receives the
    # sum, the block returns it. The skip is input -> output; the last layer reaches output too.
    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.drop_path = nn.Identity()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.drop_path(self.bn(self.conv(x))) + x

    model = nn.Sequential(nn.Conv2d(3, 4, 1), Block(), Block(), nn.ReLU())
    s = _session(model, torch.randn(1, 3, 5, 5))
    reply = _ok(s.handle({"kind": "graph", "path": "1"})[0])
    ids = {n["path"].rsplit(".", 1)[-1] or n["kind"]: n["id"] for n in reply["nodes"]}
    edges = _edges(reply["dot"])
    skip = edges[("input", "output")]
    assert "via add" in skip and "dashed" not in skip
    assert "via add" in edges[(ids["drop_path"], "output")]
    assert (ids["bn"], ids["drop_path"]) in edges and ("input", ids["conv"]) in edges


def test_the_whole_model_to_a_depth_draws_clusters_and_their_skips() -> None:
    s = _resnet()
    one = _ok(s.handle({"kind": "graph", "path": ""})[0])
    assert one["depth"] == 1 and "cluster" not in {n["kind"] for n in one["nodes"]}
    two = _ok(s.handle({"kind": "graph", "path": "", "depth": 2})[0])
    kinds = {n["path"]: n["kind"] for n in two["nodes"]}
    assert kinds["layer1"] == "cluster" and kinds["layer1.0"] == "module"
    assert two["depth"] == 2 and "subgraph cluster_c" in two["dot"]
    every = _ok(s.handle({"kind": "graph", "path": "", "depth": 0})[0])
    assert every["depth"] == 0 and "layer1.0.conv1" in {n["path"] for n in every["nodes"]}
    ids = {n["path"]: n["id"] for n in every["nodes"]}
    edges = {(a, b) for a, b in re.findall(r"^\s+(\w+) -> (\w+) \[", every["dot"], re.M)}
    # layer1.0's input (the stem's relu) reaches its last relu through the add: the skip.
    assert (ids["relu"], ids["layer1.0.relu"]) in edges
    # Out of a cluster: layer1's output came from layer1.1's relu, into layer2.0's first layer.
    assert (ids["layer1.1.relu"], ids["layer2.0.conv1"]) in edges


def test_the_call_tree_has_times_after_a_real_probe_and_flops_after_a_fake_one() -> None:
    s = _session(demo.tiny_transformer(depth=4), torch.randint(0, 100, (1, 8)))
    fake = _ok(s.handle({"kind": "flow"})[0])["lines"]
    assert all(line["time_ms"] is None for line in fake)
    assert any(line["flops"] for line in fake)
    s.run_probe("real")
    lines = _ok(s.handle({"kind": "flow"})[0])["lines"]
    assert all(line["time_ms"] is not None and line["time_ms"] >= 0 for line in lines)
    fold = next(line for line in lines if line["count"])  # the four blocks: their calls' sum
    rec = s.report.records  # type: ignore[union-attr]
    blocks = [rec[f"blocks.{i}"].call_records[0].time_ms for i in range(4)]
    assert fold["time_ms"] == pytest.approx(sum(blocks))
