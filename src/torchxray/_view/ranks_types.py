"""Messages of the Ranks tab (``tools_ranks.py``) and its synced state: a `RanksPlan`
(``tx.ranks``) as the ``ranks_state`` traitlet carries it (``RanksState``: the mesh, every rank's
memory, the rows to badge, whether the plan is stale), the request for one rank's rows
(``ranks``: each module's placements, local shapes on that rank, collectives) and the one that
plans again after a patch (``ranks_plan``). Declared apart from ``protocol.py`` and
``replies.py``, which add them to their unions and ``REPLIES``; ``protocol_ts.py`` generates
their TypeScript."""

# No `from __future__ import annotations`: the TypedDicts' annotations are read at run time.
from typing import Annotated, Literal

from typing_extensions import NotRequired, TypedDict

# -- requests -----------------------------------------------------------------------------------


class RanksRequest(TypedDict):
    """The plan's rows as one rank sees them."""

    kind: Literal["ranks"]
    rank: int
    # "tree": the model's order; "bytes": the most bytes of its own tensors on that rank first
    order: NotRequired[Annotated[Literal["tree", "bytes"], "tree"]]


class RanksPlanRequest(TypedDict):
    """Plan again, on the model as it is now, with the function and mesh the plan was made with
    (the stale plan's "Plan again" button)."""

    kind: Literal["ranks_plan"]


# -- replies and the synced state ---------------------------------------------------------------


class MeshDim(TypedDict):
    name: str
    size: int


class RankMemoryRow(TypedDict):
    """One rank's bytes in the plan's training step (`RankMemory`)."""

    rank: int
    params: int
    buffers: int
    grads: int
    optimizer: int
    activations: int
    peak: int


class RanksState(TypedDict):
    """The ``ranks_state`` traitlet: the plan attached (``tx.explore(..., ranks=plan)``,
    ``ex.ranks(...)``), or why there is none."""

    status: Literal["none", "ok"]
    world_size: int
    mesh: list[MeshDim]
    stepped: bool  # a training step ran: comms and memory are known
    modules: int  # the plan's modules
    shown: int  # those that hold tensors or run collectives (the tab's rows)
    memory: list[RankMemoryRow]  # one per rank; [] when the step's memory is not known
    budget: int | None  # bytes per rank the explorer was given (ex.ranks(..., budget=))
    notes: list[str]  # what the plan itself says (estimates, sampled blocks, ...)
    # The model changed (Apply, Undo...) since the plan was made: it describes the model as it was.
    stale: bool
    can_replan: bool  # the explorer knows the parallelize function, mesh and inputs
    replan_note: str  # how to plan again where the tab cannot
    missing: int  # the plan's modules this model does not have (a plan of another model)
    # The rows badged on the tree (none while stale): modules holding sharded tensors, and
    # modules whose own forward or backward runs collectives.
    sharded: list[str]
    comms: list[str]
    error: str  # the last "Plan again" that failed, in one sentence
    rev: int  # counts the plans attached: the tab asks for rows again when it moves


class RankTensor(TypedDict):
    """One of a module's own parameters or buffers on one rank."""

    name: str
    placement: str  # "(Shard(dim=0),)", "whole on every rank (not a DTensor)", ...
    mesh_dims: list[str]  # the mesh dimensions its placements are over, in order
    sharded: bool  # some placement splits it
    shape: list[int]  # its local shape on the rank asked for
    global_shape: list[int]
    bytes: int  # on the rank asked for
    # Where the ranks hold shards of different shapes: each shape and the ranks holding it
    # ("0-2"); [] when every rank holds the same shape.
    spread: list[tuple[list[int], str]]


class RankComm(TypedDict):
    """Collectives run in a module's own forward, backward or optimizer step (`Comm`)."""

    phase: str
    op: str
    count: int
    bytes: int
    mesh_dim: str


class RankRow(TypedDict):
    path: str
    cls: str
    bytes: int  # its own tensors' bytes on the rank asked for
    tensors: list[RankTensor]
    comms: list[RankComm]


class RanksReply(TypedDict):
    kind: Literal["ranks"]
    rank: int
    rows: list[RankRow]
    rev: int  # the plan's (RanksState.rev)


class RanksPlanReply(RanksState):
    kind: Literal["ranks_plan"]
