"""The training step a plan stands for, run the same way on one rank of the dry run (fake tensors)
and on every rank of `verify` (real tensors): forward on the example inputs, a loss (the output's
``loss`` when it has one, else the sum of its floating tensors), backward, and an AdamW step,
watched by `StepMeter`. Returns plain data.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor
from torch.utils import _pytree as pytree

from .meta import innermost_module
from .meter import StepMeter

__all__ = ["Measured", "StepError", "group_labels", "run_step"]


class StepError(RuntimeError):
    """The sharded model's step failed; the message names the module and phase."""


@dataclass(frozen=True, slots=True)
class Measured:
    comms: dict[
        tuple[str, str, str, str], tuple[int, int]
    ]  # (path, phase, op, dim) -> (count, bytes)
    params: int
    buffers: int
    grads: int
    optimizer: int
    activations: int  # the highest live bytes above the weights and inputs during forward
    peak: int
    phase_peaks: dict[str, int]  # "forward" / "backward" / "step" -> the highest live bytes then
    # with `run_step(stack=...)`: ("forward", "none" / "first" / "middle" / "last") -> the highest
    # live bytes while the forward was in or after such a block of the stack (`StepMeter.spot_peaks`)
    spot_peaks: dict[tuple[str, str], int] = field(default_factory=dict)
    # path -> the modules whose forward was running when it first ran (a count's enclosing modules)
    within: dict[str, tuple[str, ...]] = field(default_factory=dict)


def group_labels(mesh: DeviceMesh) -> dict[str, str]:
    """Process group name -> the mesh dimension(s) it spans: "dp", "tp", or "dp,tp" for the world."""
    names = tuple(mesh.mesh_dim_names or ())
    out: dict[str, str] = {}
    for i, name in enumerate(names):
        out[mesh.get_group(i).group_name] = name
    world = torch.distributed.group.WORLD
    if world is not None:
        out.setdefault(world.group_name, ",".join(names))
    return out


def _loss(out: Any) -> torch.Tensor:
    loss = getattr(out, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    leaves = [
        t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()
    ]
    if isinstance(out, Mapping):  # a transformers ModelOutput is a dict that pytree may not open
        leaves += [t for t in out.values() if isinstance(t, torch.Tensor) and t.is_floating_point()]
    total = None
    for t in {id(t): t for t in leaves}.values():
        if not t.requires_grad:
            continue
        part = (t.to_local() if isinstance(t, DTensor) else t).float().sum()
        total = part if total is None else total + part
    if total is None:
        raise StepError(
            "the model's output has no floating tensor that needs a gradient: no training step to plan."
        )
    return total


def _storage_bytes(tensors: Sequence[torch.Tensor]) -> int:
    seen: dict[int, int] = {}
    for t in tensors:
        local = t._local_tensor if isinstance(t, DTensor) else t
        st = local.untyped_storage()
        seen[st._cdata] = st.nbytes()
    return sum(seen.values())


def run_step(
    model: nn.Module,
    mesh: DeviceMesh,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    collect: bool = False,
    stack: tuple[str, int] | None = None,
) -> Measured:
    """The step under a `StepMeter` (given `stack`, a ModuleList's path and length, it also keeps
    the peaks per role of its blocks). ``collect=True`` runs the garbage collector between phases, so
    that what reference cycles hold is freed at the same point in every run (the sampled blocks of
    `blocks` compare two runs; a collection costs ~0.7 s in a process holding transformers)."""
    params = [p for p in model.parameters()]
    trainable = [p for p in params if p.requires_grad]
    buffers = list(model.buffers())
    inputs = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    meter = StepMeter(model, group_labels(mesh), stack)
    optimizer = torch.optim.AdamW(trainable, lr=1e-3) if trainable else None
    p_bytes, b_bytes = _storage_bytes(params), _storage_bytes(buffers)
    with meter:
        meter.track([*params, *buffers, *inputs])
        base = meter.now
        try:
            out = model(*args, **kwargs)
            activations = meter.peak - base
            loss = _loss(out)
            del out
            if collect:
                gc.collect()
            meter.phase = "backward"
            loss.backward()
            del loss
        except StepError:
            raise
        except Exception as exc:
            raise _failed(exc, meter, model) from exc
        grads = _storage_bytes([p.grad for p in trainable if p.grad is not None])
        if collect:
            gc.collect()
        meter.phase = "step"
        state = 0
        if optimizer is not None:
            try:
                optimizer.step()
            except Exception as exc:
                raise _failed(exc, meter, model) from exc
            state = _storage_bytes(
                [
                    v
                    for s in optimizer.state.values()
                    for v in s.values()
                    if isinstance(v, torch.Tensor)
                ]
            )
        peak = meter.peak
    comms = {k: (v[0], v[1]) for k, v in meter.comms.items()}
    return Measured(
        comms,
        p_bytes,
        b_bytes,
        grads,
        state,
        activations,
        peak,
        dict(meter.phase_peaks),
        dict(meter.spot_peaks),
        dict(meter.where.within),
    )


def _failed(exc: BaseException, meter: StepMeter, model: nn.Module) -> StepError:
    if meter.failed_at is not None:
        where, phase = meter.failed_at
    else:  # raised by Python code, not an op: the innermost module a frame was running
        paths = {id(m): p for p, m in model.named_modules(remove_duplicate=False)}
        where, phase = innermost_module(exc, paths) or "", meter.current_phase()
    place = "the root module" if where == "" else f"module {where!r}"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return StepError(
        f"the sharded model's {phase} failed in {place}: {type(exc).__name__}: {first}"
    )
