"""Totals and signatures for the walk's lazy pass: what each tensor costs, shared tensors counted
once per subtree, quantized layers' packed weights, and structural signatures as short digests.
Work beyond a plain sum happens only when a model actually shares modules or tensors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch
import torch.nn as nn

# -- shared tensors ------------------------------------------------------------------------------


class TensorCost(NamedTuple):
    params: int
    trainable: int
    nbytes: int


def tensor_cost(t: Any, is_param: bool) -> TensorCost:
    """Counts of one tensor; uninitialised (lazy) or exotic tensors count as 0."""
    try:
        n = t.numel()
        nbytes = n * t.element_size()
    except Exception:
        return TensorCost(0, 0, 0)
    if not is_param:
        return TensorCost(0, 0, nbytes)
    return TensorCost(n, n if t.requires_grad else 0, nbytes)


def packed_tensors(module: Any) -> dict[str, Any]:
    """The weight and bias a quantized layer keeps packed in a C++ object (``_packed_params``)
    rather than as parameters, read through the layer's own ``_weight_bias()``: quantized Linear
    and Conv layers, static and dynamic. Empty for every other module (and for a dynamic Linear
    itself, whose packed params are a child module that holds them)."""
    packed = module.__dict__.get("_packed_params")
    unpack = getattr(module, "_weight_bias", None)
    if packed is None or isinstance(packed, nn.Module) or not callable(unpack):
        return {}
    try:
        weight, bias = unpack()
    except Exception:  # an unpack torch cannot do here: counted as nothing, as before
        return {}
    pairs = (("_packed_params.weight", weight), ("_packed_params.bias", bias))
    # Detached: a packed bias may still require grad, yet nothing trains it through the layer.
    return {k: t.detach() for k, t in pairs if isinstance(t, torch.Tensor)}


def _own_tensors(module: Any) -> list[tuple[Any, bool]]:
    out: list[tuple[Any, bool]] = []
    try:
        out += [(p, True) for p in module._parameters.values() if p is not None]
        out += [(b, False) for b in module._buffers.values() if b is not None]
    except AttributeError:
        pass
    out += [(t, True) for t in packed_tensors(module).values()]
    return out


def exact_totals(
    modules: Sequence[Any],
    parents: Sequence[int],
    edges: Sequence[Sequence[int]],
    sizes: Sequence[int],
    shared: Sequence[int],
) -> list[TensorCost]:
    """Subtree totals counting each tensor once, for models that share modules or tensors.

    `parents[i]`: canonical parent (-1 for the root); `edges[i]`: indices of module i's children
    (canonical and alias edges, so cycles are possible); `sizes[i]`: size of
    i's canonical (pre-order contiguous) subtree; `shared`: indices of modules reached by several
    paths. A tensor is "risky" when it is held by several slots or sits under a shared module;
    the rest are summed plainly, so set work stays proportional to the sharing.
    """
    n = len(modules)
    under_shared = bytearray(n)
    for i in shared:
        under_shared[i : i + sizes[i]] = b"\x01" * sizes[i]
    holders: dict[int, int] = {}
    own = [_own_tensors(m) for m in modules]
    keep_alive = [t for ts in own for t, _ in ts]  # ids stay unique while these live
    for t in keep_alive:
        holders[id(t)] = holders.get(id(t), 0) + 1
    cost: dict[int, TensorCost] = {}
    safe = [TensorCost(0, 0, 0)] * n
    risky_own: list[frozenset[int]] = [frozenset()] * n
    for i, ts in enumerate(own):
        p = tr = nb = 0
        risky: set[int] = set()
        for t, is_param in ts:
            c = tensor_cost(t, is_param)
            if under_shared[i] or holders[id(t)] > 1:
                risky.add(id(t))
                cost.setdefault(id(t), c)
            else:
                p, tr, nb = p + c.params, tr + c.trainable, nb + c.nbytes
        safe[i] = TensorCost(p, tr, nb)
        if risky:
            risky_own[i] = frozenset(risky)
    # Safe sums follow the canonical tree only (pre-order: a parent precedes its children).
    acc = [list(c) for c in safe]
    for i in range(n - 1, 0, -1):
        a, b = acc[i], acc[parents[i]]
        b[0] += a[0]
        b[1] += a[1]
        b[2] += a[2]
    risky_reach = dag_fold(n, edges, lambda i, kids: _union(risky_own[i], kids), frozenset[int]())
    out = []
    for i in range(n):
        p, tr, nb = acc[i]
        for tid in risky_reach[i]:
            c = cost[tid]
            p, tr, nb = p + c.params, tr + c.trainable, nb + c.nbytes
        out.append(TensorCost(p, tr, nb))
    return out


def _union(own: frozenset[int], kids: list[frozenset[int]]) -> frozenset[int]:
    # Reuse a child's set object when it already covers everything (the common chain case).
    result = own
    for k in kids:
        if not k or k is result or k <= result:
            continue
        result = k if not result or result <= k else result | k
    return result


def dag_fold(
    n: int, edges: Sequence[Sequence[int]], combine: Callable[[int, list[Any]], Any], on_cycle: Any
) -> list[Any]:
    """Bottom-up fold over the module DAG. Canonical children have larger pre-order indices, so a
    reverse sweep finds them done; alias edges may point anywhere (even at an ancestor: a cycle),
    so those are resolved by memoised recursion, with `on_cycle` standing in for a module that is
    still being computed."""
    done: list[Any] = [None] * n
    state = bytearray(n)  # 0 = todo, 1 = in progress, 2 = done
    for start in range(n - 1, -1, -1):
        if state[start]:
            continue
        # Iterative post-order DFS: deep models must not hit Python's recursion limit.
        state[start] = 1
        stack = [(start, 0)]
        while stack:
            i, k = stack[-1]
            kids = edges[i]
            while k < len(kids) and state[kids[k]]:
                k += 1
            if k < len(kids):
                stack[-1] = (i, k + 1)
                state[kids[k]] = 1
                stack.append((kids[k], 0))
                continue
            stack.pop()
            done[i] = combine(i, [done[j] if state[j] == 2 else on_cycle for j in kids])
            state[i] = 2
    return done


# -- signatures ----------------------------------------------------------------------------------


def digest_signatures(keys: dict[tuple[Any, ...], int], heads: Sequence[Any]) -> list[str]:
    """Turn interned signature keys into short stable hex digests (one hash per distinct
    structure, not per module). A key is (head id, child names, child ids), `heads[head id]` the
    class, extra_repr and own tensors; a child's id is always
    smaller than its parent's (-1 marks a reference cycle), so digests are built in id order."""
    by_id: list[tuple[Any, ...]] = [()] * len(keys)
    for key, sid in keys.items():
        by_id[sid] = key
    out: list[str] = []
    for head, names, sids in by_id:
        kids = ",".join(f"{k}={out[c] if c >= 0 else 'cycle'}" for k, c in zip(names, sids))
        text = f"{heads[head]!r}|{kids}"
        out.append(hashlib.blake2b(text.encode(), digest_size=8).hexdigest())
    return out


# dtype -> (name, itemsize), memoised: str(dtype) is slow enough to matter at 100k modules.
DTYPES: dict[torch.dtype, tuple[str, int]] = {}


def dtype_info(dtype: torch.dtype) -> tuple[str, int]:
    info = DTYPES.get(dtype)
    if info is None:
        info = DTYPES[dtype] = (str(dtype).removeprefix("torch."), dtype.itemsize)
    return info
