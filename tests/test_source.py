"""tx.source(): module instances, classes, functions, and every place Python keeps no source."""

from __future__ import annotations

import functools
import inspect
import json
import linecache
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.nn as nn
from fixtures.models import (
    TinyCNN,
    compiled,
    fx_graph_module,
    parametrized,
    script_module,
    tiny_cnn,
)

from torchxray.source import Cell, Source, notebook_cells, source


def file_lines(src: Source, first: int, last: int) -> list[str]:
    assert src.file is not None
    return linecache.getlines(src.file)[first - 1 : last]


def check_consistent(src: Source) -> None:
    """The text is exactly lines line..end_line of its file; forward lines lie inside it."""
    assert src.text is not None and src.line is not None and src.end_line is not None
    assert src.reason is None
    assert "".join(file_lines(src, src.line, src.end_line)) == src.text
    if src.forward_lines is not None:
        first, last = src.forward_lines
        assert src.line <= first <= last <= src.end_line
        head = file_lines(src, first, first)[0].strip()
        assert head.startswith(("def forward", "@", "async def forward"))


class Outer:
    class Inner(nn.Module):
        @torch.no_grad()
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2


class Derived(TinyCNN):
    """Inherits forward."""


def plain_function(x: int) -> int:
    return x + 1


square = lambda x: x * x  # noqa: E731


# -- ordinary objects ---------------------------------------------------------------------------


def test_module_instance_gives_its_class_with_forward_lines() -> None:
    src = source(tiny_cnn())
    lines, first = inspect.getsourcelines(TinyCNN)
    assert src.text == "".join(lines) and src.line == first
    assert src.file == inspect.getsourcefile(TinyCNN)
    assert src.qualname == f"{TinyCNN.__module__}.TinyCNN" and src.kind == "class"
    assert src.forward_owner == src.qualname
    fwd_lines, fwd_first = inspect.getsourcelines(TinyCNN.forward)
    assert src.forward_lines == (fwd_first, fwd_first + len(fwd_lines) - 1)
    check_consistent(src)


def test_torch_class_and_instance_agree() -> None:
    assert source(nn.Conv2d) == source(nn.Conv2d(1, 1, 1))
    src = source(nn.Conv2d)
    check_consistent(src)
    assert src.text is not None and src.text.startswith("class Conv2d")
    assert src.forward_lines is not None


def test_inherited_forward_names_its_owner() -> None:
    src = source(Derived)
    check_consistent(src)
    assert src.forward_lines is None
    assert src.forward_owner == f"{TinyCNN.__module__}.TinyCNN"


def test_nested_class_and_decorated_forward() -> None:
    src = source(Outer.Inner())
    check_consistent(src)
    assert src.qualname.endswith("Outer.Inner")
    assert src.forward_lines is not None
    assert file_lines(src, *src.forward_lines)[0].strip() == "@torch.no_grad()"
    assert file_lines(src, src.forward_lines[1], src.forward_lines[1])[0].strip() == "return x * 2"


def test_module_base_forward_is_assigned_function() -> None:
    # nn.Module says ``forward = _forward_unimplemented``: its lines are that function's.
    src = source(nn.Module)
    assert src.forward_lines is not None
    assert "def _forward_unimplemented" in file_lines(src, *src.forward_lines)[0]


def test_functions_methods_and_wrappers() -> None:
    fn = source(plain_function)
    assert fn.kind == "function" and fn.text is not None
    assert fn.text.startswith("def plain_function") and fn.forward_lines is None
    assert fn.line == inspect.getsourcelines(plain_function)[1]
    method = source(tiny_cnn().forward)
    assert method.text is not None and method.text.lstrip().startswith("def forward")
    assert method.qualname.endswith("TinyCNN.forward")
    assert source(TinyCNN.forward) == method
    lam = source(square)
    assert lam.text is not None and "lambda x: x * x" in lam.text
    part = source(functools.partial(plain_function, 1))
    assert part.text == fn.text and part.note is not None and "partial" in part.note
    assert source(staticmethod(plain_function)).text == fn.text


# -- no source ----------------------------------------------------------------------------------


@pytest.mark.parametrize("obj", [int, object, len, object.__init__, [].append, torch.relu])
def test_builtins_have_a_reason(obj: object) -> None:
    src = source(obj)
    assert src.text is None and src.file is None and src.line is None
    assert src.reason is not None and "C" in src.reason and "no Python source" in src.reason


def test_c_extension_class() -> None:
    src = source(torch._C.Generator)
    assert src.text is None and src.reason is not None
    assert "compiled extension" in src.reason and "_C" in src.reason


def test_dynamic_class_made_with_type() -> None:
    dyn = type("Dyn<odd>", (nn.Module,), {"__module__": __name__})
    src = source(dyn)
    assert src.text is None and src.reason is not None
    assert "type()" in src.reason and __file__ in src.reason
    assert src.forward_owner == "torch.nn.modules.module.Module"


def test_dynamic_class_sharing_a_real_class_name_is_not_confused() -> None:
    # Python < 3.13 finds classes by qualname alone: this fake "Derived" must not get the real text.
    fake = type("Derived", (nn.Module,), {"__module__": __name__, "forward": lambda s, x: x})
    src = source(fake)
    assert src.text is None and src.reason is not None and "type()" in src.reason


def test_exec_from_string_keeps_no_source() -> None:
    ns: dict[str, object] = {"nn": nn, "__name__": "exec_mod"}
    exec("f = lambda x: x\nclass E(nn.Module):\n    def forward(self, x):\n        return x\n", ns)
    for obj in (ns["f"], ns["E"]):
        src = source(obj, cells=[])
        assert src.text is None and src.reason is not None and "exec" in src.reason


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_script_module_reason_and_code() -> None:
    src = source(script_module())
    assert src.text is None and src.reason is not None and "TorchScript" in src.reason
    assert src.script_code is not None and "def forward" in src.script_code

    @torch.jit.script
    def scripted(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    fsrc = source(scripted)
    assert fsrc.text is None and fsrc.kind == "function"
    assert fsrc.script_code is not None and "def scripted(x: Tensor)" in fsrc.script_code


# -- wrappers show what they wrap ---------------------------------------------------------------


def test_parametrized_module_shows_original_class() -> None:
    model = parametrized()
    assert type(model[0]).__name__ == "ParametrizedLinear"
    src = source(model[0])
    assert src.qualname == "torch.nn.modules.linear.Linear"
    assert src.text is not None and src.text.startswith("class Linear")
    assert src.note is not None and "parametrized" in src.note
    assert source(type(model[0])).qualname == src.qualname


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # importing torch._dynamo warns
def test_compiled_module_shows_wrapped_class() -> None:
    src = source(compiled())
    assert src.qualname == "torch.nn.modules.container.Sequential"
    assert src.note is not None and "torch.compile" in src.note


def test_fx_graph_module_shows_generated_forward() -> None:
    src = source(fx_graph_module())
    assert src.text is not None and src.text.startswith("def forward")
    assert src.forward_lines == (src.line, src.end_line)
    assert src.note is not None and "GraphModule" in src.note


# -- notebook cells -----------------------------------------------------------------------------

CELL = textwrap.dedent(
    '''\
    import torch.nn as nn

    class Net(nn.Module):
        """Defined in a notebook cell."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(x)

    class Block(nn.Sequential):
        pass
    '''
)


CELLS_NET = "class Net(nn.Module):\n    def forward(self, x):\n        return x\n"


def run_cell(code: str, filename: str) -> dict[str, object]:
    """Run code the way IPython does: compiled under a cell name, module ``__main__``."""
    ns: dict[str, object] = {"__name__": "__main__"}
    exec(compile(code, filename, "exec"), ns)
    return ns


@pytest.fixture
def cell_in_linecache() -> Iterator[str]:
    name = "/tmp/ipykernel_4242/1234567.py"  # what ipykernel compiles cells under
    linecache.cache[name] = (len(CELL), None, CELL.splitlines(keepends=True), name)
    yield name
    linecache.cache.pop(name, None)


def test_notebook_class_from_linecache(cell_in_linecache: str) -> None:
    ns = run_cell(CELL, cell_in_linecache)
    src = source(ns["Net"]())
    assert src.file == cell_in_linecache and src.line == 3 and src.end_line == 11
    assert src.text is not None and src.text.startswith("class Net(nn.Module):")
    assert src.forward_lines == (10, 11) and src.cell == "notebook cell"
    check_consistent(src)
    # Block has no methods of its own, so only a scan of the cells can find it.
    assert cell_in_linecache in [c.file for c in notebook_cells()]
    block = source(ns["Block"])
    assert block.text == "class Block(nn.Sequential):\n    pass\n" and block.line == 13
    assert block.forward_lines is None and block.forward_owner is not None
    assert block.forward_owner.endswith("container.Sequential")


def test_notebook_class_from_history_only() -> None:
    ns = run_cell(CELL, "<ipython-input-7-deadbeef0000>")  # not in linecache
    assert "<ipython-input-7-deadbeef0000>" not in linecache.cache
    history = [Cell(None, "x = 1\n", "In [8]"), Cell(None, CELL, "In [7]")]
    for name, first in (("Net", 3), ("Block", 13)):
        src = source(ns[name], cells=history)
        assert src.line == first and src.cell == "In [7]" and src.file is None
        assert src.text is not None and src.text.startswith(f"class {name}(")
    assert source(ns["Net"], cells=history).forward_lines == (10, 11)
    assert source(ns["Net"], cells=[]).text is None  # nowhere to look: a reason instead
    assert "interactively" in (source(ns["Block"], cells=[]).reason or "")


def test_redefined_notebook_class_takes_newest_cell() -> None:
    old = "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n"
    new = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    width = 2\n"
    ns = run_cell(new, "<ipython-input-9-00000000aaaa>")
    src = source(ns["Net"], cells=[(None, new), ("<x>", "%magic not python"), (None, old)])
    assert src.text is not None and "width = 2" in src.text and src.line == 4


def test_default_cells_read_ipython_history(monkeypatch: pytest.MonkeyPatch) -> None:
    shell = types.SimpleNamespace(
        compile=types.SimpleNamespace(_filename_map={}),
        history_manager=types.SimpleNamespace(input_hist_parsed=["", "y = 2\n", CELL]),
    )
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert [c.label for c in notebook_cells() if c.file is None] == ["In [2]", "In [1]"]
    ns = run_cell(CELL, "<ipython-input-2-feedfeed0000>")
    src = source(ns["Block"])
    assert src.cell == "In [2]" and src.line == 13


def test_real_ipython_shell(tmp_path: Path) -> None:
    pytest.importorskip("IPython")
    script = textwrap.dedent(
        """
        import json
        from traitlets.config import Config
        from IPython.core.interactiveshell import InteractiveShell
        config = Config()
        config.HistoryManager.hist_file = ":memory:"
        shell = InteractiveShell.instance(config=config)
        cell = "import torch.nn as nn\\nclass A(nn.Module):\\n    def forward(self, x):\\n"
        cell += "        return x\\n\\nclass B(nn.ReLU):\\n    pass\\n"
        assert shell.run_cell(cell).success
        shell.run_cell("from torchxray import source\\nsa, sb = source(A()), source(B)")
        sa, sb = shell.user_ns["sa"], shell.user_ns["sb"]
        print(json.dumps([sa.text, sa.line, sa.forward_lines, sa.cell, sb.text, sb.line]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    a_text, a_line, a_fwd, a_cell, b_text, b_line = json.loads(out.stdout.strip().splitlines()[-1])
    assert a_text.startswith("class A(nn.Module):") and a_line == 2 and a_fwd == [3, 4]
    assert a_cell == "In [1]"
    assert b_text == "class B(nn.ReLU):\n    pass\n" and b_line == 6


@pytest.mark.slow
def test_real_jupyter_kernel() -> None:
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    cells = [
        "import json, torch.nn as nn\nfrom torchxray import source",
        "class Net(nn.Module):\n    def forward(self, x):\n        return x",
        "class Block(nn.Sequential):\n    pass",
        "print(json.dumps([(s.text, s.line, s.forward_lines, s.cell, s.file) "
        "for s in (source(Net()), source(Block))]))",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    (net, block) = json.loads(nb.cells[-1].outputs[0]["text"])
    assert net[:4] == [CELLS_NET, 1, [2, 3], "In [2]"] and "ipykernel_" in net[4]
    assert block[:4] == ["class Block(nn.Sequential):\n    pass\n", 1, None, "In [3]"]


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [42, "Linear", object(), None])
def test_unsupported_objects_raise_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match="expects an nn.Module instance, a class, a function"):
        source(bad)
