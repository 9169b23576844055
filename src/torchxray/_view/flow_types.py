"""Messages of the execution-flow tools (``tools_flow.py``): the call sites the Overview
lists, the Probe tab's call tree and the Graph tab's dataflow graph. Declared apart from
``protocol.py`` and ``replies.py`` so that neither grows past its size; ``protocol.py`` adds the
requests to its ``Request`` union and ``REPLIES``, ``replies.py`` the replies to ``Reply``, and
``protocol_ts.py`` generates the TypeScript of both."""

# No `from __future__ import annotations`: the TypedDicts' annotations are read at run time.
from typing import Annotated, Literal

from typing_extensions import NotRequired, TypedDict

# -- requests -----------------------------------------------------------------------------------


class FlowRequest(TypedDict):
    """A page of the last probe's calls as a call tree; runs of identical calls fold."""

    kind: Literal["flow"]
    offset: NotRequired[Annotated[int, 0]]
    limit: NotRequired[Annotated[int, 500]]
    open: NotRequired[Annotated[list[str], []]]  # the folds the person opened, by their `key`


class GraphRequest(TypedDict):
    """The dataflow graph of a module's children (one level, or `depth`), as graphviz DOT."""

    kind: Literal["graph"]
    path: str
    open: NotRequired[Annotated[list[str], []]]  # the groups the person expanded, by their `key`
    # Levels of descendants drawn (1: the children; deeper ones as clusters; 0: all of them).
    depth: NotRequired[Annotated[int, 1]]


# -- replies ------------------------------------------------------------------------------------


class SiteRow(TypedDict):
    """One line a module was called from (listed under "called from" when a module is selected)."""

    function: str  # "ResNet.forward"
    file: str
    line: int  # 0 when there is no Python line (see `reason`)
    text: str  # the source line, stripped
    count: int  # calls from this line
    reason: str  # why there is no line: "called from C++ code, ..."
    caller: str | None  # the module whose source holds the line (its path); None: unknown
    cls: str | None  # the class of that module's MRO that defines `function` (a `source` cls)


class FlowLine(TypedDict):
    """One line of the call tree: a call, or a fold of `count` identical sibling calls."""

    pos: int  # the call's position in the flow (a fold: its first call's)
    path: str
    cls: str
    index: int  # the call's index among its path's calls
    calls: int  # how many calls the path made in all (an index shows when more than one)
    depth: int
    count: int  # a fold: how many calls it stands for; 0 for a call
    key: str  # a fold's key (for `open`); "" for a call
    last: str  # a fold: the last call's path
    open: bool  # a fold: whether its calls follow
    time_ms: float | None  # the call's time (a real probe); a fold: its calls' sum
    flops: int | None  # the call's FLOPs (counted in a fake probe); a fold: its calls' sum


class FlowReply(TypedDict):
    kind: Literal["flow"]
    lines: list[FlowLine]
    offset: int
    total: int  # lines in all, with the open folds' calls
    calls: int  # calls in the flow
    note: str  # e.g. why there is no flow (no probe)


class GraphNode(TypedDict):
    """A node of the graph: a child module, a folded run of them, or the input or output."""

    id: str  # the DOT node id (the SVG node's <title>)
    path: str  # the module (a group: its first); "" for the input and output
    kind: Literal["module", "group", "cluster", "input", "output"]  # cluster: its kids drawn
    key: str  # a group's key (for `open`); "" otherwise
    count: int  # a group: how many modules it stands for
    nkids: int  # the module's children: 0 means there is nothing to go into


class GraphReply(TypedDict):
    kind: Literal["graph"]
    path: str
    dot: str
    nodes: list[GraphNode]
    edges: int  # edges drawn
    note: str  # e.g. "a real probe records no dataflow: run a fake probe"
    depth: int  # the depth drawn (lower than asked past MAX_NODES boxes); 0: all of it
