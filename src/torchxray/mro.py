"""The base-class graph of a module or class: every base, multiple inheritance drawn as such.

``mro_classes`` gives plain data (one ``ClassInfo`` per class, in MRO order); ``mro_graph`` draws
it as a ``graphviz.Digraph`` whose ``.source`` is DOT. Building needs no ``dot`` binary; in a
notebook the graph renders through ``dot`` when it is installed, and shows its DOT text otherwise.

    >>> import torch.nn as nn
    >>> [c.name for c in mro_classes(nn.Linear(2, 3))]
    ['Linear', 'Module', 'object']
    >>> mro_classes(nn.Linear)[0].defines
    ('forward', '__init__', 'extra_repr')
    >>> "Linear" in mro_graph(nn.Linear).source
    True
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import graphviz
from torch import nn

__all__ = ["ClassInfo", "MARKED", "mro_class", "mro_classes", "mro_graph"]

# Methods a reader of a model most wants to find the owner of.
MARKED = ("forward", "__init__", "extra_repr")

# Fill colours per group: torch / the user's own / Python's built-ins and standard library.
COLORS = {"torch": "#fde2c8", "user": "#cfe6fb", "builtin": "#e6e6e6"}


@dataclass(frozen=True)
class ClassInfo:
    """One class of an MRO. ``position`` is its index in ``__mro__`` (0: the class itself).

    Attributes:
        name: The class's name.
        module: The module it is defined in.
        qualname: ``"pkg.mod.Outer.Class"``.
        position: Its index in the MRO (0: the class itself).
        bases: The qualnames of its direct bases, in declaration order.
        defines: Which of `forward`, `__init__` and `extra_repr` the class defines itself.
        group: ``"torch"``, ``"user"`` or ``"builtin"``.
        base_positions: The MRO positions of the direct bases.
        node_id: The node's id in `mro_graph`'s DOT (``"c<position>"``).

    Examples:
        >>> import torch.nn as nn
        >>> info = mro_classes(nn.Linear)[1]
        >>> info.name, info.position, info.group, info.bases
        ('Module', 1, 'torch', ('object',))
    """

    name: str
    module: str
    qualname: str  # "pkg.mod.Outer.Class"
    position: int
    bases: tuple[str, ...]  # qualnames of the direct bases, in declaration order
    defines: tuple[str, ...]  # the MARKED methods in the class's own __dict__
    group: str  # "torch", "user" or "builtin"
    base_positions: tuple[int, ...] = ()  # positions of the direct bases (unambiguous)
    node_id: str = ""  # the DOT node id in mro_graph


def mro_classes(obj: Any) -> tuple[ClassInfo, ...]:
    """One ``ClassInfo`` per class in the MRO of a class or of an ``nn.Module`` instance's class.

    Args:
        obj: A class, or an `nn.Module` instance (its class is used).

    Returns:
        The MRO as plain records, the class itself first.

    Raises:
        TypeError: `obj` is neither a class nor a module.

    Examples:
        >>> import torch.nn as nn
        >>> [(c.name, c.defines) for c in mro_classes(nn.ReLU())]
        [('ReLU', ('forward', '__init__', 'extra_repr')), ('Module', ('forward', '__init__', 'extra_repr')), ('object', ('__init__',))]
    """
    mro = _target(obj, "mro_classes").__mro__
    # Index by identity: two distinct classes may share a qualname (a class redefined in a notebook).
    index = {id(cls): i for i, cls in enumerate(mro)}
    return tuple(
        ClassInfo(
            name=cls.__name__,
            module=cls.__module__,
            qualname=_qualname(cls),
            position=i,
            bases=tuple(_qualname(b) for b in cls.__bases__),
            defines=tuple(m for m in MARKED if m in vars(cls)),
            group=_group(cls),
            base_positions=tuple(index[id(b)] for b in cls.__bases__),
            node_id=f"c{i}",
        )
        for i, cls in enumerate(mro)
    )


def mro_class(obj: Any, key: str | int) -> type:
    """The class of ``obj``'s MRO at position ``key`` or named ``key`` (qualname, or plain name).

    A view that shows ``mro_classes`` uses this to fetch the class a user clicked.

    Args:
        obj: A class, or an `nn.Module` instance.
        key: A position in the MRO (0: the class itself), a qualname
            (``"torch.nn.modules.module.Module"``) or a class's qualified name (``"Module"``).

    Returns:
        The class itself.

    Raises:
        KeyError: No class at that position or of that name (the message lists the MRO).
        TypeError: `key` is neither a string nor an int.

    Examples:
        >>> import torch.nn as nn
        >>> mro_class(nn.Linear(2, 3), 1) is nn.Module
        True
        >>> mro_class(nn.Linear, "Module") is nn.Module
        True
    """
    mro = _target(obj, "mro_class").__mro__
    if isinstance(key, int) and not isinstance(key, bool):
        if 0 <= key < len(mro):
            return mro[key]
        raise KeyError(f"MRO position {key} is out of range: the MRO has {len(mro)} classes.")
    if not isinstance(key, str):
        raise TypeError(f"mro_class() key must be a qualname or a position; got {key!r}.")
    for match in (lambda c: _qualname(c) == key, lambda c: c.__qualname__ == key):
        found = [cls for cls in mro if match(cls)]
        if found:
            return found[0]  # the first in MRO order is the one attribute lookup would reach
    names = ", ".join(_qualname(c) for c in mro)
    raise KeyError(f"no class {key!r} in the MRO of {mro[0].__qualname__}; it has: {names}.")


def mro_graph(obj: Any) -> graphviz.Digraph:
    """A ``graphviz.Digraph`` of the base-class DAG: an edge from each class to each direct base.

    Each node shows the class name, its module and MRO position, and which of ``forward``,
    ``__init__`` and ``extra_repr`` it defines itself (a bold border when it defines ``forward``).
    Node ids are ``c<position>`` (SVG element ids ``mro-c<position>``), so a view can map a
    rendered node back to ``mro_classes(obj)[position]``.

    Args:
        obj: A class, or an `nn.Module` instance.

    Returns:
        The graph. Its `.source` is DOT text; building it needs no `dot` binary, and a notebook
        renders it through `dot` where Graphviz is installed.

    Raises:
        TypeError: `obj` is neither a class nor a module.

    Examples:
        >>> import torch.nn as nn
        >>> g = mro_graph(nn.Linear(2, 3))
        >>> g.source.count("->")  # Linear -> Module -> object
        2
    """
    infos = mro_classes(_target(obj, "mro_graph"))  # errors name the function called
    graph = MroDigraph(
        name="mro",
        graph_attr={"rankdir": "BT", "nodesep": "0.3", "ranksep": "0.35", "tooltip": " "},
        node_attr={
            "shape": "box",
            "style": "rounded,filled",
            "fontname": "Helvetica",
            "fontsize": "10",
            "color": "#555555",
        },
        edge_attr={"arrowhead": "empty", "color": "#777777"},
    )
    for info in infos:
        lines = [info.name, info.module, f"MRO #{info.position}"]
        if info.defines:
            lines.append("defines " + ", ".join(info.defines))
        attrs = {
            "fillcolor": COLORS[info.group],
            "id": f"mro-{info.node_id}",
            "tooltip": _text(info.qualname),
        }
        if "forward" in info.defines:
            attrs["penwidth"] = "2.2"
        if info.position == 0:
            attrs["peripheries"] = "2"
        graph.node(info.node_id, label=_label(lines), **attrs)
    for info in infos:
        for base in info.base_positions:
            graph.edge(info.node_id, infos[base].node_id)
    return graph


class MroDigraph(graphviz.Digraph):
    """A ``graphviz.Digraph`` that shows its DOT text in a notebook when ``dot`` is missing."""

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        try:
            return dict(super()._repr_mimebundle_(include, exclude, **kwargs))
        except graphviz.ExecutableNotFound:
            return {"text/plain": self.source}


def _target(obj: Any, func: str) -> type:
    if isinstance(obj, type):
        return obj
    if isinstance(obj, nn.Module):
        return type(obj)
    raise TypeError(
        f"{func}() expects a class or an nn.Module instance; got {type(obj).__name__}. "
        f"For another object, pass its class: {func}(type(x))."
    )


def _qualname(cls: type) -> str:
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


def _group(cls: type) -> str:
    root = cls.__module__.partition(".")[0]
    if root == "torch":
        return "torch"
    if root in sys.stdlib_module_names or root == "builtins":
        return "builtin"
    return "user"


def _text(text: str) -> str:
    # DOT escString: a backslash starts an escape (\n, \l, \N ...); nohtml keeps "<...>" literal.
    # Control characters (legal in a type() name) would break lines or confuse DOT: show spaces.
    return graphviz.escape("".join(ch if ch.isprintable() else " " for ch in text))


def _label(lines: list[str]) -> str:
    # Lines are joined with DOT's own "\n" escape after each piece was made literal.
    return graphviz.nohtml("\\n".join(_text(line) for line in lines))
