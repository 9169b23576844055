"""The Ranks tab's requests (listed in ``_view/handlers.py``): ``ranks`` answers the plan's rows as
one rank sees them (``ranks_view.rank_rows``); ``ranks_plan`` plans again, on the model as it is
now, with the function, mesh and inputs the plan was made with (after Apply or Undo the plan is
stale). The plan itself is the session's ``ranks`` (``ranks_link.RanksLink``)."""

from __future__ import annotations

from .host import RANKS, Host, States
from .ranks_types import RanksPlanReply, RanksPlanRequest, RanksReply, RanksRequest
from .ranks_view import rank_rows, ranks_state

__all__ = ["on_ranks", "on_ranks_plan"]


def on_ranks(host: Host, req: RanksRequest) -> tuple[RanksReply, States]:
    link = host.ranks
    if link.plan is None:
        raise ValueError("no plan: tx.explore(model, x, ranks=plan) or ex.ranks(plan) shows one")
    rows = rank_rows(link.plan, req["rank"], req.get("order", "tree"))
    return {"kind": "ranks", "rank": req["rank"], "rows": rows, "rev": link.rev}, frozenset()


def on_ranks_plan(host: Host, req: RanksPlanRequest) -> tuple[RanksPlanReply, States]:
    link = host.ranks
    try:
        link.replan(host.live_model(), host.model_rev)
    except Exception:
        if not link.error:  # nothing to plan again with: an error reply says why
            raise
        # else said on the tab (RanksState.error); the plan shown stays
    return {"kind": "ranks_plan", **ranks_state(link, host.model_rev)}, RANKS
