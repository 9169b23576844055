"""Messages of the Probe tab's summary (``tools_summary.py``): the text ``ex.summary(depth)``
returns, for the Copy button, and its rows as CSV, for the download. Declared apart from
``protocol.py`` and ``replies.py`` (as ``flow_types.py``), which add them to their unions and
``REPLIES``; ``protocol_ts.py`` generates their TypeScript."""

# No `from __future__ import annotations`: the TypedDicts' annotations are read at run time.
from typing import Annotated, Literal

from typing_extensions import NotRequired, TypedDict


class SummaryRequest(TypedDict):
    kind: Literal["summary"]
    depth: NotRequired[Annotated[int | None, None]]  # None: the deepest that fits the screen


class SummaryReply(TypedDict):
    kind: Literal["summary"]
    text: str  # ex.summary(depth)'s text
    csv: str  # the same rows, one module a line (runs of identical blocks not folded)
    depth: int  # the depth shown (the request's None picks one)
    deepest: int  # the tree's depth
    name: str  # the model's class, for the CSV file's name
