"""The traversal behind `tree.walk()`: structure and per-module flags, nothing that needs tensors.

Speed matters here (a 100,000-module model should walk in a few times a bare `named_modules()`
loop), hence one long loop with locals instead of helper calls per module, plain `__dict__` reads
instead of nn.Module attribute lookups, and only sizes summed bottom-up (a leaf bumps its parent's
size as it is read; the reverse sweep visits modules with children only). Leaves (most modules)
are kept as tuples of field values, or just their path when plain; `ModelTree` turns them into
`Node`s when first looked at. Counts, devices, dtypes, extra_repr and signatures are left to
`_tree.lazy`, run once when the first Node is built.
"""

from __future__ import annotations

from typing import Any

from .facts import callable_name, class_facts, parametrization_names, placeholder, script_names
from .lazy import LazyPass
from .nodes import ALIASES, NODE_FIELDS, TRAINING, BufferInfo, HookInfo, plain_leaf
from .totals import dtype_info

_HOOK_ATTRS = (
    ("forward_pre", "_forward_pre_hooks"),
    ("forward", "_forward_hooks"),
    ("backward_pre", "_backward_pre_hooks"),
    ("backward", "_backward_hooks"),
)


def hook_infos(owner: Any, prefix: str = "") -> tuple[HookInfo, ...]:
    out = []
    for kind, attr in _HOOK_ATTRS:
        for key, fn in getattr(owner, prefix + attr, {}).items():
            out.append(HookInfo(kind, callable_name(fn), key))
    return tuple(out)


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
        dtype = dtype_info(b.dtype)[0]
        out.append(BufferInfo(name, shape, dtype, _device_str(b), name not in transient))
    return tuple(out)


class Walker:
    """Collects one record per distinct module (structure and flags), then sums sizes up."""

    def __init__(self, builder: Any) -> None:
        self.builder = builder  # mutable twin of Node with the same slots
        self.nodes: list[Any] = []
        self.modules: list[Any] = []
        self.classes: list[type] = []  # each module's class (the outline's folds read them)
        self.parents: list[int] = []
        self.names: dict[int, tuple[str, ...]] = {}  # child names of each module that has some
        self.kid_ids: dict[int, list[int]] = {}  # and their indices (alias edges included)
        self.inner: list[int] = []  # indices of nodes that have children, pre-order
        self.index: dict[str, int] = {}
        self.aliases: dict[int, list[str]] = {}
        self.broken: dict[int, str] = {}  # modules too broken to inspect -> placeholder text
        self.trainings = bytearray()  # training flag per module (plain leaves keep it only here)

    def run(
        self, model: Any
    ) -> tuple[list[Any], dict[str, int], list[Any], list[int], bytearray, LazyPass]:
        """(records, index, modules, parents, trainings, rest): a record is a mutable builder
        for modules with children, for leaves the tuple of Node field values or, for plain
        leaves, just the path (see tree.plain_leaf); counts, devices, dtypes,
        extra_repr and signature are left to `rest` (see _tree.lazy), which ModelTree runs when
        a Node is first built."""
        self.traverse(model)
        self.bottom_up()
        for i, paths in self.aliases.items():
            self._set_field(i, ALIASES, tuple(paths))
        rest = LazyPass(
            self.nodes,
            self.modules,
            self.classes,
            self.parents,
            self.inner,
            self.names,
            self.kid_ids,
            self.index,
            self.aliases,
            self.broken,
        )
        return self.nodes, self.index, self.modules, self.parents, self.trainings, rest

    def _set_field(self, i: int, position: int, value: Any) -> None:
        r = self.nodes[i]
        if type(r) is str:
            r = plain_leaf(r, i, self.modules, self.parents, self.nodes, self.trainings, {})
        if type(r) is tuple:
            self.nodes[i] = r[:position] + (value,) + r[position + 1 :]
        else:
            setattr(r, NODE_FIELDS[position], value)

    def traverse(self, model: Any) -> None:
        # Children are visited by a `for` loop per parent (a stack of suspended loops gives
        # pre-order without recursion limits), so a leaf costs no stack push or pop and the
        # parent's prefix, depth and builder are looked up once per parent, not per child.
        nodes, index, parents, names_of = self.nodes, self.index, self.parents, self.names
        nodes_append, inner_append = nodes.append, self.inner.append
        Builder = self.builder
        known: dict[type, tuple[Any, ...]] = {}  # FACTS is weak, and slower to read
        known_get = known.get
        modules_append, parents_append = self.modules.append, parents.append
        classes_append = self.classes.append
        trainings_append = self.trainings.append
        seen: dict[int, int] = {}
        stack: list[tuple[Any, ...]] = []
        # The state of the loop over one parent's children: (name, module) pairs, the parent's
        # index and builder, the children's path prefix and depth, the parent's path.
        it: Any = iter([("", model)])
        pi, pb, prefix, depth, ppath = -1, None, "", 0, None
        # pka: appends to the list of the parent's children's indices (kid_ids) so far
        kid_ids = self.kid_ids
        pka: Any = [].append
        while True:
            for name, m in it:
                path = prefix + name
                mid = id(m)
                i = seen.get(mid)
                if i is not None:  # reached again through another path: an alias, not a new node
                    self.aliases.setdefault(i, []).append(path)
                    index[path] = i
                    pka(i)
                    continue
                i = len(nodes)
                seen[mid] = i
                index[path] = i
                pka(i)
                modules_append(m)
                parents_append(pi)
                cls = type(m)
                classes_append(cls)
                try:
                    facts = known_get(cls)
                    if facts is None:
                        facts = known[cls] = tuple(
                            class_facts(cls)[:7]
                        )  # a plain tuple unpacks faster
                    cname, qualname, is_custom, container, wrap_attr, parametrized, script = facts
                    d = m.__dict__
                    try:  # plain dict reads: nn.Module's __getattr__ makes attribute reads slow
                        mods, _, buffers = d["_modules"], d["_parameters"], d["_buffers"]
                        training = d["training"]
                        hooked = (
                            d["_forward_hooks"]
                            or d["_forward_pre_hooks"]
                            or d["_backward_hooks"]
                            or d["_backward_pre_hooks"]
                        )
                    except KeyError:  # properties, or a missing super().__init__()
                        mods, _, buffers = m._modules, m._parameters, m._buffers
                        training, hooked = m.training, True
                    kids = [(k, c) for k, c in mods.items() if c is not None] if mods else None
                    if script:
                        cname, qualname, is_custom, container = script_names(m)
                    hooks: tuple[HookInfo, ...] = hook_infos(m) if hooked else ()
                    patched = "forward" in d and not script  # jit sets forward per instance
                    training = bool(training)
                    child_paths: tuple[str, ...] | None
                    if kids:
                        cprefix = f"{path}." if path else ""
                        child_paths = tuple([cprefix + k for k, _ in kids])
                        wraps = (
                            cprefix + wrap_attr
                            if wrap_attr is not None and wrap_attr in mods
                            else None
                        )
                    elif not (buffers or hooks or patched or script):
                        # A plain leaf (most modules): its path is its whole record, the rest
                        # follows from its class, parent and training flag (see tree.plain_leaf).
                        # Strings are not tracked by the cyclic GC, tuples would be.
                        rec = path
                        child_paths, wraps = None, None
                    else:
                        child_paths, wraps = (), None
                    if child_paths is not None:
                        rec = (
                            path, name, cname, qualname, child_paths, (), ppath, depth,
                            0, 0, 0, 0,  # counts, devices and dtypes: see _tree.lazy
                            _buffer_infos(m, buffers) if buffers else (),
                            (), (), training, hooks, patched,
                            is_custom, "", container, "",  # extra_repr, signature: _tree.lazy
                            parametrization_names(mods) if parametrized else (),
                            wraps, i, 1, 0, 0, True, "", 0,
                        )  # fmt: skip
                except Exception as exc:  # a module too broken to inspect still gets a node
                    kids, text = None, placeholder("inspection", exc)
                    self.broken[i] = text
                    rec = self._broken(m, path, name, ppath, depth, i, text)
                    training = rec[TRAINING]
                trainings_append(training)
                if kids:  # descend: suspend this loop, run the one over m's children
                    b = Builder(*rec)
                    nodes_append(b)
                    names_of[i] = tuple([k for k, _ in kids])
                    inner_append(i)
                    stack.append((it, pi, pb, prefix, depth, ppath, pka))
                    it, pi, pb, prefix, depth, ppath = iter(kids), i, b, cprefix, depth + 1, path
                    kl: list[int] = []
                    kid_ids[i] = kl
                    pka = kl.append
                    break
                nodes_append(rec)  # a leaf
                if pb is not None:
                    pb.size += 1
            else:  # this parent's children are done: resume its parent's loop
                if not stack:
                    return
                it, pi, pb, prefix, depth, ppath, pka = stack.pop()

    @staticmethod
    def _broken(
        m: Any, path: str, name: str, ppath: str | None, depth: int, i: int, text: str
    ) -> tuple[Any, ...]:
        cls = type(m)
        try:
            training = bool(m.__dict__.get("training", False))
        except Exception:
            training = False
        return (
            path, name, cls.__name__, f"{cls.__module__}.{cls.__qualname__}", (), (), ppath,
            depth, 0, 0, 0, 0, (), (), (), training, (), False, True,
            text, None, "", (), None, i, 1, 0, 0, False, "", 0,
        )  # fmt: skip

    def bottom_up(self) -> None:
        nodes, parents = self.nodes, self.parents
        for i in reversed(self.inner):  # children before parents
            p = parents[i]
            if p >= 0:
                nodes[p].size += nodes[i].size
