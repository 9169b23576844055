"""tx.mro_graph() / mro_classes() / mro_class(): the base-class DAG as data and as DOT."""

from __future__ import annotations

import abc
import re
import shutil
import subprocess

import graphviz
import pytest
import torch.nn as nn
from fixtures.models import TinyCNN, parametrized

from torchxray.mro import COLORS, MroDigraph, mro_class, mro_classes, mro_graph


class Base(nn.Module):
    def forward(self, x):
        return x


class Left(Base):
    pass


class Right(Base):
    def __init__(self) -> None:
        super().__init__()

    def extra_repr(self) -> str:
        return "right"


class Diamond(Left, Right):
    pass


class WithABC(nn.Module, abc.ABC):
    pass


def node_line(dot: str, node_id: str) -> str:
    (line,) = [ln for ln in dot.splitlines() if ln.strip().startswith(f"{node_id} [")]
    return line


def edges(dot: str) -> set[tuple[str, str]]:
    return set(re.findall(r"^\s*(c\d+) -> (c\d+)$", dot, flags=re.M))


def test_linear_mro_data() -> None:
    infos = mro_classes(nn.Linear(2, 3))
    assert [i.name for i in infos] == ["Linear", "Module", "object"]
    assert [i.position for i in infos] == [0, 1, 2]
    assert [i.group for i in infos] == ["torch", "torch", "builtin"]
    assert infos[0].qualname == "torch.nn.modules.linear.Linear"
    assert infos[0].bases == ("torch.nn.modules.module.Module",) and infos[0].base_positions == (1,)
    assert infos[0].defines == ("forward", "__init__", "extra_repr")
    assert infos[2].bases == () and infos[2].qualname == "object"
    assert mro_classes(nn.Linear) == infos


def test_user_classes_and_inherited_methods() -> None:
    infos = mro_classes(TinyCNN)
    assert infos[0].group == "user" and infos[0].module == TinyCNN.__module__
    assert infos[0].defines == ("forward", "__init__")
    derived = type("Derived", (TinyCNN,), {})
    assert mro_classes(derived)[0].defines == ()


def test_diamond_draws_every_base_edge() -> None:
    infos = mro_classes(Diamond)
    assert [i.name for i in infos] == ["Diamond", "Left", "Right", "Base", "Module", "object"]
    assert infos[0].bases == (f"{__name__}.Left", f"{__name__}.Right")
    assert infos[0].base_positions == (1, 2)
    assert infos[2].defines == ("__init__", "extra_repr") and infos[3].defines == ("forward",)
    dot = mro_graph(Diamond()).source
    assert edges(dot) == {("c0", "c1"), ("c0", "c2"), ("c1", "c3"), ("c2", "c3"), ("c3", "c4")} | {
        ("c4", "c5")
    }
    assert dot.count('label="object') == 1  # object once, however many paths reach it


def test_graph_labels_styles_and_marks() -> None:
    dot = mro_graph(Diamond).source
    root = node_line(dot, "c0")
    assert 'label="Diamond\\n' in root and "MRO #0" in root and f"\\n{__name__}\\n" in root
    assert "peripheries=2" in root and COLORS["user"] in root
    base = node_line(dot, "c3")
    assert "defines forward" in base and "penwidth" in base
    assert "penwidth" not in node_line(dot, "c1")  # Left defines nothing itself
    assert "defines __init__, extra_repr" in node_line(dot, "c2")
    assert COLORS["torch"] in node_line(dot, "c4") and COLORS["builtin"] in node_line(dot, "c5")
    assert 'id="mro-c4"' in node_line(dot, "c4")
    assert "rankdir=BT" in dot


def test_stdlib_base_is_builtin_group() -> None:
    groups = {i.name: i.group for i in mro_classes(WithABC)}
    assert groups == {"WithABC": "user", "Module": "torch", "ABC": "builtin", "object": "builtin"}


def test_parametrized_instance_shows_generated_class() -> None:
    names = [i.name for i in mro_classes(parametrized()[0])]
    assert names == ["ParametrizedLinear", "Linear", "Module", "object"]


ODD = 'We"ird<b>x</b>\\l{}; -> c1\n'


def odd_class() -> type:
    return type(ODD, (Diamond,), {"forward": lambda self, x: x})


def test_odd_class_name_stays_one_quoted_label() -> None:
    graph = mro_graph(odd_class())
    dot = graph.source
    root = node_line(dot, "c0")
    # One line (no raw newline), quotes escaped, backslash doubled, no HTML label, no extra edge.
    assert root.count("\n") == 0 and 'label="We\\"ird<b>x</b>\\\\l{}; -> c1 \\n' in root
    assert "label=<" not in dot
    assert ("c0", "c1") in edges(dot) and len(edges(dot)) == 7
    assert all(re.fullmatch(r"c\d+", i.node_id) for i in mro_classes(odd_class()))


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs the graphviz `dot` binary")
def test_odd_class_name_renders_with_dot() -> None:
    out = subprocess.run(
        ["dot", "-Tplain"], input=mro_graph(odd_class()).source, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    nodes = [ln for ln in out.stdout.splitlines() if ln.startswith("node ")]
    edge_lines = [ln for ln in out.stdout.splitlines() if ln.startswith("edge ")]
    assert len(nodes) == 7 and len(edge_lines) == 7
    assert "<b>x</b>" in out.stdout


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs the graphviz `dot` binary")
def test_notebook_display_renders_svg() -> None:
    bundle = mro_graph(nn.ReLU)._repr_mimebundle_()
    assert "<svg" in bundle["image/svg+xml"]


def test_notebook_display_falls_back_to_dot_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_dot(*args: object, **kwargs: object) -> None:
        raise graphviz.ExecutableNotFound(["dot"])

    monkeypatch.setattr(MroDigraph, "pipe", no_dot)
    graph = mro_graph(nn.ReLU)
    assert isinstance(graph, graphviz.Digraph)
    assert graph._repr_mimebundle_() == {"text/plain": graph.source}


def test_mro_class_resolves_by_position_and_name() -> None:
    assert mro_class(Diamond(), 0) is Diamond
    assert mro_class(Diamond, 3) is Base
    assert mro_class(Diamond, f"{__name__}.Right") is Right
    assert mro_class(Diamond, "Module") is nn.Module
    assert mro_class(Diamond, "torch.nn.modules.module.Module") is nn.Module
    assert mro_class(Diamond, "object") is object
    with pytest.raises(KeyError, match="no class 'Nope' in the MRO of Diamond"):
        mro_class(Diamond, "Nope")
    with pytest.raises(KeyError, match="out of range"):
        mro_class(Diamond, 6)


def test_same_qualname_twice_is_kept_apart() -> None:
    # A notebook redefinition: the new class "Base" subclasses the old one.
    newer = type("Base", (Left,), {"__module__": __name__})
    infos = mro_classes(newer)
    assert [i.qualname for i in infos].count(f"{__name__}.Base") == 2
    assert infos[0].base_positions == (1,) and infos[1].base_positions == (2,)
    assert mro_class(newer, f"{__name__}.Base") is newer  # first in MRO order
    assert mro_class(newer, 2) is Base


@pytest.mark.parametrize("func", [mro_graph, mro_classes])
@pytest.mark.parametrize("bad", [42, "Linear", object(), None])
def test_bad_input_raises_type_error(func, bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match="expects a class or an nn.Module instance"):
        func(bad)
