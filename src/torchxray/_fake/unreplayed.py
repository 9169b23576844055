"""Why blocks that look alike were not replayed by a fake run's memo (`_fake.memo`): one sentence
per group of sibling blocks of one class none of which was replayed, for the report to say rather
than leave a slow probe unexplained ("LlamaDecoderLayer blocks model.layers.0 and 79 more ran each
time, not replayed: in self_attn, attribute 'tag' holds a different object in each").

The reasons come from what the memo already knows: a block with no signature (hooks of its own, a
child without one, a child reached by another path: `Signatures.unsigned`), two signatures that
differ (the first attribute, forward or child where they part; parameter shapes that differ mean
the blocks are not alike, and nothing is said), or a signature whose calls the memo refused
(`BlockMemo.refusals`). Groups inside a stubbed block are not looked at: only the outermost
repeated blocks are ever stubbed. It is read after a successful run, from ids and paths only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from torch import nn

from .memo import BlockMemo

__all__ = ["unreplayed"]

_MAX = 5  # sentences in one report: the first groups, in model order


def unreplayed(
    memo: BlockMemo,
    modules: list[nn.Module],
    paths: dict[int, str],
    ran: Callable[[str], bool],
) -> tuple[str, ...]:
    """One sentence per group of alike siblings none of which was replayed (at most `_MAX`)."""
    hits = set(memo.hits)
    out: list[str] = []
    reverse: dict[int, Hashable] = {}
    # From the root down, never into a stubbed block (nothing inside one is stubbed) nor into a
    # group already said: a model whose blocks replay costs a visit of what lies outside them.
    todo = modules[:1]
    while todo and len(out) < _MAX:
        m = todo.pop()
        kids = [c for c in m._modules.values() if c is not None]
        if len(kids) < 2:
            todo.extend(c for c in kids if id(c) not in memo.stubbed)
            continue
        groups: dict[type, list[nn.Module]] = {}
        for c in kids:
            groups.setdefault(type(c), []).append(c)
        said: set[int] = set()
        for cls, group in groups.items():
            if len(group) < 2:
                continue
            ps = [paths.get(id(c), "") for c in group]
            if any(p in hits for p in ps):
                continue
            if not reverse:  # the signatures' keys by id, made once a group needs them
                reverse = {v: k for k, v in memo.sigs.keys.items()}
            why = _why(memo, group[0], group[1], reverse)
            if why is None or not ran(ps[0]) or not ran(ps[1]):
                continue
            said.update(id(c) for c in group)
            more = f"{ps[1]}" if len(ps) == 2 else f"{len(ps) - 1} more"
            out.append(
                f"{cls.__name__} blocks {ps[0]} and {more} ran each time, not replayed: {why}"
            )
        todo.extend(reversed([c for c in kids if id(c) not in said and id(c) not in memo.stubbed]))
    return tuple(out[:_MAX])


def _why(memo: BlockMemo, a: nn.Module, b: nn.Module, reverse: dict[int, Hashable]) -> str | None:
    sigs = memo.sigs
    ea, eb = sigs.exact.get(id(a)), sigs.exact.get(id(b))
    if ea is None or eb is None:
        return _unsigned(sigs.unsigned, a if ea is None else b)
    same = ea == eb or (id(a) in sigs.index and sigs.relaxed.get(id(a)) == sigs.relaxed.get(id(b)))
    if same:
        stub = memo.stubbed.get(id(a))
        if stub is None:
            return None
        # No refusal: their calls had inputs of other shapes (a model's own design, not said).
        return memo.refusals.get(stub[0])
    if id(a) in sigs.relaxed and id(b) in sigs.relaxed:  # cache indices left out (`Signatures`)
        ea, eb = sigs.relaxed[id(a)], sigs.relaxed[id(b)]
    ka, kb = reverse.get(ea), reverse.get(eb)
    if not isinstance(ka, tuple) or not isinstance(kb, tuple):
        return None
    fa, attrs_a, params_a, bufs_a, kids_a = ka[-5:]
    fb, attrs_b, params_b, bufs_b, kids_b = kb[-5:]
    if params_a != params_b or bufs_a != bufs_b or [n for n, _ in kids_a] != [n for n, _ in kids_b]:
        return None  # not alike: other shapes, or other parts
    if attrs_a != attrs_b:
        return _attribute(a, b, dict(attrs_a), dict(attrs_b))
    if fa != fb:
        return "each has a forward of its own, set on the instance, and they differ"
    for (name, sa), (_, sb) in zip(kids_a, kids_b):
        if sa != sb:
            inner = _why(memo, a._modules[name], b._modules[name], reverse)  # type: ignore[arg-type]
            return None if inner is None else f"in {name}, {inner}"
    return None


def _unsigned(unsigned: dict[int, tuple[str, str]], m: nn.Module) -> str | None:
    what, child = unsigned.get(id(m), ("", ""))
    if what == "hooks":
        return "it has hooks of its own (each call must run them)"
    if what == "shared":
        return f"its child {child} is reached by another path too (a shared module)"
    if what == "child":
        inner = _unsigned(unsigned, m._modules[child])  # type: ignore[arg-type]
        return None if inner is None else f"in {child}, {inner}"
    return None


def _attribute(a: nn.Module, b: nn.Module, ka: dict[str, Any], kb: dict[str, Any]) -> str:
    name = next(k for k in sorted(ka.keys() | kb.keys()) if ka.get(k) != kb.get(k))
    va, vb = vars(a).get(name), vars(b).get(name)
    kind = type(va).__qualname__
    if isinstance(va, (bool, int, float, str)) and isinstance(vb, (bool, int, float, str)):
        return f"attribute {name!r} differs ({va!r} in the first, {vb!r} in the next)"
    if va is None or vb is None or type(va) is not type(vb):
        return f"attribute {name!r} is set on some of them only, or to values of other types"
    return f"attribute {name!r} holds a different {kind} in each, not equal by value"
