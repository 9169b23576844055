"""What every rank holds of every parameter and buffer: the placements of rank 0's DTensors (the
dry run's own rank) and, from them, each rank's local shape by torch's own rule
(`torch.distributed.tensor._utils._compute_local_shape_and_global_offset`, which gives uneven
shards as torch makes them: 10 rows over 4 ranks are 3, 3, 3, 1). A tensor that is not a DTensor
is whole on every rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor._utils import _compute_local_shape_and_global_offset

__all__ = ["Shards", "fsdp_params", "module_shards", "rank_coordinates"]

Shape = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Shards:
    placements: dict[str, str]  # tensor name -> "(Shard(dim=0), Replicate())"
    mesh_dims: dict[str, tuple[str, ...]]  # tensor name -> the mesh dimensions it is placed on
    global_shapes: dict[str, Shape]
    local_shapes: dict[str, dict[int, Shape]]  # tensor name -> {rank: shape}
    local_bytes: dict[str, dict[int, int]]  # tensor name -> {rank: bytes}
    buffer_names: frozenset[str]
    trainable: frozenset[str]
    # parameters FSDP2 shards: every rank's storage is the largest shard's (FSDP pads the others),
    # and so is its gradient's; the optimizer's state has the shard's own size
    padded: frozenset[str] = frozenset()


def rank_coordinates(mesh: DeviceMesh, world_size: int) -> dict[int, list[int]] | None:
    """Each global rank's coordinate on ``mesh`` (rank 0's mesh or submesh; every rank has its own
    submesh of the same layout), or None where it cannot be told (a flattened dimension)."""
    root = mesh._get_root_mesh()
    root_ranks = root.mesh.tolist() if root.mesh.ndim else [root.mesh.item()]
    flat = torch.tensor(root_ranks).flatten().tolist()
    if sorted(flat) != list(range(world_size)):
        return None
    root_coords: dict[int, list[int]] = {}
    grid = torch.tensor(root_ranks)
    for r in range(world_size):
        root_coords[r] = [int(i) for i in (grid == r).nonzero()[0].tolist()]
    if root is mesh:
        return root_coords
    names = mesh.mesh_dim_names or ()
    root_names = root.mesh_dim_names or ()
    if not names or any(n not in root_names for n in names):
        return None
    dims = [root_names.index(n) for n in names]
    return {r: [c[d] for d in dims] for r, c in root_coords.items()}


def _itemsize(t: torch.Tensor) -> int:
    return t.element_size()


# 80 decoder layers share a handful of (shape, mesh, coordinate, placements): torch's rule costs
# about a millisecond a call, and 64 ranks x 723 tensors of a 70B model made it the dry run's
# largest cost
_LOCAL: dict[tuple[Any, ...], Shape] = {}


def _local_shape(
    shape: Shape, mesh_shape: Shape, coord: list[int], placements: tuple[Any, ...]
) -> Shape:
    key = (shape, mesh_shape, tuple(coord), placements)
    hit = _LOCAL.get(key)
    if hit is None:
        local = _compute_local_shape_and_global_offset(
            shape, mesh_shape, coord, placements, skip_offset=True
        )[0]
        hit = _LOCAL[key] = tuple(int(s) for s in local)
        if len(_LOCAL) > 100_000:
            _LOCAL.clear()
    return hit


def fsdp_params(model: nn.Module) -> set[int]:
    """The ids of the parameters FSDP2 manages in `model` (its sharded DTensors)."""
    out: set[int] = set()
    for mod in model.modules():
        get_state = getattr(mod, "_get_fsdp_state", None)
        group = getattr(get_state(), "_fsdp_param_group", None) if callable(get_state) else None
        for fsdp_param in getattr(group, "fsdp_params", None) or ():
            out.add(id(fsdp_param.sharded_param))
    return out


def module_shards(
    module: nn.Module,
    world_size: int,
    coords_cache: dict[int, Any] | None = None,
    fsdp: set[int] | None = None,
) -> tuple[Shards, list[str]]:
    """The module's own parameters and buffers on every rank, and notes on what could not be told."""
    placements: dict[str, str] = {}
    mesh_dims: dict[str, tuple[str, ...]] = {}
    global_shapes: dict[str, Shape] = {}
    local_shapes: dict[str, dict[int, Shape]] = {}
    local_bytes: dict[str, dict[int, int]] = {}
    notes: list[str] = []
    own = [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]
    coords_cache = {} if coords_cache is None else coords_cache  # mesh id -> rank coordinates
    for name, t in own:
        if t is None:
            continue
        shape = tuple(int(s) for s in t.shape)
        global_shapes[name] = shape
        if isinstance(t, DTensor):
            mesh = t.device_mesh
            placements[name] = str(tuple(t.placements))
            mesh_dims[name] = tuple(mesh.mesh_dim_names or ())
            if id(mesh) not in coords_cache:
                coords_cache[id(mesh)] = rank_coordinates(mesh, world_size)
            coords = coords_cache[id(mesh)]
            if coords is None:
                notes.append(
                    f"{name}: the local shapes of ranks other than 0 on mesh {mesh_dims[name]} cannot be told"
                )
                coords = {0: [int(c) for c in (mesh.get_coordinate() or [])]}
            mesh_shape, placed = tuple(mesh.shape), tuple(t.placements)
            per_rank = {r: _local_shape(shape, mesh_shape, c, placed) for r, c in coords.items()}
        else:
            placements[name] = "whole on every rank (not a DTensor)"
            mesh_dims[name] = ()
            per_rank = {r: shape for r in range(world_size)}
        local_shapes[name] = per_rank
        size = _itemsize(t)
        local_bytes[name] = {r: size * _numel(s) for r, s in per_rank.items()}
    buffers = frozenset(n for n, _ in module.named_buffers(recurse=False))
    trainable = frozenset(n for n, p in module.named_parameters(recurse=False) if p.requires_grad)
    padded = frozenset(
        n for n, p in module.named_parameters(recurse=False) if id(p) in (fsdp or ())
    )
    shards = Shards(
        placements, mesh_dims, global_shapes, local_shapes, local_bytes, buffers, trainable, padded
    )
    return shards, notes


def _numel(shape: Shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
