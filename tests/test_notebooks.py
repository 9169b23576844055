"""Every example notebook runs top to bottom in a clean kernel, and is stored without outputs."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
# Kernel start plus torch import on two shared cores; each notebook itself runs in seconds.
CELL_TIMEOUT_S = 120


def test_the_four_notebooks_exist() -> None:
    names = [nb.name for nb in NOTEBOOKS]
    for expected in (
        "01-explore.ipynb",
        "02-edit-hyperparameters.ipynb",
        "03-probe.ipynb",
        "04-replace-layers.ipynb",
        "05-real-models.ipynb",
        "06-memory-and-placement.ipynb",
        "07-execution-flow.ipynb",
        "08-training.ipynb",
        "10-compile.ipynb",
        "12-export.ipynb",
    ):
        assert expected in names


def test_kernel_is_this_venvs_python() -> None:
    # jupyter_client swaps a kernelspec's bare "python" for sys.executable, so the notebooks run
    # with the torchxray this test run imports; a foreign kernelspec would test another install.
    spec = KernelSpecManager().get_kernel_spec("python3")
    assert spec.argv[0] in ("python", "python3", sys.executable), spec.argv
    assert spec.language == "python"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_notebook_is_stored_clean(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: outputs stored in cell {cell.id}"
            assert cell.execution_count is None, f"{path.name}: execution count in cell {cell.id}"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_notebook_runs_from_a_clean_kernel(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A clean kernel: no IPython profile or startup scripts of whoever runs the tests.
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    nb = nbformat.read(path, as_version=4)
    # Which python ran it: must be this venv's, with the torchxray under test.
    nb.cells.append(nbformat.v4.new_code_cell("import sys\nprint(sys.executable)"))
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        startup_timeout=120,
        # Run where the notebook lives on Binder, but write nothing next to it.
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError naming the cell on any exception
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert code_cells and all(c.execution_count for c in code_cells)
    for cell in code_cells:
        for out in cell.outputs:
            assert out.output_type != "error", f"{path.name} cell {cell.id}: {out.get('ename')}"
    printed = "".join(o.get("text", "") for o in code_cells[-1].outputs).strip()
    assert Path(printed) == Path(sys.executable), (printed, sys.executable)
