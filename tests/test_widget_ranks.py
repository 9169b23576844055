"""The Explorer's Ranks tab (issue 42): ``tx.explore(model, x, ranks=plan)`` and ``ex.ranks(...)``
show a ``tx.ranks`` plan; its state (``_view/ranks_view.py``) and each rank's rows (the ``ranks``
request) are plain data read from the plan; a patch makes the plan stale (no badges), and
"Plan again" (``ranks_plan``) plans the model as it is now with the same function and mesh."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
import torch
from torch import nn
from torch.distributed.fsdp import fully_shard

import torchxray as tx
from torchxray._view.ranks_view import rank_rows, ranks_text


def _model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 10), nn.ReLU(), nn.Linear(10, 4))


def shard(model: nn.Module, mesh: Any) -> nn.Module:
    fully_shard(model[0], mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


@pytest.fixture(scope="module")
def planned() -> tuple[nn.Sequential, torch.Tensor, tx.RanksPlan]:
    model, x = _model(), torch.randn(2, 16)
    return model, x, tx.ranks(model, shard, mesh={"dp": 4}, args=(x,))


def _tensor(reply: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    row = next(r for r in reply["rows"] if r["path"] == path)
    return next(t for t in row["tensors"] if t["name"] == name)


def test_the_tab_shows_the_plan_rank_by_rank(planned: Any) -> None:
    model, x, plan = planned
    ex = tx.explore(model, x, ranks=plan)
    try:
        assert ex.ranks_plan is plan
        state = ex.ranks_state
        json.dumps(state)  # plain JSON for the traitlet
        assert state["status"] == "ok" and state["world_size"] == 4 and not state["stale"]
        assert state["mesh"] == [{"name": "dp", "size": 4}]
        assert state["can_replan"] and state["replan_note"] == ""
        # Rows badged: the sharded Linears; collectives in the root's and the Linears' own calls.
        assert state["sharded"] == ["0", "2"]
        assert set(state["comms"]) == {p for p, rec in plan.records.items() if rec.comms}
        assert "" in state["comms"]
        assert [m["peak"] for m in state["memory"]] == [plan.memory[r] for r in range(4)]
        assert state["memory"][3]["params"] == plan.memory_parts[3].params
        # 10 rows over 4 ranks: 3, 3, 3, 1; each rank's rows say its own shape.
        shapes = []
        for rank in range(4):
            reply, changed = ex._session.handle({"kind": "ranks", "rank": rank})
            assert reply["kind"] == "ranks" and not changed
            json.dumps(reply)
            weight = _tensor(reply, "0", "weight")
            shapes.append(tuple(weight["shape"]))
            assert weight["global_shape"] == [10, 16] and weight["sharded"]
            assert weight["mesh_dims"] == ["dp"] and weight["placement"] == "(Shard(dim=0),)"
            assert weight["bytes"] == plan["0"].local_bytes["weight"][rank]
            assert weight["spread"] == [([3, 16], "0-2"), ([1, 16], "3")]
        assert shapes == [(3, 16), (3, 16), (3, 16), (1, 16)]
        # 4 rows over 4 ranks: even, no spread. ReLU holds nothing and runs nothing: no row.
        assert _tensor(reply, "2", "weight")["spread"] == []
        assert "1" not in [r["path"] for r in reply["rows"]]
        root = next(r for r in reply["rows"] if r["path"] == "")
        assert {(c["phase"], c["op"]) for c in root["comms"]} == {
            (c.phase, c.op) for c in plan[""].comms
        }
        # Most bytes on the rank first.
        by_bytes = ex._session.handle({"kind": "ranks", "rank": 0, "order": "bytes"})[0]
        assert by_bytes["rows"][0]["path"] == "0"
        bad = ex._session.handle({"kind": "ranks", "rank": 4})[0]
        assert bad["kind"] == "error" and "ranks are 0 to 3" in bad["message"]
    finally:
        ex.close()


def test_a_patch_makes_the_plan_stale_and_plan_again_follows_the_model(planned: Any) -> None:
    _, x, plan = planned
    model = _model()  # patched here: the fixture's model stays as it is
    ex = tx.explore(model, x, ranks=plan)
    try:
        ex.edit("0", bias=False)
        state = ex.ranks_state
        assert state["stale"] and state["sharded"] == [] and state["comms"] == []
        assert ex.ranks_plan is plan  # still shown, said stale
        reply, changed = ex._session.handle({"kind": "ranks_plan"})
        assert reply["kind"] == "ranks_plan" and "ranks_state" in changed, reply
        assert not reply["stale"] and reply["error"] == "" and reply["sharded"] == ["0", "2"]
        new = ex.ranks_plan
        assert new is not plan and "bias" not in new["0"].placements
        rows = ex._session.handle({"kind": "ranks", "rank": 3})[0]
        linear = next(r for r in rows["rows"] if r["path"] == "0")
        assert [t["name"] for t in linear["tensors"]] == ["weight"]
        # Planned on the explorer's model as it is now; the model is left plain.
        assert not any(isinstance(p, torch.distributed.tensor.DTensor) for p in model.parameters())
    finally:
        ex.close()


def test_a_plan_that_does_not_say_how_it_was_made_says_how_to_plan_again(planned: Any) -> None:
    _, x, plan = planned
    bare = dataclasses.replace(plan, _source=())
    ex = tx.explore(_model(), x)
    try:
        assert ex.ranks_state["status"] == "none" and ex.ranks_plan is None
        assert ex.ranks(bare, budget=3000) is bare
        state = ex.ranks_state
        assert not state["can_replan"] and state["budget"] == 3000
        assert "ex.ranks(parallelize, mesh={'dp': 4})" in state["replan_note"]
        ex.edit("2", bias=False)
        reply = ex._session.handle({"kind": "ranks_plan"})[0]
        assert reply["kind"] == "error" and "does not say how it was made" in reply["message"]
        ex.ranks(budget=None)  # the budget alone
        assert ex.ranks_state["budget"] is None and ex.ranks_plan is bare
        with pytest.raises(TypeError, match="a parallelize function and a mesh"):
            ex.ranks("shard")
        with pytest.raises(TypeError, match="takes the plan alone"):
            ex.ranks(plan, mesh={"dp": 2})
        with pytest.raises(ValueError, match="budget must be bytes per rank"):
            ex.ranks(plan, budget=-1)
        assert ex.ranks_plan is bare  # nothing changed by a refused call
    finally:
        ex.close()


def test_ex_ranks_plans_the_explored_model_with_its_inputs() -> None:
    model, x = _model(), torch.randn(2, 16)
    ex = tx.explore(model, x)
    try:
        plan = ex.ranks(shard, mesh={"dp": 4}, budget=3000)
        assert [plan["0"].local_shapes["weight"][r] for r in range(4)] == [(3, 16)] * 3 + [(1, 16)]
        assert ex.ranks_state["can_replan"] and ex.ranks_state["budget"] == 3000
        assert not any(isinstance(p, torch.distributed.tensor.DTensor) for p in model.parameters())
    finally:
        ex.close()


class Ranked(nn.Module):
    def forward(self, x: torch.Tensor, ranks: torch.Tensor) -> torch.Tensor:
        return x + ranks


def test_a_plan_of_another_model_says_so(planned: Any) -> None:
    _, x, plan = planned
    ex = tx.explore(nn.Sequential(nn.Linear(16, 4)), x, ranks=plan)
    try:
        assert ex.ranks_state["missing"] == 2  # "1" and "2" are not in this model
    finally:
        ex.close()


def test_a_ranks_keyword_that_is_no_plan_is_the_model_s() -> None:
    ex = tx.explore(Ranked(), torch.ones(2), ranks=torch.ones(2))
    try:
        assert ex.probe_report is not None and ex.probe_report.ok
        assert ex.ranks_state["status"] == "none"
    finally:
        ex.close()


def test_plain_data_helpers(planned: Any) -> None:
    _, _, plan = planned
    assert ranks_text([3, 0, 1, 2, 7]) == "0-3, 7"
    assert [r["path"] for r in rank_rows(plan, 1)] == [
        p for p, rec in plan.records.items() if rec.placements or rec.comms
    ]
    with pytest.raises(ValueError, match="rank 9 is not in the plan"):
        rank_rows(plan, 9)
