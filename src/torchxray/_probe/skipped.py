"""Modules a successful probe saw no call of, and why, where the reason is known.

A forward need not call every submodule: ``nn.TransformerEncoderLayer`` without gradients (always
so during a probe, which runs in eval mode under ``no_grad``) takes a fused fast path, one kernel
that reads its children's weights and calls none of them; ``nn.MultiheadAttention`` hands
``out_proj``'s weights to ``F.multi_head_attention_forward``; a head unused for these inputs is
simply skipped. `NotCalled` lists, for a report, the outermost such modules (everything under one
ran no call either) whose parent did run, each with a reason; it is worked out when first read,
from the paths and class names the report already holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

__all__ = ["NotCalled", "reason"]

_FAST_PATH = (
    "fused fast path: nn.TransformerEncoderLayer without gradients runs one fused kernel "
    "(torch._transformer_encoder_layer_fwd) that uses its submodules' weights without calling "
    "them; call torch.backends.mha.set_fastpath_enabled(False) before probing to see them"
)
# Parent class name -> (child name or "" for any child, reason). torch.nn's own classes: a user
# class of the same name is taken for one only if its children went uncalled too.
_KNOWN: dict[str, tuple[str, str]] = {
    "TransformerEncoderLayer": ("", _FAST_PATH),
    "MultiheadAttention": (
        "out_proj",
        "nn.MultiheadAttention passes out_proj's weights to F.multi_head_attention_forward "
        "(or its fused fast path) and never calls it",
    ),
    "OptimizedModule": (
        "_orig_mod",
        "runs inside torch.compile's wrapper, whose compiled code calls no module",
    ),
}


_CONTAINERS = frozenset({"ModuleList", "ModuleDict", "ParameterList", "ParameterDict"})


def reason(parent_cls: str, child: str) -> str:
    known = _KNOWN.get(parent_cls)
    if known is not None and known[0] in ("", child):
        return known[1]
    return (
        f"not called by {parent_cls}.forward in this run: a branch these inputs do not take, or "
        "the parent uses its weights or settings directly (fused attention reads a dropout's p)"
    )


class NotCalled(Mapping[str, str]):
    """path -> reason for the outermost modules that ran no call while their parent did.

    ``names`` maps every module path the probe walked (first paths, pre-order) to its class
    name; ``called`` gives the paths that ran, read only when the mapping is first used.
    """

    def __init__(self, names: Mapping[str, str], called: Callable[[], Iterable[str]]) -> None:
        self._names = names
        self._called = called
        self._made: dict[str, str] | None = None

    def _map(self) -> dict[str, str]:
        if self._made is None:
            names = self._names
            # Reached: every module that ran, and every module above one (a container such as
            # ModuleList is never called itself; a parent may call a grandchild directly).
            reached: set[str] = set()
            for path in self._called():
                while path not in reached:
                    reached.add(path)
                    if not path:
                        break
                    path = path.rpartition(".")[0]
            made: dict[str, str] = {}
            for path in names:
                if path in reached:
                    continue
                parent, _, child = path.rpartition(".")
                if parent in reached:
                    caller = parent
                    while caller and names.get(caller) in _CONTAINERS:
                        caller = caller.rpartition(".")[0]
                    made[path] = reason(names.get(caller, "?"), child)
            self._made = made
            self._names, self._called = {}, tuple
        return self._made

    def __getitem__(self, path: str) -> str:
        return self._map()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())

    def __repr__(self) -> str:
        return f"NotCalled({self._map()!r})"
