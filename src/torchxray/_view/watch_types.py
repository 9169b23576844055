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
    phase: str  # forward | backward | loss | update (weights spoilt at steps not checked)
    cls: str
    detail: str
    rank: NotRequired[int]  # an attached job's: the rank it began on


class FlagRow(TypedDict):
    step: int  # first raised
    path: str
    kind: str  # vanishing | exploding | magnitude | dead | saturated | nonfinite
    count: int  # times raised (again only after it had cleared)
    last: int  # the step it was last raised
    rank: NotRequired[int]  # an attached job's: the rank that raised it


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
    attached: NotRequired["AttachedState"]  # fed by a training job (tx.attach), not a local loop


class TrainSeriesReply(TypedDict):
    kind: Literal["train_series"]
    path: str
    cls: str
    series: dict[str, list[tuple[int, float]]]  # figure -> (step, value), oldest first
    latest: dict[str, float]  # the last sample, exact (the series is rounded)
    flags: list[str]  # the flags that hold now
    rank: NotRequired[int]  # an attached job's: the rank these figures are of
    ranks: NotRequired[list["RankLatest"]]  # ... and every rank's last figures of the module


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
    ranks: NotRequired[dict[str, int]]  # an attached job's worst-rank view: whose value each is
    spark: NotRequired[dict[str, list[float]]]  # the figure's last samples per row (sparklines)


# -- an attached training job (tx.attach; _view/attach_view.py) -----------------------------------


class TrainPollRequest(TypedDict):
    """Ask an attached job's ranks for what is new; the Training tab sends it while attached."""

    kind: Literal["train_poll"]
    rank: NotRequired[Annotated[int | None, None]]  # the rank to show; None: the worst rank


class AttachedState(TypedDict):
    address: str  # the job's store
    world: int
    ranks: list[int]  # those that publish
    rank: int | None  # the rank shown; None: the worst-rank view
    worst: int | None  # the rank that looks worst (its first NaN, then its flags); None: none
    steps: dict[str, int]  # rank -> steps completed
    states: dict[str, str]  # rank -> live | slow | gone | closed
    ended: bool
    ended_at: int  # the last step any rank reported
    ended_exactly: bool  # every rank's last step is known (its watch closed), not the last seen
    poll_ms: int  # how often the view polls
    polls: int


class RankLatest(TypedDict):
    rank: int
    grad_norm: float | None  # None: no value (or a NaN/Inf, which `nonfinite` names)
    update_ratio: float | None
    act_std: float | None
    act_zeros: float | None
    nonfinite: list[str]  # the figures whose last value is NaN/Inf (JSON carries neither)


class TrainPollReply(TypedDict):
    kind: Literal["train_poll"]
    changed: bool
    ended: bool
    message: str  # "" or what a rank that did not answer is doing


TrainRequest = TrainSeriesRequest | TrainControlRequest | TrainFiguresRequest | TrainPollRequest
TRAIN_REPLIES: dict[str, type] = {
    "train_series": TrainSeriesReply,
    "train_control": TrainControlReply,
    "train_figures": TrainFiguresReply,
    "train_poll": TrainPollReply,
}
