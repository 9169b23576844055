"""The frontend relies on nothing only JupyterLab has, so that it works in VS Code's notebooks and
marimo too (VS Code cannot run here: this is the check docs/guide/hosts.md's table cites for it).

- Every ``--jp-*`` colour, font or size has a fallback: VS Code and marimo define none of them.
- No script looks anything up by a JupyterLab or Lumino class, or through ``document`` (marimo
  draws widgets inside a shadow root, where ``document.querySelector`` finds nothing of theirs);
  no JupyterLab global (``window.jupyterapp``, ``IPython``, ``require``) or command is used.
- Keys are contained at the widget's root by ``keys.ts`` with plain DOM events; the one Lumino
  attribute (``data-lm-suppress-shortcuts``) is extra, never required.
- The one JupyterLab selector in the stylesheet (hiding the stand-in) has a DOM-only twin
  (``js/host.ts``) for the other hosts.
"""

from __future__ import annotations

import re
from pathlib import Path

JS = Path(__file__).resolve().parents[1] / "js"
SOURCES = {
    p.relative_to(JS).as_posix(): p.read_text(encoding="utf-8")
    for p in sorted(JS.rglob("*.ts"))
    if not p.name.endswith(".test.ts") and p.name != "fake_model.ts"
}
CSS = (JS / "styles.css").read_text(encoding="utf-8")


def _code(text: str) -> str:
    """The source without its comments (they name JupyterLab to say why)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"(?m)//.*$", "", text)


def test_every_jupyter_variable_has_a_fallback() -> None:
    bare = re.findall(r"var\(--jp-[\w-]+\s*\)", CSS)
    assert not bare, f"--jp-* without a fallback (VS Code and marimo define none): {bare}"
    assert "var(--jp-" in CSS  # the check checks something


def test_no_script_needs_jupyterlab_dom_globals_or_commands() -> None:
    problems = []
    for name, text in SOURCES.items():
        code = _code(text)
        for pattern, why in (
            (r"""["'`][^"'`]*\.(jp|lm)-[\w-]""", "a JupyterLab/Lumino class selector"),
            (r"\bdocument\.(querySelector|querySelectorAll|getElementById|getElementsBy)", "a page-wide lookup (marimo's shadow root)"),
            (r"\b(jupyterapp|IPython|Jupyter)\b|\bwindow\.require\b|\brequire\(", "a Jupyter global"),
            (r"\bcommands\.execute\b|\bapp\.commands\b", "a JupyterLab command"),
        ):  # fmt: skip
            problems += [f"{name}: {why}: {m.group(0)}" for m in re.finditer(pattern, code)]
    assert not problems, "\n".join(problems)
    # Lumino's data-lm-suppress-shortcuts (on the root, and on the focused element for Notebook 7)
    # is the only trace of JupyterLab in the code; elsewhere it is an unknown attribute, and keys.ts
    # contains keys without it (stopPropagation at the root).
    traces = {
        (n, m.group(0))
        for n, t in SOURCES.items()
        for m in re.finditer(r"[\w-]*\b(lm|jp)-[\w-]*", _code(t))
    }
    assert {n for n, _ in traces} == {"widget.ts", "keys.ts"}, traces
    assert {trace for _, trace in traces} == {"data-lm-suppress-shortcuts"}, traces
    assert "stopPropagation" in SOURCES["keys.ts"]


def test_the_stand_in_is_hidden_by_the_dom_shape_where_jupyterlab_classes_are_missing() -> None:
    jupyter_rules = [r for r in re.findall(r"(?m)^[^{}/]*\.jp-[^{]*\{", CSS)]
    assert len(jupyter_rules) == 1 and "tx-static" in jupyter_rules[0], jupyter_rules
    assert "hideStandIn(el)" in SOURCES["widget.ts"]


def test_the_marimo_notebook_runs_as_an_app() -> None:
    # What `marimo edit` runs (tests/ui/test_marimo.py clicks through it), without a browser:
    # the widget wrapped as marimo wraps anywidgets, and the summary cell.
    import importlib.util

    path = JS.parent / "notebooks" / "09-marimo.py"
    spec = importlib.util.spec_from_file_location("notebook_08_marimo", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    outputs, defs = module.app.run()
    ex = defs["ex"]
    try:
        assert type(outputs[2]).__name__ == "anywidget" and outputs[2].widget is ex
        assert ex.probe_report is not None and ex.probe_report.ok
        assert "Total params: 43,226" in outputs[3].text
    finally:
        ex.close()
