"""Messages of the Training tab (``tools_watch.py``) and its synced state: the watch's loss curve,
flags and first non-finite module (``TrainingState``, the ``training`` traitlet, sent while the
loop runs), a module's history (``train_series``), Pause / Resume (``train_control``) and the
tree's colour by a training figure (``train_figures``). Declared apart from ``protocol.py`` and
``replies.py``, which add the requests to ``Request`` / ``REPLIES`` and the replies to ``Reply``;
``protocol_ts.py`` generates their TypeScript."""

# No `from __future__ import annotations`: the TypedDicts' annotations are read at run time.
from typing import Annotated, Literal

from typing_extensions import NotRequired, TypedDict

TrainFigure = Literal["grad_norm", "update_ratio", "act_std", "act_zeros"]

# -- requests -----------------------------------------------------------------------------------


class TrainSeriesRequest(TypedDict):
    """A module's sampled figures over the run (the Training tab's sparklines)."""

    kind: Literal["train_series"]
    path: str


class TrainControlRequest(TypedDict):
    """Hold the loop at its next step's end, or let it go on."""

    kind: Literal["train_control"]
    action: Literal["pause", "resume"]


class TrainFiguresRequest(TypedDict):
    """Each module's last sample of a training figure, for colouring the tree."""

    kind: Literal["train_figures"]
    figure: TrainFigure
    paths: NotRequired[Annotated[list[str], []]]  # the rows on screen


# -- replies and the synced state ---------------------------------------------------------------


class NonFiniteRow(TypedDict):
    step: int
    path: str | None  # None: outside every module (the loss, the inputs)
    phase: str  # forward | backward | loss
    cls: str
    detail: str


class FlagRow(TypedDict):
    step: int  # first raised
    path: str
    kind: str  # vanishing | exploding | magnitude | dead | saturated | nonfinite
    count: int  # times raised (again only after it had cleared)
    last: int  # the step it was last raised


class TrainingState(TypedDict):
    """What the Training tab shows of the watch; {} (no `watching`) when there is none."""

    watching: bool
    step: int  # steps completed
    every: int
    paused: bool
    pausable: bool  # the kernel answers the view while a cell runs (ipykernel >= 7.4)
    loss: list[tuple[int, float]]  # at most LOSS_POINTS, evenly thinned
    active: dict[str, list[str]]  # path -> the flags that hold now (at most ACTIVE_ROWS paths)
    flag_count: int
    recent: list[FlagRow]  # the records last raised, newest last
    nonfinite: NonFiniteRow | None
    optimizer: str  # its class, or "" without one
    note: str


class TrainSeriesReply(TypedDict):
    kind: Literal["train_series"]
    path: str
    cls: str
    series: dict[str, list[tuple[int, float]]]  # figure -> (step, value), oldest first
    latest: dict[str, float]  # the last sample, exact (the series is rounded)
    flags: list[str]  # the flags that hold now


class TrainControlReply(TypedDict):
    kind: Literal["train_control"]
    paused: bool
    message: str  # what happens now, e.g. "the loop holds after step 41: edits apply between steps"


class TrainFiguresReply(TypedDict):
    """The shape of the figures reply (the tree colours by both); `total`: the largest value."""

    kind: Literal["train_figures"]
    figure: str
    values: dict[str, float | None]  # None: no sample of that module
    total: float | None
    note: str


TrainRequest = TrainSeriesRequest | TrainControlRequest | TrainFiguresRequest
TRAIN_REPLIES: dict[str, type] = {
    "train_series": TrainSeriesReply,
    "train_control": TrainControlReply,
    "train_figures": TrainFiguresReply,
}
