"""Long stacks of identical blocks (80 decoder layers), stepped on a few: the training step of a
stack of `n` blocks is measured on copies of the model cut to 4 and to 5 of them (the first, the
middle and the last blocks behave differently under FSDP: the last is not resharded after forward,
a block's backward prefetches the one before it), so that the two runs differ by one middle block,
and extended to `n`: each part of memory and each phase's (forward, backward, step) peak grows by
the 5-block run's excess over the 4-block run per extra block, the forward's taken as the highest
of its peaks before, in and after the stack's first, middle and last blocks, each grown by itself
(the peak is the highest phase), and each extra middle block is given the collectives one more block added to the whole stack (their
per-block split shifts between runs, as a block's backward runs its neighbour's FSDP collectives;
their sum does not). The placements and local shapes are still read from the whole sharded model,
and the steps stand for it only where parallelize placed its blocks alike (`odd_block`: every
middle block as the second, and the whole stack's first, second and last as the cut copy's, by
classes, forward hooks, FSDP settings, placements and every rank's local shapes); else every block
is stepped. ``plan.notes`` says which was done, and memory is left out where it did not grow.

Opt-in (``tx.ranks(..., sample_blocks=True)``). The comms and the parts that add up (parameters,
gradients, optimizer state) are exact for blocks placed alike; the peaks are an estimate that gave the same memory as stepping every block under FSDP2,
torchtitan's last-block-unsharded FSDP2 and the torchtitan-style plan on a 9-layer Llama, on a
14-layer one whose forward peak moves from the first block to after the last
(`tests/test_ranks.py`), and on the Llama-3-70B architecture over dp 8 x tp 8 (`bench/ranks.py`).
"""

from __future__ import annotations

import re
from typing import Any

from torch import nn

from .shards import Shards
from .step import Measured

__all__ = ["MIN_BLOCKS", "SMALL", "cut", "extend", "grows", "odd_block", "repeated_stack"]

MIN_BLOCKS = 8  # below this, stepping every block costs little
SMALL = 4  # the steps run on SMALL and SMALL + 1 blocks: a first, middles and a last (3 and 4 were not linear yet)


def _signature(block: nn.Module) -> tuple[Any, ...]:
    tensors = [*block.named_parameters(), *block.named_buffers()]
    return (type(block), tuple((n, tuple(t.shape), t.dtype, t.requires_grad) for n, t in tensors))


def repeated_stack(model: nn.Module) -> tuple[str, int] | None:
    """The path and length of the longest ModuleList of at least `MIN_BLOCKS` blocks of one class
    with the same parameters, or None."""
    best: tuple[str, int] | None = None
    for path, mod in model.named_modules():
        if not isinstance(mod, nn.ModuleList) or len(mod) < MIN_BLOCKS:
            continue
        sig = _signature(mod[0])
        if all(_signature(b) == sig for b in mod) and (best is None or len(mod) > best[1]):
            best = (path, len(mod))
    return best


def _fsdp_settings(module: nn.Module) -> tuple[Any, ...]:
    """What FSDP2 was told about this module beyond its placements: whether it reshards after
    forward (torchtitan keeps the last block unsharded), its precision and offload policies."""
    get_state = getattr(module, "_get_fsdp_state", None)
    group = getattr(get_state(), "_fsdp_param_group", None) if callable(get_state) else None
    if group is None:
        return ()
    return (
        group.post_forward_mesh_info is None,
        repr(getattr(group, "mp_policy", None)),
        repr(getattr(group, "offload_policy", None)),
    )


def _placed(sharded: nn.Module, shards: dict[str, Shards], head: str) -> tuple[Any, ...]:
    """One sharded block as the step sees it: per submodule, its class, the number of its forward
    hooks (parallelize_module's input and output layouts, FSDP's), its FSDP settings, and each of
    its tensors' placements and local shapes on every rank."""
    out = []
    for rel, mod in sharded.get_submodule(head).named_modules():
        sh = shards.get(f"{head}.{rel}" if rel else head)
        tensors: tuple[Any, ...] = ()
        if sh is not None:
            tensors = tuple(
                (n, sh.placements[n], tuple(sorted(sh.local_shapes[n].items())))
                for n in sorted(sh.placements)
            )
        hooks = (len(mod._forward_pre_hooks), len(mod._forward_hooks))
        out.append((rel, type(mod).__name__, hooks, _fsdp_settings(mod), tensors))
    return tuple(out)


def odd_block(
    full: tuple[nn.Module, dict[str, Shards]],
    cut: tuple[nn.Module, dict[str, Shards]],
    path: str,
    n: int,
    keep: int,
) -> int | None:
    """The first block of the whole stack (`full`: the sharded model and its shards) that the
    steps on the `cut` copy of `keep` blocks do not stand for, or None: the middle blocks must be
    placed alike (`_placed`), and the whole stack's first, second and last blocks as the cut
    copy's first, second and last (its last may differ from the middle, as torchtitan's, which
    does not reshard after forward, as long as parallelize treats the cut copy's last the same)."""
    head = f"{path}." if path else ""

    def whole(i: int) -> tuple[Any, ...]:
        return _placed(*full, f"{head}{i}")

    middle = whole(1)
    for i in range(2, n - 1):
        if whole(i) != middle:
            return i
    for i, j in ((0, 0), (1, 1), (n - 1, keep - 1)):
        if whole(i) != _placed(*cut, f"{head}{j}"):
            return i
    return None


def cut(model: nn.Module, path: str, keep: int) -> None:
    """Keep the first `keep` blocks of the ModuleList at `path` (on the dry run's own copy)."""
    stack = model.get_submodule(path)
    assert isinstance(stack, nn.ModuleList)
    del stack[keep:]


def grows(two: Measured, three: Measured) -> bool:
    """Whether the bigger run needed at least as much of every part as the smaller one: if not,
    memory does not grow block by block here and cannot be extended."""
    parts = ("params", "grads", "optimizer", "activations")
    return all(getattr(three, p) >= getattr(two, p) for p in parts) and three.peak >= two.peak


def extend(two: Measured, three: Measured, path: str, n: int) -> Measured:
    """The step of `n` blocks from the steps of `SMALL` and `SMALL` + 1 of them."""
    extra = n - SMALL - 1

    def grow(a: int, b: int) -> int:
        return b + extra * (b - a)

    prefix = re.compile(rf"^{re.escape(path)}\.(\d+)(\.|$)" if path else r"^(\d+)(\.|$)")
    head = f"{path}." if path else ""

    def split(comms: dict[Any, tuple[int, int]]) -> tuple[dict[Any, Any], dict[Any, list[int]]]:
        """Comms outside the stack by key, and inside it by (block, rest of path, phase, op, dim)."""
        outside: dict[Any, Any] = {}
        inside: dict[Any, list[int]] = {}
        for (where, phase, op, dim), (count, nbytes) in comms.items():
            m = prefix.match(where)
            if m is None:
                outside[(where, phase, op, dim)] = (count, nbytes)
            else:
                inside[(int(m.group(1)), where[m.end(1) :], phase, op, dim)] = [count, nbytes]
        return outside, inside

    outside, big = split(three.comms)
    _, small = split(two.comms)
    # one more block adds, summed over the stack, what the bigger run sent beyond the smaller one
    # (a block's backward also runs its neighbour's FSDP collectives, so per-block figures shift
    # between runs; their sums do not): every extra middle block gets that increment
    added: dict[Any, list[int]] = {}
    for runs, sign in ((big, 1), (small, -1)):
        for (_, rest, phase, op, dim), (count, nbytes) in runs.items():
            acc = added.setdefault((rest, phase, op, dim), [0, 0])
            acc[0] += sign * count
            acc[1] += sign * nbytes
    last = SMALL  # the bigger run's last block
    comms: dict[tuple[str, str, str, str], tuple[int, int]] = dict(outside)
    for (i, rest, phase, op, dim), (count, nbytes) in big.items():
        j = n - 1 if i == last else i
        comms[(f"{head}{j}{rest}", phase, op, dim)] = (count, nbytes)
    for (rest, phase, op, dim), (count, nbytes) in added.items():
        if count > 0:
            for j in range(last, n - 1):
                comms[(f"{head}{j}{rest}", phase, op, dim)] = (count, nbytes)

    # the forward's peak is the highest of its peaks before, in and after its first, middle and
    # last blocks, each grown by itself: they grow at different rates (on the 70B over dp 8 x tp 8
    # the peak was in the first block, among FSDP2's all-gathered weights, in the 4- and 5-block
    # runs, which grows by a block's weight shard per block; past ~32 blocks it is after the last,
    # which also grows by a block's saved activations), so the phase's own peak does not grow
    # linearly (the forward's activations came out 25% under on the 70B). The backward's and the
    # step's peaks are grown whole (`StepMeter.spot_peaks`). A peak that did not grow (the
    # optimizer step's starts from whatever the backward left alive, which moves between runs) is
    # taken as it is, not extended downwards
    def peaks(m: Measured) -> dict[tuple[str, str], int]:
        whole = {(p, ""): b for p, b in m.phase_peaks.items() if p != "forward" or not m.spot_peaks}
        return {**whole, **m.spot_peaks}

    phases: dict[str, int] = {}
    before = peaks(two)
    for (p, role), b in peaks(three).items():
        phases[p] = max(phases.get(p, 0), grow(min(before.get((p, role), b), b), b))
    # the forward's activations are its peak above what was alive as it began (weights, inputs)
    base = grow(*(m.phase_peaks.get("forward", 0) - m.activations for m in (two, three)))
    activations = (
        phases["forward"] - base
        if "forward" in phases
        else grow(two.activations, three.activations)
    )
    return Measured(
        comms,
        grow(two.params, three.params),
        grow(two.buffers, three.buffers),
        grow(two.grads, three.grads),
        grow(two.optimizer, three.optimizer),
        activations,
        max(phases.values(), default=grow(two.peak, three.peak)),
        phases,
        within=_within(three.within, prefix, head, n),
    )


def _within(
    within: dict[str, tuple[str, ...]], prefix: re.Pattern[str], head: str, n: int
) -> dict[str, tuple[str, ...]]:
    """Every block's modules' enclosing modules, from those of one block (blocks placed alike)."""
    out: dict[str, tuple[str, ...]] = {}

    def moved(path: str, i: int, j: int) -> str:
        m = prefix.match(path)
        return path if m is None or int(m.group(1)) != i else f"{head}{j}{path[m.end(1) :]}"

    for path, outer in within.items():
        m = prefix.match(path)
        if m is None:
            out[path] = outer
            continue
        i = int(m.group(1))
        for j in range(n):
            out.setdefault(moved(path, i, j), tuple(moved(p, i, j) for p in outer))
    return out
