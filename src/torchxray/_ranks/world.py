"""A fake process group for the dry run, set up and torn down so that torch.distributed is left as
found: a process group the user had stays theirs (and stays registered by name for the functional
collectives), and none is left behind when there was none, also when the dry run fails; DTensor's
sharding caches are emptied on the way in and out (`warm.forget_meshes`).

torch keeps its groups in ``distributed_c10d``'s module globals (``_world``, whose maps are the
module-level ``_pg_map``, ``_pg_names``, ...); while the dry run runs, a fresh ``_World`` with
emptied maps stands in for the user's, and the user's comes back, maps refilled, in ``finally``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

from .warm import forget_meshes

__all__ = ["check_mesh", "fake_world"]


def check_mesh(mesh: Mapping[str, int], world_size: int | None) -> dict[str, int]:
    """The mesh as ``{dim name: size}``, or a ValueError saying what is wrong with it."""
    if not isinstance(mesh, Mapping) or not mesh:
        raise ValueError(
            f"mesh must be a dict of mesh dimension names to sizes, e.g. {{'dp': 2, 'tp': 2}}, not {mesh!r}."
        )
    out: dict[str, int] = {}
    for name, size in mesh.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"mesh dimension name {name!r} must be a name such as 'dp' or 'tp'.")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(
                f"mesh dimension {name!r} has size {size!r}: give a positive whole number of ranks."
            )
        out[name] = size
    total = 1
    for size in out.values():
        total *= size
    if world_size is not None and total != world_size:
        shape = " x ".join(f"{n}={s}" for n, s in out.items())
        raise ValueError(
            f"mesh {shape} has {total} ranks but world_size is {world_size}: "
            "make the sizes of the mesh dimensions multiply to the world size."
        )
    return out


_MAPS = (
    "_pg_map",
    "_pg_names",
    "_pg_group_ranks",
    "_pg_backend_config",
    "_tags_to_pg",
    "_pg_to_tag",
)


def _set_aside() -> dict[str, Any]:
    """The user's groups, taken out of c10d's globals (which are left empty)."""
    saved: dict[str, Any] = {
        "_world": c10d._world,
        "_group_count": getattr(c10d, "_group_count", 0),
    }
    for name in _MAPS:
        table = getattr(c10d, name, None)
        if isinstance(table, dict):
            saved[name] = dict(table)
            table.clear()
    c10d._group_count = 0
    return saved


def _put_back(saved: dict[str, Any]) -> None:
    for name in _MAPS:
        table = getattr(c10d, name, None)
        if isinstance(table, dict) and name in saved:
            table.clear()
            table.update(saved[name])
    c10d._group_count = saved["_group_count"]
    c10d._world = saved["_world"]


@contextmanager
def fake_world(mesh: Mapping[str, int]) -> Iterator[DeviceMesh]:
    """Rank 0 of a fake process group of ``prod(mesh)`` ranks and its DeviceMesh (built outside any
    FakeTensorMode, as DeviceMesh needs real rank tensors)."""
    # Importing registers the "fake" backend; torch's own fake PG, the one torchtitan's dry run uses.
    from torch.testing._internal.distributed.fake_pg import FakeStore

    world_size = 1
    for size in mesh.values():
        world_size *= size
    user_groups = (
        {name: pg for pg, name in c10d._world.pg_names.items()} if dist.is_initialized() else {}
    )
    if user_groups:  # their names must not clash with ours while ours live
        c10d._unregister_all_process_groups()
    saved = _set_aside()
    c10d._world = c10d._World()
    forget_meshes()
    try:
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
        yield init_device_mesh("cpu", tuple(mesh.values()), mesh_dim_names=tuple(mesh))
    finally:
        try:
            if dist.is_initialized():
                dist.destroy_process_group()
        finally:
            forget_meshes()
            _put_back(saved)
            c10d._unregister_all_process_groups()
            for name, pg in user_groups.items():
                c10d._register_process_group(name, pg)
