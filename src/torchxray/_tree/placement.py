"""Where each module's tensors live, for `Node.placement` and `Node.bytes_local`.

Plain modules read "cpu", "cuda:0" (several devices: "cpu; cuda:0"). Weights that accelerate
offloads (an `AlignDevicesHook` with ``offload=True``, put there by ``dispatch_model`` or
``device_map=...``) sit on the meta device between forwards; they read "offloaded: cpu" or
"offloaded: disk", with the device they run on ("offloaded: disk (runs on cuda:0)"). DTensor
parameters read their placements and mesh ("DTensor Shard(0) on mesh (4,)"), followed by the
FSDP2 unit (`fully_shard`) that gathers them, when there is one. A module without tensors shows
its parent's placement. A tensor subclass that stores its data in other tensors (torchao's
quantized weights) reads its device and class ("cpu (Int8Tensor)"). `bytes_local` is what this
process stores: a DTensor counts its local shard, a quantized weight its inner tensors
(`_tensors.stored_bytes`), every other tensor its whole size; `bytes_total` stays the logical
figure (shape times dtype), the one parameter counts go with.

The walk's lazy pass hands over only what is unusual (modules with an accelerate hook, tensors
that are not plain Tensors or Parameters), so a plain model pays one join per distinct device set.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from .._tensors import is_wrapper, logical_bytes, stored_bytes

__all__ = ["Placements", "tensor_place"]

_SPECIAL = ("offloaded", "DTensor")


def _dtensor_class() -> Any:
    mod = sys.modules.get("torch.distributed.tensor")  # no DTensor without it being imported
    return getattr(mod, "DTensor", None) if mod is not None else None


def _fsdp_class() -> Any:
    mod = sys.modules.get("torch.distributed.fsdp")
    return getattr(mod, "FSDPModule", None) if mod is not None else None


def _placement_text(p: Any) -> str:
    dim = getattr(p, "dim", None)
    if type(p).__name__ in ("Shard", "_StridedShard") and isinstance(dim, int):
        return f"Shard({dim})"
    return str(p)


def dtensor_text(t: Any) -> str:
    mesh = tuple(t.device_mesh.shape)
    return f"DTensor {', '.join(map(_placement_text, t.placements))} on mesh {mesh}"


def _where(weights_map: Any, name: str, folders: dict[int, bool]) -> str:
    """ "cpu" or "disk" for one offloaded tensor: accelerate's loader keeps CPU-offloaded tensors
    in its `state_dict` and disk-offloaded ones in its `index` (files under `save_folder`)."""
    prefix = ""
    if hasattr(weights_map, "prefix") and hasattr(weights_map, "dataset"):  # PrefixedDataset
        prefix, weights_map = weights_map.prefix, weights_map.dataset
    key = prefix + name
    state = getattr(weights_map, "state_dict", None)
    index = getattr(weights_map, "index", None)
    if isinstance(index, dict) and key in index and not (isinstance(state, dict) and key in state):
        ok = folders.get(id(weights_map))
        if ok is None:
            folder = getattr(weights_map, "save_folder", None)
            ok = folders[id(weights_map)] = folder is None or os.path.isdir(folder)
        return "disk" if ok else "disk, folder missing"
    return "cpu"


def tensor_place(module: Any, hooks: Sequence[Any], folders: dict[int, bool]) -> dict[int, str]:
    """{id(tensor): text} for the module's tensors that its offloading hooks hold back."""
    out: dict[int, str] = {}
    for hook in hooks:
        if getattr(hook, "offload", False) is not True:
            continue
        device = getattr(hook, "execution_device", None)
        runs = f" (runs on {device if not isinstance(device, int) else f'cuda:{device}'})"
        owners = (
            module.named_modules() if getattr(hook, "place_submodules", False) else [("", module)]
        )
        wm = getattr(hook, "weights_map", None)
        for prefix, owner in owners:
            groups = [owner._parameters]
            if getattr(hook, "offload_buffers", False):
                groups.append(owner._buffers)
            for group in groups:
                for name, t in group.items():
                    if t is not None and t.is_meta:
                        full = f"{prefix}.{name}" if prefix else name
                        out[id(t)] = f"offloaded: {_where(wm, full, folders)}{runs}"
    return out


class Placements:
    """Fills `placement` and `bytes_local` for every module from the lazy pass's findings."""

    def __init__(
        self,
        modules: Sequence[Any],
        parents: Sequence[int],
        hf: Sequence[int],
        odd: Sequence[tuple[int, Any]],
    ) -> None:
        self.modules, self.parents, self.hf, self.odd = modules, parents, hf, odd

    def run(
        self, devices: Sequence[tuple[str, ...]], bytes_total: list[int]
    ) -> tuple[list[str], list[int]]:
        parents = self.parents
        joined: dict[int, str] = {}
        place: list[str] = []
        append = place.append
        for i, devs in enumerate(devices):  # the usual case: the subtree's devices
            text = joined.get(id(devs))  # device tuples are interned by the lazy pass
            if text is None:
                text = joined[id(devs)] = "; ".join(devs)
            # Pre-order: a module without tensors takes its parent's, already final.
            append(text if text or not i else place[parents[i]])
        special = self._special() if self.hf or self.odd else {}
        fsdp = _fsdp_class()
        if fsdp is not None and not any(issubclass(c, fsdp) for c in set(map(type, self.modules))):
            fsdp = None  # imported (accelerate does), yet no module of this model is sharded
        if not special and fsdp is None:
            return place, bytes_total
        local = list(bytes_total)
        if special:
            self._mixed(special, place, local)
        if fsdp is not None:
            self._fsdp_units(fsdp, place)
        for i in range(1, len(place)):
            if not devices[i]:
                place[i] = place[parents[i]]
        return place, local

    def _special(self) -> dict[int, tuple[str, int]]:
        """{id(tensor): (text, bytes this rank holds less)} for DTensors and offloaded tensors."""
        out: dict[int, tuple[str, int]] = {}
        dtensor = _dtensor_class()
        for _, t in self.odd:
            if dtensor is not None and isinstance(t, dtensor):
                try:
                    less = (t.numel() - t.to_local().numel()) * t.element_size()
                except Exception:
                    less = 0
                out[id(t)] = (dtensor_text(t), less)
            elif is_wrapper(t):
                # A quantized weight (torchao) stores less than its shape and dtype say.
                where = "cpu" if t.is_cpu else str(t.device)
                out[id(t)] = (f"{where} ({type(t).__name__})", logical_bytes(t) - stored_bytes(t))
        folders: dict[int, bool] = {}
        for i in self.hf:
            m = self.modules[i]
            hook = m.__dict__.get("_hf_hook")
            hooks = list(getattr(hook, "hooks", None) or [hook])
            for tid, text in tensor_place(m, hooks, folders).items():
                out[tid] = (text, 0)
        return out

    def _mixed(
        self, special: dict[int, tuple[str, int]], place: list[str], local: list[int]
    ) -> None:
        """Subtrees holding offloaded or DTensor tensors: each tensor by its text (an offloaded
        weight's meta device and a DTensor's mesh device are said by the text), the rest by
        device; summed up the canonical tree."""
        n, parents = len(self.modules), self.parents
        sets: list[set[str]] = []
        less = [0] * n
        marked = [False] * n
        for i, m in enumerate(self.modules):
            own: set[str] = set()
            for group in (m._parameters, m._buffers):
                for t in group.values():
                    if t is None:
                        continue
                    hit = special.get(id(t))
                    if hit is None:
                        own.add("cpu" if t.is_cpu else str(t.device))
                    else:
                        own.add(hit[0])
                        less[i] += hit[1]
                        marked[i] = True
            sets.append(own)
        for i in range(n - 1, 0, -1):  # pre-order: children after their parent
            j = parents[i]
            sets[j] |= sets[i]
            less[j] += less[i]
            marked[j] = marked[j] or marked[i]
        for i in range(n):
            if marked[i]:
                place[i] = "; ".join(sorted(sets[i], key=lambda s: (s.startswith(_SPECIAL), s)))
                local[i] -= less[i]

    def _fsdp_units(self, fsdp: type, place: list[str]) -> None:
        units = [-1] * len(self.modules)  # index of the innermost fully_shard module around
        texts: dict[int, str] = {}
        for i, m in enumerate(self.modules):
            p = self.parents[i]
            if isinstance(m, fsdp):
                units[i] = i
                path = self._path(i)
                texts[i] = f"; FSDP unit {path!r}" if path else "; FSDP unit (root)"
            elif p >= 0:
                units[i] = units[p]
            if units[i] >= 0 and place[i]:
                place[i] += texts[units[i]]

    def _path(self, i: int) -> str:
        names = []
        while self.parents[i] >= 0:
            p = self.parents[i]
            m = self.modules[i]
            names.append(next((k for k, c in self.modules[p]._modules.items() if c is m), "?"))
            i = p
        return ".".join(reversed(names))
