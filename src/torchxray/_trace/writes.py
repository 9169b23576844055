"""What a forward wrote, as data: `Write(path, attribute, kind, detail, restored)`.

`path` is the module that holds what was written ("" the root; "torch" for torch's global
state, a Python module's name for a registry there, "file" for a file), `attribute` what was
written relative to it ("seen", "lin.weight", "memo", "torch.get_default_dtype()"). The kinds say
what a person must know before ``torch.compile``, which has to handle the same writes.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ATTRIBUTE",
    "CONTAINER",
    "COUNTER",
    "FILE",
    "GLOBAL",
    "HOOK",
    "INPLACE",
    "KINDS",
    "SUBMODULE",
    "TENSOR",
    "Write",
]

COUNTER = "counter"  # a number attribute replaced by another (self.calls += 1)
ATTRIBUTE = "attribute"  # any other attribute set, replaced or deleted (self.cache = x)
CONTAINER = "container"  # a list, dict, set, deque or object attribute changed in place
SUBMODULE = "new submodule"  # a submodule added (or removed) by the forward
TENSOR = "tensor"  # a parameter or buffer added, removed or replaced
INPLACE = "in-place parameter"  # a parameter's or buffer's values written in place
HOOK = "hook"  # a hook registered or removed (on a module, a tensor or globally)
GLOBAL = "global"  # torch's global state, or a registry in a Python module's globals
FILE = "file"  # a file written: never put back
KINDS = (COUNTER, ATTRIBUTE, CONTAINER, SUBMODULE, TENSOR, INPLACE, HOOK, GLOBAL, FILE)


@dataclass(frozen=True, slots=True)
class Write:
    """One thing a forward wrote; `restored` is False for what could not be put back.

    `ProbeReport.writes` lists them: a probe puts everything a forward wrote back as it was, and
    says what that was.

    Attributes:
        path: The module written to (``""`` is the model; torch's global state has ``""`` too).
        attribute: What was written: an attribute name, or a global such as
            ``"torch.get_default_dtype()"``.
        kind: ``"counter"``, ``"attribute"``, ``"container"``, ``"new submodule"``, ``"tensor"``,
            ``"in-place parameter"``, ``"hook"``, ``"global"`` or ``"file"``.
        detail: What changed, in a few words (``"1 item added"``).
        restored: False for what could not be put back (a file written).

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> class Counting(nn.Linear):
        ...     calls = 0
        ...     def forward(self, x):
        ...         self.calls += 1
        ...         return super().forward(x)
        >>> model = Counting(4, 2)
        >>> [str(w) for w in tx.probe(model, torch.randn(1, 4)).writes], model.calls
        (['writes self.calls (attribute: set to 1)'], 0)
    """

    path: str
    attribute: str
    kind: str
    detail: str = ""
    restored: bool = True

    @property
    def outside(self) -> bool:
        """What was written is no module's: torch's global state (a flag, a global hook), a
        registry in a Python module, a file. The widget shows these on the root's Overview."""
        return self.kind in (GLOBAL, FILE) or self.attribute.startswith("torch.")

    def __str__(self) -> str:
        owner = "self" if self.path == "" else self.path
        if self.outside:
            where = self.attribute
        else:
            where = f"{owner}.{self.attribute}"
        tail = f": {self.detail}" if self.detail else ""
        undone = "" if self.restored else " (not put back)"
        return f"writes {where} ({self.kind}{tail}){undone}"

    @property
    def label(self) -> str:
        """As a row shows it: "writes self.seen"."""
        if self.outside:
            return f"writes {self.attribute}"
        return f"writes self.{self.attribute}"
