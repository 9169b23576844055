"""A `RanksPlan` as the Ranks tab shows it: plain data. ``ranks_state`` is the ``ranks_state``
traitlet (the mesh, every rank's memory, the rows to badge, stale or not); ``rank_rows`` the
modules as one rank sees them (each tensor's placement and local shape on that rank, each
collective), which the tab asks for when the rank selector moves. Reads the plan's public
fields only (``plan.records``, ``.memory_parts``, ``.world_size``, ``.mesh``, ``.notes``).

    >>> ranks_state(RanksLink(), 0)["status"]
    'none'
    >>> ranks_text([0, 1, 2, 5, 7, 8])
    '0-2, 5, 7-8'
"""

from __future__ import annotations

from ..ranks import Comm, RankRecord, RanksPlan
from .ranks_link import RanksLink, mesh_text
from .ranks_types import RankComm, RankMemoryRow, RankRow, RanksState, RankTensor

__all__ = ["rank_rows", "ranks_state", "ranks_text"]

_NONE: RanksState = {
    "status": "none", "world_size": 0, "mesh": [], "stepped": False, "modules": 0, "shown": 0,
    "memory": [], "budget": None, "notes": [], "stale": False, "can_replan": False,
    "replan_note": "", "missing": 0, "sharded": [], "comms": [], "error": "", "rev": 0,
}  # fmt: skip


def _sharded(rec: RankRecord) -> bool:
    return any("Shard" in p for p in rec.placements.values())


def _shown(rec: RankRecord) -> bool:
    return bool(rec.placements) or bool(rec.comms)


def ranks_state(link: RanksLink, model_rev: int) -> RanksState:
    """The tab's state for the plan `link` holds, against the model's revision now."""
    plan = link.plan
    if plan is None:
        return {**_NONE, "budget": link.budget}
    stale = link.model_rev != model_rev
    records = list(plan.records.values())
    memory: list[RankMemoryRow] = [
        {"rank": r, "params": m.params, "buffers": m.buffers, "grads": m.grads,
         "optimizer": m.optimizer, "activations": m.activations, "peak": m.peak}
        for r, m in sorted(plan.memory_parts.items())
    ]  # fmt: skip
    if link.can_replan:
        note = ""
    else:
        note = (
            f"To plan again, run ex.ranks(parallelize, mesh={mesh_text(plan.mesh)}) in the "
            "notebook with your parallelize function."
        )
    return {
        "status": "ok",
        "world_size": plan.world_size,
        "mesh": [{"name": k, "size": int(v)} for k, v in plan.mesh.items()],
        "stepped": bool(plan.stepped),
        "modules": len(records),
        "shown": sum(1 for r in records if _shown(r)),
        "memory": memory,
        "budget": link.budget,
        "notes": list(plan.notes),
        "stale": stale,
        "can_replan": link.can_replan,
        "replan_note": note,
        "missing": link.missing,
        # A stale plan names rows of the model as it was: no badges on the tree as it is now.
        "sharded": [] if stale else [r.path for r in records if _sharded(r)],
        "comms": [] if stale else [r.path for r in records if r.comms],
        "error": link.error,
        "rev": link.rev,
    }


def ranks_text(ranks: list[int]) -> str:
    """Ranks as runs: ``0-2, 5``."""
    out: list[str] = []
    start = prev = None
    for r in sorted(ranks):
        if prev is not None and r == prev + 1:
            prev = r
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = r
    if start is not None:
        out.append(str(start) if start == prev else f"{start}-{prev}")
    return ", ".join(out)


def _tensor(rec: RankRecord, name: str, rank: int) -> RankTensor:
    per_rank = rec.local_shapes.get(name, {})
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for r, shape in per_rank.items():
        by_shape.setdefault(tuple(shape), []).append(r)
    spread = (
        [(list(s), ranks_text(rs)) for s, rs in sorted(by_shape.items(), key=lambda kv: min(kv[1]))]
        if len(by_shape) > 1
        else []
    )
    placement = rec.placements.get(name, "")
    return {
        "name": name,
        "placement": placement,
        "mesh_dims": list(rec.mesh_dims.get(name, ())),
        "sharded": "Shard" in placement,
        "shape": list(per_rank.get(rank, rec.global_shapes.get(name, ()))),
        "global_shape": list(rec.global_shapes.get(name, ())),
        "bytes": int(rec.local_bytes.get(name, {}).get(rank, 0)),
        "spread": spread,
    }


def _comm(c: Comm) -> RankComm:
    return {"phase": c.phase, "op": c.op, "count": int(c.count), "bytes": int(c.bytes),
            "mesh_dim": c.mesh_dim}  # fmt: skip


def rank_rows(plan: RanksPlan, rank: int, order: str = "tree") -> list[RankRow]:
    """The modules that hold tensors or run collectives, as `rank` sees them; ``order`` "bytes"
    puts the most bytes of own tensors on that rank first. ValueError for a rank not in the plan."""
    if not 0 <= rank < plan.world_size:
        raise ValueError(
            f"rank {rank} is not in the plan: its ranks are 0 to {plan.world_size - 1}"
        )
    rows: list[RankRow] = []
    for rec in plan.records.values():
        if not _shown(rec):
            continue
        tensors = [_tensor(rec, name, rank) for name in rec.placements]
        rows.append({"path": rec.path, "cls": rec.cls, "bytes": sum(t["bytes"] for t in tensors),
                     "tensors": tensors, "comms": [_comm(c) for c in rec.comms]})  # fmt: skip
    if order == "bytes":
        rows.sort(key=lambda r: (-r["bytes"], -sum(c["bytes"] for c in r["comms"])))
    return rows
