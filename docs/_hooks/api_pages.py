"""MkDocs hook: one API reference page for every name in ``torchxray.__all__``.

The pages are generated at build time from ``src/torchxray/__init__.py`` (read with ``ast``, so the
build imports neither torch nor the package): a name added to ``__all__`` gets its page, its place
in the navigation and its line on the reference's index without anyone writing a file, and a name
that the reference cannot document (no docstring, an import that does not resolve) fails
``mkdocs build --strict``. mkdocstrings renders each page from the docstrings.

Not mkdocs-gen-files + literate-nav, the usual pair for this: two more plugins for what one hook
of ~150 lines does here, and the grouping by public module below would still be ours to write.
"""

from __future__ import annotations

import ast
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.api_pages")

ROOT = Path(__file__).resolve().parents[2]
INIT = ROOT / "src" / "torchxray" / "__init__.py"
NAV_KEY = "API reference"
NOTEBOOKS_KEY = "Notebooks"  # filled with every notebooks/*.ipynb, in file order

# The public module a name is imported from decides its section; the order here is the order of the
# navigation (a module not listed gets a section named after it, after these).
SECTIONS = {
    "widget": "Explorer widget",
    "tree": "Tree",
    "source": "Source",
    "forms": "Forms",
    "mro": "Class hierarchy",
    "catalog": "Replace catalog",
    "patch": "Patch log",
    "probe": "Probe",
    "memory": "Memory",
    "diff": "Compare",
    "stats": "Compare",
    "select": "Selection",
    "summary": "Text summary",
    "watch": "Training lens",
    "compile": "Compile readiness",
    "ranks": "Ranks",
    "export_check": "Export readiness",
    "attach": "Attach to a training job",
    "": "Package",
}


@dataclass(frozen=True)
class Entry:
    name: str
    module: str  # the public module it comes from ("" for the package itself)
    kind: str  # "function", "class" or "attribute"
    summary: str  # the docstring's first paragraph, on one line
    members: tuple[str, ...] = ()  # a class's documented public members, its torchxray bases' too

    @property
    def uri(self) -> str:
        # Functions and classes in folders of their own: `tx.form` and `tx.Form` would otherwise be
        # api/form.md and api/Form.md, one file on a case-insensitive disk.
        folder = {"function": "functions", "class": "classes"}.get(self.kind, "data")
        return f"api/{folder}/{self.name}.md"


def public_names() -> list[Entry]:
    """``__all__`` with, for each name, the public module ``__init__`` imports it from."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    where: dict[str, str] = {}
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                where[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            ids = [t.id for t in targets if isinstance(t, ast.Name)]
            if "__all__" in ids:
                names = list(ast.literal_eval(node.value))  # type: ignore[arg-type]
            elif "_LAZY" in ids:  # names imported on first use: {"explore": "widget", ...}
                where.update(ast.literal_eval(node.value))  # type: ignore[arg-type]
    import griffe  # mkdocstrings' own loader: what it can resolve is what the pages can show

    package = griffe.load("torchxray", search_paths=[str(ROOT / "src")])
    entries = []
    for name in names:
        module = where.get(name, "")
        path = f"torchxray.{module}.{name}" if module else f"torchxray.{name}"
        try:
            obj = package[path.removeprefix("torchxray.")]
            kind = obj.kind.value
        except (KeyError, griffe.AliasResolutionError) as exc:
            log.warning("API reference: torchxray.%s cannot be found (%s)", name, exc)
            continue
        doc = obj.docstring.value.strip() if obj.docstring else ""
        if not doc:
            log.warning("API reference: torchxray.%s has no docstring", name)
        summary = " ".join(doc.split("\n\n")[0].split())
        entries.append(Entry(name, module, kind, summary, _members(obj) if kind == "class" else ()))
    return entries


def _members(cls: Any) -> tuple[str, ...]:
    """The public members a class's page shows: those with a docstring, its own and those it
    inherits from torchxray's classes. Not a dataclass's fields (the class's "Attributes" section
    lists them), not an Explorer's traitlets, nor what anywidget's classes bring."""
    names = []
    for name, member in cls.all_members.items():
        if name.startswith("_"):
            continue
        try:
            doc = member.docstring
            owner = member.parent.path if member.parent is not None else ""
        except Exception:  # noqa: BLE001 - a member inherited from a class griffe cannot load
            continue
        if doc is not None and doc.value.strip() and owner.startswith("torchxray"):
            names.append(name)
    return tuple(names)


def _title(entry: Entry) -> str:
    return f"tx.{entry.name}"


def _sections(entries: list[Entry]) -> dict[str, list[Entry]]:
    order = list(dict.fromkeys(SECTIONS.values()))
    sections: dict[str, list[Entry]] = {title: [] for title in order}
    for e in entries:
        title = SECTIONS.get(e.module) or e.module.replace("_", " ").capitalize()
        sections.setdefault(title, []).append(e)
    return {t: es for t, es in sections.items() if es}


_entries: list[Entry] = []


def on_config(config: MkDocsConfig, **kwargs: Any) -> MkDocsConfig:
    """Fills the navigation's "API reference" section with the generated pages, by section."""
    _entries[:] = public_names()
    nav = config.nav or []
    for item in nav:
        if isinstance(item, dict) and NAV_KEY in item:
            item[NAV_KEY] = ["api/index.md"] + [
                {title: [{_title(e): e.uri} for e in es]}
                for title, es in _sections(_entries).items()
            ]
            break
    else:
        log.warning("mkdocs.yml's nav has no %r section for the generated API pages", NAV_KEY)
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    for item in nav:
        if isinstance(item, dict) and NOTEBOOKS_KEY in item:
            item[NOTEBOOKS_KEY] = [f"notebooks/{nb.name}" for nb in notebooks]
    return config


def _page(entry: Entry) -> str:
    # By the public module's path: `torchxray.probe` is both a submodule and the function the
    # package exports under that name, and mkdocstrings would show the submodule.
    where = f"torchxray.{entry.module}.{entry.name}" if entry.module else f"torchxray.{entry.name}"
    members = "[" + ", ".join(entry.members) + "]" if entry.kind == "class" else "true"
    heading = _title(entry).replace("_", "\\_")  # tx.__version__ is no bold "version"
    return (
        f"# {heading}\n\n"
        f"::: {where}\n"
        "    options:\n"
        "      show_root_heading: true\n"  # the signature comes with the heading
        "      show_root_full_path: false\n"
        "      show_root_toc_entry: false\n"
        f"      members: {members}\n"
        "      inherited_members: true\n"
    )


def _index(entries: list[Entry]) -> str:
    lines = [
        "# API reference",
        "",
        "Every name `import torchxray as tx` gives you (`torchxray.__all__`), one page each, built",
        "from the docstrings. The examples in them run in the test suite",
        "(`pytest --doctest-modules src/torchxray`).",
        "",
    ]
    for title, es in _sections(entries).items():
        lines += [f"## {title}", "", "| name | what it is |", "| --- | --- |"]
        for e in es:
            link = e.uri.removeprefix("api/")
            summary = e.summary.replace("|", "\\|")
            lines.append(f"| [`{_title(e)}`]({link}) | {summary} |")
        lines.append("")
    return "\n".join(lines)


def on_files(files: Files, config: MkDocsConfig, **kwargs: Any) -> Files:
    files.append(File.generated(config, "api/index.md", content=_index(_entries)))
    for e in _entries:
        files.append(File.generated(config, e.uri, content=_page(e)))
    return files
