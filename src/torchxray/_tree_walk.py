"""The single traversal behind `tree.walk()`.

Speed matters here (a 100,000-module model must walk in about a second), hence one long loop with
locals instead of helper calls per module, direct reads of `_modules` / `_parameters` / `_buffers`,
and bottom-up work done only where it is needed: a leaf adds its counts to its parent as soon as it
is read, and the later reverse sweep visits modules that have children only. Leaves (most modules)
are kept as tuples of field values; `ModelTree` turns them into `Node`s when first looked at.
"""

from __future__ import annotations

from typing import Any

import torch

from ._tree_stats import (
    FACTS,
    callable_name,
    class_facts,
    dag_fold,
    digest_signatures,
    exact_totals,
    parametrization_names,
    placeholder,
    script_names,
)
from .tree import ALIASES, NODE_FIELDS, BufferInfo, HookInfo, Node

_HOOK_ATTRS = (
    ("forward_pre", "_forward_pre_hooks"),
    ("forward", "_forward_hooks"),
    ("backward_pre", "_backward_pre_hooks"),
    ("backward", "_backward_hooks"),
)
_MISSING = object()
SIZE = NODE_FIELDS.index("size")
PARAMS_TOTAL = NODE_FIELDS.index("params_total")  # then trainable_total, bytes_total
assert NODE_FIELDS[PARAMS_TOTAL : PARAMS_TOTAL + 3] == (
    "params_total",
    "trainable_total",
    "bytes_total",
)


def hook_infos(owner: Any, prefix: str = "") -> tuple[HookInfo, ...]:
    out = []
    for kind, attr in _HOOK_ATTRS:
        for key, fn in getattr(owner, prefix + attr, {}).items():
            out.append(HookInfo(kind, callable_name(fn), key))
    return tuple(out)


def _extra_repr(module: Any) -> str:
    try:
        text = module.extra_repr()
        return text if type(text) is str else str(text)
    except Exception as exc:
        return placeholder("extra_repr()", exc)


_DTYPES: dict[torch.dtype, tuple[str, int]] = {}


def _dtype_info(dtype: torch.dtype) -> tuple[str, int]:
    info = _DTYPES.get(dtype)
    if info is None:
        info = _DTYPES[dtype] = (str(dtype).removeprefix("torch."), dtype.itemsize)
    return info


def _device_str(t: Any) -> str:
    # str(t.device) costs ~200 ns; t.is_cpu ~40 ns and covers nearly every tensor.
    return "cpu" if t.is_cpu else str(t.device)


def _buffer_infos(module: Any, buffers: Any) -> tuple[BufferInfo, ...]:
    transient = getattr(module, "_non_persistent_buffers_set", ())
    out = []
    for name, b in buffers.items():
        if b is None:
            continue
        try:
            shape: tuple[int, ...] | None = tuple(b.shape)
        except Exception:
            shape = None
        dtype = _dtype_info(b.dtype)[0]
        out.append(BufferInfo(name, shape, dtype, _device_str(b), name not in transient))
    return tuple(out)


class Walker:
    """Collects one mutable node per distinct module, then finishes them bottom-up."""

    def __init__(self, builder: Any) -> None:
        self.builder = builder  # mutable twin of Node with the same slots
        self.nodes: list[Any] = []
        self.modules: list[Any] = []
        self.parents: list[int] = []
        # Per inner node (leaves need none of these, and most modules are leaves): child indices
        # (alias edges included), id of its (qualname, extra_repr, own tensors), child names.
        self.edges: dict[int, list[int]] = {}
        self.heads: dict[int, int] = {}
        self.head_ids: dict[tuple[Any, ...], int] = {}
        self.tsig_ids: dict[tuple[Any, ...], int] = {}  # own tensors (name, shape, dtype) -> id
        self.names: dict[int, tuple[str, ...]] = {}
        self.inner: list[int] = []  # indices of nodes that have children, pre-order
        self.index: dict[str, int] = {}
        self.aliases: dict[int, list[str]] = {}
        self.tensors: list[Any] = []  # every param/buffer seen (kept alive so ids stay unique)
        self.interned: dict[Any, Any] = {}  # devices/dtypes tuples, so equal ones are one object
        self.repr_memo: dict[Any, tuple[str, int]] = {}  # see ClassFacts.repr_keys
        self.keys: dict[tuple[Any, ...], int] = {}  # signature key -> id (see digest_signatures)
        self.leaf_sids: dict[int, int] = {}  # head id -> signature id of a leaf with that head
        self.sids: list[int] = []  # signature id per node (-1 until known)

    def run(self, model: Any) -> tuple[list[Any], list[str], dict[str, int], list[Any]]:
        """(records, digests, index, modules): a record is a finished Node for modules with
        children, and for leaves the tuple of Node field values with the signature as an id
        into digests (ModelTree builds those Nodes when they are first looked at)."""
        self.traverse(model)
        sig_keys = self.bottom_up()
        tsigs = list(self.tsig_ids)
        heads = [(q, er, tsigs[t] if t >= 0 else ()) for q, er, t in self.head_ids]
        digests = digest_signatures(sig_keys, heads)
        digests.append("cycle")  # signature id -1: a module inside a reference cycle
        nodes, sids = self.nodes, self.sids
        for i, paths in self.aliases.items():
            self._set_field(i, ALIASES, tuple(paths))
        for i in self.inner:
            b = nodes[i]
            b.signature = digests[sids[i]]
            b.__class__ = Node
        return nodes, digests, self.index, self.modules

    def _set_field(self, i: int, position: int, value: Any) -> None:
        r = self.nodes[i]
        if type(r) is tuple:
            self.nodes[i] = r[:position] + (value,) + r[position + 1 :]
        else:
            setattr(r, NODE_FIELDS[position], value)

    def _one(self, value: str) -> tuple[str, ...]:
        one = self.interned.get(value)
        if one is None:
            one = self.interned[value] = (value,)
        return one  # type: ignore[no-any-return]

    def _set(self, items: set[str]) -> tuple[str, ...]:
        # Interned so that equal sets are the same object and merging can test `is` first.
        merged = tuple(sorted(items))
        if len(merged) == 1:
            return self._one(merged[0])
        return self.interned.setdefault(("set", merged), merged)  # type: ignore[no-any-return]

    def traverse(self, model: Any) -> None:
        nodes, index, edges, parents = self.nodes, self.index, self.edges, self.parents
        heads, names_of, tensors, interned = self.heads, self.names, self.tensors, self.interned
        leaf_sids, keys, nodes_append = self.leaf_sids, self.keys, nodes.append
        sids_append = self.sids.append
        Builder, facts_get, repr_memo = self.builder, FACTS.get, self.repr_memo
        head_ids, tsig_ids = self.head_ids, self.tsig_ids
        modules_append, parents_append = self.modules.append, parents.append
        seen: dict[int, int] = {}
        stack: list[tuple[Any, str, str, int, int, str | None]] = [(model, "", "", -1, 0, None)]
        pop, push = stack.pop, stack.append
        while stack:
            m, path, name, parent, depth, ppath = pop()
            mid = id(m)
            i = seen.get(mid)
            if i is not None:  # reached again through another path: an alias, not a new node
                self.aliases.setdefault(i, []).append(path)
                index[path] = i
                edges[parent].append(i)
                continue
            i = len(nodes)
            seen[mid] = i
            index[path] = i
            if parent >= 0:
                edges[parent].append(i)
            modules_append(m)
            parents_append(parent)
            try:
                cls = type(m)
                cname, qualname, is_custom, container, wrap_attr, parametrized, script, rkeys = (
                    facts_get(cls) or class_facts(cls)
                )
                mods = m._modules
                kids = [(k, c) for k, c in mods.items() if c is not None] if mods else None
                own = trainable = nbytes = 0
                exact = True
                devices: tuple[str, ...] = ()
                dtypes: tuple[str, ...] = ()
                tsig: Any = -1
                params, buffers = m._parameters, m._buffers
                if params or buffers:
                    tl = []
                    for group in (params, buffers) if buffers else (params,):
                        is_param = group is params
                        for k, t in group.items():
                            if t is None:
                                continue
                            tensors.append(t)
                            dtype, itemsize = _DTYPES.get(t.dtype) or _dtype_info(t.dtype)
                            try:
                                n = t.numel()
                                shape = t.shape
                            except Exception:  # UninitializedParameter (lazy modules)
                                n, shape, exact = 0, None, False
                            nbytes += n * itemsize
                            if is_param:
                                own += n
                                if t.requires_grad:
                                    trainable += n
                            dev = "cpu" if t.is_cpu else str(t.device)
                            if not devices:
                                devices = interned.get(dev) or self._one(dev)
                            elif dev not in devices:
                                devices = self._set({dev, *devices})
                            if not dtypes:
                                dtypes = interned.get(dtype) or self._one(dtype)
                            elif dtype not in dtypes:
                                dtypes = self._set({dtype, *dtypes})
                            tl.append((k, shape, dtype))
                    # Interned so the memo key and the signature head hash an int, not shapes.
                    tsig = tsig_ids.get(key := tuple(tl))
                    if tsig is None:
                        tsig = tsig_ids[key] = len(tsig_ids)
                if script:
                    cname, qualname, is_custom, container = script_names(m)
                if rkeys is None:
                    try:
                        er = m.extra_repr()
                        if type(er) is not str:
                            er = _extra_repr(m)
                    except Exception:
                        er = _extra_repr(m)
                    hid = head_ids.setdefault((qualname, er, tsig), len(head_ids))
                else:
                    d = m.__dict__
                    try:
                        vals = tuple([d.get(k, _MISSING) for k in rkeys])
                        # types too: 1 == 1.0 == True, yet Dropout(1) prints "p=1"
                        memo_key: Any = (cls, vals, tuple(map(type, vals)), tsig)
                        cached = repr_memo.get(memo_key)
                    except TypeError:  # an unhashable hyperparameter value
                        memo_key = cached = None
                    if cached is None:
                        er = _extra_repr(m)
                        hid = head_ids.setdefault((qualname, er, tsig), len(head_ids))
                        if memo_key is not None:
                            repr_memo[memo_key] = (er, hid)
                    else:
                        er, hid = cached
                hooks: tuple[HookInfo, ...] = ()
                if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks:
                    hooks = hook_infos(m)
                elif m._backward_pre_hooks:
                    hooks = hook_infos(m)
                if kids:
                    prefix = f"{path}." if path else ""
                    child_paths = tuple([prefix + k for k, _ in kids])
                    wraps = (
                        prefix + wrap_attr if wrap_attr is not None and wrap_attr in mods else None
                    )
                    sid = -1  # known once the children are
                else:
                    child_paths, wraps = (), None
                    leaf_sid = leaf_sids.get(hid)
                    if leaf_sid is None:
                        leaf_sid = leaf_sids[hid] = keys[(hid, (), ())] = len(keys)
                    sid = leaf_sid
                rec = (
                    path, name, cname, qualname, child_paths, (), ppath, depth,
                    own, own, trainable, nbytes,
                    _buffer_infos(m, buffers) if buffers else (),
                    devices, dtypes, bool(m.training), hooks,
                    "forward" in m.__dict__ and not script,  # jit sets forward per instance
                    is_custom, er, container, sid,  # signature id; digest set at the end
                    parametrization_names(mods) if parametrized else (),
                    wraps, i, 1, trainable, nbytes, exact,
                )  # fmt: skip
            except Exception as exc:  # a module too broken to inspect still gets a node
                kids, text = None, placeholder("inspection", exc)
                hid = head_ids.setdefault((cls.__qualname__, text, -1), len(head_ids))
                sid = leaf_sids[hid] = keys.setdefault((hid, (), ()), len(keys))
                rec = self._broken(m, path, name, ppath, depth, i, text, sid)
                own = trainable = nbytes = 0
                devices = dtypes = ()
                exact = False
            sids_append(sid)
            if kids:
                b = Builder(*rec)
                nodes_append(b)
                heads[i] = hid
                names_of[i] = tuple([k for k, _ in kids])
                edges[i] = []
                self.inner.append(i)
                d1 = depth + 1
                for (k, c), cp in zip(reversed(kids), reversed(child_paths)):
                    push((c, cp, k, i, d1, path))
                continue
            # A leaf is complete now: keep its fields and add its counts to its parent.
            nodes_append(rec)
            if parent >= 0:
                pb = nodes[parent]
                pb.size += 1
                if nbytes:
                    pb.params_total += own
                    pb.trainable_total += trainable
                    pb.bytes_total += nbytes
                if devices and devices is not pb.devices:
                    pb.devices = self._set({*pb.devices, *devices}) if pb.devices else devices
                if dtypes and dtypes is not pb.dtypes:
                    pb.dtypes = self._set({*pb.dtypes, *dtypes}) if pb.dtypes else dtypes
                if not exact:
                    pb.params_exact = False

    @staticmethod
    def _broken(
        m: Any, path: str, name: str, ppath: str | None, depth: int, i: int, text: str, sid: int
    ) -> tuple[Any, ...]:
        cls = type(m)
        try:
            training = bool(m.__dict__.get("training", False))
        except Exception:
            training = False
        return (
            path, name, cls.__name__, f"{cls.__module__}.{cls.__qualname__}", (), (), ppath,
            depth, 0, 0, 0, 0, (), (), (), training, (), False, True,
            text, None, sid, (), None, i, 1, 0, 0, False,
        )  # fmt: skip

    def bottom_up(self) -> dict[Any, int]:
        nodes, parents, edges, heads, names, sids = (
            self.nodes, self.parents, self.edges, self.heads, self.names, self.sids
        )  # fmt: skip
        n = len(nodes)
        keys = self.keys
        key: tuple[Any, ...]
        has_alias = bool(self.aliases)
        shared_tensors = len(set(map(id, self.tensors))) != len(self.tensors)
        for i in reversed(self.inner):  # children before parents
            b = nodes[i]
            if not has_alias:
                key = (heads[i], names[i], tuple([sids[j] for j in edges[i]]))
                sid = keys.get(key)
                if sid is None:
                    sid = keys[key] = len(keys)
                sids[i] = sid
            p = parents[i]
            if p >= 0:
                _add_to_parent(self, nodes[p], b)
        edge_list: list[Any] = []
        if has_alias or shared_tensors:
            edge_list = [edges.get(i, ()) for i in range(n)]
        if has_alias:

            def combine(i: int, kids: list[int]) -> int:
                if i not in heads:  # a leaf: signed during the traversal
                    return sids[i]
                key = (heads[i], names[i], tuple(kids))
                sid = keys.get(key)
                if sid is None:
                    sid = keys[key] = len(keys)
                return sid

            sids[:] = dag_fold(n, edge_list, combine, -1)
        if has_alias or shared_tensors:
            sizes = [r[SIZE] if type(r) is tuple else r.size for r in nodes]
            totals = exact_totals(self.modules, parents, edge_list, sizes, list(self.aliases))
            for i, t in enumerate(totals):
                r = nodes[i]
                if type(r) is tuple:
                    nodes[i] = r[:PARAMS_TOTAL] + tuple(t) + r[PARAMS_TOTAL + 3 :]
                else:
                    r.params_total, r.trainable_total, r.bytes_total = t
        return keys


def _add_to_parent(walker: Walker, pb: Any, b: Any) -> None:
    pb.size += b.size
    pb.params_total += b.params_total
    pb.trainable_total += b.trainable_total
    pb.bytes_total += b.bytes_total
    if not b.params_exact:
        pb.params_exact = False
    if b.devices is not pb.devices and b.devices:
        pb.devices = walker._set({*pb.devices, *b.devices}) if pb.devices else b.devices
    if b.dtypes is not pb.dtypes and b.dtypes:
        pb.dtypes = walker._set({*pb.dtypes, *b.dtypes}) if pb.dtypes else b.dtypes
