"""The second, lazy phase of `tree.walk()`: what needs each module's tensors and hyperparameters.

Counts, devices and dtypes (every parameter and buffer read), `extra_repr` and structural
signatures were two thirds of a 100,000-module walk. `ModelTree` runs this
pass once, for all modules together, when its first `Node` is built, reading the live modules the
walk visited: one consistent snapshot, as of that first look.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import torch
from torch import nn

from .facts import class_facts, placeholder
from .nodes import NODE_FIELDS
from .placement import Placements
from .totals import DTYPES, dag_fold, digest_signatures, dtype_info, exact_totals, packed_tensors

_MISSING = object()
QUALNAME, SIZE = NODE_FIELDS.index("qualname"), NODE_FIELDS.index("size")
_PLAIN_TENSORS = frozenset({torch.Tensor, nn.Parameter})


def _extra_repr(module: Any) -> str:
    try:
        text = module.extra_repr()
        return text if type(text) is str else str(text)
    except Exception as exc:
        return placeholder("extra_repr()", exc)


class Late:
    """Per module, by pre-order index: the fields the lazy pass fills in."""

    __slots__ = (
        "bytes_local",
        "bytes_own",
        "bytes_total",
        "devices",
        "digests",
        "dtypes",
        "exact",
        "extra_repr",
        "params_own",
        "params_total",
        "placement",
        "sids",
        "trainable_own",
        "trainable_total",
    )

    def __init__(self, n: int) -> None:
        self.params_own: list[int] = [0] * n
        self.trainable_own: list[int] = [0] * n
        self.bytes_own: list[int] = [0] * n
        self.params_total: list[int] = []
        self.trainable_total: list[int] = []
        self.bytes_total: list[int] = []
        self.devices: list[tuple[str, ...]] = [()] * n
        self.dtypes: list[tuple[str, ...]] = [()] * n
        self.exact: list[bool] = [True] * n
        self.extra_repr: list[str] = []
        self.sids: list[int] = []
        self.digests: list[str] = []
        self.placement: list[str] = []
        self.bytes_local: list[int] = []


class LazyPass:
    """`records[i]` holds what the walk recorded for module i (a mutable builder for modules with
    children, a tuple of Node field values or a plain leaf's path), `classes[i]` its class;
    `inner` lists the first, `names[i]` their child names (alias edges included); `index` maps
    every path to its module's position; `broken` maps modules too broken to inspect to their
    placeholder text."""

    def __init__(
        self,
        records: list[Any],
        modules: list[Any],
        classes: list[type],
        parents: list[int],
        inner: list[int],
        names: dict[int, tuple[str, ...]],
        kid_ids: dict[int, list[int]],
        index: dict[str, int],
        aliases: dict[int, list[str]],
        broken: dict[int, str],
    ) -> None:
        self.records, self.modules, self.parents, self.inner = records, modules, parents, inner
        self.classes = classes  # each module's class, by index
        self.names, self.index, self.aliases, self.broken = names, index, aliases, broken
        self.kid_ids = kid_ids  # children's indices, in the order of `names`
        self.interned: dict[Any, Any] = {}  # devices/dtypes tuples, so equal ones are one object
        # For _tree.placement: modules with an accelerate hook, and tensors of other types
        # than Tensor and Parameter (DTensors), with their module's index.
        self.hooked: list[int] = []
        self.odd: list[tuple[int, Any]] = []

    def run(self) -> Late:
        """Fill every module's late fields; signature id -1 (a module inside a reference
        cycle) is the last digest, "cycle"."""
        n = len(self.records)
        late = Late(n)
        hids, heads, tensors = self._scan(late)
        self._totals(late, tensors)
        where = Placements(self.modules, self.parents, self.hooked, self.odd)
        late.placement, late.bytes_local = where.run(late.devices, late.bytes_total)
        keys: dict[tuple[Any, ...], int] = {}
        late.sids = self.sign(hids, keys)
        late.digests = digest_signatures(keys, heads)
        late.digests.append("cycle")
        return late

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

    def _scan(self, late: Late) -> tuple[list[int], list[Any], list[Any]]:
        """Own counts, devices, dtypes and extra_repr of every module, and its head id: an id
        of (qualname, extra_repr, own tensors' names, shapes and dtypes)."""
        head_ids: dict[tuple[Any, ...], int] = {}
        tsig_ids: dict[tuple[Any, ...], int] = {}
        repr_memo: dict[Any, tuple[str, int]] = {}  # see ClassFacts.repr_keys
        broken, records = self.broken, self.records
        known: dict[type, Any] = {}  # class -> facts, for this pass (FACTS is weak)
        p_own, t_own, b_own = late.params_own, late.trainable_own, late.bytes_own
        devs, dts, exacts = late.devices, late.dtypes, late.exact
        ers: list[str] = []
        hids: list[int] = []
        tensors: list[Any] = []  # every param/buffer (kept alive so ids stay unique)
        ers_append, hids_append, tensors_extend = ers.append, hids.append, tensors.extend
        # own tensors' layout -> what _tensors returns (see below)
        tmemo: dict[Any, tuple[Any, ...]] = {}
        for i, (m, cls) in enumerate(zip(self.modules, self.classes)):
            if broken and i in broken:
                er = broken[i]
                hid = head_ids.setdefault((cls.__qualname__, er, -1), len(head_ids))
                exacts[i] = False
                ers_append(er)
                hids_append(hid)
                continue
            facts = known.get(cls)
            if facts is None:
                facts = known[cls] = class_facts(cls)
            rkeys = facts.repr_keys
            r = records[i]
            if type(r) is str:  # a plain leaf (see tree.plain_leaf)
                qualname = facts.qualname
            else:
                qualname = r[QUALNAME] if type(r) is tuple else r.qualname
            tsig: Any = -1
            d = m.__dict__
            if "_hf_hook" in d:
                self.hooked.append(i)
            try:
                params, buffers = d["_parameters"], d["_buffers"]
            except KeyError:  # not plain attributes on this class: the general way
                params, buffers = getattr(m, "_parameters", None), getattr(m, "_buffers", None)
            if "_packed_params" in d and (packed := packed_tensors(m)):
                # A quantized layer's packed weights count as its parameters.
                params = {**(params or {}), **packed}
            if params or buffers:
                # What decides this module's counts, devices, dtypes and tensor signature: per
                # tensor its name, type, shape, dtype, requires_grad and device. Repeated
                # layers share it, so the per-tensor work below runs once per distinct layout.
                key: Any
                try:
                    kp = tuple(
                        [(k, type(t), t.shape, t.dtype, t.requires_grad, t.is_cpu or t.device)
                         for k, t in params.items() if t is not None]
                    )  # fmt: skip
                    kb = (
                        tuple([(k, type(t), t.shape, t.dtype, t.is_cpu or t.device)
                               for k, t in buffers.items() if t is not None])
                        if buffers else ()
                    )  # fmt: skip
                    got = tmemo.get(key := (kp, kb))
                except Exception:  # UninitializedParameter (lazy modules) and other odd tensors
                    key = got = None
                if got is None:
                    got = self._tensors(i, params, buffers, late, tsig_ids, tensors)
                    if key is not None and got[6]:
                        tmemo[key] = got
                else:  # the tensors themselves, for the shared-tensor check in _totals
                    if len(kp) == len(params):
                        tensors_extend(params.values())
                    else:
                        tensors_extend([t for t in params.values() if t is not None])
                    if kb:
                        tensors_extend([t for t in buffers.values() if t is not None])
                p_own[i], t_own[i], b_own[i], devs[i], dts[i], tsig, _ = got
            if facts.plain_repr and "extra_repr" not in d:
                er = ""
                hid = head_ids.setdefault((qualname, er, tsig), len(head_ids))
            elif rkeys is None:
                try:
                    er = m.extra_repr()
                    if type(er) is not str:
                        er = _extra_repr(m)
                except Exception:
                    er = _extra_repr(m)
                hid = head_ids.setdefault((qualname, er, tsig), len(head_ids))
            else:
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
            ers_append(er)
            hids_append(hid)
        late.extra_repr = ers
        tsigs = list(tsig_ids)
        heads = [(q, er, tsigs[t] if t >= 0 else ()) for q, er, t in head_ids]
        return hids, heads, tensors

    def _tensors(
        self,
        i: int,
        params: Any,
        buffers: Any,
        late: Late,
        tsig_ids: dict[tuple[Any, ...], int],
        tensors: list[Any],
    ) -> tuple[int, int, int, tuple[str, ...], tuple[str, ...], int, bool]:
        """(own, trainable, bytes, devices, dtypes, tensor signature id, memoisable) of module
        i's own tensors, each read."""
        interned = self.interned
        tl = []
        own = trainable = nbytes = 0
        devices: tuple[str, ...] = ()
        dtypes: tuple[str, ...] = ()
        plain = True
        for group in (params, buffers) if buffers else (params,):
            is_param = group is params
            for k, t in group.items():
                if t is None:
                    continue
                tensors.append(t)
                if type(t) not in _PLAIN_TENSORS:
                    self.odd.append((i, t))
                    plain = False
                dtype, itemsize = DTYPES.get(t.dtype) or dtype_info(t.dtype)
                try:
                    n = t.numel()
                    shape = t.shape
                except Exception:  # UninitializedParameter (lazy modules)
                    n, shape = 0, None
                    late.exact[i] = plain = False
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
        # Interned so the memo key and the head hash an int, not shapes.
        tsig = tsig_ids.get(key := tuple(tl))
        if tsig is None:
            tsig = tsig_ids[key] = len(tsig_ids)
        return own, trainable, nbytes, devices, dtypes, tsig, plain

    def _totals(self, late: Late, tensors: list[Any]) -> None:
        """Subtree totals, devices, dtypes and exactness, summed up the canonical tree; along
        every edge (each tensor once) when modules or tensors are shared."""
        parents, n = self.parents, len(self.parents)
        p, t, b = list(late.params_own), list(late.trainable_own), list(late.bytes_own)
        own_devs, own_dts, own_exact = list(late.devices), list(late.dtypes), list(late.exact)
        devs, dts, exacts = late.devices, late.dtypes, late.exact
        for i in range(n - 1, 0, -1):  # pre-order: children come after their parent
            j = parents[i]
            if b[i]:
                p[j] += p[i]
                t[j] += t[i]
                b[j] += b[i]
            if devs[i] and devs[i] is not devs[j]:
                devs[j] = self._set({*devs[j], *devs[i]}) if devs[j] else devs[i]
            if dts[i] and dts[i] is not dts[j]:
                dts[j] = self._set({*dts[j], *dts[i]}) if dts[j] else dts[i]
            if not exacts[i]:
                exacts[j] = False
        if self.aliases or len(set(map(id, tensors))) != len(tensors):
            records, kid_ids = self.records, self.kid_ids
            edges = [kid_ids.get(i, ()) for i in range(n)]
            if self.aliases:  # a shared module's tensors count under each of its parents
                late.devices = dag_fold(n, edges, lambda i, k: self._merge(own_devs[i], k), ())
                late.dtypes = dag_fold(n, edges, lambda i, k: self._merge(own_dts[i], k), ())
                late.exact = dag_fold(n, edges, lambda i, k: own_exact[i] and all(k), True)
            sizes = [
                1 if type(r) is str else r[SIZE] if type(r) is tuple else r.size for r in records
            ]
            totals = exact_totals(self.modules, parents, edges, sizes, list(self.aliases))
            p = [c.params for c in totals]
            t = [c.trainable for c in totals]
            b = [c.nbytes for c in totals]
        late.params_total, late.trainable_total, late.bytes_total = p, t, b

    def _merge(self, own: tuple[str, ...], kids: list[tuple[str, ...]]) -> tuple[str, ...]:
        items = {*own}
        for k in kids:
            items.update(k)
        return self._set(items) if items else ()

    def sign(self, hids: Sequence[Hashable], keys: dict[tuple[Any, ...], int]) -> list[int]:
        """Signature id per module: key (head, child names, child ids), interned in `keys`; a
        head is what sets a module apart on its own (here an id of its class, extra_repr and
        tensors; for `_tree/outline.py` its class alone)."""
        n, names, edges = len(hids), self.names, self.kid_ids
        leaf_sids: dict[Hashable, int] = {}
        for hid in set(hids):  # a leaf's key is its head alone
            leaf_sids[hid] = keys.setdefault((hid, (), ()), len(keys))
        sids = [leaf_sids[h] for h in hids]
        key: tuple[Any, ...]
        if not self.aliases:  # a tree: children have larger pre-order indices than parents
            for i in reversed(self.inner):
                key = (hids[i], names[i], tuple([sids[j] for j in edges[i]]))
                sid = keys.get(key)
                if sid is None:
                    sid = keys[key] = len(keys)
                sids[i] = sid
            return sids

        inner = set(self.inner)

        def combine(i: int, kids: list[int]) -> int:
            if i not in inner:
                return sids[i]
            key = (hids[i], names[i], tuple(kids))
            sid = keys.get(key)
            if sid is None:
                sid = keys[key] = len(keys)
            return sid

        edge_list = [edges.get(i, ()) for i in range(n)]
        return dag_fold(n, edge_list, combine, -1)  # type: ignore[no-any-return]
